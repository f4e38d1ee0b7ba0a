#pragma once

// The Images view, for MNIST-like data in place of the boundary: the test images the ensemble
// is least sure about (sorted by epistemic uncertainty, each with the ensemble's label and the
// members' votes), the confusion matrix, and a canvas to draw a digit on while every member's
// and the ensemble's probabilities follow live.

#include <QImage>
#include <QList>
#include <QTimer>
#include <QWidget>

#include <cstdint>
#include <vector>

#include "controller/snapshot.h"

class QLabel;

class QSplitter;

namespace ensemble::ui {

class LazyRefresh;

// Class names of a run: digits, or Fashion-MNIST's garments.
QStringList classNames(const RunInfo& run);

// A drawing turned into a dataset row the way MNIST was made: the ink's bounding box scaled
// to fit `fit` x `fit` pixels (aspect kept), then placed in a width x height image so that its
// centre of mass is at the centre. Values are raw pixel units, 0..255 ink.
std::vector<float> inkToPixels(const QImage& ink, int width, int height, int fit);

class UncertainImages : public QWidget {
    Q_OBJECT

  public:
    explicit UncertainImages(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);
    // Evaluated test rows in the order shown (most epistemic first).
    const std::vector<int64_t>& shownRows() const { return m_rows; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override { return {520, heightForWidth(520)}; }
    // The height of one row of tiles with its margins: the least a pane showing them may have,
    // or the labels under the first row are cut.
    static int rowHeight();

  protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

  private:
    int columns(int width) const;
    QRect cellRect(int index) const;

    SnapshotPtr m_snapshot;
    std::vector<int64_t> m_rows;
    std::vector<QImage> m_images;  // per evaluated test row of the run, built on demand
    uint64_t m_imagesFor = 0;      // RunInfo::runId of m_images
};

class ConfusionMatrix : public QWidget {
    Q_OBJECT

  public:
    explicit ConfusionMatrix(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);
    QSize sizeHint() const override { return {360, 340}; }

  protected:
    void paintEvent(QPaintEvent* event) override;
    // A cell's tooltip: its count and share, also where the count is too wide to draw.
    bool event(QEvent* event) override;

  private:
    SnapshotPtr m_snapshot;
    QRectF m_cells;  // the matrix as last painted
};

class DigitCanvas : public QWidget {
    Q_OBJECT

  public:
    explicit DigitCanvas(QWidget* parent = nullptr);
    void clear();
    // Draws a stroke through `points` (canvas coordinates); used by the mouse and by tests.
    void drawStroke(const QList<QPointF>& points);
    const QImage& ink() const { return m_ink; }
    bool isEmpty() const { return m_empty; }
    QSize sizeHint() const override { return {224, 224}; }
    QSize minimumSizeHint() const override { return {168, 168}; }

  Q_SIGNALS:
    void changed();

  protected:
    void paintEvent(QPaintEvent* event) override;
    void mousePressEvent(QMouseEvent* event) override;
    void mouseMoveEvent(QMouseEvent* event) override;

  private:
    QPointF toInk(const QPointF& p) const;

    QImage m_ink;  // white ink on black, kInkSize square
    QPointF m_last;
    bool m_empty = true;
};

class PredictionBars : public QWidget {
    Q_OBJECT

  public:
    explicit PredictionBars(QWidget* parent = nullptr);
    // Member probabilities probs[k*C + c] (diverged/off members excluded by `included`).
    void setPrediction(std::vector<double> probs, int members, int classes,
                       std::vector<uint8_t> included, QStringList names);
    void clearPrediction();
    // The ensemble's probabilities now shown (empty when none).
    const std::vector<double>& ensemble() const { return m_ensemble; }
    QSize sizeHint() const override { return {360, 220}; }

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    std::vector<double> m_probs;
    std::vector<double> m_ensemble;
    std::vector<uint8_t> m_included;
    QStringList m_names;
    int m_members = 0;
    int m_classes = 0;
};

class ImagesView : public QWidget {
    Q_OBJECT

  public:
    explicit ImagesView(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);
    DigitCanvas* canvas() const { return m_canvas; }
    PredictionBars* bars() const { return m_bars; }
    UncertainImages* uncertain() const { return m_uncertain; }

  public Q_SLOTS:
    void showPrediction(quint64 id, const QList<float>& logProbs, int members, int classes);

  Q_SIGNALS:
    void predictionRequested(quint64 id, const std::vector<float>& pixels);

  protected:
    // Narrow (a small window): the two panes stack instead of standing side by side.
    void resizeEvent(QResizeEvent* event) override;

  private:
    QSplitter* m_split = nullptr;
    void requestPrediction();
    void refresh();

    SnapshotPtr m_snapshot;
    LazyRefresh* m_lazyRefresh = nullptr;  // refresh() when shown, if a snapshot came while hidden
    quint64 m_requestId = 0;
    QTimer m_throttle;
    int64_t m_predictedAtStep = -1;
    UncertainImages* m_uncertain = nullptr;
    ConfusionMatrix* m_confusion = nullptr;
    DigitCanvas* m_canvas = nullptr;
    PredictionBars* m_bars = nullptr;
    QLabel* m_title = nullptr;
};

}  // namespace ensemble::ui

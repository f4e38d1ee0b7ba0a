#pragma once

// The Filters view, for CNN members: each member's first-layer kernels as small multiples (one
// row per member, one tile per filter, a diverging map: blue negative, white 0, red positive,
// scaled per member) and, for a digit drawn on the view's canvas, each member's first-layer
// feature maps (the conv's output after the activation, grey-scale per member: black 0, white
// the member's largest). The maps come from the engine thread with the digit's prediction
// (EngineController::featureMapsReady).

#include <QImage>
#include <QList>
#include <QStringList>
#include <QTimer>
#include <QWidget>

#include <cstdint>
#include <vector>

#include "controller/snapshot.h"

class QLabel;

namespace ensemble::ui {

class LazyRefresh;

class DigitCanvas;

// A grid of rows x cols tiles of th x tw values each, one pixel per value and a 1-pixel gap
// (kTileGap) between tiles, values[((r * cols + c) * th + y) * tw + x]. Each row is scaled on
// its own: `diverging` maps [-m, m] (m = the row's largest |value|) through blue-white-red,
// otherwise [0, max] (negative values: [-m, m]) through black to white.
QImage renderTiles(const std::vector<float>& values, int rows, int cols, int th, int tw,
                   bool diverging);
constexpr int kTileGap = 1;
constexpr QRgb kTileBackground = 0xff8c8c8c;  // the gap: a grey that neither map produces

// Paints a renderTiles image tile by tile, each member's row of tiles wrapping onto as many
// lines as the width needs, tiles at a legible whole-number scale, with a label per member.
class TileGrid : public QWidget {
    Q_OBJECT

  public:
    explicit TileGrid(QWidget* parent = nullptr);
    void setTiles(QImage image, int rows, int cols, QStringList rowLabels);
    void clearTiles(const QString& message);
    const QImage& image() const { return m_image; }
    int rows() const { return m_rows; }
    int cols() const { return m_cols; }
    bool hasHeightForWidth() const override { return true; }
    int heightForWidth(int width) const override;
    QSize sizeHint() const override { return {640, heightForWidth(640)}; }
    QSize minimumSizeHint() const override { return {labelWidth() + kMinTilePixels, 40}; }

  protected:
    void paintEvent(QPaintEvent* event) override;

  private:
    // How the tiles go at a width: each member's filters on one or more lines of tiles
    // scaled by a whole number, at least kMinTilePixels wide.
    struct Layout {
        int tileWidth = 0;  // one tile in the image, pixels
        int tileHeight = 0;
        int scale = 1;
        int perLine = 1;  // tiles per line
        int lines = 1;    // lines per member
        int blockHeight() const;
    };
    static constexpr int kMinTilePixels = 28;
    static constexpr int kScreenGap = 2;  // between tiles on screen
    static constexpr int kMemberGap = 8;  // between members' blocks
    int labelWidth() const;
    Layout layoutFor(int width) const;

    QImage m_image;
    int m_rows = 0;
    int m_cols = 0;
    QStringList m_labels;
    QString m_message;
};

class FiltersView : public QWidget {
    Q_OBJECT

  public:
    explicit FiltersView(QWidget* parent = nullptr);
    void setSnapshot(SnapshotPtr snapshot);
    DigitCanvas* canvas() const { return m_canvas; }
    TileGrid* kernels() const { return m_kernels; }
    TileGrid* featureMaps() const { return m_maps; }
    // The ids this view asks predictions with (disjoint from the Images view's).
    static constexpr quint64 kRequestBase = quint64{1} << 62;

  public Q_SLOTS:
    void showFeatureMaps(quint64 id, const QList<float>& maps, int members, int filters, int height,
                         int width);

  Q_SIGNALS:
    void predictionRequested(quint64 id, const std::vector<float>& pixels);

  protected:
  private:
    void requestMaps();
    void refresh();

    SnapshotPtr m_snapshot;
    std::shared_ptr<const FirstConv> m_shownConv;  // the layer m_kernels shows
    LazyRefresh* m_lazyRefresh = nullptr;  // refresh() when shown, if a snapshot came while hidden
    quint64 m_requestId = kRequestBase;
    int64_t m_requestedAtStep = -1;
    QTimer m_throttle;
    QLabel* m_title = nullptr;
    QLabel* m_mapsTitle = nullptr;
    TileGrid* m_kernels = nullptr;
    TileGrid* m_maps = nullptr;
    DigitCanvas* m_canvas = nullptr;
};

}  // namespace ensemble::ui

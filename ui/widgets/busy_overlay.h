#pragma once

// What the app is busy with, over the views: while a new run is built (its data loading, its
// members initialised and first measured) a sheet covers the previous run's views, which no
// longer apply, and says what is happening; while a stopped run's figures are measured on the
// whole test split, a strip along the bottom says so and the views stay readable.

#include <QString>
#include <QTimer>
#include <QWidget>

class QLabel;
class QProgressBar;
class QPushButton;

namespace ensemble::ui {

class BusyOverlay : public QWidget {
    Q_OBJECT

  public:
    enum class Cover { Everything, Strip };

    // A child of `covered` that follows its size.
    explicit BusyOverlay(QWidget* covered);

    // Shows `what` with an activity bar; Cover::Everything hides what is below. When hidden,
    // it shows after the delay unless finish() comes first: a run built in a blink (a 2-D
    // preset, a slider's restart) makes no flicker.
    void showWork(const QString& what, Cover cover);
    void setShowDelay(int ms) { m_delay.setInterval(ms); }
    // Nothing is under way any more.
    void finish();
    QString text() const;
    // A Cancel button under the text (Esc clicks it) while `cancellable`: a run's setup.
    void setCancellable(bool cancellable);
    QPushButton* cancelButton() const { return m_cancel; }
    Cover cover() const { return m_cover; }

  Q_SIGNALS:
    void cancelRequested();

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;
    void paintEvent(QPaintEvent* event) override;

  private:
    void place();

    QWidget* m_covered;
    QLabel* m_label = nullptr;
    QProgressBar* m_bar = nullptr;
    QPushButton* m_cancel = nullptr;
    Cover m_cover = Cover::Everything;
    QTimer m_delay;
};

}  // namespace ensemble::ui

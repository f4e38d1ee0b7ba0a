#pragma once

// The status row of a view that runs a job (the Shift sweep, the Methods comparison, active
// learning's rounds, the Calibration comparison): a progress bar while it runs (busy until the
// first report), the view's message, and Cancel, which Esc presses anywhere in the view. The
// view decides what its messages say and when it is busy; the row keeps how they look and how
// a person stops the job the same in every view.

#include <QString>
#include <QWidget>

#include <cstdint>
#include <functional>

class QAbstractButton;
class QProgressBar;
class QLabel;
class QPushButton;

namespace ensemble::ui {

class JobStatusRow : public QWidget {
    Q_OBJECT

  public:
    // `scope`: the view whose Esc cancels (a shortcut on it and its children); `cancelTip`:
    // Cancel's tooltip, saying what stops and what stays.
    JobStatusRow(QWidget* scope, const QString& cancelTip, QWidget* parent = nullptr);

    // The job started: the bar shows busy until setProgress, and Cancel is enabled.
    void start(const QString& message);
    // The job ended (or none runs): the bar hides and Cancel is disabled.
    void finish();
    // Whether Cancel is on offer; views whose busy state has more to it than one job (active
    // learning's Play) set it themselves.
    void setCancellable(bool cancellable);
    bool isCancellable() const;
    // Ctrl+Enter (and Ctrl+Return) anywhere in `scope` calls `start` while `button`, the view's
    // own start button, is enabled: the key every job view starts its job with.
    static void addStartShortcut(QWidget* scope, const QAbstractButton* button,
                                 std::function<void()> start);
    // `done` of `total`, shown per mille (rows can pass int's range) with a percentage.
    void setProgress(int64_t done, int64_t total);
    // `fraction` of the job (0..1) with `text` on the bar.
    void setProgress(double fraction, const QString& text);
    // The bar, busy until the next setProgress (a job that reports in rounds).
    void showBusy();
    void hideProgress();
    // The bar's text while it shows, else empty.
    QString progressText() const;

    void setMessage(const QString& text, bool error = false);
    QString message() const;
    bool messageIsError() const { return m_error; }

    QPushButton* cancelButton() const { return m_cancel; }
    QProgressBar* progressBar() const { return m_progress; }

  Q_SIGNALS:
    // Cancel was clicked, or Esc pressed in the view while Cancel is enabled.
    void cancelRequested();

  private:
    QProgressBar* m_progress = nullptr;
    QLabel* m_message = nullptr;  // wraps: a read-out
    QPushButton* m_cancel = nullptr;
    bool m_error = false;
};

}  // namespace ensemble::ui

#pragma once

// SIGTERM and SIGHUP (logout, shutdown, `kill`) delivered as a Qt signal on the GUI thread, so
// the app can write its recovery checkpoint and leave its event loop normally. The handler
// does only what is async-signal-safe: it writes the signal's number to a pipe, whose read end
// a QSocketNotifier watches (the self-pipe trick).

#include <QObject>

class QSocketNotifier;

namespace ensemble::ui {

class TerminationSignals : public QObject {
    Q_OBJECT

  public:
    // Installs the handlers (one instance at a time); the destructor restores the previous ones.
    explicit TerminationSignals(QObject* parent = nullptr);
    ~TerminationSignals() override;
    TerminationSignals(const TerminationSignals&) = delete;
    TerminationSignals& operator=(const TerminationSignals&) = delete;

    // Whether the handlers are installed (false when the pipe could not be made).
    bool isActive() const { return m_notifier != nullptr; }

  Q_SIGNALS:
    // SIGTERM or SIGHUP arrived (`signal`: its number).
    void received(int signal);

  private:
    void readPipe();

    QSocketNotifier* m_notifier = nullptr;
};

}  // namespace ensemble::ui

#pragma once

// A view's redraw deferred while the view is hidden. Snapshots reach every view several times a
// second while a run trains; a tab nobody looks at should not redraw charts for each, so a hidden
// view only notes that it is behind and catches up once, when it is shown again.

#include <QObject>

#include <functional>

class QWidget;

namespace ensemble::ui {

class LazyRefresh : public QObject {
  public:
    // Watches `view` (and is owned by it); `refresh` brings the view up to date.
    LazyRefresh(QWidget* view, std::function<void()> refresh);

    // Refreshes now when the view is shown; otherwise leaves the refresh for its next show.
    void request();
    // For views that refresh on their own terms when shown (a throttle): true, with the refresh
    // left for the next show, when the view is hidden; false when it is shown.
    bool postponeWhileHidden();
    bool isStale() const { return m_stale; }

  protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

  private:
    QWidget* m_view;
    std::function<void()> m_refresh;
    bool m_stale = false;
};

}  // namespace ensemble::ui

#include "widgets/lazy_refresh.h"

#include <QEvent>
#include <QWidget>

#include <utility>

namespace ensemble::ui {

LazyRefresh::LazyRefresh(QWidget* view, std::function<void()> refresh)
    : QObject(view), m_view(view), m_refresh(std::move(refresh)) {
    view->installEventFilter(this);
}

void LazyRefresh::request() {
    if (!postponeWhileHidden()) {
        m_stale = false;
        m_refresh();
    }
}

bool LazyRefresh::postponeWhileHidden() {
    if (m_view->isVisible()) {
        return false;
    }
    m_stale = true;
    return true;
}

bool LazyRefresh::eventFilter(QObject* watched, QEvent* event) {
    // The filter runs before the view's own showEvent, so a view that does more on show (start
    // a job) finds itself up to date.
    if (watched == m_view && event->type() == QEvent::Show && m_stale) {
        m_stale = false;
        m_refresh();
    }
    return QObject::eventFilter(watched, event);
}

}  // namespace ensemble::ui

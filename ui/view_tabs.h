#pragma once

// The views as tabs, addressed by ViewId: one tab per row of the view table, each view in a
// frameless scroll area. Follows the run: a view shows only for the data it applies to, and a
// run on other data brings forward the view that suits it. Views that are not visible only keep
// each snapshot and draw when shown.

#include <QTabWidget>

#include <array>
#include <cstdint>
#include <optional>

#include "controller/snapshot.h"
#include "view_table.h"

class QAction;
class QMenu;

namespace ensemble::ui {

class ViewTabs : public QTabWidget {
    Q_OBJECT

  public:
    explicit ViewTabs(QWidget* parent = nullptr);

    QWidget* view(ViewId id) const { return m_views[static_cast<std::size_t>(id)]; }
    // The view of `id` as its class (the table's row made it). Precondition: `View` is that
    // class.
    template <typename View>
    View* viewAs(ViewId id) const {
        return qobject_cast<View*>(view(id));
    }
    // False when the view does not apply to the current run (its tab is hidden).
    bool setView(ViewId id);
    ViewId currentViewId() const;
    QWidget* currentView() const { return view(currentViewId()); }

    // One action per view, with the table's title, shortcut and help line; a view that does not
    // apply to the run has its action disabled with the reason ("Images: for image data; this
    // run's data is spirals, 2-D").
    void addViewActions(QMenu* menu);
    QAction* viewAction(ViewId id) const { return m_actions[static_cast<std::size_t>(id)]; }
    // Shows the run's views (a new run: those that apply, and the one that suits it in
    // front), then hands `snapshot` to every view.
    void showSnapshot(const SnapshotPtr& snapshot);

  private:
    void followRun(const Snapshot& snapshot);
    int tabOf(ViewId id) const;

    std::array<QWidget*, kViewCount> m_views{};
    std::array<QWidget*, kViewCount> m_areas{};    // each view's scroll area: its tab's page
    std::array<QAction*, kViewCount> m_actions{};  // addViewActions' (null before)
    uint64_t m_runFor = 0;                         // RunInfo::runId the tabs were set up for
    bool m_regression = false;                     // they were set up for a regression run
};

}  // namespace ensemble::ui

#include "view_tabs.h"

#include <QAction>
#include <QApplication>
#include <QFrame>
#include <QKeySequence>
#include <QMenu>
#include <QScrollArea>

#include "action_reason.h"

namespace ensemble::ui {

namespace {

// "spirals, 2-D classification", "mnist, images", "concrete, 8 features, regression": what a
// view's data condition is held against.
QString runDataText(const RunInfo& run) {
    const int features = run.train.features;
    const QString shape = run.isImage     ? ViewTabs::tr("images")
                          : features == 1 ? ViewTabs::tr("1 feature")
                                          : ViewTabs::tr("%1 features").arg(features);
    return ViewTabs::tr("%1, %2, %3")
        .arg(QString::fromStdString(run.datasetName), shape,
             run.regression ? ViewTabs::tr("regression") : ViewTabs::tr("classification"));
}

}  // namespace

ViewTabs::ViewTabs(QWidget* parent) : QTabWidget(parent) {
    setDocumentMode(true);
    for (const ViewRow& row : viewTable()) {
        QWidget* view = row.make();
        m_views[static_cast<std::size_t>(row.id)] = view;
        // A window smaller than a view's minimum (900 x 600 with the panel open) scrolls the
        // view instead of clipping it or growing the window.
        auto* area = new QScrollArea;
        area->setWidgetResizable(true);
        area->setFrameShape(QFrame::NoFrame);
        area->setWidget(view);
        m_areas[static_cast<std::size_t>(row.id)] = area;
        const int tab = addTab(area, viewTitle(row.id));
        // Until a run says otherwise, only the views that apply to any data (and the
        // Boundary view, which the 2-D preset the app starts on shows).
        setTabVisible(tab, row.data == ViewData::Any || row.data == ViewData::TwoDimensional);
    }
}

int ViewTabs::tabOf(ViewId id) const {
    return indexOf(m_areas[static_cast<std::size_t>(id)]);
}

bool ViewTabs::setView(ViewId id) {
    const int tab = tabOf(id);
    if (tab < 0 || !isTabVisible(tab)) {
        return false;
    }
    setCurrentIndex(tab);
    return true;
}

ViewId ViewTabs::currentViewId() const {
    for (const ViewRow& row : viewTable()) {
        if (tabOf(row.id) == currentIndex()) {
            return row.id;
        }
    }
    return viewTable().front().id;
}

void ViewTabs::addViewActions(QMenu* menu) {
    for (const ViewRow& row : viewTable()) {
        QAction* a = menu->addAction(viewTitle(row.id));
        a->setShortcut(QKeySequence(row.shortcut));
        const QString data = viewDataText(row.data);
        a->setToolTip(data.isEmpty()
                          ? tr("%1: %2").arg(viewTitle(row.id), viewHelp(row.id))
                          : tr("%1 (%2): %3").arg(viewTitle(row.id), data, viewHelp(row.id)));
        const ViewId id = row.id;
        m_actions[static_cast<std::size_t>(id)] = a;
        connect(a, &QAction::triggered, this, [this, id] {
            // A view's own keys (Ctrl+Enter in Shift and Methods) are shortcuts of the view and
            // its children: the person who switched to it by its key can use them at once.
            if (setView(id)) {
                QWidget* view = m_views[static_cast<std::size_t>(id)];
                if (!view->isAncestorOf(QApplication::focusWidget())) {
                    view->setFocus(Qt::ShortcutFocusReason);
                }
            }
        });
    }
}

void ViewTabs::showSnapshot(const SnapshotPtr& snapshot) {
    if (snapshot) {
        followRun(*snapshot);
    }
    for (const ViewRow& row : viewTable()) {
        row.show(view(row.id), snapshot);
    }
}

void ViewTabs::followRun(const Snapshot& s) {
    if (s.run->runId == m_runFor) {
        return;
    }
    m_runFor = s.run->runId;
    const ViewId current = currentViewId();
    for (const ViewRow& row : viewTable()) {
        const bool applies = viewApplies(row.data, s);
        setTabVisible(tabOf(row.id), applies);
        if (QAction* a = m_actions[static_cast<std::size_t>(row.id)]) {
            // Its key would do nothing: the menu and the status bar say why.
            setActionEnabled(a, applies,
                             tr("for %1; this run's data is %2")
                                 .arg(viewDataText(row.data), runDataText(*s.run)));
        }
    }
    const bool grid = viewApplies(ViewData::TwoDimensional, s);
    const bool images = viewApplies(ViewData::Images, s);
    const bool curve = viewApplies(ViewData::OneDimensionalRegression, s);
    // Choosing a 1-D regression dataset brings its picture forward, as 2-D data brings the
    // boundary; leaving regression leaves its tab.
    const bool enteredRegression = curve && !m_regression;
    m_regression = s.run->regression;
    if (enteredRegression || (current == ViewId::Regression && !curve)) {
        setView(curve ? ViewId::Regression : (grid ? ViewId::Boundary : ViewId::Members));
    } else if (!viewApplies(viewRow(current).data, s)) {
        // The view in front does not apply to this run's data (its tab is hidden now).
        setView(images ? ViewId::Images : (curve ? ViewId::Regression : ViewId::Members));
    }
}

}  // namespace ensemble::ui

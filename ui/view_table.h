#pragma once

// The app's views, described once: one row per view (its id, its --view name, title,
// shortcut, the data it applies to, its help line and how to make and feed it). The tabs, the
// View menu, the Keyboard help and ensemble-lab's --view option read the rows. A new view is a
// file in ui/views/, a value in ViewId and a row in view_table.cpp; a missing row fails to
// compile there.

#include <QKeyCombination>
#include <QString>
#include <QStringList>

#include <array>
#include <optional>

#include "controller/snapshot.h"

class QWidget;

namespace ensemble::ui {

// In tab order (the rows' order). Settings and the command line name views by their key, so
// ids may be renumbered freely.
enum class ViewId {
    Boundary,
    Members,
    Curves,
    Calibration,
    Sweep,
    Images,
    Filters,
    Regression,
    Shift,
    Active,
    Methods,
    Runs,
    Reproduce
};
inline constexpr int kViewCount = 13;

// The runs a view applies to; its tab is hidden for the others.
enum class ViewData {
    Any,
    TwoDimensional,            // two plain input columns (the grid over the plane)
    Images,                    // image data whose test images are at hand
    ConvMembers,               // members whose first layer is a convolution
    OneDimensionalRegression,  // regression on one input column (the curve)
    Classification,            // class labels, with the data at hand (a pool to label)
};

struct ViewRow {
    ViewId id;
    const char* key;    // --view NAME, setView(), the saved window/view setting
    const char* title;  // the tab and the View menu (translated)
    QKeyCombination shortcut;
    ViewData data;
    const char* help;  // one line for the View menu's tooltip and the Keyboard help
    QWidget* (*make)();
    void (*show)(QWidget* view, const SnapshotPtr& snapshot);  // hands it each snapshot
};

const std::array<ViewRow, kViewCount>& viewTable();
const ViewRow& viewRow(ViewId id);
// The view named `key` (case-insensitive), if any.
std::optional<ViewId> viewByKey(const QString& key);
// Every view's key, in tab order: "boundary", "members", ...
QStringList viewKeys();
QString viewTitle(ViewId id);
QString viewHelp(ViewId id);
// "2-D inputs", "image data", ...; empty for Any.
QString viewDataText(ViewData data);
// Whether a view for `data` has something to show for the run of `snapshot`.
bool viewApplies(ViewData data, const Snapshot& snapshot);
// The --view option's description: every key with the data it needs.
QString viewOptionHelp();

}  // namespace ensemble::ui

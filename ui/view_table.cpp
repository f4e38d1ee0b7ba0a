#include "view_table.h"

#include <QCoreApplication>

#include "views/active_view.h"
#include "views/boundary_view.h"
#include "views/calibration_view.h"
#include "views/curves_view.h"
#include "views/filters_view.h"
#include "views/images_view.h"
#include "views/members_view.h"
#include "views/methods_view.h"
#include "views/regression_view.h"
#include "views/reproduce_view.h"
#include "views/runs_view.h"
#include "views/shift_view.h"
#include "views/sweep_view.h"

namespace ensemble::ui {

namespace {

// The translation context of the rows (lupdate reads the literal in each QT_TRANSLATE_NOOP).
constexpr const char* kContext = "ensemble::ui::ViewTable";

template <typename View>
QWidget* makeView() {
    return new View;
}

template <typename View>
void showSnapshot(QWidget* view, const SnapshotPtr& snapshot) {
    static_cast<View*>(view)->setSnapshot(snapshot);
}

template <typename View>
constexpr ViewRow row(ViewId id, const char* key, const char* title, QKeyCombination shortcut,
                      ViewData data, const char* help) {
    return {id, key, title, shortcut, data, help, &makeView<View>, &showSnapshot<View>};
}

// Ctrl+1 … Ctrl+9 are documented (docs/app.md's key table): the views keep them (Shift, the
// ninth, took Ctrl+9); later ones a key of their own (Active learning: Ctrl+Shift+A, Methods:
// Ctrl+Shift+M, Runs: Ctrl+Shift+R, Reproduce: Ctrl+Shift+P), added to that table.
constexpr std::array<ViewRow, kViewCount> kViews{{
    row<BoundaryView>(ViewId::Boundary, "boundary",
                      QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Boundary"),
                      Qt::CTRL | Qt::Key_1, ViewData::TwoDimensional,
                      QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                        "the ensemble's decision boundary and uncertainty maps "
                                        "over the plane")),
    row<MembersView>(ViewId::Members, "members",
                     QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Members"), Qt::CTRL | Qt::Key_2,
                     ViewData::Any,
                     QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                       "every member's boundary and figures; switch members in "
                                       "or out")),
    row<CurvesView>(ViewId::Curves, "curves",
                    QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Curves"), Qt::CTRL | Qt::Key_3,
                    ViewData::Any,
                    QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                      "train and test loss and accuracy against the step")),
    row<CalibrationView>(ViewId::Calibration, "calibration",
                         QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Calibration"),
                         Qt::CTRL | Qt::Key_4, ViewData::Any,
                         QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                           "reliability diagram, per-member figures, ensemble "
                                           "size curve; compare with a trained ensemble")),
    row<SweepView>(ViewId::Sweep, "sweep", QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Sweep"),
                   Qt::CTRL | Qt::Key_5, ViewData::Any,
                   QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                     "each member's test figures against its hyperparameter")),
    row<ImagesView>(ViewId::Images, "images",
                    QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Images"), Qt::CTRL | Qt::Key_6,
                    ViewData::Images,
                    QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                      "the least certain test images, the confusion matrix and "
                                      "a digit to draw")),
    row<FiltersView>(ViewId::Filters, "filters",
                     QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Filters"), Qt::CTRL | Qt::Key_7,
                     ViewData::ConvMembers,
                     QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                       "each member's first-layer kernels and feature maps of a "
                                       "drawn digit")),
    row<RegressionView>(ViewId::Regression, "regression",
                        QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Regression"),
                        Qt::CTRL | Qt::Key_8, ViewData::OneDimensionalRegression,
                        QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                          "the predictive mean with aleatoric and total bands "
                                          "and every member's curve")),
    row<ShiftView>(ViewId::Shift, "shift", QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Shift"),
                   Qt::CTRL | Qt::Key_9, ViewData::Any,
                   QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                     "the ensemble, its members and temperature scaling as the "
                                     "test inputs shift (rotation, translation, noise, scale)")),
    row<ActiveView>(ViewId::Active, "active",
                    QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Active learning"),
                    Qt::CTRL | Qt::SHIFT | Qt::Key_A, ViewData::Classification,
                    QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                      "the ensemble picks the train rows to label next: the "
                                      "acquisition map, Acquire, click to label, Play")),
    row<MethodsView>(ViewId::Methods, "methods",
                     QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Methods"),
                     Qt::CTRL | Qt::SHIFT | Qt::Key_M, ViewData::Classification,
                     QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                       "the ensemble methods trained on this experiment side by "
                                       "side: their boundaries, epistemic maps and a table")),
    row<RunsView>(ViewId::Runs, "runs", QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Runs"),
                  Qt::CTRL | Qt::SHIFT | Qt::Key_R, ViewData::Any,
                  QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                    "every recorded run of the app and ensemble-cli: filter, "
                                    "sort, compare, tag, open one as the experiment")),
    row<ReproduceView>(ViewId::Reproduce, "reproduce",
                       QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "Reproduce"),
                       Qt::CTRL | Qt::SHIFT | Qt::Key_P, ViewData::Any,
                       QT_TRANSLATE_NOOP("ensemble::ui::ViewTable",
                                         "published experiments rerun beside the paper: run one, "
                                         "its table of ours against the paper, export")),
}};

constexpr bool rowsInIdOrder() {
    for (int i = 0; i < kViewCount; ++i) {
        if (static_cast<int>(kViews[static_cast<std::size_t>(i)].id) != i) {
            return false;
        }
    }
    return true;
}
static_assert(rowsInIdOrder(), "kViews: one row per ViewId, in the enum's order");

QString translated(const char* text) {
    return QCoreApplication::translate(kContext, text);
}

}  // namespace

const std::array<ViewRow, kViewCount>& viewTable() {
    return kViews;
}

const ViewRow& viewRow(ViewId id) {
    return kViews[static_cast<std::size_t>(id)];
}

std::optional<ViewId> viewByKey(const QString& key) {
    for (const ViewRow& view : kViews) {
        if (key.compare(QLatin1String(view.key), Qt::CaseInsensitive) == 0) {
            return view.id;
        }
    }
    return std::nullopt;
}

QStringList viewKeys() {
    QStringList keys;
    for (const ViewRow& view : kViews) {
        keys << QLatin1String(view.key);
    }
    return keys;
}

QString viewTitle(ViewId id) {
    return translated(viewRow(id).title);
}

QString viewHelp(ViewId id) {
    return translated(viewRow(id).help);
}

QString viewDataText(ViewData data) {
    switch (data) {
        case ViewData::Any:
            return {};
        case ViewData::TwoDimensional:
            return translated(QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "2-D inputs"));
        case ViewData::Images:
            return translated(QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "image data"));
        case ViewData::ConvMembers:
            return translated(QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "CNN members"));
        case ViewData::OneDimensionalRegression:
            return translated(QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "1-D regression"));
        case ViewData::Classification:
            return translated(QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "classification"));
    }
    return {};
}

bool viewApplies(ViewData data, const Snapshot& snapshot) {
    const RunInfo& run = *snapshot.run;
    switch (data) {
        case ViewData::Any:
            return true;
        case ViewData::TwoDimensional:
            return run.hasGrid;
        case ViewData::Images:
            return run.isImage && run.missingData.empty();  // opened without data: none to show
        case ViewData::ConvMembers:
            return snapshot.firstConv != nullptr;
        case ViewData::OneDimensionalRegression:
            return run.hasCurve;
        case ViewData::Classification:
            return !run.regression && run.missingData.empty();
    }
    return false;
}

QString viewOptionHelp() {
    QStringList names;
    for (const ViewRow& view : kViews) {
        const QString data = viewDataText(view.data);
        names << (data.isEmpty() ? QLatin1String(view.key)
                                 : QStringLiteral("%1 (%2)").arg(QLatin1String(view.key), data));
    }
    return translated(QT_TRANSLATE_NOOP("ensemble::ui::ViewTable", "View to show: %1."))
        .arg(names.join(QStringLiteral(", ")));
}

}  // namespace ensemble::ui

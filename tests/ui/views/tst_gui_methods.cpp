// The Methods view: it lists the methods of the registry, compares
// the checked ones on the engine thread and shows exactly what compareMethods gives for the
// run's config (the table's numbers, bit for bit where they are deterministic, and the maps:
// each method's epistemic map on one shared scale); image data gets the table and no maps;
// Cancel (Esc) keeps the methods that finished; Save report writes the report's JSON; the
// window's rule for jobs: another experiment ends a comparison under way and clears the
// results, a Reset of the same one ends it and keeps the finished results, marked as the
// previous run's. The Reproduce view, the other job of the view table's that trains on the
// engine thread: its table is the CLI's --report for the same id and count bit for bit, so is
// its Copy as command line's, its export writes the CLI's files, Cancel and a new run keep the
// partial table, and the run is recorded as the CLI records it.
#include <QApplication>
#include <QClipboard>
#include <QDir>
#include <QFile>
#include <QHeaderView>
#include <QImage>
#include <QListWidget>
#include <QPushButton>
#include <QScopeGuard>
#include <QScrollBar>
#include <QSignalSpy>
#include <QTableView>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <numeric>
#include <set>
#include <string>

#include "compare/compare.h"
#include "config/config.h"
#include "controller/methods_job.h"
#include "controller/snapshot_builder.h"
#include "main_window.h"
#include "reproduce/reproduce.h"
#include "runs/run_store.h"
#include "support/gui_test_support.h"
#include "support/test_support.h"
#include "support/tiny_mnist.h"
#include "view_table.h"
#include "view_tabs.h"
#include "views/methods_maps.h"
#include "views/methods_view.h"
#include "views/reproduce_figure.h"
#include "views/reproduce_view.h"
#include "widgets/frozen_column.h"

using ensemble::CompareResult;
using ensemble::EnsembleMethod;
using ensemble::MethodComparison;
using ensemble::test::makeWindow;
using ensemble::test::sameBits;
using ensemble::test::waitFresh;
using ensemble::ui::MainWindow;
using ensemble::ui::MethodsColumn;
using ensemble::ui::MethodsOutcomePtr;
using ensemble::ui::MethodsView;
using ensemble::ui::ReproduceColumn;
using ensemble::ui::ReproduceOutcomePtr;
using ensemble::ui::ReproduceView;
using nlohmann::json;

class TestGuiMethods : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void comparesOnTheEngineThreadAsCompareMethodsDoes();
    void imageDataHasTheTableAndNoMaps();
    void cancelKeepsTheFinishedMethods();
    void saveReportWritesTheReport();
    void keyboardDrivesTheView();
    void itsKeyGivesTheViewTheFocusCtrlEnterNeeds();
    void anotherExperimentClearsTheResults();
    void resetEndsAComparisonAndKeepsTheFinishedOne();
    void closingTheWindowStopsAComparison();
    void reproduceGivesTheClisReport();
    void reproduceCancelKeepsThePartialTable();
    void activeRowMatchesTheCli();
    void aNewRunEndsAReproduction();

  private:
    // `config` set up in `w` and the Methods view in front (null when either failed).
    static MethodsView* methodsViewOn(MainWindow& w, const json& config);
    // Clicks Compare and waits for the outcome (null when none came).
    static MethodsOutcomePtr compare(MainWindow& w, MethodsView* view);
    // A run set up in `w` (a reproduction needs none, but a run standing up later would end
    // it) and the Reproduce view in front.
    static ReproduceView* reproduceViewOn(MainWindow& w);
};

namespace {

// Spirals, K = 3, a small MLP on one thread, 60 steps: a comparison takes a second or so.
// Steps that take every method a few seconds (the cancel tests).
constexpr int64_t kCancelSteps = 10000;

json methodsRun(int64_t steps = 60) {
    json c = ensemble::test::smallConfig({.members = 3, .steps = steps, .threads = 1});
    c["model"]["hidden"] = {8, 8};
    c["training"]["eval_every"] = 20;
    return c;
}

// The table row showing `method` (-1: none).
int rowOf(const QTableWidget* table, EnsembleMethod method) {
    for (int r = 0; r < table->rowCount(); ++r) {
        if (table->item(r, 0)->data(Qt::UserRole).toInt() == static_cast<int>(method)) {
            return r;
        }
    }
    return -1;
}

double cell(const QTableWidget* table, int row, MethodsColumn column) {
    return table->item(row, static_cast<int>(column))->data(Qt::UserRole).toDouble();
}

const MethodComparison* find(const CompareResult& r, EnsembleMethod method) {
    for (const MethodComparison& m : r.methods) {
        if (m.method == method) {
            return &m;
        }
    }
    return nullptr;
}

}  // namespace

void TestGuiMethods::initTestCase() {
    ensemble::test::isolateSettings();
}

MethodsView* TestGuiMethods::methodsViewOn(MainWindow& w, const json& config) {
    w.loadExperiment(config, QString());
    if (!waitFresh(w) || !w.setView(QStringLiteral("methods"))) {
        return nullptr;
    }
    return w.methodsView();
}

MethodsOutcomePtr TestGuiMethods::compare(MainWindow& w, MethodsView* view) {
    return ensemble::test::clickAndWaitFor<MethodsOutcomePtr>(
        view->compareButton(), w.controller(), &ensemble::ui::EngineController::methodsFinished,
        120000);
}

void TestGuiMethods::comparesOnTheEngineThreadAsCompareMethodsDoes() {
    auto w = makeWindow({900, 600});
    MethodsView* view = methodsViewOn(*w, methodsRun());
    QVERIFY(view != nullptr);
    QCOMPARE(ensemble::ui::viewByKey(QStringLiteral("methods")),
             std::optional<ensemble::ui::ViewId>(ensemble::ui::ViewId::Methods));
    QCOMPARE(w->currentViewName(), QStringLiteral("methods"));
    // The list is the registry, every method checked.
    const std::vector<EnsembleMethod> methods = ensemble::allEnsembleMethods();
    QCOMPARE(view->methodList()->count(), static_cast<int>(methods.size()));
    QCOMPARE(view->checkedMethods(), methods);
    QVERIFY(view->compareButton()->isEnabled());
    QVERIFY(!view->copyButton()->isEnabled());
    // What a comparison trains is said before it runs (methodsRun: K = 3, 60 steps).
    QVERIFY2(view->message().contains(QStringLiteral("K = 3, 60 steps, seed")),
             qPrintable(view->message()));
    QVERIFY2(view->compareButton()->toolTip().contains(QStringLiteral("60 steps")),
             qPrintable(view->compareButton()->toolTip()));

    QSignalSpy progress(w->controller(), &ensemble::ui::EngineController::methodsProgress);
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::methodsFinished);
    view->compareButton()->click();
    // The click returns with the comparison under way elsewhere: the engine thread trains.
    QVERIFY(view->isComparing());
    QVERIFY(finished.isEmpty());
    QVERIFY(!view->compareButton()->isEnabled());
    QVERIFY(view->cancelButton()->isEnabled());
    QVERIFY(finished.wait(120000));
    QCoreApplication::processEvents();
    const MethodsOutcomePtr outcome = finished.at(0).at(0).value<MethodsOutcomePtr>();
    QVERIFY(outcome != nullptr);
    QVERIFY2(outcome->error.isEmpty(), qPrintable(outcome->error));
    QVERIFY(!outcome->cancelled);
    QCOMPARE(view->outcome(), outcome);
    QVERIFY(!view->isComparing());
    QVERIFY(view->compareButton()->isEnabled());
    QVERIFY(view->copyButton()->isEnabled());
    QVERIFY(view->saveButton()->isEnabled());
    // Progress named each method and ended measuring the last.
    QVERIFY(!progress.isEmpty());
    const auto last = progress.last().at(0).value<ensemble::CompareProgress>();
    QCOMPARE(last.method, static_cast<int>(methods.size()) - 1);
    QCOMPARE(last.methods, static_cast<int>(methods.size()));
    QVERIFY(last.phase == ensemble::ComparePhase::Measuring);
    QCOMPARE(last.step, int64_t{60});
    // Scrolled to its last column, the table still names each row's method at its left.
    QTableWidget* wide = view->table();
    wide->horizontalScrollBar()->setValue(wide->horizontalScrollBar()->maximum());
    QCoreApplication::processEvents();
    QTableView* frozen = view->frozenColumn()->view();
    QVERIFY(frozen->isVisible());
    QCOMPARE(frozen->columnWidth(0), wide->columnWidth(0));
    const QRect firstName = frozen->visualRect(frozen->model()->index(0, 0));
    QVERIFY(frozen->viewport()->rect().intersects(firstName));
    QVERIFY(!frozen->model()->index(0, 0).data().toString().isEmpty());

    // compareMethods itself on the run's config, as `ensemble-cli compare` calls it.
    const ensemble::ExperimentConfig config = w->controller()->snapshot()->run->config;
    const CompareResult direct = ensemble::compareMethods(
        config, methods, ensemble::ui::methodsCompareOptions(ensemble::ui::kMethodsGridSize));
    QCOMPARE(direct.methods.size(), methods.size());
    const QTableWidget* table = view->table();
    QCOMPARE(table->rowCount(), static_cast<int>(methods.size()));
    for (const MethodComparison& d : direct.methods) {
        const int row = rowOf(table, d.method);
        QVERIFY(row >= 0);
        QCOMPARE(table->item(row, 0)->text(),
                 QString::fromUtf8(ensemble::ensembleMethodInfo(d.method).label));
        QVERIFY(sameBits(cell(table, row, MethodsColumn::Accuracy), d.accuracy));
        QVERIFY(sameBits(cell(table, row, MethodsColumn::Nll), d.nll));
        QVERIFY(sameBits(cell(table, row, MethodsColumn::Brier), d.brier));
        QVERIFY(sameBits(cell(table, row, MethodsColumn::Ece), d.ece));
        QVERIFY(sameBits(cell(table, row, MethodsColumn::OodAuroc), d.oodAuroc));
        QVERIFY(sameBits(cell(table, row, MethodsColumn::OodMeanMi), d.oodMeanMi));
        QVERIFY(std::isfinite(d.oodMeanMi) && d.oodMeanMi >= 0);
        QVERIFY(sameBits(cell(table, row, MethodsColumn::ShiftNll), d.shiftNll));
        QCOMPARE(cell(table, row, MethodsColumn::Parameters), static_cast<double>(d.parameters));
        QVERIFY(std::isfinite(d.oodAuroc));  // the far ring for 2-D points
        // The shown text is the number, rounded.
        QCOMPARE(table->item(row, static_cast<int>(MethodsColumn::Accuracy))->text(),
                 QString::number(d.accuracy, 'f', 4));
        QVERIFY(cell(table, row, MethodsColumn::TrainSeconds) > 0);
    }
    // The report's keys are the issue's, and the two compare adds (ood_mean_mi,
    // diverged_members).
    const std::set<std::string> keys = {"accuracy",     "nll",           "brier",
                                        "ece",          "ood_auroc",     "shift_nll",
                                        "parameters",   "train_seconds", "predict_seconds_per_1000",
                                        "peak_rss_mib", "ood_mean_mi",   "diverged_members"};
    for (EnsembleMethod m : methods) {
        const json& row = outcome->report.at("methods").at(ensemble::toString(m));
        std::set<std::string> got;
        for (auto it = row.begin(); it != row.end(); ++it) {
            got.insert(it.key());
        }
        QVERIFY(got == keys);
    }

    // The maps: one per method, on one scale, each the engine's grid of that method.
    ensemble::ui::MethodsMaps* maps = view->maps();
    QVERIFY(maps->isVisible());
    QCOMPARE(maps->count(), static_cast<int>(methods.size()));
    double high = 0.0;
    for (const MethodComparison& d : direct.methods) {
        QVERIFY(d.grid.has_value());
        for (double v : d.grid->ensemble.epistemic) {
            high = std::max(high, v);
        }
    }
    high = std::max(high, 0.01 * std::log(2.0));
    QCOMPARE(outcome->epistemicHigh, high);
    QCOMPARE(maps->bar()->high(), high);
    QVERIFY(maps->bar()->isVisible());
    for (int i = 0; i < maps->count(); ++i) {
        const ensemble::ui::MethodMap* map = maps->map(i);
        const MethodComparison* d = find(direct, map->figure().method);
        QVERIFY(d != nullptr);
        QCOMPARE(map->title(), QString::fromUtf8(ensemble::ensembleMethodInfo(d->method).label));
        const std::vector<double>& mi = d->grid->ensemble.epistemic;
        QCOMPARE(map->figure().meanEpistemic,
                 std::accumulate(mi.begin(), mi.end(), 0.0) / static_cast<double>(mi.size()));
        const ensemble::ui::HeatImage expected =
            ensemble::ui::sequentialHeatImage(mi, d->grid->size, high);
        QCOMPARE(expected.high, high);  // the shared scale, whatever this method's maximum
        QVERIFY(map->figure().epistemic.image == expected.image);
        QVERIFY(!map->figure().boundary.empty());  // two spirals: a boundary crosses the box
        QVERIFY(map->isVisible());
        QVERIFY(map->width() >= map->minimumSizeHint().width());
    }
    QVERIFY(!view->grab().isNull());

    // Copy: the table as TSV, a header with units and a row per method, every digit.
    view->copyButton()->click();
    const QString tsv = view->tableText(QLatin1Char('\t'));
    QStringList lines = tsv.trimmed().split(QLatin1Char('\n'));
    QCOMPARE(lines.size(), 1 + static_cast<int>(methods.size()));
    QVERIFY(lines[0].startsWith(QStringLiteral("Method\tAccuracy\tNLL (nats)")));
    const QStringList first = lines[1].split(QLatin1Char('\t'));
    QCOMPARE(first.size(), ensemble::ui::kMethodsColumnCount);
    const MethodComparison* shown =
        find(direct, static_cast<EnsembleMethod>(table->item(0, 0)->data(Qt::UserRole).toInt()));
    QVERIFY(shown != nullptr);
    QCOMPARE(first[0], QLatin1String(ensemble::toString(shown->method)));
    QVERIFY(sameBits(first[1].toDouble(), shown->accuracy));

    // Sorting by a column orders the rows by its numbers.
    view->table()->sortByColumn(static_cast<int>(MethodsColumn::Nll), Qt::DescendingOrder);
    for (int r = 1; r < table->rowCount(); ++r) {
        QVERIFY(cell(table, r - 1, MethodsColumn::Nll) >= cell(table, r, MethodsColumn::Nll));
    }
}

void TestGuiMethods::imageDataHasTheTableAndNoMaps() {
    QTemporaryDir dir;
    QVERIFY(ensemble::test::writeIdx(dir.path(), "train-images-idx3-ubyte",
                                     "train-labels-idx1-ubyte", 200, 1));
    QVERIFY(ensemble::test::writeIdx(dir.path(), "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                     100, 2));
    json c = ensemble::loadConfigJson("mnist-mlp");
    c["dataset"]["path"] = dir.path().toStdString();
    c["model"]["hidden"] = {16};
    c["ensemble"]["members"] = 2;
    c["training"]["batch_size"] = 20;
    c["training"]["epochs"] = 0;
    c["training"]["steps"] = 20;
    c["training"]["eval_every"] = 10;
    c["backend"] = {{"kind", "cpu"}, {"threads", 1}};
    auto w = makeWindow({900, 600});
    MethodsView* view = methodsViewOn(*w, c);
    QVERIFY(view != nullptr);
    const MethodsOutcomePtr outcome = compare(*w, view);
    QVERIFY(outcome != nullptr);
    QVERIFY2(outcome->error.isEmpty(), qPrintable(outcome->error));
    const std::vector<EnsembleMethod> methods = ensemble::allEnsembleMethods();
    QCOMPARE(view->table()->rowCount(), static_cast<int>(methods.size()));
    // No plane to draw: no maps, and none in the outcome.
    QVERIFY(outcome->figures.empty());
    QCOMPARE(view->maps()->count(), 0);
    QVERIFY(!view->maps()->isVisible());
    QCOMPARE(QString::fromStdString(outcome->result->oodName), QStringLiteral("uniform-noise"));
    const CompareResult direct = ensemble::compareMethods(
        w->controller()->snapshot()->run->config, methods,
        ensemble::ui::methodsCompareOptions(ensemble::ui::kMethodsGridSize));
    for (const MethodComparison& d : direct.methods) {
        const int row = rowOf(view->table(), d.method);
        QVERIFY(row >= 0);
        QVERIFY(sameBits(cell(view->table(), row, MethodsColumn::Accuracy), d.accuracy));
        QVERIFY(sameBits(cell(view->table(), row, MethodsColumn::Nll), d.nll));
        QVERIFY(!d.grid.has_value());
    }
}

void TestGuiMethods::cancelKeepsTheFinishedMethods() {
    // Every method trains the config's steps: long enough (a few seconds) that the second is
    // still training when the Esc sent at its start arrives, short enough to wait for the first.
    auto w = makeWindow({900, 600});
    MethodsView* view = methodsViewOn(*w, methodsRun(kCancelSteps));
    QVERIFY(view != nullptr);
    // Two methods at least, so that one finishes before the cancel: the registry's, and its
    // first again while it holds only one (the comparison trains the list it is given).
    std::vector<EnsembleMethod> methods = ensemble::allEnsembleMethods();
    if (methods.size() < 2) {
        methods.push_back(methods.front());
    }
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    view->table()->setFocus();
    QSignalSpy cancelled(view, &MethodsView::cancelRequested);
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::methodsFinished);
    bool pressed = false;
    QObject context;
    connect(w->controller(), &ensemble::ui::EngineController::methodsProgress, &context,
            [&](const ensemble::CompareProgress& p) {
                if (p.method == 1 && !pressed) {
                    pressed = true;
                    QTest::keyClick(view->table(), Qt::Key_Escape);  // Esc, as Cancel does
                }
            });
    view->startComparison(methods);
    QVERIFY(view->isComparing());
    QVERIFY(finished.wait(120000));
    QCoreApplication::processEvents();
    QVERIFY(pressed);
    QCOMPARE(cancelled.count(), 1);
    const MethodsOutcomePtr outcome = finished.at(0).at(0).value<MethodsOutcomePtr>();
    QVERIFY2(outcome->error.isEmpty(), qPrintable(outcome->error));
    QVERIFY(outcome->cancelled);
    QVERIFY(!outcome->result->complete);
    QCOMPARE(outcome->result->methods.size(), std::size_t{1});
    QCOMPARE(outcome->report.at("complete").get<bool>(), false);
    // The finished method is shown: its row and its map; the message says what happened.
    QCOMPARE(view->outcome(), outcome);
    QVERIFY(!view->isComparing());
    QVERIFY(view->compareButton()->isEnabled());
    QCOMPARE(view->table()->rowCount(), 1);
    QCOMPARE(view->maps()->count(), 1);
    QVERIFY2(view->message().startsWith(
                 QStringLiteral("Cancelled: 1 of %1").arg(static_cast<int>(methods.size()))),
             qPrintable(view->message()));
    // It is the whole method, trained to the end: compareMethods of it alone gives its numbers.
    const CompareResult alone =
        ensemble::compareMethods(w->controller()->snapshot()->run->config, {methods.front()},
                                 ensemble::ui::methodsCompareOptions(0));
    QVERIFY(sameBits(cell(view->table(), 0, MethodsColumn::Accuracy), alone.methods[0].accuracy));
    QVERIFY(sameBits(cell(view->table(), 0, MethodsColumn::Nll), alone.methods[0].nll));
}

void TestGuiMethods::saveReportWritesTheReport() {
    auto w = makeWindow({900, 600});
    MethodsView* view = methodsViewOn(*w, methodsRun());
    QVERIFY(view != nullptr);
    QTemporaryDir dir;
    QString error;
    // Nothing to save before a comparison.
    QVERIFY(!view->saveButton()->isEnabled());
    QVERIFY(!view->saveReport(dir.filePath(QStringLiteral("early.json")), &error));
    QVERIFY(!error.isEmpty());
    QVERIFY(!QFile::exists(dir.filePath(QStringLiteral("early.json"))));
    const MethodsOutcomePtr outcome = compare(*w, view);
    QVERIFY(outcome != nullptr && outcome->error.isEmpty());
    QVERIFY(view->saveButton()->isEnabled());

    const QString path = dir.filePath(QStringLiteral("report.json"));
    QVERIFY2(view->saveReport(path, &error), qPrintable(error));
    QFile file(path);
    QVERIFY(file.open(QIODevice::ReadOnly));
    const json report = json::parse(file.readAll().toStdString());
    QCOMPARE(QString::fromStdString(report.dump()), QString::fromStdString(outcome->report.dump()));
    QVERIFY(report.at("config") == w->controller()->snapshot()->run->config.json);
    QCOMPARE(report.at("complete").get<bool>(), true);
    QCOMPARE(report.at("methods").size(), ensemble::allEnsembleMethods().size());
    for (EnsembleMethod m : ensemble::allEnsembleMethods()) {
        const json& row = report.at("methods").at(ensemble::toString(m));
        QVERIFY(row.at("accuracy").is_number());
        QVERIFY(row.at("nll").is_number());
        QVERIFY(row.at("ood_auroc").is_number());
        QVERIFY(row.at("parameters").is_number_integer());
        QVERIFY(row.at("peak_rss_mib").is_number());
    }
    // The table as CSV: compareCsv's text.
    const QString csv = dir.filePath(QStringLiteral("table.csv"));
    QVERIFY2(view->saveReport(csv, &error), qPrintable(error));
    QFile csvFile(csv);
    QVERIFY(csvFile.open(QIODevice::ReadOnly));
    QCOMPARE(QString::fromUtf8(csvFile.readAll()),
             QString::fromStdString(ensemble::compareCsv(*outcome->result)));
    // A folder is not a file: refused, with the reason, and nothing left in it.
    error.clear();
    QVERIFY(!view->saveReport(dir.path(), &error));
    QVERIFY(!error.isEmpty());
    QCOMPARE(static_cast<int>(QDir(dir.path()).entryList(QDir::Files | QDir::Hidden).size()), 2);
}

void TestGuiMethods::keyboardDrivesTheView() {
    auto w = makeWindow({900, 600});
    w->loadExperiment(methodsRun(), QString());
    QVERIFY(waitFresh(*w));
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    // The view's own key brings it forward.
    QTest::keySequence(w.get(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M));
    QCOMPARE(w->currentViewName(), QStringLiteral("methods"));
    MethodsView* view = w->methodsView();
    // Space unchecks the method under the cursor, and again checks it; with none checked there
    // is nothing to compare.
    QListWidget* list = view->methodList();
    list->setFocus();
    list->setCurrentRow(0);
    const auto first = static_cast<EnsembleMethod>(list->item(0)->data(Qt::UserRole).toInt());
    const std::size_t all = view->checkedMethods().size();
    QTest::keyClick(list, Qt::Key_Space);
    QCOMPARE(view->checkedMethods().size(), all - 1);
    if (all == 1) {
        QVERIFY(!view->compareButton()->isEnabled());
    }
    QTest::keyClick(list, Qt::Key_Space);
    QCOMPARE(view->checkedMethods().size(), all);
    QVERIFY(view->checkedMethods().front() == first);
    // The list took Space: the window's Space (Train) did not start the run.
    QVERIFY(ensemble::test::engineIdle(*w->controller()));
    QCOMPARE(w->controller()->snapshot()->step, int64_t{0});
    // Ctrl+Enter compares.
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::methodsFinished);
    QTest::keyClick(list, Qt::Key_Return, Qt::ControlModifier);
    QVERIFY(view->isComparing());
    QVERIFY(finished.wait(120000));
    QCoreApplication::processEvents();
    QCOMPARE(view->table()->rowCount(), static_cast<int>(all));
}

// Switching to the view by its key from a field of the Experiment panel gives the view the
// focus its own keys need: Ctrl+Enter compares at once, without a click into the view first.
void TestGuiMethods::itsKeyGivesTheViewTheFocusCtrlEnterNeeds() {
    auto w = makeWindow({900, 600});
    w->loadExperiment(methodsRun(), QString());
    QVERIFY(waitFresh(*w));
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    QVERIFY(ensemble::test::focusAPanelField(*w) != nullptr);
    QTest::keySequence(w.get(), QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_M));
    QCOMPARE(w->currentViewName(), QStringLiteral("methods"));
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::methodsFinished);
    QTest::keyClick(QApplication::focusWidget(), Qt::Key_Return, Qt::ControlModifier);
    QVERIFY(w->methodsView()->isComparing());
    QVERIFY(finished.wait(ensemble::test::progressWaitMs(120000)));
}

void TestGuiMethods::anotherExperimentClearsTheResults() {
    auto w = makeWindow({900, 600});
    MethodsView* view = methodsViewOn(*w, methodsRun());
    QVERIFY(view != nullptr);
    const MethodsOutcomePtr outcome = compare(*w, view);
    QVERIFY(outcome != nullptr && outcome->error.isEmpty());
    const int rows = view->table()->rowCount();
    QVERIFY(rows > 0);
    // Reset: a new run of the same experiment; the comparison trains from the config, so it
    // still stands.
    const uint64_t before = w->controller()->currentRunId();
    w->resetAction()->trigger();
    QVERIFY(QTest::qWaitFor(
        [&] {
            const auto s = w->controller()->snapshot();
            return s && s->run->runId > before;
        },
        20000));
    QCoreApplication::processEvents();
    QCOMPARE(view->outcome(), outcome);
    QCOMPARE(view->table()->rowCount(), rows);
    QVERIFY(view->showsPreviousRun());
    QVERIFY2(view->message().contains(QStringLiteral("before the Reset")),
             qPrintable(view->message()));
    // Another experiment: the results were of the one before.
    w->loadExperiment(methodsRun(80), QString());
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QVERIFY(view->outcome() == nullptr);
    QCOMPARE(view->table()->rowCount(), 0);
    QCOMPARE(view->maps()->count(), 0);
    QVERIFY2(view->message().contains(QStringLiteral("experiment changed")),
             qPrintable(view->message()));
    // A comparison under way when the experiment changes ends at once: no outcome ever comes
    // for it, and the new run gets the engine thread although the comparison would take
    // minutes.
    w->loadExperiment(methodsRun(kCancelSteps * 200), QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(w->setView(QStringLiteral("methods")));
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::methodsFinished);
    QSignalSpy ended(w->controller(), &ensemble::ui::EngineController::jobsEnded);
    QSignalSpy progress(w->controller(), &ensemble::ui::EngineController::methodsProgress);
    view->compareButton()->click();
    QVERIFY(progress.wait(60000));  // training its first method
    QVERIFY(view->isComparing());
    w->loadExperiment(methodsRun(), QString());
    QCOMPARE(ended.count(), 1);
    QCOMPARE(ended.at(0).at(0).toBool(), false);
    QVERIFY(!view->isComparing());
    QVERIFY(!view->cancelButton()->isEnabled());
    QVERIFY(!w->controller()->isJobRunning());
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QCOMPARE(finished.count(), 0);
    QVERIFY(view->outcome() == nullptr);
    QCOMPARE(view->table()->rowCount(), 0);
    QVERIFY(view->compareButton()->isEnabled());
}

void TestGuiMethods::resetEndsAComparisonAndKeepsTheFinishedOne() {
    auto w = makeWindow({900, 600});
    MethodsView* view = methodsViewOn(*w, methodsRun());
    QVERIFY(view != nullptr);
    const MethodsOutcomePtr outcome = compare(*w, view);
    QVERIFY(outcome != nullptr && outcome->error.isEmpty() && !outcome->cancelled);
    const int rows = view->table()->rowCount();
    // Compare again and Reset before this thread takes another event: whatever the engine
    // thread did meanwhile, the second comparison's outcome is never shown.
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::methodsFinished);
    QSignalSpy ended(w->controller(), &ensemble::ui::EngineController::jobsEnded);
    view->compareButton()->click();
    QVERIFY(view->isComparing());
    QVERIFY(w->controller()->isJobRunning());
    w->resetAction()->trigger();
    QCOMPARE(ended.count(), 1);
    QCOMPARE(ended.at(0).at(0).toBool(), true);  // the same experiment
    QVERIFY(!view->isComparing());
    QVERIFY(!w->controller()->isJobRunning());
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QCOMPARE(finished.count(), 0);
    // The comparison that finished stays, marked as the previous run's.
    QCOMPARE(view->outcome(), outcome);
    QCOMPARE(view->table()->rowCount(), rows);
    QVERIFY(view->showsPreviousRun());
    QVERIFY2(view->message().contains(QStringLiteral("before the Reset")),
             qPrintable(view->message()));
    QVERIFY(view->compareButton()->isEnabled());
}

void TestGuiMethods::closingTheWindowStopsAComparison() {
    // A comparison of minutes under way: closing the window cancels it and joins the engine
    // thread (the destructor would otherwise wait for every method to train; the suite's
    // time limit is the check).
    auto w = makeWindow({900, 600});
    MethodsView* view = methodsViewOn(*w, methodsRun(kCancelSteps * 200));
    QVERIFY(view != nullptr);
    QSignalSpy progress(w->controller(), &ensemble::ui::EngineController::methodsProgress);
    view->compareButton()->click();
    QVERIFY(progress.wait(60000));
    QVERIFY(view->isComparing());
    w.reset();  // returns once the engine thread has stopped
}

ReproduceView* TestGuiMethods::reproduceViewOn(MainWindow& w) {
    w.loadExperiment(methodsRun(), QString());
    if (!waitFresh(w) || !w.setView(QStringLiteral("reproduce"))) {
        return nullptr;
    }
    return w.viewTabs()->viewAs<ReproduceView>(ensemble::ui::ViewId::Reproduce);
}

namespace {

// A report's number (null: NaN), to hold against the table's cells bit for bit.
double reportNumber(const json& v) {
    return v.is_number() ? v.get<double>() : std::numeric_limits<double>::quiet_NaN();
}

json readJson(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? json::parse(f.readAll().toStdString(), nullptr, false)
                                       : json();
}

QByteArray readBytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

}  // namespace

void TestGuiMethods::reproduceGivesTheClisReport() {
    // A store of its own: the suite's store keeps the entries of its earlier runs.
    QTemporaryDir storeDir;
    QVERIFY(storeDir.isValid());
    const ensemble::test::ScopedRunStore recordTo(storeDir.filePath(QStringLiteral("runs.sqlite")));
    // The cheapest row with one seed: four panels, a fraction of a second each.
    auto w = makeWindow({900, 600});
    ReproduceView* view = reproduceViewOn(*w);
    QVERIFY(view != nullptr);
    QVERIFY(view->setReproduction(QStringLiteral("deep-ensembles-fig1")));
    view->setCount(1);
    const QString line = view->commandLine();
    QCOMPARE(line, QStringLiteral("ensemble-cli reproduce deep-ensembles-fig1 --seeds 1"));
    view->copyButton()->click();
    QCOMPARE(QApplication::clipboard()->text(), line);
    const auto outcome = ensemble::test::clickAndWaitFor<ReproduceOutcomePtr>(
        view->runButton(), w->controller(), &ensemble::ui::EngineController::reproduceFinished,
        120000);
    QVERIFY(outcome != nullptr);
    QVERIFY2(outcome->error.isEmpty(), qPrintable(outcome->error));
    QVERIFY(!outcome->cancelled && outcome->state->result->complete);
    QCOMPARE(view->state(), outcome->state);

    // Copy as command's line, run: the same report, row for row, bit for bit.
    QTemporaryDir dir;
    QStringList args = ensemble::test::shellWords(line);
    QCOMPARE(args.takeFirst(), QStringLiteral("ensemble-cli"));
    const QString reportPath = dir.filePath(QStringLiteral("cli.json"));
    const QString csvDir = dir.filePath(QStringLiteral("cli-csv"));
    const QString figurePath = dir.filePath(QStringLiteral("cli.svg"));
    args << QStringLiteral("--report") << reportPath << QStringLiteral("--csv") << csvDir
         << QStringLiteral("--figure") << figurePath;
    ENSEMBLE_VERIFY_RUN_OK(ensemble::test::runCli(args));
    const json cli = readJson(reportPath);
    const json& ours = outcome->state->report;
    QVERIFY(!cli["rows"].empty());
    QVERIFY2(cli["rows"] == ours["rows"], ours["rows"].dump(1).c_str());
    QCOMPARE(cli["runs"].size(), ours["runs"].size());
    for (std::size_t i = 0; i < cli["runs"].size(); ++i) {
        QVERIFY(cli["runs"][i]["figures"] == ours["runs"][i]["figures"]);
        QVERIFY(cli["runs"][i]["seed"] == ours["runs"][i]["seed"]);
    }
    QVERIFY(cli["summary"] == ours["summary"]);
    // The table shows those numbers: the cells hold them exactly.
    const QTableWidget* table = view->table();
    QCOMPARE(table->rowCount(), static_cast<int>(cli["rows"].size()));
    for (int r = 0; r < table->rowCount(); ++r) {
        const json& row = cli["rows"][static_cast<std::size_t>(r)];
        const QTableWidgetItem* o = table->item(r, static_cast<int>(ReproduceColumn::Ours));
        QVERIFY(sameBits(o->data(ensemble::ui::kReproduceMeanRole).toDouble(),
                         reportNumber(row["ours"]["mean"])));
        QVERIFY(sameBits(o->data(ensemble::ui::kReproduceSeRole).toDouble(),
                         reportNumber(row["ours"]["se"])));
        QCOMPARE(table->item(r, static_cast<int>(ReproduceColumn::Level))->text().toStdString(),
                 row["level"].get<std::string>());
        const std::string verdict = row["verdict"].get<std::string>();
        QCOMPARE(table->item(r, static_cast<int>(ReproduceColumn::Verdict))->text(),
                 verdict == "none" ? QStringLiteral("–") : QString::fromStdString(verdict));
    }

    // The figure shown is the one --figure draws, byte for byte.
    QVERIFY(view->figure()->isVisible());
    QCOMPARE(view->figure()->svg(), readBytes(figurePath));

    // Export: the report as --report writes it, the CSVs as --csv does (runs.csv holds each
    // run's seconds, which differ from one process to the next), the figure as --figure does
    // and as a PNG at twice its size.
    const QString exportDir = dir.filePath(QStringLiteral("export"));
    QStringList written;
    QString error;
    QVERIFY2(view->exportTo(exportDir, &written, &error), qPrintable(error));
    QVERIFY(readJson(QDir(exportDir).filePath(QStringLiteral("report.json")))["rows"] ==
            cli["rows"]);
    const QStringList csvs = QDir(csvDir).entryList(QDir::Files, QDir::Name);
    QVERIFY(csvs.contains(QStringLiteral("table.csv")) &&
            csvs.contains(QStringLiteral("curves.csv")));
    QCOMPARE(written.size(), csvs.size() + 3);
    QCOMPARE(readBytes(QDir(exportDir).filePath(QStringLiteral("figure.svg"))),
             readBytes(figurePath));
    const QImage png(QDir(exportDir).filePath(QStringLiteral("figure.png")));
    QVERIFY(!png.isNull());
    QCOMPARE(png.size(), view->figure()->render(2.0).size());
    for (const QString& name : csvs) {
        QVERIFY2(QFile::exists(QDir(exportDir).filePath(name)), qPrintable(name));
        if (name != QStringLiteral("runs.csv")) {
            QCOMPARE(readBytes(QDir(exportDir).filePath(name)),
                     readBytes(QDir(csvDir).filePath(name)));
        }
    }

    // Recorded as the CLI records it: kind reproduce, its command, resultFigures, the export.
    const auto store = ensemble::runs::defaultRunStorePath();
    ensemble::runs::RunQuery query;
    query.filters = {{"program", ensemble::runs::FilterOp::Equal, "ensemble-lab"},
                     {"kind", ensemble::runs::FilterOp::Equal, "reproduce"}};
    query.full = true;
    const auto recorded = [&] {
        const std::vector<ensemble::runs::RunEntry> entries =
            ensemble::runs::RunStore::open(store).list(query);
        return entries.size() == 1 && entries.front().files.size() == std::size_t(written.size());
    };
    QTRY_VERIFY_WITH_TIMEOUT(recorded(), 10000);
    const ensemble::runs::RunEntry entry =
        ensemble::runs::RunStore::open(store).list(query).front();
    QCOMPARE(entry.state, ensemble::runs::RunState::Finished);
    QCOMPARE(QString::fromStdString(entry.commandLine), line);
    QVERIFY(entry.figures == ensemble::reproduce::resultFigures(*outcome->state->result));
    QVERIFY(entry.config == outcome->state->result->plan.front().config);
}

void TestGuiMethods::reproduceCancelKeepsThePartialTable() {
    // One UCI set, splits of a second or so: Cancel once the first is judged. Eight, so that a
    // loaded machine's late Esc still finds runs left to cancel (the rest never run).
    auto w = makeWindow({900, 600});
    ReproduceView* view = reproduceViewOn(*w);
    QVERIFY(view != nullptr);
    QVERIFY(view->setReproduction(QStringLiteral("deep-ensembles-uci")));
    view->setLevel(QStringLiteral("yacht"));
    view->setCount(8);
    QCOMPARE(view->commandLine(),
             QStringLiteral("ensemble-cli reproduce deep-ensembles-uci/yacht --splits 8"));
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    view->table()->setFocus();
    QSignalSpy cancelled(view, &ReproduceView::cancelRequested);
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::reproduceFinished);
    view->runButton()->click();
    QVERIFY(view->isRunning());
    QVERIFY(QTest::qWaitFor([&] { return view->state() != nullptr; },
                            ensemble::test::progressWaitMs(120000)));
    QVERIFY(view->cancelButton()->isEnabled());
    QTest::keyClick(view->table(), Qt::Key_Escape);  // Esc, as Cancel does
    QCOMPARE(cancelled.count(), 1);
    QVERIFY(finished.count() == 1 || finished.wait(60000));
    const auto outcome = finished.at(0).at(0).value<ReproduceOutcomePtr>();
    QVERIFY2(outcome->error.isEmpty(), qPrintable(outcome->error));
    QVERIFY(outcome->cancelled);
    const ensemble::reproduce::ReproductionResult& result = *outcome->state->result;
    QVERIFY(!result.complete);
    QVERIFY(!result.outcomes.empty() && result.outcomes.size() < result.plan.size());
    QVERIFY(!view->isRunning());
    QVERIFY(view->table()->rowCount() > 0);
    QCOMPARE(view->table()->item(0, static_cast<int>(ReproduceColumn::N))->text(),
             QString::number(result.outcomes.size()));
    QVERIFY2(view->message().startsWith(QStringLiteral("Cancelled")), qPrintable(view->message()));
    QVERIFY(view->summary().contains(QStringLiteral("Partial")));
    QVERIFY(view->runButton()->isEnabled());
    QVERIFY(view->exportButton()->isEnabled());
}

void TestGuiMethods::activeRowMatchesTheCli() {
    // Gal et al.'s row (issue 50) through the app's job and through `ensemble-cli reproduce`, on
    // a tiny generated MNIST with a tiny study: the same table, run figures, CSVs and figure
    // (the curves with the paper's points), bit for bit.
    QTemporaryDir data;
    QVERIFY(data.isValid());
    QVERIFY(ensemble::test::writeTinyMnistFolder(data.filePath(QStringLiteral("ensemblelab/mnist")),
                                                 ensemble::test::kTinyActiveTrainRows,
                                                 ensemble::test::kTinyActiveTestRows));
    const QByteArray savedData = qgetenv("XDG_DATA_HOME");
    qputenv("XDG_DATA_HOME", QFile::encodeName(data.path()));
    const auto restore = qScopeGuard([&] { qputenv("XDG_DATA_HOME", savedData); });
    QTemporaryDir storeDir;
    QVERIFY(storeDir.isValid());
    const ensemble::test::ScopedRunStore recordTo(storeDir.filePath(QStringLiteral("runs.sqlite")));

    auto w = makeWindow({900, 600});
    ensemble::ui::ReproduceRequest request;
    request.id = "gal-2017-active";
    request.options.quick = true;
    request.options.overrides = ensemble::test::tinyActiveStudy();
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::reproduceFinished);
    w->controller()->runReproduction(request);
    QVERIFY(finished.count() == 1 || finished.wait(ensemble::test::progressWaitMs(120000)));
    const auto outcome = finished.at(0).at(0).value<ReproduceOutcomePtr>();
    QVERIFY2(outcome->error.isEmpty(), qPrintable(outcome->error));
    QVERIFY(!outcome->cancelled && outcome->state->result->complete);

    QTemporaryDir dir;
    const QString reportPath = dir.filePath(QStringLiteral("cli.json"));
    const QString csvDir = dir.filePath(QStringLiteral("cli-csv"));
    const QString figurePath = dir.filePath(QStringLiteral("cli.svg"));
    QStringList args = {"reproduce", "gal-2017-active", "--quick", "--report",
                        reportPath,  "--csv",           csvDir,    "--figure",
                        figurePath,  "--no-record"};
    for (const std::string& o : request.options.overrides) {
        args << "--set" << QString::fromStdString(o);
    }
    ENSEMBLE_VERIFY_RUN_OK(ensemble::test::runCli(args));
    const json cli = readJson(reportPath);
    const json& ours = outcome->state->report;
    QVERIFY(!cli["rows"].empty());
    QVERIFY2(cli["rows"] == ours["rows"], ours["rows"].dump(1).c_str());
    QCOMPARE(cli["runs"].size(), std::size_t{2});  // bald and random, seed 1
    QCOMPARE(cli["runs"].size(), ours["runs"].size());
    for (std::size_t i = 0; i < cli["runs"].size(); ++i) {
        QVERIFY(cli["runs"][i]["figures"] == ours["runs"][i]["figures"]);
        QVERIFY(cli["runs"][i]["seed"] == ours["runs"][i]["seed"]);
    }
    QVERIFY(cli["summary"] == ours["summary"]);
    // The curves: every CSV but runs.csv (its seconds differ between processes), and the figure.
    const std::map<std::string, std::string> csvs =
        ensemble::reproduce::resultCsvs(*outcome->state->result);
    QVERIFY(csvs.count("active_curves.csv") == 1 && csvs.count("table.csv") == 1);
    for (const auto& [name, text] : csvs) {
        if (name != "runs.csv") {
            QVERIFY2(readBytes(QDir(csvDir).filePath(QString::fromStdString(name))) ==
                         QByteArray::fromStdString(text),
                     name.c_str());
        }
    }
    QVERIFY(outcome->state->figure.find("panel-active") != std::string::npos);
    QCOMPARE(QByteArray::fromStdString(outcome->state->figure), readBytes(figurePath));
}

void TestGuiMethods::aNewRunEndsAReproduction() {
    // The window's one rule: a new experiment drops the job; the table judged so far stays.
    auto w = makeWindow({900, 600});
    ReproduceView* view = reproduceViewOn(*w);
    QVERIFY(view != nullptr);
    QVERIFY(view->setReproduction(QStringLiteral("deep-ensembles-uci")));
    view->setLevel(QStringLiteral("yacht"));
    view->setCount(20);
    QSignalSpy finished(w->controller(), &ensemble::ui::EngineController::reproduceFinished);
    view->runButton()->click();
    QVERIFY(QTest::qWaitFor([&] { return view->state() != nullptr; },
                            ensemble::test::progressWaitMs(120000)));
    const int rows = view->table()->rowCount();
    w->loadExperiment(methodsRun(80), QString());
    QVERIFY(!view->isRunning());
    QVERIFY(!w->controller()->isJobRunning());
    QVERIFY2(view->message().contains(QStringLiteral("ended the reproduction")),
             qPrintable(view->message()));
    QVERIFY(waitFresh(*w));
    QCoreApplication::processEvents();
    QCOMPARE(finished.count(), 0);
    QCOMPARE(view->table()->rowCount(), rows);
    QVERIFY(view->runButton()->isEnabled());
}

QTEST_MAIN(TestGuiMethods)
#include "tst_gui_methods.moc"

// The app as a lab bench, the parts a person reads and touches: nice axis ticks, a
// panel that can be read (errors under their field, a dock wide enough for its labels), the
// wheel that scrolls the panel instead of changing an unfocused field, Enter/Escape that give
// the window its shortcuts back, disabled actions that say why, the Boundary view's zoom and
// hover read-out, every view usable at 900 x 600, Help's shortcut list and About, and Help's
// documentation entries (found in the source tree here, installed beside the program).
#include <QAction>
#include <QApplication>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QDir>
#include <QDockWidget>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QLayout>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPushButton>
#include <QScreen>
#include <QScrollArea>
#include <QScrollBar>
#include <QSignalSpy>
#include <QSpinBox>
#include <QSplitter>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QUrl>
#include <QWheelEvent>
#include <QtTest>

#include <cmath>
#include <memory>
#include <set>

#include "action_reason.h"
#include "config/config.h"
#include "help_text.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "render/plot_helpers.h"
#include "support/gui_test_support.h"
#include "views/boundary_view.h"
#include "views/curves_view.h"
#include "views/images_view.h"
#include "views/sweep_view.h"
#include "widgets/elided_label.h"

using ensemble::test::engineIdle;
using ensemble::test::kLongRun;
using ensemble::test::makeWindow;
using ensemble::test::smallConfig;
using ensemble::test::waitFresh;
using ensemble::test::waitSnapshot;
using ensemble::test::wheelAt;
using ensemble::ui::MainWindow;
using ensemble::ui::SnapshotPtr;

namespace {

bool waitStep(MainWindow& w, int64_t step) {
    const uint64_t id = w.controller()->currentRunId();
    return QTest::qWaitFor(
        [&] {
            const SnapshotPtr s = w.controller()->snapshot();
            return s && s->run->runId == id && s->step == step && !s->running;
        },
        20000);
}

// Visible widgets under `root` smaller than their layout minimum (the minimum size hint, or
// an explicit minimum size), which is what gets clipped.
QStringList tooSmall(QWidget* root) {
    QStringList out;
    for (QWidget* w : root->findChildren<QWidget*>()) {
        if (!w->isVisibleTo(root->window()) || w->isWindow()) {
            continue;
        }
        // Only widgets a layout or splitter places (which honour minimum sizes); a view's own
        // parts (headers, scroll bars, viewports) are placed by the view.
        QWidget* parent = w->parentWidget();
        const bool placed = (parent->layout() != nullptr && parent->layout()->indexOf(w) >= 0) ||
                            qobject_cast<QSplitter*>(parent) != nullptr;
        if (!placed) {
            continue;
        }
        const QSize hint = w->minimumSizeHint();
        const QSizePolicy policy = w->sizePolicy();
        const int minW = w->minimumWidth() > 0                               ? w->minimumWidth()
                         : policy.horizontalPolicy() == QSizePolicy::Ignored ? 0
                                                                             : hint.width();
        const int minH = w->minimumHeight() > 0                            ? w->minimumHeight()
                         : policy.verticalPolicy() == QSizePolicy::Ignored ? 0
                                                                           : hint.height();
        if (w->width() < minW || w->height() < minH) {
            out << QStringLiteral("%1 '%2' %3x%4 < %5x%6")
                       .arg(QString::fromLatin1(w->metaObject()->className()), w->objectName())
                       .arg(w->width())
                       .arg(w->height())
                       .arg(minW)
                       .arg(minH);
        }
    }
    return out;
}

// Delivers what is pending (layouts, chart updates), then paints `view` now: what a shown view
// would draw, without waiting for the screen.
void paint(QWidget* view) {
    QCoreApplication::processEvents();
    view->grab();
}

QAction* menuAction(MainWindow& w, const QString& text) {
    for (QAction* a : w.menuBar()->findChildren<QAction*>()) {
        if (a->text() == text) {
            return a;
        }
    }
    return nullptr;
}

}  // namespace

class TestLabBench : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void niceTicksAreOneTwoFiveWithDistinctLabels();
    void wheelOverUnfocusedFieldScrollsThePanel();
    void enterReturnsFocusSoShortcutsWork();
    void errorsWrapUnderTheirFieldAndDisabledActionsSayWhy();
    void dockFitsItsLabelsAndWidens();
    void boundaryReadoutZoomAndPan();
    void everyViewUsableAt900x600();
    void statusMessagesElideAndHelpListsShortcuts();
    void helpOpensTheDocumentation();
    void logAxesPrintNothing();
    void logAxesNeverGetZeroOrLess();
    void readmeListsEveryShortcut();
};

void TestLabBench::initTestCase() {
    ensemble::test::isolateSettings();
}

void TestLabBench::niceTicksAreOneTwoFiveWithDistinctLabels() {
    using ensemble::ui::niceTicks;
    using ensemble::ui::tickLabels;
    const std::vector<double> unit = niceTicks(0.0, 1.0, 5);
    QCOMPARE(unit.size(), std::size_t(6));
    QCOMPARE(unit[3], 0.6);  // i * step, not 0.2 + 0.2 + 0.2
    QCOMPARE(tickLabels(unit).join(QLatin1Char(' ')), QStringLiteral("0.0 0.2 0.4 0.6 0.8 1.0"));
    // Member indices: whole steps only, even for a tiny range.
    QCOMPARE(niceTicks(0.0, 3.0, 6, true), (std::vector<double>{0, 1, 2, 3}));
    QCOMPARE(tickLabels(niceTicks(0.0, 3.0, 6, true)).join(QLatin1Char(' ')),
             QStringLiteral("0 1 2 3"));
    QCOMPARE(niceTicks(-0.5, 99.5, 6, true).front(), 0.0);
    QCOMPARE(niceTicks(-0.5, 99.5, 6, true)[1], 20.0);

    const double ranges[][2] = {{0, 1},          {0.93, 0.99},  {1000, 1010},    {-2.7, 3.1},
                                {1e-5, 4e-5},    {0, 20000000}, {0.001, 0.0013}, {-1e-9, 1e-9},
                                {99990, 100010}, {0, 50000000}, {0.5, 0.5004}};
    for (const auto& r : ranges) {
        for (int target : {3, 4, 5, 6, 8}) {
            const std::vector<double> ticks = niceTicks(r[0], r[1], target);
            QVERIFY2(ticks.size() >= 2, qPrintable(QStringLiteral("%1..%2").arg(r[0]).arg(r[1])));
            // The step is 1, 2 or 5 x 10^n.
            const double step = ticks[1] - ticks[0];
            const double mantissa = step / std::pow(10.0, std::floor(std::log10(step) + 1e-9));
            QVERIFY2(std::abs(mantissa - 1) < 1e-6 || std::abs(mantissa - 2) < 1e-6 ||
                         std::abs(mantissa - 5) < 1e-6,
                     qPrintable(QString::number(step)));
            for (double t : ticks) {
                QVERIFY(t >= r[0] - 1e-9 * std::abs(step) && t <= r[1] + 1e-9 * std::abs(step));
            }
            const QStringList labels = tickLabels(ticks);
            QCOMPARE(labels.size(), static_cast<qsizetype>(ticks.size()));
            const std::set<QString> distinct(labels.begin(), labels.end());
            QVERIFY2(distinct.size() == ticks.size(), qPrintable(labels.join(QLatin1Char(' '))));
        }
    }
    QVERIFY(niceTicks(1.0, 1.0, 5).empty());
    QVERIFY(niceTicks(0.0, std::nan(""), 5).empty());
}

void TestLabBench::wheelOverUnfocusedFieldScrollsThePanel() {
    auto w = makeWindow({1200, 600});
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    w->loadExperiment(smallConfig(), QString());
    auto* combo = qobject_cast<QComboBox*>(w->panel()->editor(QStringLiteral("model.activation")));
    auto* members = qobject_cast<QSpinBox*>(w->panel()->editor(QStringLiteral("ensemble.members")));
    QVERIFY(combo != nullptr && members != nullptr);
    QCOMPARE(combo->focusPolicy(), Qt::StrongFocus);
    auto* scroll = w->panel()->findChild<QScrollArea*>();
    QVERIFY(scroll != nullptr);
    QVERIFY2(scroll->verticalScrollBar()->maximum() > 0, "the panel should scroll at 600 px");
    w->centralWidget()->setFocus();
    QVERIFY(!combo->hasFocus());

    const int index = combo->currentIndex();
    const int k = members->value();
    const int scrolled = scroll->verticalScrollBar()->value();
    wheelAt(combo, QPointF(5, 5), -120);
    QCOMPARE(combo->currentIndex(), index);
    const int afterCombo = scroll->verticalScrollBar()->value();
    QVERIFY(afterCombo > scrolled);  // the panel scrolled instead
    wheelAt(members, QPointF(5, 5), -120);
    QCOMPARE(members->value(), k);
    QVERIFY(scroll->verticalScrollBar()->value() >= afterCombo);

    // With focus (clicked or tabbed into), the wheel edits the field as usual.
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    members->setFocus();
    QVERIFY(members->hasFocus());
    wheelAt(members, QPointF(5, 5), 120);
    QCOMPARE(members->value(), k + 1);
}

void TestLabBench::enterReturnsFocusSoShortcutsWork() {
    auto w = makeWindow();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    w->loadExperiment(smallConfig(), QString());
    QVERIFY(waitStep(*w, 0));
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));

    // While typing in a text field, S and Space type.
    auto* decay =
        qobject_cast<QLineEdit*>(w->panel()->editor(QStringLiteral("optimizer.weight_decay")));
    QVERIFY(decay != nullptr);
    decay->setFocus();
    decay->end(false);
    const QString text = decay->text();
    QSignalSpy stepped(w->stepAction(), &QAction::triggered);
    QTest::keyClick(decay, Qt::Key_S);
    QCOMPARE(decay->text(), text + QStringLiteral("s"));
    QTest::keyClick(decay, Qt::Key_Backspace);
    QCOMPARE(decay->text(), text);
    QCOMPARE(stepped.count(), 0);
    // Nor did anything reach the engine: it answers twice with the same, untrained weights.
    QVERIFY(engineIdle(*w->controller()));
    QCOMPARE(w->controller()->snapshot()->step, int64_t(0));
    QVERIFY(!w->controller()->isRunning());

    // Enter leaves the field: Space trains.
    QTest::keyClick(decay, Qt::Key_Return);
    QVERIFY(!decay->hasFocus());
    QTest::keyClick(w.get(), Qt::Key_Space);
    // A snapshot of the running run: the next one that says it is not running is then the
    // paused run's last (the one before training started says so too).
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return s.running && s.step > 0; }));
    QTest::keyClick(w.get(), Qt::Key_Space);
    QVERIFY(QTest::qWaitFor([&] { return !w->controller()->isRunning(); }, 20000));

    // Escape in a spin box, then S steps once.
    auto* members = qobject_cast<QSpinBox*>(w->panel()->editor(QStringLiteral("ensemble.members")));
    members->setFocus();
    QVERIFY(members->hasFocus());
    QTest::keyClick(members, Qt::Key_Escape);
    QVERIFY(!members->hasFocus());
    QVERIFY(waitSnapshot(*w, [](const auto& s) { return !s.running; }));
    // Step is enabled once the paused run's last snapshot has arrived.
    QTRY_VERIFY2(w->stepAction()->isEnabled(),
                 qPrintable(ensemble::ui::disabledReason(w->stepAction())));
    const int64_t at = w->controller()->snapshot()->step;
    QTest::keyClick(w.get(), Qt::Key_S);
    QVERIFY2(QTest::qWaitFor([&] { return w->controller()->snapshot()->step == at + 1; }, 20000),
             qPrintable(QStringLiteral("step %1, expected %2")
                            .arg(w->controller()->snapshot()->step)
                            .arg(at + 1)));
}

void TestLabBench::errorsWrapUnderTheirFieldAndDisabledActionsSayWhy() {
    auto w = makeWindow({900, 600});
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    w->loadExperiment(smallConfig(), QString());
    QVERIFY(waitStep(*w, 0));
    ensemble::ui::ExperimentPanel* panel = w->panel();
    QLineEdit* lr = nullptr;
    for (QLineEdit* e : panel->editor(QStringLiteral("optimizer.lr"))->findChildren<QLineEdit*>()) {
        if (e->isVisible()) {
            lr = e;
        }
    }
    QVERIFY(lr != nullptr);
    lr->setText(QStringLiteral("fast please"));
    QVERIFY(!panel->isValid());
    QCoreApplication::processEvents();

    // The whole message is shown, wrapped under its field, above the next row.
    QLabel* error = panel->errorLabel(QStringLiteral("optimizer.lr"));
    QVERIFY(error->isVisible());
    QVERIFY(error->text().startsWith(QStringLiteral("\"fast")));
    QVERIFY2(error->height() >= error->heightForWidth(error->width()),
             qPrintable(QStringLiteral("%1 < %2")
                            .arg(error->height())
                            .arg(error->heightForWidth(error->width()))));
    QWidget* decay = panel->editor(QStringLiteral("optimizer.weight_decay"));
    QVERIFY(decay->isVisible());
    const QRect errorRect(error->mapTo(panel, QPoint(0, 0)), error->size());
    const QRect decayRect(decay->mapTo(panel, QPoint(0, 0)), decay->size());
    QVERIFY2(!errorRect.intersects(decayRect), "the error covers the weight-decay row");
    QVERIFY(errorRect.bottom() < decayRect.top());

    // Disabled actions say why, in the tooltip and the status tip.
    QVERIFY(!w->trainAction()->isEnabled());
    const QString why = ensemble::ui::disabledReason(w->trainAction());
    QVERIFY2(why.startsWith(QStringLiteral("Train: fix the marked fields")), qPrintable(why));
    QVERIFY(w->trainAction()->toolTip().contains(why));
    QCOMPARE(w->trainAction()->statusTip(), why);
    QVERIFY(ensemble::ui::disabledReason(w->stepAction()).startsWith(QStringLiteral("Step: ")));
    lr->setText(QStringLiteral("0.01"));
    QVERIFY(panel->isValid());
    QVERIFY(w->trainAction()->isEnabled());
    QVERIFY(ensemble::ui::disabledReason(w->trainAction()).isEmpty());
    QVERIFY(w->trainAction()->statusTip().isEmpty());
    QVERIFY(!w->trainAction()->toolTip().contains(QStringLiteral("fix the marked")));
    QVERIFY(!error->isVisible());
}

void TestLabBench::dockFitsItsLabelsAndWidens() {
    auto w = makeWindow({1200, 700});
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    QCoreApplication::processEvents();
    auto* dock = w->findChild<QDockWidget*>(QStringLiteral("ExperimentDock"));
    QVERIFY(dock != nullptr);
    // Every row label is shown in full.
    int labels = 0;
    for (QLabel* l : w->panel()->findChildren<QLabel*>()) {
        if (l->objectName().endsWith(QStringLiteral(".label")) && l->isVisible()) {
            ++labels;
            QVERIFY2(l->width() >= l->sizeHint().width(), qPrintable(l->text()));
        }
    }
    QVERIFY(labels > 10);
    const int before = dock->width();
    w->resizeDocks({dock}, {before + 160}, Qt::Horizontal);
    QCoreApplication::processEvents();
    QVERIFY2(dock->width() > before + 100,
             qPrintable(QStringLiteral("%1 -> %2").arg(before).arg(dock->width())));
}

void TestLabBench::boundaryReadoutZoomAndPan() {
    auto w = makeWindow();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    w->loadExperiment(smallConfig({.members = 5}), QString());
    QVERIFY(waitStep(*w, 0));
    w->controller()->trainTo(60);
    QVERIFY(waitStep(*w, 60));
    QVERIFY(w->setView(QStringLiteral("boundary")));
    QCoreApplication::processEvents();
    const SnapshotPtr s = w->controller()->snapshot();
    ensemble::ui::BoundaryCanvas* canvas = w->boundaryView()->canvas();
    const QRectF plot = canvas->plotRect();
    const int g = s->run->gridSize;
    const int classes = s->run->classes;

    // The centre of cell (column g/3, row g/2).
    const int column = g / 3;
    const int row = g / 2;
    const QPointF pos(plot.left() + (column + 0.5) / g * plot.width(),
                      plot.top() + (row + 0.5) / g * plot.height());
    const ensemble::ui::BoundaryReadout r = canvas->readoutAt(pos);
    QVERIFY(r.valid && r.hasEnsemble);
    QCOMPARE(r.column, column);
    QCOMPARE(r.row, row);
    const std::size_t point = static_cast<std::size_t>(row) * g + column;
    QCOMPARE(r.point, point);
    const auto& e = s->grid.ensemble;
    for (int c = 0; c < classes; ++c) {
        QCOMPARE(r.probabilities[static_cast<std::size_t>(c)],
                 double(e.probabilities[point * classes + c]));
    }
    QCOMPARE(r.entropy, double(e.total[point]));
    QCOMPARE(r.mutualInformation, double(e.epistemic[point]));
    // Votes: each member's argmax at the cell.
    std::vector<int> votes(static_cast<std::size_t>(classes), 0);
    const std::size_t cells = static_cast<std::size_t>(g) * g;
    for (int k = 0; k < s->grid.members; ++k) {
        const float* p = s->grid.memberProbabilities.data() + (k * cells + point) * classes;
        ++votes[static_cast<std::size_t>(std::max_element(p, p + classes) - p)];
    }
    QCOMPARE(r.votes, votes);
    // The text shown at the pointer is this read-out.
    QTest::mouseMove(canvas, pos.toPoint());
    QCOMPARE(canvas->hoverText(), canvas->readout(pos.toPoint()));
    QVERIFY(canvas->hoverText().contains(QStringLiteral("mutual information")));
    QVERIFY(canvas->hoverText().contains(QStringLiteral("member votes: 0: %1").arg(votes[0])));
    QVERIFY(canvas->readout(QPointF(2, 2)).isEmpty());  // outside the plot

    // Wheel zooms at the pointer: the data point under it stays under it.
    const ensemble::GridBounds full = canvas->viewBounds();
    wheelAt(canvas, pos, 120 * 3);
    QVERIFY(canvas->isZoomed());
    const ensemble::GridBounds zoomed = canvas->viewBounds();
    QVERIFY(zoomed.xMax - zoomed.xMin < 0.6 * (full.xMax - full.xMin));
    const ensemble::ui::BoundaryReadout same = canvas->readoutAt(pos);
    QVERIFY(std::abs(same.x - r.x) < 1e-6 * (full.xMax - full.xMin) + 1e-9);
    QCOMPARE(same.point, point);
    // Dragging pans: the data follows the pointer.
    QTest::mousePress(canvas, Qt::LeftButton, {}, pos.toPoint());
    QTest::mouseMove(canvas, (pos + QPointF(40, 0)).toPoint());
    QTest::mouseRelease(canvas, Qt::LeftButton, {}, (pos + QPointF(40, 0)).toPoint());
    const ensemble::GridBounds panned = canvas->viewBounds();
    QVERIFY(panned.xMin < zoomed.xMin);
    QVERIFY(std::abs((panned.xMax - panned.xMin) - (zoomed.xMax - zoomed.xMin)) < 1e-9);
    // Double-click shows everything again.
    QTest::mouseDClick(canvas, Qt::LeftButton, {}, pos.toPoint());
    QVERIFY(!canvas->isZoomed());
    QCOMPARE(canvas->viewBounds().xMin, full.xMin);
}

void TestLabBench::everyViewUsableAt900x600() {
    auto w = makeWindow({900, 600});
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    w->loadExperiment(smallConfig({.members = 6}), QString());
    QVERIFY(waitStep(*w, 0));
    w->controller()->trainTo(40);
    QVERIFY(waitStep(*w, 40));
    QCOMPARE(w->size(), QSize(900, 600));
    for (const QString& name : MainWindow::viewNames()) {
        if (!w->setView(name)) {
            continue;  // not shown for this data (Images)
        }
        // Layouts settle through posted events: every widget at its minimum once they have.
        QTRY_VERIFY2(tooSmall(w->currentView()).isEmpty(),
                     qPrintable(name + QStringLiteral(": ") +
                                tooSmall(w->currentView()).join(QStringLiteral("; "))));
    }
    const QStringList panel = tooSmall(w->panel());
    QVERIFY2(panel.isEmpty(), qPrintable(panel.join(QStringLiteral("; "))));

    // Images (image data only, which the test machine may not have): the view at the size
    // the window gives its tabs.
    auto* tabs = w->findChild<QTabWidget*>();
    QScrollArea area;  // as the window holds each view
    area.setWidgetResizable(true);
    area.setFrameShape(QFrame::NoFrame);
    auto* images = new ensemble::ui::ImagesView;
    area.setWidget(images);
    area.resize(tabs->currentWidget()->size());
    area.show();
    QVERIFY(QTest::qWaitForWindowExposed(&area));
    QTRY_VERIFY2(tooSmall(images).isEmpty(),
                 qPrintable(tooSmall(images).join(QStringLiteral("; "))));
}

void TestLabBench::statusMessagesElideAndHelpListsShortcuts() {
    auto w = makeWindow({900, 600});
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    const QString longText =
        QStringLiteral(
            "CUDA driver version is insufficient for CUDA runtime version: training "
            "on the CPU instead (%1)")
            .arg(QString(300, QLatin1Char('x')));
    w->showStatus(longText);
    QCoreApplication::processEvents();
    auto* label = w->findChild<ensemble::ui::ElidedLabel*>(QStringLiteral("StatusMessage"));
    QVERIFY(label != nullptr);
    QCOMPARE(w->statusMessage(), longText);
    QVERIFY(label->isElided());
    QCOMPARE(label->toolTip(), longText);
    QVERIFY(label->width() <= w->width());

    QAction* keys = menuAction(*w, QStringLiteral("Keyboard and mouse"));
    QVERIFY(keys != nullptr);
    keys->trigger();
    auto* box = w->findChild<QDialog*>(QStringLiteral("ShortcutsBox"));
    QVERIFY(box != nullptr);
    const auto helpText = [](QDialog* d) {
        auto* text = d->findChild<QTextBrowser*>(QStringLiteral("HelpText"));
        return text != nullptr ? text->toPlainText() : QString();
    };
    for (const char* key : {"Space", "S", "R", "Ctrl+E", "double-click"}) {
        QVERIFY2(helpText(box).contains(QString::fromLatin1(key)), key);
    }
    // The key list is longer than a small screen: the dialog fits the screen, its text scrolls
    // and its Close button is on the screen.
    QVERIFY(QTest::qWaitForWindowExposed(box));
    const QRect screen = box->screen()->availableGeometry();
    QVERIFY2(box->frameGeometry().height() <= screen.height(),
             qPrintable(QStringLiteral("%1 px on a %2 px screen")
                            .arg(box->frameGeometry().height())
                            .arg(screen.height())));
    auto* close = box->findChild<QDialogButtonBox*>()->button(QDialogButtonBox::Close);
    QVERIFY(close != nullptr && close->isVisible());
    QVERIFY(screen.contains(QRect(close->mapToGlobal(QPoint(0, 0)), close->size())));
    box->close();
    QAction* about = menuAction(*w, QStringLiteral("About EnsembleLab"));
    QVERIFY(about != nullptr);
    about->trigger();
    box = w->findChild<QDialog*>(QStringLiteral("AboutBox"));
    QVERIFY(box != nullptr);
    QVERIFY(helpText(box).contains(QStringLiteral("EnsembleLab 0.")));
    QVERIFY(helpText(box).contains(QStringLiteral("CPU threads")));
    QVERIFY(helpText(box).contains(QStringLiteral("Qt ")));
    box->close();
}

// The documentation: run from the build tree, the app finds the source tree's docs/ and its
// Help entries open the pages (through the window's opener, not a browser); installed, it finds
// <prefix>/share/doc/ensemblelab beside <prefix>/bin; with a page or all of it missing, each
// entry says so when triggered (naming the folders it looked in) instead of doing nothing.
void TestLabBench::helpOpensTheDocumentation() {
    using ensemble::ui::documentationFolder;
    using ensemble::ui::documentationFolderCandidates;
    const QString source =
        QFileInfo(qEnvironmentVariable("ENSEMBLE_SOURCE_DIR")).canonicalFilePath();
    QVERIFY(!source.isEmpty());
    const QStringList candidates =
        documentationFolderCandidates(QCoreApplication::applicationDirPath());
    QCOMPARE(QFileInfo(documentationFolder(candidates)).canonicalFilePath(), source);

    MainWindow::Options options;
    options.useSettings = false;
    QList<QUrl> opened;
    bool opens = true;
    options.openUrl = [&](const QUrl& url) {
        opened << url;
        return opens;
    };
    auto w = std::make_unique<MainWindow>(options);
    // About names the documentation folder, or says there is none.
    const auto aboutText = [](MainWindow& window) {
        menuAction(window, QStringLiteral("About EnsembleLab"))->trigger();
        auto* box = window.findChild<QDialog*>(QStringLiteral("AboutBox"));
        auto* text =
            box != nullptr ? box->findChild<QTextBrowser*>(QStringLiteral("HelpText")) : nullptr;
        const QString shown = text != nullptr ? text->toPlainText() : QString();
        delete box;
        return shown;
    };
    const QList<std::pair<QString, QString>> pages{
        {QStringLiteral("Getting started"), QStringLiteral("README.md")},
        {QStringLiteral("The desktop app"), QStringLiteral("docs/app.md")},
        {QStringLiteral("Documentation"), QStringLiteral("docs/README.md")}};
    for (const auto& [title, file] : pages) {
        QAction* action = menuAction(*w, title);
        QVERIFY2(action != nullptr, qPrintable(title));
        QVERIFY2(action->isEnabled(), qPrintable(ensemble::ui::disabledReason(action)));
        opened.clear();
        action->trigger();
        QCOMPARE(opened.size(), 1);
        QVERIFY(opened[0].isLocalFile());
        QCOMPARE(QFileInfo(opened[0].toLocalFile()).canonicalFilePath(),
                 QDir(source).filePath(file));
        QVERIFY2(action->toolTip().contains(QDir::toNativeSeparators(opened[0].toLocalFile())),
                 qPrintable(action->toolTip()));
    }
    QVERIFY2(aboutText(*w).contains(QDir::toNativeSeparators(source)), qPrintable(aboutText(*w)));
    // No program for Markdown: an error that names the file.
    opens = false;
    menuAction(*w, QStringLiteral("The desktop app"))->trigger();
    QVERIFY2(w->lastError().contains(QStringLiteral("docs/app.md")), qPrintable(w->lastError()));
    w.reset();

    // Installed: <prefix>/bin/ensemble-lab reads <prefix>/share/doc/ensemblelab, and never the
    // source tree it was built from.
    QTemporaryDir prefix;
    QVERIFY(prefix.isValid());
    const QDir root(prefix.path());
    QVERIFY(root.mkpath(QStringLiteral("bin")));
    const QStringList installed =
        documentationFolderCandidates(root.filePath(QStringLiteral("bin")));
    QCOMPARE(installed, QStringList{root.filePath(QStringLiteral("share/doc/ensemblelab"))});
    QCOMPARE(documentationFolder(installed), QString());
    QVERIFY(root.mkpath(QStringLiteral("share/doc/ensemblelab/docs")));
    for (const QString& file : {QStringLiteral("README.md"), QStringLiteral("docs/app.md")}) {
        QFile f(root.filePath(QStringLiteral("share/doc/ensemblelab/") + file));
        QVERIFY(f.open(QIODevice::WriteOnly));
    }
    QCOMPARE(documentationFolder(installed), installed.first());
    // There, without docs/README.md: the pages it has open, the missing one is named.
    options.documentationFolders = installed;
    w = std::make_unique<MainWindow>(options);
    opened.clear();
    menuAction(*w, QStringLiteral("Getting started"))->trigger();
    QCOMPARE(opened.size(), 1);
    QCOMPARE(opened[0],
             QUrl::fromLocalFile(root.filePath(QStringLiteral("share/doc/ensemblelab/README.md"))));
    opened.clear();
    menuAction(*w, QStringLiteral("Documentation"))->trigger();
    QVERIFY(opened.isEmpty());
    QVERIFY2(w->lastError().contains(QStringLiteral("docs/README.md is missing")),
             qPrintable(w->lastError()));

    // None: every entry still answers, with an error that names the page and where it looked
    // (in its tooltip too), and opens nothing.
    const QStringList nowhere{root.filePath(QStringLiteral("a")),
                              root.filePath(QStringLiteral("b"))};
    options.documentationFolders = nowhere;
    w = std::make_unique<MainWindow>(options);
    opens = true;
    for (const auto& [title, file] : pages) {
        QAction* action = menuAction(*w, title);
        QVERIFY(action != nullptr && action->isEnabled());
        opened.clear();
        action->trigger();
        QVERIFY(opened.isEmpty());
        const QString why = w->lastError();
        QVERIFY2(why.contains(file), qPrintable(why));
        for (const QString& folder : nowhere) {
            QVERIFY2(why.contains(QDir::toNativeSeparators(folder)), qPrintable(why));
            QVERIFY2(action->toolTip().contains(QDir::toNativeSeparators(folder)),
                     qPrintable(action->toolTip()));
        }
    }
    QVERIFY2(aboutText(*w).contains(QStringLiteral("not found")), qPrintable(aboutText(*w)));
}

namespace {
QStringList g_messages;
void collect(QtMsgType, const QMessageLogContext&, const QString& message) {
    g_messages << message;
}
}  // namespace

void TestLabBench::logAxesPrintNothing() {
    // Qt Charts' log axes print "Logarithms of zero and negative values are undefined." for a
    // range or point at or below zero; the views must never give them one.
    auto w = makeWindow();
    QVERIFY(QTest::qWaitForWindowExposed(w.get()));
    nlohmann::json c = ensemble::loadConfigJson("spirals");
    c["backend"]["kind"] = "cpu";
    c["training"]["steps"] = kLongRun;
    c["optimizer"]["lr"] = {{"log_uniform", {1e-4, 3.0}}};  // log axes in Sweep, some diverge
    g_messages.clear();
    const QtMessageHandler previous = qInstallMessageHandler(collect);
    w->loadExperiment(c, QString());
    QVERIFY(waitStep(*w, 0));
    // Each view is painted, so the points really go through the axes.
    for (const QString& view : {QStringLiteral("sweep"), QStringLiteral("curves")}) {
        QVERIFY(w->setView(view));
        paint(w->currentView());
    }
    // Member lines coloured by learning rate get a colour key with its range.
    auto* key = w->curvesView()->findChild<ensemble::ui::ColorKey*>();
    QVERIFY(key != nullptr);
    QVERIFY(key->isVisible());
    QVERIFY2(key->text().startsWith(QStringLiteral("lr ")), qPrintable(key->text()));
    w->curvesView()->setLogScale(true);
    paint(w->curvesView());
    w->controller()->trainTo(200);
    QVERIFY(waitStep(*w, 200));
    for (const QString& view : {QStringLiteral("sweep"), QStringLiteral("curves")}) {
        QVERIFY(w->setView(view));
        paint(w->currentView());
    }
    w->resetAction()->trigger();  // a new run: empty series on the log axes
    QVERIFY(waitStep(*w, 0));
    paint(w->currentView());
    QVERIFY(w->setView(QStringLiteral("sweep")));
    paint(w->currentView());
    w->curvesView()->setLogScale(false);
    qInstallMessageHandler(previous);
    const QStringList logs = g_messages.filter(QStringLiteral("Logarithm"));
    QVERIFY2(logs.isEmpty(), qPrintable(logs.join(QLatin1Char('\n'))));
}

// The log axes' edge cases, fed to the views directly: a zero loss (a perfectly fitted split
// rounds -log p to 0), a negative one (a Gaussian NLL), NaN, an empty history (a reset) and a
// first point alone, with the log scale switched on while such points are already drawn. A
// message handler fails the test on Qt Charts' warning; the charts are painted (grab) so the
// points really go through the axes.
void TestLabBench::logAxesNeverGetZeroOrLess() {
    using ensemble::ui::HistoryPoint;
    using ensemble::ui::RunInfo;
    using ensemble::ui::Snapshot;
    auto run = std::make_shared<RunInfo>();
    run->runId = 7;
    run->members = 3;
    run->classes = 2;
    run->trainRows = 100;
    run->testRows = 40;
    run->lr = {1e-4, 1e-2, 1.0};
    run->momentum = {0.9, 0.9, 0.9};
    run->weightDecay = {0.0, 0.0, 0.0};
    auto point = [](int64_t step, double ensemble, std::vector<double> members) {
        auto h = std::make_shared<HistoryPoint>();
        h->step = step;
        h->ensembleTrain = {ensemble, 1.0, 0.0};
        h->ensembleTest = {ensemble, 1.0, 0.0};
        for (double m : members) {
            h->memberTrain.push_back({m, 1.0, 0.0});
            h->memberTest.push_back({m, 1.0, 0.0});
        }
        return std::shared_ptr<const HistoryPoint>(std::move(h));
    };
    auto snapshot = [&](std::vector<std::shared_ptr<const HistoryPoint>> history,
                        std::vector<double> nll) {
        auto s = std::make_shared<Snapshot>();
        s->run = run;
        s->step = history.empty() ? 0 : history.back()->step;
        s->history = std::move(history);
        s->diverged = {0, 0, 0};
        s->switchedOn = {1, 1, 1};
        s->included = {1, 1, 1};
        s->includedCount = 3;
        s->hasEnsemble = true;
        for (double v : nll) {
            ensemble::ClassificationMetrics m;
            m.nll = v;
            m.accuracy = 0.5;
            m.ece = 0.0;
            s->memberMetrics.push_back(m);
        }
        s->ensembleMetrics = s->memberMetrics.front();
        s->meanMember = s->memberMetrics.front();
        return ensemble::ui::SnapshotPtr(std::move(s));
    };
    g_messages.clear();
    const QtMessageHandler previous = qInstallMessageHandler(collect);
    {
        ensemble::ui::CurvesView curves;
        curves.resize(700, 500);
        curves.show();
        QVERIFY(QTest::qWaitForWindowExposed(&curves));
        // A first point alone, then zero and negative losses, drawn on a linear axis ...
        curves.setSnapshot(snapshot({point(0, 0.0, {0.7, 0.0, -0.3})}, {0.5, 0.5, 0.5}));
        curves.grab();
        curves.setSnapshot(
            snapshot({point(0, 0.0, {0.7, 0.0, -0.3}), point(10, -0.5, {0.0, std::nan(""), 1e-30})},
                     {0.5, 0.5, 0.5}));
        curves.grab();
        // ... then the log scale over them, more points, and a reset (an empty history).
        curves.setLogScale(true);
        curves.grab();
        curves.setSnapshot(
            snapshot({point(0, 0.0, {0.7, 0.0, -0.3}), point(10, -0.5, {0.0, std::nan(""), 1e-30}),
                      point(20, 0.0, {0.0, 0.0, 0.0})},
                     {0.5, 0.5, 0.5}));
        curves.grab();
        run = std::make_shared<RunInfo>(*run);
        run->runId = 8;  // a new run: the series rebuilt, empty
        curves.setSnapshot(snapshot({}, {0.5, 0.5, 0.5}));
        curves.grab();
        curves.setSnapshot(snapshot({point(0, 0.0, {0.0, 0.0, 0.0})}, {0.5, 0.5, 0.5}));
        curves.grab();
        curves.setLogScale(false);
        curves.grab();
        curves.setLogScale(true);
        curves.grab();

        // Sweep: a log learning-rate axis and a loss spanning orders of magnitude (log y), a
        // zero and a diverged member's loss among them.
        ensemble::ui::SweepView sweep;
        sweep.resize(700, 500);
        sweep.show();
        QVERIFY(QTest::qWaitForWindowExposed(&sweep));
        sweep.setSnapshot(snapshot({point(0, 0.1, {0.1, 0.2, 0.3})}, {1e-3, 0.5, 9.0}));
        QVERIFY(sweep.logAxis());
        sweep.grab();
        sweep.setSnapshot(snapshot({point(0, 0.1, {0.1, 0.2, 0.3})}, {0.0, 0.5, 9.0}));
        sweep.grab();
        sweep.setSnapshot(snapshot({point(0, 0.1, {0.1, 0.2, 0.3})}, {1e-3, std::nan(""), 9.0}));
        sweep.grab();
    }
    qInstallMessageHandler(previous);
    const QStringList logs = g_messages.filter(QStringLiteral("Logarithm"));
    QVERIFY2(logs.isEmpty(), qPrintable(logs.join(QLatin1Char('\n'))));
}

// The key table of docs/app.md names every shortcut the window's actions have.
void TestLabBench::readmeListsEveryShortcut() {
    QFile readme(QDir(qEnvironmentVariable("ENSEMBLE_SOURCE_DIR")).filePath("docs/app.md"));
    QVERIFY2(readme.open(QIODevice::ReadOnly), qPrintable(readme.fileName()));
    const QString text = QString::fromUtf8(readme.readAll());
    const qsizetype from = text.indexOf(QStringLiteral("| Key |"), text.indexOf("**Keys**"));
    QVERIFY(from >= 0);
    const QString table = text.mid(from, text.indexOf(QStringLiteral("\n\n"), from + 10) - from);
    auto w = makeWindow();
    int checked = 0;
    for (const QAction* a : w->findChildren<QAction*>()) {
        if (a->shortcut().isEmpty()) {
            continue;
        }
        QString keys = a->shortcut().toString(QKeySequence::PortableText);
        // The view keys are one row, "Ctrl+1 … Ctrl+9".
        if (keys.size() == 6 && keys.startsWith(QStringLiteral("Ctrl+")) && keys[5].isDigit()) {
            keys = QStringLiteral("Ctrl+1 … Ctrl+9");
        }
        QVERIFY2(table.contains(QStringLiteral("| ") + keys + QStringLiteral(" |")),
                 qPrintable(keys + QStringLiteral(" (") + a->text() + QStringLiteral(")")));
        ++checked;
    }
    QVERIFY(checked >= 15);
}

QTEST_MAIN(TestLabBench)
#include "tst_lab_bench.moc"

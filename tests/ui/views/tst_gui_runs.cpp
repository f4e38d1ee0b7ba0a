// The Runs view over the runs store (ui/views/runs_view.h): its model's cells are the CLI's
// (runFieldText), filters and sort give RunStore::list's ids and `ensemble-cli runs list`'s,
// pages of 200 through 1,000 entries, two selected show what differs, tag / note / delete
// change the store, Export CSV writes the CLI's bytes, the view reads whole at 900 x 600 in
// the window, Open as experiment reaches the Experiment panel, and a store that cannot be read
// shows a message. Every store and file lives in a QTemporaryDir.
#include <QAbstractButton>
#include <QChart>
#include <QCheckBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QtTest>

#include <fstream>
#include <set>

#include "panels/experiment_panel.h"
#include "runs/run_fields.h"
#include "runs/run_store.h"
#include "support/gui_test_support.h"
#include "views/runs_model.h"
#include "views/runs_view.h"

using ensemble::runs::RunEntry;
using ensemble::runs::RunState;
using ensemble::runs::RunStore;
using ensemble::test::describe;
using ensemble::test::Run;
using ensemble::test::runCli;
using ensemble::ui::RunsModel;
using ensemble::ui::RunsView;
using nlohmann::json;

namespace {

const char* const kPresets[] = {"spirals", "moons", "circles"};

// Entry i: presets, members, learning rates, figures, tags and notes vary with i so that filters
// and sorts have something to tell apart; curves for the chart.
RunEntry runsTestEntry(int i) {
    RunEntry e;
    e.program = "ensemble-cli";
    e.kind = i % 4 == 0 ? "compare" : "train";
    e.version = "0.0-test";
    e.started = 1.7e9 + i * 60.0;
    e.ended = e.started + 5.0 + i % 7;
    e.updated = e.ended;
    e.wallSeconds = e.ended - e.started;
    e.state = i % 9 == 0 ? RunState::Cancelled : RunState::Finished;
    e.preset = kPresets[i % 3];
    json c = ensemble::test::smallConfig({.members = 2 + i % 5, .steps = 20, .threads = 1});
    c["optimizer"]["lr"] = 0.01 * (1 + i % 3);
    e.config = c;
    ensemble::runs::fillFromConfig(e);
    e.figures = {{"test_accuracy", 0.5 + (i % 37) / 80.0}, {"test_nll", 0.2 + (i % 23) / 40.0}};
    if (i % 5 == 0) {
        e.figures["test_ece"] = 0.01 * (i % 11);
    }
    json loss = json::array();
    json acc = json::array();
    for (int s = 0; s <= 4; ++s) {
        loss.push_back({s * 5, 1.0 / (1 + s + i % 3)});
        acc.push_back({s * 5, 0.5 + 0.1 * s});
    }
    e.curves = {{"train_loss", loss}, {"test_loss", loss}, {"test_accuracy", acc}};
    if (i % 6 == 0) {
        e.tags = {"sweep"};
    }
    if (i % 10 == 3) {
        e.note = "bootstrap try " + std::to_string(i);
    }
    e.commandLine = "ensemble-cli train --config spirals --set optimizer.lr=" +
                    std::to_string(0.01 * (1 + i % 3));
    e.host = "testhost";
    return e;
}

std::vector<std::int64_t> fillStore(RunStore& store, int count) {
    std::vector<RunEntry> entries;
    for (int i = 0; i < count; ++i) {
        entries.push_back(runsTestEntry(i));
    }
    return store.insert(entries);
}

std::vector<std::int64_t> idsOf(const std::vector<RunEntry>& entries) {
    std::vector<std::int64_t> ids;
    for (const RunEntry& e : entries) {
        ids.push_back(e.id);
    }
    return ids;
}

std::vector<std::int64_t> modelIds(const RunsModel& model) {
    std::vector<std::int64_t> ids;
    for (int r = 0; r < model.rowCount(); ++r) {
        ids.push_back(model.idAt(r));
    }
    return ids;
}

int columnOf(const RunsModel& model, const std::string& field) {
    const auto& c = model.columns();
    const auto it = std::find(c.begin(), c.end(), field);
    return it == c.end() ? -1 : static_cast<int>(it - c.begin());
}

QByteArray fileBytes(const QString& path) {
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

// What does not fit under `root`: labels (each line, or each word and the lines' height when
// wrapping), buttons, line edits and table cells and headers; tst_readable's rules, for the
// widgets this view has.
QStringList runsClipped(QWidget* root) {
    QStringList out;
    for (QWidget* w : root->findChildren<QWidget*>()) {
        if (!w->isVisibleTo(root->window()) || w->width() <= 0 || w->height() <= 0) {
            continue;
        }
        const QFontMetrics fm(w->font());
        const auto report = [&](const QString& text, int needed, int room) {
            if (needed > room + 1) {
                out << QStringLiteral("%1 \"%2\": needs %3 px, has %4")
                           .arg(QString::fromLatin1(w->metaObject()->className()), text)
                           .arg(needed)
                           .arg(room);
            }
        };
        if (auto* label = qobject_cast<QLabel*>(w)) {
            QString text = label->text();
            if (label->buddy() != nullptr) {
                text.remove(QLatin1Char('&'));
            }
            const QRect room = label->contentsRect();
            if (label->wordWrap()) {
                for (const QString& word : text.split(QRegularExpression(QStringLiteral("\\s+")))) {
                    report(word, fm.horizontalAdvance(word), room.width());
                }
                const QRect needed = fm.boundingRect(room, Qt::TextWordWrap, text);
                report(text + QStringLiteral(" (height)"), needed.height(), room.height() + 1);
            } else {
                for (const QString& line : text.split(QLatin1Char('\n'))) {
                    report(line, fm.horizontalAdvance(line), room.width());
                }
            }
        } else if (auto* button = qobject_cast<QAbstractButton*>(w)) {
            QString text = button->text();
            text.remove(QLatin1Char('&'));
            if (!text.isEmpty()) {
                report(text, fm.horizontalAdvance(text) + 8, button->width());
            }
        } else if (auto* edit = qobject_cast<QLineEdit*>(w)) {
            report(edit->displayText(), fm.horizontalAdvance(edit->displayText()),
                   edit->contentsRect().width() - 8);
        } else if (auto* table = qobject_cast<QTableView*>(w)) {
            const QAbstractItemModel* model = table->model();
            for (int c = 0; model != nullptr && c < model->columnCount(); ++c) {
                const int room = table->columnWidth(c) - 6;
                for (int r = 0; r < model->rowCount(); ++r) {
                    const QString text = model->index(r, c).data().toString();
                    report(text, fm.horizontalAdvance(text), room);
                }
                const QString header = model->headerData(c, Qt::Horizontal).toString();
                report(header, table->horizontalHeader()->fontMetrics().horizontalAdvance(header),
                       room + 2);
            }
        }
    }
    return out;
}

}  // namespace

class TestGuiRuns : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase();
    void init();
    void cellsAreTheStoresFieldTexts();
    void filterAndSortAgreeWithTheStoreAndTheCli();
    void pagesThroughAThousandEntries();
    void pagesNextToHeldOnesAreTheStoresOrder();
    void selectingTwoOrMoreCompares();
    void editsChangeTheStore();
    void deleteAsksAndKeepsFilesUnlessTicked();
    void exportWritesTheClisCsv();
    void columnsAreRemembered();
    void readableInTheWindowAndOpensAsExperiment();
    void anUnreadableStoreShowsAMessage();

  private:
    QString freshStore(const QString& name, int entries);
    QTemporaryDir m_dir;
};

void TestGuiRuns::initTestCase() {
    ensemble::test::isolateSettings();
    QVERIFY(m_dir.isValid());
    // The window's own store (it records its runs) is one of this folder's too.
    qputenv(ensemble::runs::kRunsDbVariable,
            m_dir.filePath(QStringLiteral("window.sqlite")).toUtf8());
}

void TestGuiRuns::init() {
    QSettings().remove(QStringLiteral("runs/columns"));
}

QString TestGuiRuns::freshStore(const QString& name, int entries) {
    const QString path = m_dir.filePath(name + QStringLiteral(".sqlite"));
    QFile::remove(path);
    RunStore store = RunStore::open(path.toStdString());
    fillStore(store, entries);
    return path;
}

void TestGuiRuns::cellsAreTheStoresFieldTexts() {
    const QString path = freshStore(QStringLiteral("cells"), 40);
    RunsView view;
    QVERIFY(view.openStore(path));
    view.setColumns({QStringLiteral("id"), QStringLiteral("started"), QStringLiteral("preset"),
                     QStringLiteral("members"), QStringLiteral("figure.test_nll"),
                     QStringLiteral("figure.test_ece"), QStringLiteral("config.optimizer.lr"),
                     QStringLiteral("tag"), QStringLiteral("note"), QStringLiteral("state")});
    const RunsModel& model = *view.model();
    QCOMPARE(model.rowCount(), 40);
    ensemble::runs::RunQuery q;
    q.full = true;
    const std::vector<RunEntry> listed = RunStore::open(path.toStdString()).list(q);
    QCOMPARE(listed.size(), std::size_t(40));
    for (int r = 0; r < model.rowCount(); ++r) {
        for (int c = 0; c < model.columnCount(); ++c) {
            const std::string want = ensemble::runs::runFieldText(
                listed[static_cast<std::size_t>(r)], model.columns()[static_cast<std::size_t>(c)]);
            QCOMPARE(model.index(r, c).data().toString(), QString::fromStdString(want));
        }
    }
    QCOMPARE(model.headerData(4, Qt::Horizontal).toString(), QStringLiteral("test_nll"));
}

void TestGuiRuns::filterAndSortAgreeWithTheStoreAndTheCli() {
    const QString path = freshStore(QStringLiteral("filter"), 120);
    const RunStore store = RunStore::open(path.toStdString());
    RunsView view;
    QVERIFY(view.openStore(path));
    view.setColumns({QStringLiteral("id"), QStringLiteral("preset"),
                     QStringLiteral("figure.test_nll"), QStringLiteral("config.optimizer.lr"),
                     QStringLiteral("tag")});
    const QString filter =
        QStringLiteral("preset=spirals figure.test_nll<0.6 config.ensemble.members>=4");
    QVERIFY(view.applyFilter(filter));
    RunsModel& model = *view.model();
    // A header click sorts (the store's order, not a copy's).
    view.table()->horizontalHeader()->setSortIndicator(columnOf(model, "figure.test_nll"),
                                                       Qt::AscendingOrder);
    QCOMPARE(model.sortOrder().field, std::string("figure.test_nll"));
    ensemble::runs::RunQuery q = ensemble::runs::parseFilter(filter.toStdString());
    q.sort = ensemble::runs::parseSort("figure.test_nll");
    const std::vector<std::int64_t> want = idsOf(store.list(q));
    QVERIFY(want.size() > 3 && want.size() < 40);
    QCOMPARE(modelIds(model), want);
    QCOMPARE(model.total(), static_cast<std::int64_t>(want.size()));

    // The CLI's list for the same store, filter and sort.
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QString::fromLatin1(ensemble::runs::kRunsDbVariable), path);
    const Run cli = runCli(
        QStringList{QStringLiteral("runs"), QStringLiteral("list"), QStringLiteral("--format"),
                    QStringLiteral("csv"), QStringLiteral("--columns"), QStringLiteral("id"),
                    QStringLiteral("--sort"), QStringLiteral("figure.test_nll")} +
            filter.split(QLatin1Char(' ')),
        env);
    QVERIFY2(cli.code == 0, qPrintable(describe(cli)));
    QStringList lines = cli.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    QCOMPARE(lines.takeFirst(), QStringLiteral("id"));
    std::vector<std::int64_t> cliIds;
    for (const QString& line : lines) {
        cliIds.push_back(line.toLongLong());
    }
    QCOMPARE(cliIds, want);

    // Descending, and a free-text word (notes and tags).
    view.table()->horizontalHeader()->setSortIndicator(columnOf(model, "figure.test_nll"),
                                                       Qt::DescendingOrder);
    q.sort.descending = true;
    QCOMPARE(modelIds(model), idsOf(store.list(q)));
    QVERIFY(view.applyFilter(QStringLiteral("sweep")));
    ensemble::runs::RunQuery words = ensemble::runs::parseFilter("sweep");
    words.sort = q.sort;
    QCOMPARE(modelIds(model), idsOf(store.list(words)));
    QCOMPARE(model.total(), std::int64_t(20));

    // A bad term: said beside the field, the table keeps the last good filter.
    QVERIFY(!view.applyFilter(QStringLiteral("figure.test_nll<abc")));
    QVERIFY2(view.filterError().contains(QStringLiteral("test_nll")),
             qPrintable(view.filterError()));
    QCOMPARE(model.total(), std::int64_t(20));
    QVERIFY(view.applyFilter(QString()));
    QVERIFY(view.filterError().isEmpty());
    QCOMPARE(model.total(), std::int64_t(120));

    // A field the store cannot sort by leaves the order as it was.
    const ensemble::runs::RunSort before = model.sortOrder();
    view.table()->horizontalHeader()->setSortIndicator(columnOf(model, "tag"), Qt::AscendingOrder);
    QCOMPARE(model.sortOrder(), before);
    QCOMPARE(view.table()->horizontalHeader()->sortIndicatorSection(),
             columnOf(model, "figure.test_nll"));
}

void TestGuiRuns::pagesThroughAThousandEntries() {
    const QString path = freshStore(QStringLiteral("pages"), 1000);
    RunsView view;
    QVERIFY(view.openStore(path));
    RunsModel& model = *view.model();
    QCOMPARE(model.total(), std::int64_t(1000));
    QCOMPARE(model.rowCount(), RunsModel::kPageSize);
    int fetches = 0;
    while (model.canFetchMore({})) {
        model.fetchMore({});
        ++fetches;
    }
    QCOMPARE(fetches, 1000 / RunsModel::kPageSize - 1);
    QCOMPARE(model.rowCount(), 1000);
    const std::vector<std::int64_t> ids = modelIds(model);
    ensemble::runs::RunQuery q;
    QCOMPARE(ids, idsOf(RunStore::open(path.toStdString()).list(q)));
    QCOMPARE(std::set<std::int64_t>(ids.begin(), ids.end()).size(), std::size_t(1000));
    // Never the whole table: the pages read are let go, the oldest first.
    QVERIFY(model.cachedPages() <= RunsModel::kCachedPages);
    // The view scrolled to the end asks for the next pages itself.
    const QString big = freshStore(QStringLiteral("pages-view"), 700);
    RunsView shown;
    shown.resize(800, 600);
    shown.show();
    QVERIFY(shown.openStore(big));
    QCOMPARE(shown.model()->rowCount(), RunsModel::kPageSize);
    for (int i = 0; i < 10 && shown.model()->canFetchMore({}); ++i) {
        shown.table()->scrollToBottom();
        QCoreApplication::processEvents();
    }
    QCOMPARE(shown.model()->rowCount(), 700);
}

// A page next to a held one is read by keyset (after the page above it, before the page
// below), any other by its offset: scrolling down through more pages than are held, back up
// once the first were let go, and jumps give the rows of the store's one query, here sorted by
// a figure most entries lack and many share (ties, then the entries without it).
void TestGuiRuns::pagesNextToHeldOnesAreTheStoresOrder() {
    const QString path = freshStore(QStringLiteral("keyset"), 3000);
    RunsModel model;
    QVERIFY(model.openStore(path.toStdString()));
    model.setSortOrder(ensemble::runs::parseSort("figure.test_ece"));
    while (model.canFetchMore({})) {
        model.fetchMore({});
    }
    QCOMPARE(model.rowCount(), 3000);
    ensemble::runs::RunQuery q;
    q.sort = model.sortOrder();
    const std::vector<std::int64_t> expected = idsOf(RunStore::open(path.toStdString()).list(q));
    QCOMPARE(modelIds(model), expected);  // down: each page after the one above
    QVERIFY(model.cachedPages() <= RunsModel::kCachedPages);
    for (int r = model.rowCount() - 1; r >= 0; --r) {  // up: each page before the one below
        QCOMPARE(model.idAt(r), expected[static_cast<std::size_t>(r)]);
    }
    model.reload();  // nothing held: the first read of each stretch below is a jump
    while (model.canFetchMore({})) {
        model.fetchMore({});
    }
    for (const int r : {2500, 2399, 2400, 1000, 999, 2999, 0, 1650}) {
        QCOMPARE(model.idAt(r), expected[static_cast<std::size_t>(r)]);
    }
}

void TestGuiRuns::selectingTwoOrMoreCompares() {
    const QString path = freshStore(QStringLiteral("compare"), 12);
    RunsView view;
    QVERIFY(view.openStore(path));
    const RunStore store = RunStore::open(path.toStdString());
    // Entries 1 and 2 of the fill (ids 2 and 3): learning rates and members differ.
    view.selectIds({2, 3});
    QCOMPARE(view.selectedIds(), (std::vector<std::int64_t>{3, 2}));  // the table's order
    QStringList want;
    for (const auto& d : ensemble::runs::runDifferences(*store.get(3), *store.get(2))) {
        want << QString::fromStdString(d.field);
    }
    QCOMPARE(view.differingFields(), want);
    QVERIFY(want.contains(QStringLiteral("config.optimizer.lr")));
    QVERIFY(want.contains(QStringLiteral("config.ensemble.members")));
    QVERIFY(!want.contains(QStringLiteral("config.training.steps")));
    QCOMPARE(view.chartedIds(), (std::vector<std::int64_t>{3, 2}));
    QVERIFY(view.detailTabs()->isTabVisible(3));
    QVERIFY(!view.detailTabs()->isTabVisible(2));
    const QTableWidget* table = view.differencesTable();
    QCOMPARE(table->horizontalHeaderItem(1)->text(), QStringLiteral("run 3"));
    const int lr = static_cast<int>(want.indexOf(QStringLiteral("config.optimizer.lr")));
    QCOMPARE(table->item(lr, 1)->text(), QStringLiteral("0.03"));
    QCOMPARE(table->item(lr, 2)->text(), QStringLiteral("0.02"));

    // Three: the union of what differs from the first; the figures side by side.
    view.selectIds({1, 2, 4});
    const QStringList three = view.differingFields();
    QVERIFY(three.contains(QStringLiteral("config.optimizer.lr")));
    QVERIFY(three.contains(QStringLiteral("figure.test_nll")));
    QVERIFY(three.contains(QStringLiteral("kind")));  // entry 0 (id 1) is a compare
    QCOMPARE(view.differencesTable()->columnCount(), 4);
    QCOMPARE(view.chartedIds().size(), std::size_t(3));

    // One: its config, summary and curves.
    view.selectIds({5});
    QVERIFY(view.differingFields().isEmpty());
    QVERIFY(view.configText()->toPlainText().contains(QStringLiteral("optimizer.lr = 0.02")));
    QVERIFY(view.summaryText()->toPlainText().contains(QStringLiteral("Run 5")));
    QVERIFY(view.summaryText()->toPlainText().contains(QStringLiteral("ensemble-cli train")));
    QCOMPARE(view.chartedIds(), (std::vector<std::int64_t>{5}));
    QCOMPARE(view.chart()->series().size(), 2);  // test and train loss
}

void TestGuiRuns::editsChangeTheStore() {
    const QString path = freshStore(QStringLiteral("edits"), 10);
    RunsView view;
    QVERIFY(view.openStore(path));
    QString error;
    QVERIFY2(view.tagRuns({2, 3}, QStringLiteral("best"), false, &error), qPrintable(error));
    QVERIFY(!view.tagRuns({2}, QStringLiteral("two words"), false, &error));
    QVERIFY(view.setNote(4, QStringLiteral("lr too high"), &error));
    {
        const RunStore store = RunStore::open(path.toStdString());
        QCOMPARE(store.get(2)->tags, std::vector<std::string>{"best"});
        QCOMPARE(store.get(3)->tags, std::vector<std::string>{"best"});
        QCOMPARE(store.get(4)->note, std::string("lr too high"));
    }
    // The table shows the edits, and the filter finds them.
    QVERIFY(view.applyFilter(QStringLiteral("tag=best")));
    QCOMPARE(modelIds(*view.model()), (std::vector<std::int64_t>{3, 2}));
    // The note and tags fields of one selected run edit it in place.
    QVERIFY(view.applyFilter(QString()));
    view.selectIds({4});
    QCOMPARE(view.noteEdit()->text(), QStringLiteral("lr too high"));
    view.noteEdit()->setText(QStringLiteral("kept"));
    Q_EMIT view.noteEdit()->editingFinished();
    view.tagsEdit()->setText(QStringLiteral("a, b"));
    Q_EMIT view.tagsEdit()->editingFinished();
    const RunStore store = RunStore::open(path.toStdString());
    QCOMPARE(store.get(4)->note, std::string("kept"));
    QCOMPARE(store.get(4)->tags, (std::vector<std::string>{"a", "b"}));
    QCOMPARE(view.selectedIds(), std::vector<std::int64_t>{4});  // the selection stays
    view.tagsEdit()->setText(QStringLiteral("b"));
    Q_EMIT view.tagsEdit()->editingFinished();
    QCOMPARE(store.get(4)->tags, std::vector<std::string>{"b"});
    // Removed, with its files only when asked.
    const QString kept = m_dir.filePath(QStringLiteral("kept.safetensors"));
    const QString gone = m_dir.filePath(QStringLiteral("gone.safetensors"));
    for (const QString& f : {kept, gone}) {
        QFile file(f);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("x");
    }
    RunEntry a = runsTestEntry(50);
    a.files = {{kept.toStdString(), "export"}};
    RunEntry b = runsTestEntry(51);
    b.files = {{gone.toStdString(), "export"}};
    const std::vector<std::int64_t> ids = RunStore::open(path.toStdString()).insert({a, b});
    view.refresh();
    QCOMPARE(view.model()->total(), std::int64_t(12));
    QVERIFY(view.removeRuns({ids[0]}, false, &error));
    QVERIFY(view.removeRuns({ids[1]}, true, &error));
    QVERIFY(!store.get(ids[0]) && !store.get(ids[1]));
    QVERIFY(QFile::exists(kept));
    QVERIFY(!QFile::exists(gone));
    QCOMPARE(view.model()->total(), std::int64_t(10));
}

void TestGuiRuns::deleteAsksAndKeepsFilesUnlessTicked() {
    const QString path = freshStore(QStringLiteral("delete"), 5);
    const QString file = m_dir.filePath(QStringLiteral("asked.safetensors"));
    {
        QFile f(file);
        QVERIFY(f.open(QIODevice::WriteOnly));
    }
    RunEntry e = runsTestEntry(7);
    e.files = {{file.toStdString(), "checkpoint"}};
    const std::int64_t id = RunStore::open(path.toStdString()).insert({e}).front();
    RunsView view;
    view.resize(800, 600);
    view.show();
    QVERIFY(view.openStore(path));
    view.activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(&view));
    view.selectIds({id});
    // Cancel keeps it; Yes without the box ticked removes the entry and keeps the file.
    int seen = 0;
    ensemble::test::whenModal(
        QStringLiteral("runsDeleteBox"),
        [](QWidget* box) {
            QVERIFY(box->findChild<QCheckBox*>(QStringLiteral("runsDeleteFiles")) != nullptr);
            static_cast<QMessageBox*>(box)->button(QMessageBox::Cancel)->click();
        },
        &seen);
    view.table()->setFocus();
    QTest::keyClick(view.table(), Qt::Key_Delete);
    QCOMPARE(seen, 1);
    QVERIFY(RunStore::open(path.toStdString()).get(id).has_value());
    ensemble::test::whenModal(
        QStringLiteral("runsDeleteBox"),
        [](QWidget* box) { static_cast<QMessageBox*>(box)->button(QMessageBox::Yes)->click(); },
        &seen);
    view.deleteSelected();
    QCOMPARE(seen, 2);
    QVERIFY(!RunStore::open(path.toStdString()).get(id).has_value());
    QVERIFY(QFile::exists(file));
}

void TestGuiRuns::exportWritesTheClisCsv() {
    const QString path = freshStore(QStringLiteral("export"), 60);
    // A note with a comma and a quote: CSV quoting on both sides.
    RunStore::open(path.toStdString()).setNote(5, "lr 0.1, \"too high\"");
    RunsView view;
    QVERIFY(view.openStore(path));
    const QStringList columns = {QStringLiteral("id"),
                                 QStringLiteral("preset"),
                                 QStringLiteral("figure.test_nll"),
                                 QStringLiteral("config.optimizer.lr"),
                                 QStringLiteral("tag"),
                                 QStringLiteral("note"),
                                 QStringLiteral("started")};
    view.setColumns(columns);
    QVERIFY(view.applyFilter(QStringLiteral("members>=3")));
    view.table()->horizontalHeader()->setSortIndicator(columnOf(*view.model(), "figure.test_nll"),
                                                       Qt::DescendingOrder);
    const QString mine = m_dir.filePath(QStringLiteral("view.csv"));
    QString error;
    QVERIFY2(view.exportCsv(mine, &error), qPrintable(error));
    const QString theirs = m_dir.filePath(QStringLiteral("cli.csv"));
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QString::fromLatin1(ensemble::runs::kRunsDbVariable), path);
    const Run cli = runCli(
        {QStringLiteral("runs"), QStringLiteral("export"), QStringLiteral("--out"), theirs,
         QStringLiteral("--columns"), columns.join(QLatin1Char(',')), QStringLiteral("--sort"),
         QStringLiteral("-figure.test_nll"), QStringLiteral("members>=3")},
        env);
    QVERIFY2(cli.code == 0, qPrintable(describe(cli)));
    const QByteArray bytes = fileBytes(mine);
    QVERIFY(bytes.startsWith("id,preset,figure.test_nll,config.optimizer.lr,tag,note,started\n"));
    QVERIFY(bytes.contains("\"lr 0.1, \"\"too high\"\"\""));
    QCOMPARE(bytes, fileBytes(theirs));
}

void TestGuiRuns::columnsAreRemembered() {
    const QString path = freshStore(QStringLiteral("columns"), 3);
    const QStringList chosen = {QStringLiteral("id"), QStringLiteral("config.optimizer.lr"),
                                QStringLiteral("figure.test_accuracy")};
    {
        RunsView view;
        QVERIFY(view.openStore(path));
        view.setColumns(chosen + QStringList{QStringLiteral("no_such_field")});
        QCOMPARE(view.columns(), chosen);  // an unknown field is left out
    }
    RunsView again;
    QCOMPARE(again.columns(), chosen);
    QVERIFY(again.openStore(path));
    QCOMPARE(again.model()->index(0, 1).data().toString(), QStringLiteral("0.03"));
}

void TestGuiRuns::readableInTheWindowAndOpensAsExperiment() {
    const QString path = freshStore(QStringLiteral("window-view"), 30);
    const QString weights = m_dir.filePath(QStringLiteral("left.safetensors"));
    RunEntry withFiles = runsTestEntry(31);
    withFiles.note = "a longer note that the table shows whole, and the details too";
    withFiles.files = {{weights.toStdString(), "export"},
                       {m_dir.filePath(QStringLiteral("report.json")).toStdString(), "report"}};
    withFiles.config["ensemble"]["members"] = 3;
    const std::int64_t id = RunStore::open(path.toStdString()).insert({withFiles}).front();

    auto w = ensemble::test::makeWindow(QSize(900, 600));
    w->loadExperiment(ensemble::test::smallConfig({.members = 2, .steps = 10, .threads = 1}),
                      QString());
    QVERIFY(ensemble::test::waitFresh(*w));
    QVERIFY(w->setView(QStringLiteral("runs")));
    auto* view = qobject_cast<RunsView*>(w->currentView());
    QVERIFY(view != nullptr);
    QVERIFY(view->openStore(path));
    view->setColumns({QStringLiteral("id"), QStringLiteral("started"), QStringLiteral("kind"),
                      QStringLiteral("state"), QStringLiteral("preset"), QStringLiteral("members"),
                      QStringLiteral("figure.test_accuracy"), QStringLiteral("figure.test_nll"),
                      QStringLiteral("wall"), QStringLiteral("tag"), QStringLiteral("note")});
    QVERIFY(!view->applyFilter(QStringLiteral("figure.nope<x members")));  // the error shows
    for (const std::vector<std::int64_t>& selection :
         {std::vector<std::int64_t>{}, std::vector<std::int64_t>{id},
          std::vector<std::int64_t>{id, 4, 5}}) {
        view->selectIds(selection);
        for (int tab = 0; tab < view->detailTabs()->count(); ++tab) {
            if (!view->detailTabs()->isTabVisible(tab)) {
                continue;
            }
            view->detailTabs()->setCurrentIndex(tab);
            const QPixmap shot = w->grab();
            QCoreApplication::processEvents();
            // RUNS_SHOTS=folder keeps each picture, to look at what the test saw.
            if (const QByteArray folder = qgetenv("RUNS_SHOTS"); !folder.isEmpty()) {
                shot.save(QStringLiteral("%1/runs-%2-%3.png")
                              .arg(QString::fromLocal8Bit(folder))
                              .arg(selection.size())
                              .arg(tab));
            }
            const QStringList clipped = runsClipped(w.get());
            for (const QString& c : clipped) {
                qWarning().noquote() << c;
            }
            QVERIFY2(clipped.isEmpty(), "text wider than its room (listed above)");
        }
    }
    for (QWidget* p = view; p != nullptr; p = p->parentWidget()) {
        if (auto* area = qobject_cast<QScrollArea*>(p)) {
            QCOMPARE(area->horizontalScrollBar()->maximum(), 0);
            break;
        }
    }
    QVERIFY(view->table()->height() >= 120);  // rows to read, not a sliver
    QVERIFY(view->applyFilter(QString()));

    // Keys: Ctrl+F the filter; Enter on the table opens the selected run.
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    view->selectIds({id});
    view->table()->setFocus();
    QTest::keyClick(view->table(), Qt::Key_F, Qt::ControlModifier);
    QCOMPARE(QApplication::focusWidget(), view->filterEdit());
    QSignalSpy opened(view, &RunsView::openRequested);
    view->table()->setFocus();
    QTest::keyClick(view->table(), Qt::Key_Return);
    QCOMPARE(opened.size(), 1);
    QCOMPARE(json::parse(opened.at(0).at(0).toString().toStdString()), withFiles.config);
    QVERIFY(opened.at(0).at(1).toString().isEmpty());  // its export is gone
    // The window loaded the config into the Experiment panel.
    QVERIFY(
        QTest::qWaitFor([&] { return w->panel()->config()["ensemble"]["members"] == 3; }, 5000));
    // With the export present, Open is asked to open it.
    {
        QFile f(weights);
        QVERIFY(f.open(QIODevice::WriteOnly));
    }
    view->refresh();
    view->selectIds({id});
    view->openSelected();
    QCOMPARE(opened.size(), 2);
    QCOMPARE(opened.at(1).at(1).toString(), weights);
}

void TestGuiRuns::anUnreadableStoreShowsAMessage() {
    const QString corrupt = m_dir.filePath(QStringLiteral("corrupt.sqlite"));
    {
        std::ofstream out(corrupt.toStdString(), std::ios::binary);
        out << std::string(8192, 'x');
    }
    RunsView view;
    view.resize(800, 600);
    view.show();
    QVERIFY(!view.openStore(corrupt));
    QVERIFY2(view.storeMessage().contains(QStringLiteral("cannot be read")),
             qPrintable(view.storeMessage()));
    QVERIFY(view.storeMessage().contains(corrupt));
    QVERIFY(!view.table()->isVisible());
    QVERIFY(QApplication::activeModalWidget() == nullptr);  // a message, not a dialog
    view.refresh();  // F5 tries again and says the same, still no dialog
    QVERIFY(view.storeMessage().contains(QStringLiteral("cannot be read")));
    QVERIFY(QApplication::activeModalWidget() == nullptr);
    QVERIFY(view.applyFilter(QStringLiteral("preset=spirals")));  // nothing to read: no crash
    QCOMPARE(view.model()->rowCount(), 0);
    // A good store afterwards: the table again.
    QVERIFY(view.openStore(freshStore(QStringLiteral("good"), 2)));
    QVERIFY(view.storeMessage().isEmpty());
    QVERIFY(view.table()->isVisible());
    // Recording off: said as such.
    QVERIFY(!view.openStore(QString()));
    QVERIFY(view.storeMessage().contains(QStringLiteral("off")));
}

QTEST_MAIN(TestGuiRuns)
#include "tst_gui_runs.moc"

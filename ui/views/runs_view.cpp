#include "views/runs_view.h"

#include <QApplication>
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QMenu>
#include <QMessageBox>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QScrollBar>
#include <QSettings>
#include <QShortcut>
#include <QSignalBlocker>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>

#include "render/chart_axes.h"
#include "runs/run_fields.h"
#include "runs/run_table.h"
#include "sys/atomic_file.h"
#include "views/runs_model.h"
#include "widgets/chart_legend.h"
#include "widgets/wrapping_label.h"

namespace ensemble::ui {

namespace {

const QString kRunsColumnsSetting = QStringLiteral("runs/columns");
constexpr int kRunsPollMs = 3000;

// The store's own columns, in the order the Columns menu lists them (figures and config keys
// follow, from the store).
constexpr const char* kRunsStoreColumns[] = {
    "id",     "started", "ended",   "wall",    "state",       "program",  "kind",
    "preset", "dataset", "method",  "members", "seed",        "backend",  "version",
    "tag",    "note",    "command", "parent",  "fingerprint", "relation", "host"};

QString runsQ(const std::string& text) {
    return QString::fromStdString(text);
}

std::vector<std::string> runsStd(const QStringList& list) {
    std::vector<std::string> out;
    for (const QString& s : list) {
        out.push_back(s.toStdString());
    }
    return out;
}

QStringList runsQList(const std::vector<std::string>& list) {
    QStringList out;
    for (const std::string& s : list) {
        out << runsQ(s);
    }
    return out;
}

}  // namespace

RunsView::RunsView(QWidget* parent) : QWidget(parent), m_model(new RunsModel(this)) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);
    buildControls(this);

    m_stack = new QStackedWidget;
    m_storeMessage = new WrappingLabel;
    m_storeMessage->setObjectName(QStringLiteral("runsStoreMessage"));
    m_storeMessage->setAlignment(Qt::AlignTop | Qt::AlignLeft);
    m_storeMessage->setTextInteractionFlags(Qt::TextSelectableByMouse);

    m_table = new QTableView;
    m_table->setModel(m_model);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::ExtendedSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setAlternatingRowColors(true);
    m_table->setWordWrap(false);
    m_table->verticalHeader()->setVisible(false);
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    // Rows a line of text tall: more runs in the height a 900 x 600 window leaves.
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->horizontalHeader()->setSectionsClickable(true);
    m_table->horizontalHeader()->setSortIndicatorShown(true);
    m_table->horizontalHeader()->setHighlightSections(false);
    m_table->setMinimumHeight(140);
    // Columns fit the first page (read anyway); sizing them by later pages would read those
    // pages again each time more rows are fetched.
    m_table->horizontalHeader()->setResizeContentsPrecision(RunsModel::kPageSize);
    // The store sorts: a header click reaches RunsModel::sort (not a proxy's copy).
    connect(m_table->horizontalHeader(), &QHeaderView::sortIndicatorChanged, this,
            [this](int column, Qt::SortOrder order) { m_model->sort(column, order); });
    connect(m_table, &QTableView::doubleClicked, this, [this] { openSelected(); });

    auto* splitter = new QSplitter(Qt::Vertical);
    splitter->setChildrenCollapsible(false);
    splitter->addWidget(m_table);
    splitter->addWidget(buildDetails());
    splitter->setStretchFactor(0, 1);
    splitter->setStretchFactor(1, 1);
    m_stack->addWidget(splitter);
    m_stack->addWidget(m_storeMessage);
    layout->addWidget(m_stack, 1);

    connect(m_model, &RunsModel::storeFailed, this, &RunsView::onStoreFailed);
    connect(m_model, &RunsModel::sortRefused, this,
            [this](const QString& message) { setMessage(message, true); });
    connect(m_model, &RunsModel::sortChanged, this, &RunsView::onSortChanged);
    connect(m_model, &QAbstractItemModel::modelReset, this, [this] {
        updateCount();
        m_table->resizeColumnsToContents();
    });
    connect(m_table->selectionModel(), &QItemSelectionModel::selectionChanged, this,
            &RunsView::updateDetails);

    // Keys: Ctrl+F the filter, F5 refresh (anywhere in the view); Del and Enter on the table.
    auto* find =
        new QShortcut(QKeySequence::Find, this, nullptr, nullptr, Qt::WidgetWithChildrenShortcut);
    connect(find, &QShortcut::activated, this, [this] {
        m_filter->setFocus(Qt::ShortcutFocusReason);
        m_filter->selectAll();
    });
    auto* f5 = new QShortcut(QKeySequence(Qt::Key_F5), this, nullptr, nullptr,
                             Qt::WidgetWithChildrenShortcut);
    connect(f5, &QShortcut::activated, this, &RunsView::refresh);
    auto* del = new QShortcut(QKeySequence::Delete, m_table, nullptr, nullptr, Qt::WidgetShortcut);
    connect(del, &QShortcut::activated, this, &RunsView::deleteSelected);
    for (const int key : {Qt::Key_Return, Qt::Key_Enter}) {
        auto* enter =
            new QShortcut(QKeySequence(key), m_table, nullptr, nullptr, Qt::WidgetShortcut);
        connect(enter, &QShortcut::activated, this, &RunsView::openSelected);
    }

    m_poll = new QTimer(this);
    m_poll->setInterval(kRunsPollMs);
    connect(m_poll, &QTimer::timeout, this, &RunsView::poll);

    const QStringList saved = QSettings().value(kRunsColumnsSetting).toStringList();
    if (!saved.isEmpty()) {
        m_model->setColumns(runsStd(saved));
    }
    onSortChanged();
    showStoreState();
    updateDetails();
}

RunsView::~RunsView() = default;

void RunsView::buildControls(QWidget* page) {
    auto* layout = static_cast<QVBoxLayout*>(page->layout());
    auto* filterRow = new QHBoxLayout;
    auto* filterLabel = new QLabel(tr("&Filter"));
    m_filter = new QLineEdit;
    m_filter->setObjectName(QStringLiteral("runsFilter"));
    m_filter->setPlaceholderText(tr("e.g. preset=spirals figure.test_nll<0.3 tag~sweep"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setToolTip(
        tr("Terms `field op value` (op = != < <= > >= ~), all must hold; a bare word searches "
           "the notes and tags. Fields: the columns, tag, figure.NAME, config.KEY; the syntax of "
           "ensemble-cli runs list. Ctrl+F comes here."));
    filterLabel->setBuddy(m_filter);
    // Applied as typed, a moment after the last key, and at once on Enter.
    auto* typed = new QTimer(this);
    typed->setSingleShot(true);
    typed->setInterval(300);
    connect(m_filter, &QLineEdit::textChanged, typed, qOverload<>(&QTimer::start));
    connect(typed, &QTimer::timeout, this, [this] { applyFilter(m_filter->text()); });
    connect(m_filter, &QLineEdit::returnPressed, this, [this, typed] {
        typed->stop();
        applyFilter(m_filter->text());
    });
    m_columnsButton = new QToolButton;
    m_columnsButton->setText(tr("Columns"));
    m_columnsButton->setToolTip(
        tr("Choose the table's columns: the store's fields, every "
           "figure and config key recorded"));
    m_columnsButton->setPopupMode(QToolButton::InstantPopup);
    auto* columnsMenu = new QMenu(m_columnsButton);
    connect(columnsMenu, &QMenu::aboutToShow, this, &RunsView::fillColumnsMenu);
    m_columnsButton->setMenu(columnsMenu);
    filterRow->addWidget(filterLabel);
    filterRow->addWidget(m_filter, 1);
    filterRow->addWidget(m_columnsButton);
    // On the filter's row, whose field gives way: the buttons' row is full at 900 x 600.
    m_record = new QCheckBox(tr("Record"));
    m_record->setObjectName(QStringLiteral("runsRecord"));
    m_record->setToolTip(
        tr("Record the window's new runs in the runs store (ensemble-cli records its own unless "
           "--no-record; ENSEMBLE_RUNS_DB=off turns both off)"));
    connect(m_record, &QCheckBox::toggled, this, &RunsView::recordingToggled);
    filterRow->addWidget(m_record);
    layout->addLayout(filterRow);

    m_filterError = new WrappingLabel;
    m_filterError->setObjectName(QStringLiteral("runsFilterError"));
    m_filterError->setStyleSheet(QStringLiteral("color: #b00020;"));
    m_filterError->hide();
    layout->addWidget(m_filterError);

    auto* actions = new QHBoxLayout;
    m_count = new QLabel;
    m_tagButton = new QPushButton(tr("Tag…"));
    m_tagButton->setToolTip(tr("Add a tag to the selected runs (-tag removes it)"));
    connect(m_tagButton, &QPushButton::clicked, this, &RunsView::askTag);
    m_deleteButton = new QPushButton(tr("Delete…"));
    m_deleteButton->setToolTip(
        tr("Remove the selected runs from the store (Del); their files only when you tick it"));
    connect(m_deleteButton, &QPushButton::clicked, this, &RunsView::deleteSelected);
    auto* exportButton = new QPushButton(tr("Export CSV…"));
    exportButton->setToolTip(
        tr("Write the table (every run the filter keeps, the columns "
           "shown) as CSV, as ensemble-cli runs export does"));
    connect(exportButton, &QPushButton::clicked, this, &RunsView::chooseExport);
    auto* refreshButton = new QPushButton(tr("Refresh"));
    refreshButton->setToolTip(
        tr("Read the store again (F5); the table also follows it while "
           "shown"));
    connect(refreshButton, &QPushButton::clicked, this, &RunsView::refresh);
    actions->addWidget(m_count, 1);
    actions->addWidget(m_tagButton);
    actions->addWidget(m_deleteButton);
    actions->addWidget(exportButton);
    actions->addWidget(refreshButton);
    layout->addLayout(actions);

    m_message = new WrappingLabel;
    m_message->setObjectName(QStringLiteral("runsMessage"));
    m_message->hide();
    layout->addWidget(m_message);
}

void RunsView::setRecording(bool on) {
    const QSignalBlocker quiet(m_record);
    m_record->setChecked(on);
}

bool RunsView::recording() const {
    return m_record->isChecked();
}

void RunsView::setSnapshot(SnapshotPtr snapshot) {
    if (snapshot && snapshot->run->runId != m_runId) {
        m_runId = snapshot->run->runId;
        if (isVisible()) {
            poll();
        }
    }
}

bool RunsView::openStore(const QString& path) {
    m_path = path;
    m_tried = true;
    // An empty path (recording off) closes the store shown before.
    const bool ok = m_model->openStore(path.toStdString()) && !path.isEmpty();
    showStoreState();
    return ok;
}

void RunsView::ensureOpen() {
    if (m_tried) {
        return;
    }
    const std::filesystem::path path = runs::defaultRunStorePath();
    openStore(QString::fromStdString(path.string()));
}

QString RunsView::storeMessage() const {
    return m_stack->currentWidget() == m_storeMessage ? m_storeMessage->text() : QString();
}

void RunsView::showStoreState() {
    if (m_model->isOpen() && m_model->errorText().isEmpty()) {
        m_stack->setCurrentIndex(0);
        updateCount();
        return;
    }
    QString text;
    if (!m_tried) {
        text = tr("Reading the runs store…");
    } else if (m_path.isEmpty()) {
        text = tr("Recording is off (%1=off): there is no runs store to show.")
                   .arg(QString::fromLatin1(runs::kRunsDbVariable));
    } else {
        text = tr("The runs store cannot be read:\n%1\n\nTraining goes on and is recorded when "
                  "the store can be written again. This view tries again every few seconds "
                  "and on Refresh (F5).")
                   .arg(m_model->errorText());
    }
    if (m_storeMessage->text() != text) {
        m_storeMessage->setText(text);
    }
    m_stack->setCurrentWidget(m_storeMessage);
    m_count->setText(QString());
}

void RunsView::onStoreFailed(const QString& /*message*/) {
    showStoreState();
}

void RunsView::updateCount() {
    const std::int64_t total = m_model->total();
    const bool filtered = !m_model->query().filters.empty() || !m_model->query().text.empty();
    m_count->setText(filtered ? tr("%Ln run(s) match", "", static_cast<int>(total))
                              : tr("%Ln run(s)", "", static_cast<int>(total)));
}

bool RunsView::applyFilter(const QString& text) {
    runs::RunQuery query;
    try {
        query = runs::parseFilter(text.toStdString());
    } catch (const std::exception& e) {
        m_filterError->setText(
            tr("Not applied: %1 (the table keeps the filter before)").arg(runsQ(e.what())));
        m_filterError->show();
        return false;
    }
    m_filterError->hide();
    m_filterError->clear();
    if (m_filter->text() != text) {
        const QSignalBlocker block(m_filter);
        m_filter->setText(text);
    }
    m_lastGoodFilter = text;
    m_model->setFilter(query);
    showStoreState();
    return true;
}

QString RunsView::filterError() const {
    return m_filterError->isVisible() || !m_filterError->isHidden() ? m_filterError->text()
                                                                    : QString();
}

void RunsView::setColumns(const QStringList& fields) {
    std::vector<std::string> valid;
    for (const QString& f : fields) {
        try {
            runs::runFieldText(runs::RunEntry{}, f.toStdString());  // a field the store knows
            valid.push_back(f.toStdString());
        } catch (const std::exception&) {
        }
    }
    if (valid.empty()) {
        return;
    }
    keepingSelection([&] { m_model->setColumns(valid); });
    QSettings().setValue(kRunsColumnsSetting, runsQList(valid));
    onSortChanged();
}

QStringList RunsView::columns() const {
    return runsQList(m_model->columns());
}

void RunsView::toggleColumn(const QString& field, bool on) {
    QStringList now = columns();
    if (on && !now.contains(field)) {
        now << field;
    } else if (!on) {
        now.removeAll(field);
    }
    setColumns(now);
}

void RunsView::fillColumnsMenu() {
    QMenu* menu = m_columnsButton->menu();
    menu->clear();
    const QStringList shown = columns();
    const auto add = [&](QMenu* to, const QString& field, const QString& text) {
        QAction* a = to->addAction(text);
        a->setCheckable(true);
        a->setChecked(shown.contains(field));
        connect(a, &QAction::toggled, this, [this, field](bool on) { toggleColumn(field, on); });
    };
    for (const char* column : kRunsStoreColumns) {
        add(menu, QLatin1String(column), QLatin1String(column));
    }
    runs::RunStore* store = m_model->store();
    if (store != nullptr) {
        try {
            QMenu* figures = menu->addMenu(tr("Figures"));
            for (const std::string& name : store->figureNames()) {
                add(figures, runsQ("figure." + name), runsQ(name));
            }
            figures->setEnabled(!figures->isEmpty());
            QMenu* config = menu->addMenu(tr("Config keys"));
            for (const std::string& name : store->configKeys()) {
                add(config, runsQ("config." + name), runsQ(name));
            }
            config->setEnabled(!config->isEmpty());
        } catch (const std::exception& e) {
            setMessage(runsQ(e.what()), true);
        }
    }
    menu->addSeparator();
    connect(menu->addAction(tr("Default columns")), &QAction::triggered, this, [this] {
        std::vector<std::string> figures;
        if (runs::RunStore* s = m_model->store()) {
            try {
                figures = s->figureNames();
            } catch (const std::exception&) {
            }
        }
        setColumns(runsQList(runs::defaultRunColumns(figures)));
    });
}

void RunsView::onSortChanged() {
    const runs::RunSort sort = m_model->sortOrder();
    const auto& columns = m_model->columns();
    const auto it = std::find(columns.begin(), columns.end(), sort.field);
    QHeaderView* header = m_table->horizontalHeader();
    const QSignalBlocker block(header);
    header->setSortIndicator(it == columns.end() ? -1 : static_cast<int>(it - columns.begin()),
                             sort.descending ? Qt::DescendingOrder : Qt::AscendingOrder);
}

std::vector<std::int64_t> RunsView::selectedIds() const {
    std::vector<std::int64_t> ids;
    QModelIndexList rows = m_table->selectionModel()->selectedRows();
    std::sort(rows.begin(), rows.end(),
              [](const QModelIndex& a, const QModelIndex& b) { return a.row() < b.row(); });
    for (const QModelIndex& index : rows) {
        if (const std::int64_t id = m_model->idAt(index.row()); id > 0) {
            ids.push_back(id);
        }
    }
    return ids;
}

void RunsView::selectIds(const std::vector<std::int64_t>& ids) {
    QItemSelection selection;
    const std::set<std::int64_t> wanted(ids.begin(), ids.end());
    for (int row = 0; row < m_model->rowCount() && selection.size() < static_cast<int>(ids.size());
         ++row) {
        if (wanted.count(m_model->idAt(row)) > 0) {
            selection.select(m_model->index(row, 0),
                             m_model->index(row, m_model->columnCount() - 1));
        }
    }
    m_table->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    if (!selection.isEmpty()) {
        m_table->scrollTo(selection.first().topLeft());
    }
}

void RunsView::keepingSelection(const std::function<void()>& reread) {
    // The selected rows' ids, found again near their rows (a new entry moves them by a few).
    const std::vector<std::int64_t> ids = selectedIds();
    std::vector<int> rows;
    for (const QModelIndex& index : m_table->selectionModel()->selectedRows()) {
        rows.push_back(index.row());
    }
    const int scroll = m_table->verticalScrollBar()->value();
    const std::int64_t before = m_model->total();
    {
        const QSignalBlocker block(m_table->selectionModel());
        reread();
    }
    const int moved = static_cast<int>(std::max<std::int64_t>(0, m_model->total() - before));
    QItemSelection selection;
    const std::set<std::int64_t> wanted(ids.begin(), ids.end());
    std::set<int> tried;
    for (const int row : rows) {
        for (int r = std::max(0, row - 20); r <= row + moved + 20 && r < m_model->rowCount(); ++r) {
            if (tried.insert(r).second && wanted.count(m_model->idAt(r)) > 0) {
                selection.select(m_model->index(r, 0),
                                 m_model->index(r, m_model->columnCount() - 1));
            }
        }
    }
    m_table->verticalScrollBar()->setValue(scroll);
    m_table->selectionModel()->select(selection, QItemSelectionModel::ClearAndSelect);
    updateDetails();
}

void RunsView::refresh() {
    if (!m_model->isOpen()) {
        m_tried = false;
        if (m_path.isEmpty()) {
            ensureOpen();
        } else {
            openStore(m_path);
        }
        return;
    }
    keepingSelection([this] { m_model->reload(); });
    showStoreState();
}

void RunsView::poll() {
    if (!m_model->isOpen() || !m_model->errorText().isEmpty()) {
        refresh();  // a store locked or unreadable before may be readable now
        return;
    }
    bool changed = false;
    keepingSelection([&] { changed = m_model->refreshIfChanged(); });
    showStoreState();
}

void RunsView::showEvent(QShowEvent* event) {
    QWidget::showEvent(event);
    if (!m_tried) {
        ensureOpen();
    } else {
        poll();
    }
    m_poll->start();
}

void RunsView::hideEvent(QHideEvent* event) {
    QWidget::hideEvent(event);
    m_poll->stop();
}

void RunsView::setMessage(const QString& text, bool error) {
    m_message->setStyleSheet(error ? QStringLiteral("color: #b00020;") : QString());
    m_message->setText(text);
    m_message->setVisible(!text.isEmpty());
}

}  // namespace ensemble::ui

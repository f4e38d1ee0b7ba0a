// The Reproduce view, one piece: the registry's list, the run's options and command line, the
// ours-against-paper table and the figure's pane are one screen whose controls enable each
// other; the run itself is reproduce_job's, the figure's drawing the engine's figureSvg.
#include "views/reproduce_view.h"

#include <QApplication>
#include <QBuffer>
#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDir>
#include <QFile>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QScrollBar>
#include <QSpinBox>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <limits>
#include <map>
#include <utility>

#include "render/plot_helpers.h"
#include "runs/run_store.h"
#include "sys/atomic_file.h"
#include "views/reproduce_figure.h"
#include "widgets/job_status_row.h"
#include "widgets/wrapping_label.h"

namespace ensemble::ui {

namespace {

using nlohmann::json;
using reproduce::Reproduction;

constexpr int kIdRole = Qt::UserRole;  // the list's first column: the registry id

// The list's columns: the facts `reproduce --list` prints first (they fit 900 x 600 with the
// Experiment panel open), then the row's plan; the details under the list repeat the plan.
enum ListColumn { kListId, kListPaper, kListCost, kListData, kListLevels, kListRuns, kListQuick };
constexpr int kListColumnCount = 7;

QString reproduceText(const char* text) {
    return QCoreApplication::translate("ensemble::ui::ReproduceView", text);
}

QString qs(const std::string& s) {
    return QString::fromStdString(s);
}

// "20 splits (protein 5)": the count most levels have, and the levels that differ.
QString countsText(const Reproduction& r, const std::vector<int>& counts) {
    std::map<int, int> often;
    for (int c : counts) {
        ++often[c];
    }
    int usual = counts.empty() ? 0 : counts.front();
    for (const auto& [count, levels] : often) {
        if (levels > often[usual]) {
            usual = count;
        }
    }
    QString text = QStringLiteral("%1 %2%3").arg(usual).arg(
        qs(r.unit), usual == 1 ? QString() : QStringLiteral("s"));
    QStringList others;
    for (std::size_t i = 0; i < counts.size() && i < r.levels.size(); ++i) {
        if (counts[i] != usual) {
            others << QStringLiteral("%1 %2").arg(qs(r.levels[i])).arg(counts[i]);
        }
    }
    if (!others.isEmpty()) {
        text += QStringLiteral(" (%1)").arg(others.join(QStringLiteral(", ")));
    }
    return text;
}

QTableWidgetItem* cell(const QString& text, const QString& tip = QString()) {
    auto* item = new QTableWidgetItem(text);
    item->setToolTip(tip.isEmpty() ? text : tip);
    return item;
}

double numberOr(const json& v, double otherwise) {
    return v.is_number() ? v.get<double>() : otherwise;
}

// "0.9853 ± 0.061" as the CLI's table prints ours; "–" for no number.
QString oursText(double mean, double se) {
    if (!std::isfinite(mean)) {
        return QStringLiteral("–");
    }
    return std::isfinite(se) ? QStringLiteral("%1 ± %2").arg(mean, 0, 'g', 4).arg(se, 0, 'g', 2)
                             : QString::number(mean, 'g', 4);
}

// The paper's side of a report row: its printed number and spread, its band, or none.
QString paperText(const json& paper) {
    if (!paper.is_object()) {
        return QStringLiteral("–");
    }
    if (paper.contains("printed")) {
        return qs(paper["printed"].get<std::string>());
    }
    if (paper.contains("low") && paper.contains("high")) {
        return QStringLiteral("[%1, %2]")
            .arg(paper["low"].get<double>(), 0, 'g', 6)
            .arg(paper["high"].get<double>(), 0, 'g', 6);
    }
    return QStringLiteral("–");
}

struct ColumnInfo {
    const char* header;
    const char* help;
};

constexpr std::array<ColumnInfo, kReproduceColumnCount> kColumns{{
    {QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "Level"),
     QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "The level of the paper's table or figure")},
    {QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "Figure"),
     QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "The figure the runs measure")},
    {QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "Kind"),
     QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView",
                       "numeric: within 2 combined standard errors; band: inside the printed "
                       "range; claim: the finding holds in every run; measurement: no verdict")},
    {QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "Ours (mean ± se)"),
     QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView",
                       "The mean over the level's splits or seeds ± its standard error (sample "
                       "standard deviation / √n)")},
    {QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "n"),
     QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "The runs of the level that finished")},
    {QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "Paper"),
     QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView",
                       "The paper's number ± its printed spread, its range, or its claim's test")},
    {QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "Also published"),
     QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView",
                       "Another column of the same published table ± its spread, without a "
                       "verdict (its name and source in the cell's tooltip)")},
    {QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "Verdict"),
     QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "pass, fail, or – for a measurement")},
    {QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "Why"),
     QT_TRANSLATE_NOOP("ensemble::ui::ReproduceView", "The verdict's reason in one line")},
}};

QTableWidget* plainTable(int columns) {
    auto* table = new QTableWidget(0, columns);
    table->verticalHeader()->setVisible(false);
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setSelectionBehavior(QAbstractItemView::SelectRows);
    table->setAlternatingRowColors(true);
    table->setWordWrap(false);
    return table;
}

}  // namespace

ReproduceView::ReproduceView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);

    m_list = plainTable(kListColumnCount);
    m_list->setObjectName(QStringLiteral("ReproductionList"));
    m_list->setSelectionMode(QAbstractItemView::SingleSelection);
    m_list->setHorizontalHeaderLabels({tr("Reproduction"), tr("Paper"), tr("Cost"), tr("Data"),
                                       tr("Levels"), tr("Runs"), tr("--quick")});
    m_list->setToolTip(
        tr("The published experiments `ensemble-cli reproduce --list` names: the cost is the "
           "CPU time of the whole row on two cores"));
    fillList();
    layout->addWidget(m_list);

    m_details = new WrappingLabel;
    m_details->setStyleSheet(QStringLiteral("color: #555;"));
    layout->addWidget(m_details);

    auto* options = new QGridLayout;
    auto* levelLabel = new QLabel(tr("&Level"));
    m_level = new QComboBox;
    m_level->setToolTip(tr("Every level of the row, or one (ID/LEVEL on the command line)"));
    levelLabel->setBuddy(m_level);
    m_countLabel = new QLabel(tr("&Splits"));
    m_count = new QSpinBox;
    m_count->setRange(0, 1000);
    m_count->setSpecialValueText(tr("default"));
    m_count->setToolTip(
        tr("Runs per level (--splits or --seeds); default: the paper's protocol, or --quick's"));
    m_count->setMinimumWidth(m_count->fontMetrics().horizontalAdvance(tr("default")) + 48);
    m_countLabel->setBuddy(m_count);
    m_quick = new QCheckBox(tr("&Quick"));
    options->addWidget(levelLabel, 0, 0);
    options->addWidget(m_level, 0, 1);
    options->addWidget(m_countLabel, 0, 2);
    options->addWidget(m_count, 0, 3);
    options->addWidget(m_quick, 0, 4);
    options->setColumnStretch(5, 1);
    m_run = new QPushButton(tr("&Run"));
    m_copy = new QPushButton(tr("Copy as c&ommand"));
    m_copy->setToolTip(tr("Copy the `ensemble-cli reproduce` line that runs these options"));
    m_export = new QPushButton(tr("E&xport…"));
    m_export->setToolTip(
        tr("Write the report (as --report writes it) and the CSV files (as --csv writes them) "
           "into a folder"));
    auto* buttons = new QHBoxLayout;
    buttons->addWidget(m_run);
    buttons->addWidget(m_copy);
    buttons->addWidget(m_export);
    buttons->addStretch(1);
    options->addLayout(buttons, 1, 0, 1, 6);
    layout->addLayout(options);

    m_command = new WrappingLabel;
    m_command->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_command->setToolTip(tr("The command that runs these options (Copy as command)"));
    layout->addWidget(m_command);

    m_status = new JobStatusRow(this, tr("Stop the reproduction; the runs that finished stay, "
                                         "judged as the CLI's interrupted report (Esc)"));
    layout->addWidget(m_status);

    m_table = plainTable(kReproduceColumnCount);
    m_table->setObjectName(QStringLiteral("ReproduceTable"));
    for (int c = 0; c < kReproduceColumnCount; ++c) {
        auto* header =
            new QTableWidgetItem(reproduceText(kColumns[static_cast<std::size_t>(c)].header));
        header->setToolTip(reproduceText(kColumns[static_cast<std::size_t>(c)].help));
        m_table->setHorizontalHeaderItem(c, header);
    }
    m_table->resizeColumnsToContents();
    m_table->setMinimumHeight(120);
    layout->addWidget(m_table, 1);

    m_summary = new WrappingLabel;
    layout->addWidget(m_summary);

    m_figure = new ReproduceFigure;
    m_figure->setObjectName(QStringLiteral("ReproduceFigure"));
    layout->addWidget(m_figure);

    connect(m_list, &QTableWidget::currentCellChanged, this, [this] { rowChanged(); });
    connect(m_level, &QComboBox::currentIndexChanged, this, [this] { updateControls(); });
    connect(m_count, &QSpinBox::valueChanged, this, [this] { updateControls(); });
    connect(m_quick, &QCheckBox::toggled, this, [this] { updateControls(); });
    connect(m_run, &QPushButton::clicked, this, &ReproduceView::startRun);
    connect(m_copy, &QPushButton::clicked, this, &ReproduceView::copyCommand);
    connect(m_export, &QPushButton::clicked, this, [this] { Q_EMIT exportRequested(); });
    connect(m_status, &JobStatusRow::cancelRequested, this, &ReproduceView::cancelRequested);
    JobStatusRow::addStartShortcut(this, m_run, [this] { startRun(); });
    m_list->setCurrentCell(0, 0);
    setMessage(
        tr("Choose a reproduction and Run: its runs train one after another on the "
           "engine thread, the numbers of `ensemble-cli reproduce`."));
    updateControls();
}

void ReproduceView::fillList() {
    const std::vector<Reproduction>& rows = reproduce::reproductions();
    m_list->setRowCount(static_cast<int>(rows.size()));
    for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
        const Reproduction& r = rows[static_cast<std::size_t>(i)];
        std::string why;
        const bool present = reproduce::dataPresent(r, &why);
        auto* id = cell(qs(r.id), qs(r.title));
        id->setData(kIdRole, qs(r.id));
        m_list->setItem(i, kListId, id);
        m_list->setItem(i, kListPaper,
                        cell(qs(r.cite), QStringLiteral("%1, %2").arg(qs(r.paper), qs(r.where))));
        QStringList levels;
        for (const std::string& level : r.levels) {
            levels << qs(level);
        }
        m_list->setItem(i, kListLevels,
                        cell(QString::number(r.levels.size()), levels.join(QStringLiteral(", "))));
        m_list->setItem(i, kListRuns, cell(countsText(r, r.counts), qs(r.runs)));
        m_list->setItem(i, kListCost,
                        cell(qs(reproduce::costText(r.costSeconds)),
                             tr("Cost in %1").arg(qs(r.costMeasuredOn))));
        m_list->setItem(
            i, kListQuick,
            cell(QStringLiteral("%1, %2").arg(countsText(r, r.quickCounts),
                                              qs(reproduce::costText(r.quickCostSeconds))),
                 tr("--quick leaves out %1").arg(qs(r.quickCuts))));
        m_list->setItem(i, kListData,
                        cell(present ? tr("present") : tr("missing"),
                             present ? tr("Its data are on this machine") : qs(why)));
    }
    m_list->resizeColumnsToContents();
    // As tall as its rows: the registry is a handful, and the table below needs the room.
    m_list->setFixedHeight(m_list->horizontalHeader()->sizeHint().height() +
                           m_list->rowCount() * m_list->verticalHeader()->defaultSectionSize() +
                           2 * m_list->frameWidth() +
                           m_list->horizontalScrollBar()->sizeHint().height());
}

void ReproduceView::rowChanged() {
    const int row = m_list->currentRow();
    if (row < 0) {
        return;
    }
    const Reproduction& r = reproduce::reproductions()[static_cast<std::size_t>(row)];
    {
        const QSignalBlocker block(m_level);
        m_level->clear();
        m_level->addItem(tr("All levels"), QString());
        for (const std::string& level : r.levels) {
            m_level->addItem(qs(level), qs(level));
        }
    }
    m_countLabel->setText(r.unit == "split" ? tr("&Splits") : tr("&Seeds"));
    m_quick->setToolTip(tr("--quick: %1 (%2)").arg(countsText(r, r.quickCounts), qs(r.quickCuts)));
    std::string why;
    const bool present = reproduce::dataPresent(r, &why);
    // In a few lines: what it sets beside which figure, and its plan; the whole of what it runs,
    // the paper and the deviations in the tooltip.
    const QString levels =
        r.levels.size() == 1 ? tr("1 level") : tr("%1 levels").arg(r.levels.size());
    QString details =
        tr("%1, %2: %3. %4, %5; Quick: %6, %7.")
            .arg(qs(r.cite), qs(r.where), qs(r.title), levels, countsText(r, r.counts),
                 countsText(r, r.quickCounts), qs(reproduce::costText(r.quickCostSeconds)));
    if (!present) {
        details += QLatin1Char(' ') + tr("Its data are missing: %1").arg(qs(why));
    }
    m_details->setText(details);
    QString tip = QStringLiteral("%1, %2.\n%3.").arg(qs(r.paper), qs(r.where), qs(r.runs));
    if (!r.deviations.empty()) {
        tip += QLatin1Char('\n') + tr("Deviations from the paper's protocol:");
        for (const std::string& d : r.deviations) {
            tip += QStringLiteral("\n• ") + qs(d);
        }
    }
    m_details->setToolTip(tip);
    updateControls();
}

ReproduceRequest ReproduceView::request() const {
    ReproduceRequest request;
    const int row = m_list->currentRow();
    if (row >= 0) {
        request.id = m_list->item(row, kListId)->data(kIdRole).toString().toStdString();
    }
    const QString level = m_level->currentData().toString();
    if (!level.isEmpty()) {
        request.options.levels.push_back(level.toStdString());
    }
    request.options.count = m_count->value();
    request.options.quick = m_quick->isChecked();
    return request;
}

QString ReproduceView::commandLine() const {
    return qs(reproduceCommandLine(request()));
}

bool ReproduceView::setReproduction(const QString& id) {
    for (int i = 0; i < m_list->rowCount(); ++i) {
        if (m_list->item(i, kListId)->data(kIdRole).toString() == id) {
            m_list->setCurrentCell(i, kListId);
            return true;
        }
    }
    return false;
}

void ReproduceView::setLevel(const QString& level) {
    m_level->setCurrentIndex(std::max(0, m_level->findData(level)));
}

void ReproduceView::setCount(int count) {
    m_count->setValue(count);
}

void ReproduceView::setQuick(bool quick) {
    m_quick->setChecked(quick);
}

void ReproduceView::setSnapshot(const SnapshotPtr& snapshot) {
    const bool training = snapshot && snapshot->running;
    if (training != m_trainingRuns) {
        m_trainingRuns = training;
        updateControls();
    }
}

void ReproduceView::updateControls() {
    const int row = m_list->currentRow();
    const bool present = row >= 0 && reproduce::dataPresent(
                                         reproduce::reproductions()[static_cast<std::size_t>(row)]);
    m_run->setEnabled(present && !m_running);
    // The engine thread runs one thing at a time: a run in training waits between two chunks
    // while the reproduction runs (as for the Shift and Methods jobs).
    m_run->setToolTip(!present ? tr("Its data are not on this machine")
                      : m_trainingRuns
                          ? tr("Run it on the engine thread (Ctrl+Enter); the run training now "
                               "waits until it ends")
                          : tr("Run it on the engine thread (Ctrl+Enter)"));
    m_list->setEnabled(!m_running);
    m_level->setEnabled(!m_running);
    m_count->setEnabled(!m_running);
    m_quick->setEnabled(!m_running);
    m_status->setCancellable(m_running);
    m_export->setEnabled(m_state != nullptr && m_state->result != nullptr && !m_running);
    m_command->setText(commandLine());
}

void ReproduceView::copyCommand() {
    QApplication::clipboard()->setText(commandLine());
    setMessage(tr("Copied: %1").arg(commandLine()));
}

void ReproduceView::startRun() {
    if (m_running) {
        return;
    }
    const ReproduceRequest r = request();
    if (r.id.empty()) {
        return;
    }
    m_running = true;
    m_entry.reset();
    m_stateBeforeRun = m_state;
    m_status->start(tr("Reproducing %1… (Esc cancels)").arg(qs(r.id)));
    updateControls();
    Q_EMIT runRequested(r);
}

void ReproduceView::setProgress(const ReproduceJobProgress& p) {
    if (!m_running || p.runs == 0) {
        return;
    }
    if (p.judged && p.judged != m_state) {
        showState(p.judged, true);
    }
    const double within =
        p.steps > 0
            ? std::clamp(static_cast<double>(p.step) / static_cast<double>(p.steps), 0.0, 1.0)
            : 0.0;
    const std::size_t shown = std::min(p.run + 1, p.runs);
    m_status->setProgress((static_cast<double>(p.run) + within) / static_cast<double>(p.runs),
                          tr("run %1 of %2").arg(shown).arg(p.runs));
    const QString run = QStringLiteral("%1 %2").arg(qs(p.level)).arg(p.index);
    if (p.run >= p.runs) {
        setMessage(tr("All %1 runs finished: judging… (Esc cancels)").arg(p.runs));
    } else if (p.steps == 0) {
        setMessage(tr("Run %1 of %2, %3: starting… (Esc cancels)").arg(shown).arg(p.runs).arg(run));
    } else {
        setMessage(tr("Run %1 of %2, %3: step %4 of %5, %6 s (Esc cancels)")
                       .arg(shown)
                       .arg(p.runs)
                       .arg(run, formatCount(p.step), formatCount(p.steps))
                       .arg(p.elapsed, 0, 'f', 0));
    }
}

void ReproduceView::setOutcome(ReproduceOutcomePtr outcome) {
    m_running = false;
    m_status->finish();
    if (!outcome->error.isEmpty()) {
        setMessage(tr("Nothing ran: %1").arg(outcome->error), true);
        updateControls();
        return;
    }
    m_entry = outcome->entry;
    if (outcome->state) {
        showState(outcome->state, outcome->cancelled);
    }
    const std::size_t done = m_state && m_state->result ? m_state->result->outcomes.size() : 0;
    const std::size_t planned = m_state && m_state->result ? m_state->result->plan.size() : 0;
    setMessage(outcome->cancelled
                   ? tr("Cancelled: %1 of %2 runs finished; the table judges those, as the CLI's "
                        "interrupted report does.")
                         .arg(done)
                         .arg(planned)
                   : tr("Done: %1 runs; the table is `%2 --report`'s.")
                         .arg(done)
                         .arg(qs(outcome->commandLine)));
    updateControls();
}

void ReproduceView::endJob() {
    if (!std::exchange(m_running, false)) {
        return;
    }
    m_status->finish();
    if (m_state == m_stateBeforeRun) {
        // No run of it finished: what the table shows is the reproduction before.
        setMessage(
            tr("A new run in the window ended the reproduction before its first run "
               "finished; Run starts it again."));
    } else {
        setMessage(tr("A new run in the window ended the reproduction: the %1 runs that "
                      "finished are judged below; Run starts it again.")
                       .arg(m_state->result->outcomes.size()));
    }
    updateControls();
}

void ReproduceView::showState(const ReproduceStatePtr& state, bool partial) {
    m_state = state;
    const json& report = state->report;
    const json& rows = report["rows"];
    m_table->setSortingEnabled(false);
    m_table->setRowCount(static_cast<int>(rows.size()));
    const double nan = std::numeric_limits<double>::quiet_NaN();
    bool anyBeside = false;
    for (int i = 0; i < static_cast<int>(rows.size()); ++i) {
        const json& row = rows[static_cast<std::size_t>(i)];
        const json& ours = row["ours"];
        const json& paper = row["paper"];
        const std::string verdict = row["verdict"].get<std::string>();
        const double mean = numberOr(ours["mean"], nan);
        const double se = numberOr(ours["se"], nan);
        m_table->setItem(i, static_cast<int>(ReproduceColumn::Level),
                         cell(qs(row["level"].get<std::string>())));
        m_table->setItem(i, static_cast<int>(ReproduceColumn::Figure),
                         cell(qs(row["figure"].get<std::string>())));
        m_table->setItem(i, static_cast<int>(ReproduceColumn::Kind),
                         cell(qs(row["kind"].get<std::string>())));
        auto* oursItem = cell(oursText(mean, se));
        oursItem->setData(kReproduceMeanRole, mean);
        oursItem->setData(kReproduceSeRole, se);
        oursItem->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(i, static_cast<int>(ReproduceColumn::Ours), oursItem);
        auto* n = cell(QString::number(ours["n"].get<int>()));
        n->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
        m_table->setItem(i, static_cast<int>(ReproduceColumn::N), n);
        QString source;
        if (paper.is_object()) {
            source = qs(paper.value("source", std::string()));
            if (paper.contains("claim")) {
                source = qs(paper["claim"].get<std::string>()) + QStringLiteral(" (") + source +
                         QLatin1Char(')');
            }
        }
        m_table->setItem(i, static_cast<int>(ReproduceColumn::Paper),
                         cell(paperText(paper), source));
        QStringList beside;
        QStringList besideTips;
        for (const json& b : row.value("beside", json::array())) {
            beside << qs(b["printed"].get<std::string>());
            besideTips << qs(b["label"].get<std::string>()) + QStringLiteral(": ") +
                              qs(b["source"].get<std::string>());
        }
        anyBeside = anyBeside || !beside.isEmpty();
        m_table->setItem(
            i, static_cast<int>(ReproduceColumn::Beside),
            cell(beside.join(QStringLiteral("; ")), besideTips.join(QLatin1Char('\n'))));
        auto* verdictItem = cell(verdict == "none" ? QStringLiteral("–") : qs(verdict),
                                 verdict == "none" ? tr("measured, no verdict") : qs(verdict));
        if (verdict != "none") {
            verdictItem->setForeground(verdict == "pass" ? QColor(0x1b, 0x7a, 0x2e)
                                                         : QColor(0xb0, 0x20, 0x20));
        }
        m_table->setItem(i, static_cast<int>(ReproduceColumn::Verdict), verdictItem);
        m_table->setItem(i, static_cast<int>(ReproduceColumn::Why),
                         cell(qs(row["why"].get<std::string>())));
    }
    m_table->setColumnHidden(static_cast<int>(ReproduceColumn::Beside), !anyBeside);
    m_table->resizeColumnsToContents();
    const json& counts = report["summary"];
    const reproduce::ReproductionResult& result = *state->result;
    QString text = tr("%1: %2 pass, %3 fail, %4 measured without a verdict; %5 of %6 runs in "
                      "%7 s on %8.")
                       .arg(qs(report["id"].get<std::string>()))
                       .arg(counts["pass"].get<int>())
                       .arg(counts["fail"].get<int>())
                       .arg(counts["measured"].get<int>())
                       .arg(result.outcomes.size())
                       .arg(result.plan.size())
                       .arg(result.seconds, 0, 'f', 1)
                       .arg(result.backend.empty() ? QStringLiteral("–") : qs(result.backend));
    if (partial) {
        text += QLatin1Char(' ') + tr("Partial: the levels judged are those its finished runs "
                                      "reached.");
    }
    m_summary->setText(text);
    m_figure->setSvg(QByteArray::fromStdString(state->figure));
    updateControls();
}

bool ReproduceView::exportTo(const QString& directory, QStringList* written, QString* error) {
    if (!m_state || !m_state->result) {
        *error = tr("Nothing to export yet: Run a reproduction first.");
        return false;
    }
    QDir dir(directory);
    if (!dir.mkpath(QStringLiteral("."))) {
        *error = tr("%1: cannot create the folder").arg(directory);
        return false;
    }
    // The report, the CSVs and the figure as the CLI writes them, and the figure as a PNG at
    // twice its document's size (sharp on a HiDPI screen and in print).
    std::map<std::string, std::string> contents = reproduceExportFiles(*m_state);
    QByteArray png;
    QBuffer buffer(&png);
    if (!buffer.open(QIODevice::WriteOnly) || !m_figure->render(2.0).save(&buffer, "PNG")) {
        *error = tr("The figure could not be drawn as a PNG");
        return false;
    }
    contents["figure.png"] = png.toStdString();
    QStringList files;
    std::vector<std::pair<std::string, std::string>> roles;
    try {
        for (const auto& [name, text] : contents) {
            const QString path = dir.absoluteFilePath(qs(name));
            writeFileAtomic(path.toStdString(), text);
            files << path;
            const char* role = name == "report.json"           ? "report"
                               : name.rfind("figure.", 0) == 0 ? "figure"
                                                               : "csv";
            roles.emplace_back(path.toStdString(), role);
        }
    } catch (const std::exception& e) {
        for (const QString& f : files) {
            QFile::remove(f);
        }
        *error = QString::fromUtf8(e.what());
        return false;
    }
    if (m_entry) {
        for (auto& [path, role] : roles) {
            m_entry->addFile(std::move(path), std::move(role));
        }
    }
    *written = files;
    return true;
}

QPushButton* ReproduceView::cancelButton() const {
    return m_status->cancelButton();
}

QString ReproduceView::message() const {
    return m_status->message();
}

QString ReproduceView::progressText() const {
    return m_status->progressText();
}

QString ReproduceView::summary() const {
    return m_summary->text();
}

void ReproduceView::setMessage(const QString& text, bool error) {
    m_status->setMessage(text, error);
}

}  // namespace ensemble::ui

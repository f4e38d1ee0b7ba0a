#include "views/methods_view.h"

#include <QApplication>
#include <QClipboard>
#include <QFile>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QKeyEvent>
#include <QLabel>
#include <QListWidget>
#include <QMimeData>
#include <QPushButton>
#include <QVBoxLayout>

#include <algorithm>
#include <array>
#include <cmath>
#include <exception>
#include <utility>

#include "render/plot_helpers.h"
#include "sys/atomic_file.h"
#include "views/methods_maps.h"
#include "widgets/elided_label.h"
#include "widgets/frozen_column.h"
#include "widgets/job_status_row.h"
#include "widgets/wrapping_label.h"

namespace ensemble::ui {

namespace {

constexpr int kMethodRole = Qt::UserRole;  // the list's items: the EnsembleMethod
constexpr int kValueRole = Qt::UserRole;   // the table's cells: the number, for sorting and Copy

// Sorts by the number behind the text; a missing value (NaN: no OOD set) goes last.
class NumberItem : public QTableWidgetItem {
  public:
    NumberItem(const QString& text, double value) : QTableWidgetItem(text) {
        setData(kValueRole, value);
        setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    }
    bool operator<(const QTableWidgetItem& other) const override {
        const double a = data(kValueRole).toDouble();
        const double b = other.data(kValueRole).toDouble();
        if (std::isnan(a) || std::isnan(b)) {
            return !std::isnan(a) && std::isnan(b);
        }
        return a < b;
    }
};

struct ColumnInfo {
    const char* header;  // with its unit
    const char* help;    // the header's tooltip
    int decimals;        // -1: a count
};

// In MethodsColumn's order.
constexpr std::array<ColumnInfo, kMethodsColumnCount> kColumns{{
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "Method"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "The ensemble method (ensemble.method)"), 0},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "Accuracy"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView",
                       "The ensemble's accuracy on the evaluated rows (a fraction)"),
     4},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "NLL (nats)"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView",
                       "Negative log-likelihood of the true labels, mean per row"),
     4},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "Brier"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "Brier score, mean per row"), 4},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "ECE"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView",
                       "Expected calibration error (top label, 15 bins)"),
     4},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "OOD AUROC"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView",
                       "AUROC of the mutual information between the evaluated rows and the "
                       "data's out-of-distribution set (none for tabular data)"),
     4},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "OOD MI (nats)"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView",
                       "Mean mutual information over the out-of-distribution set: how much the "
                       "members disagree where there is no data (none for tabular data)"),
     4},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "Shift NLL (nats)"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView",
                       "NLL of the evaluated rows under the stated shift (see the note above)"),
     4},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "Parameters"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView",
                       "The trained values the method stores (its export's layers)"),
     -1},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "Train (s)"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "Seconds of training"), 2},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "Predict (s/1k)"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView",
                       "Seconds to predict 1,000 rows with every member"),
     5},
    {QT_TRANSLATE_NOOP("ensemble::ui::MethodsView", "Peak RSS (MiB)"),
     QT_TRANSLATE_NOOP("ensemble::ui::MethodsView",
                       "The process's peak resident memory while the method trained and was "
                       "measured"),
     1},
}};

QString methodsText(const char* text) {
    return QCoreApplication::translate("ensemble::ui::MethodsView", text);
}

// The row's value of `column` (Method: none).
double valueOf(const MethodComparison& m, MethodsColumn column) {
    switch (column) {
        case MethodsColumn::Method:
            return kNotMeasured;
        case MethodsColumn::Accuracy:
            return m.accuracy;
        case MethodsColumn::Nll:
            return m.nll;
        case MethodsColumn::Brier:
            return m.brier;
        case MethodsColumn::Ece:
            return m.ece;
        case MethodsColumn::OodAuroc:
            return m.oodAuroc;
        case MethodsColumn::OodMeanMi:
            return m.oodMeanMi;
        case MethodsColumn::ShiftNll:
            return m.shiftNll;
        case MethodsColumn::Parameters:
            return static_cast<double>(m.parameters);
        case MethodsColumn::TrainSeconds:
            return m.trainSeconds;
        case MethodsColumn::PredictSeconds:
            return m.predictSecondsPer1000;
        case MethodsColumn::PeakRss:
            return m.peakRssMib;
    }
    return kNotMeasured;
}

QString cellText(double v, int decimals) {
    if (!std::isfinite(v)) {
        return QStringLiteral("–");
    }
    return decimals < 0 ? formatCount(static_cast<int64_t>(v)) : QString::number(v, 'f', decimals);
}

// A field of Copy's text: quoted when it holds the separator, a quote or a line break.
QString field(const QString& text, QChar separator) {
    if (!text.contains(separator) && !text.contains(QLatin1Char('"')) &&
        !text.contains(QLatin1Char('\n'))) {
        return text;
    }
    QString quoted = text;
    quoted.replace(QLatin1Char('"'), QStringLiteral("\"\""));
    return QLatin1Char('"') + quoted + QLatin1Char('"');
}

}  // namespace

MethodsView::MethodsView(QWidget* parent) : QWidget(parent) {
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);

    auto* top = new QHBoxLayout;
    auto* listLabel = new QLabel(tr("&Methods"));
    listLabel->setAlignment(Qt::AlignLeft | Qt::AlignTop);
    m_list = new QListWidget;
    m_list->setToolTip(
        tr("The methods to train and compare (Space checks or unchecks the one under the "
           "cursor): each on this experiment's data with the same K, steps and seed"));
    listLabel->setBuddy(m_list);
    // The registry's rows, every one checked: a method added there appears here.
    for (const EnsembleMethodInfo& row : EnumNames<EnsembleMethod>::table) {
        auto* item = new QListWidgetItem(QString::fromUtf8(row.label), m_list);
        item->setData(kMethodRole, static_cast<int>(row.value));
        item->setToolTip(
            QStringLiteral("%1 (%2)").arg(QString::fromUtf8(row.help), QLatin1String(row.name)));
        item->setFlags(Qt::ItemIsEnabled | Qt::ItemIsSelectable | Qt::ItemIsUserCheckable);
        item->setCheckState(Qt::Checked);
    }
    m_list->setCurrentRow(0);
    m_list->installEventFilter(this);
    // As tall as its rows (up to five), so the view does not scroll for an empty list's room.
    const int rows = std::min(5, m_list->count());
    m_list->setFixedHeight(rows * m_list->sizeHintForRow(0) + 2 * m_list->frameWidth() + 4);
    m_list->setMinimumWidth(160);
    top->addWidget(listLabel);
    top->addWidget(m_list, 1);

    auto* buttons = new QVBoxLayout;
    m_compare = new QPushButton(tr("Co&mpare"));
    m_compare->setToolTip(
        tr("Train and measure the checked methods on the engine thread "
           "(Ctrl+Enter)"));
    auto* firstRow = new QHBoxLayout;
    firstRow->addWidget(m_compare);
    m_copy = new QPushButton(tr("C&opy"));
    m_copy->setToolTip(tr("Copy the table (tab-separated; CSV for applications that take it)"));
    m_save = new QPushButton(tr("&Save report…"));
    m_save->setToolTip(
        tr("Write the report as `ensemble-cli compare --report` does (JSON), or the table as "
           "CSV"));
    auto* secondRow = new QHBoxLayout;
    secondRow->addWidget(m_copy);
    secondRow->addWidget(m_save);
    buttons->addLayout(firstRow);
    buttons->addLayout(secondRow);
    buttons->addStretch(1);
    top->addLayout(buttons);
    layout->addLayout(top);

    m_status =
        new JobStatusRow(this, tr("Stop the comparison; the methods that finished stay (Esc)"));
    layout->addWidget(m_status);

    m_maps = new MethodsMaps;
    m_maps->setVisible(false);
    layout->addWidget(m_maps, 3);

    m_note = new WrappingLabel;
    m_note->setStyleSheet(QStringLiteral("color: #555;"));
    m_note->setVisible(false);
    layout->addWidget(m_note);

    m_table = new QTableWidget(0, kMethodsColumnCount);
    for (int c = 0; c < kMethodsColumnCount; ++c) {
        const ColumnInfo& info = kColumns[static_cast<std::size_t>(c)];
        auto* header = new QTableWidgetItem(methodsText(info.header));
        header->setToolTip(methodsText(info.help));
        m_table->setHorizontalHeaderItem(c, header);
    }
    m_table->verticalHeader()->setVisible(false);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    // No order until a header is clicked: the rows stand in the registry's order.
    m_table->horizontalHeader()->setSortIndicator(-1, Qt::AscendingOrder);
    m_table->setSortingEnabled(true);
    m_table->resizeColumnsToContents();
    m_table->setMinimumHeight(110);
    m_table->setObjectName(QStringLiteral("MethodsTable"));
    // However far the figures scroll, the Method column stays at the left.
    m_frozen = new FrozenColumn(m_table);
    layout->addWidget(m_table, 2);

    connect(m_compare, &QPushButton::clicked, this, [this] { startComparison(checkedMethods()); });
    connect(m_status, &JobStatusRow::cancelRequested, this, &MethodsView::cancelRequested);
    connect(m_copy, &QPushButton::clicked, this, &MethodsView::copyTable);
    connect(m_save, &QPushButton::clicked, this, [this] { Q_EMIT saveRequested(); });
    connect(m_list, &QListWidget::itemChanged, this, [this] { updateControls(); });
    JobStatusRow::addStartShortcut(this, m_compare, [this] { startComparison(checkedMethods()); });
    showPlan();
    updateControls();
}

QString MethodsView::plan() const {
    if (!m_snapshot) {
        return {};
    }
    const RunInfo& run = *m_snapshot->run;
    // The steps the engine's comparison trains (compareMethods: the config's length over the
    // train rows), whatever the run in the window does (until paused, say).
    return tr("K = %1, %2 steps, seed %3")
        .arg(run.members)
        .arg(formatCount(run.config.totalSteps(run.trainRows)))
        .arg(run.config.ensemble.seed);
}

void MethodsView::showPlan() {
    const QString numbers = plan();
    setMessage(numbers.isEmpty()
                   ? tr("Check the methods and Compare: each is trained on this experiment's "
                        "data with the same K, steps and seed on the engine thread (the numbers "
                        "of `ensemble-cli compare`).")
                   : tr("Check the methods and Compare: each is trained on this experiment's "
                        "data with %1, one after another on the engine thread (the numbers of "
                        "`ensemble-cli compare`).")
                         .arg(numbers));
    m_showingPlan = true;
}

bool MethodsView::eventFilter(QObject* watched, QEvent* event) {
    // The window binds Space to Train (a one-key shortcut, as long as no field has focus); in
    // the list it is the key that checks an item, so the list takes it first.
    if (watched == m_list && event->type() == QEvent::ShortcutOverride) {
        const auto* key = static_cast<QKeyEvent*>(event);
        if (key->key() == Qt::Key_Space && key->modifiers() == Qt::NoModifier) {
            event->accept();
            return true;
        }
    }
    return QWidget::eventFilter(watched, event);
}

std::vector<EnsembleMethod> MethodsView::checkedMethods() const {
    std::vector<EnsembleMethod> methods;
    for (int i = 0; i < m_list->count(); ++i) {
        const QListWidgetItem* item = m_list->item(i);
        if (item->checkState() == Qt::Checked) {
            methods.push_back(static_cast<EnsembleMethod>(item->data(kMethodRole).toInt()));
        }
    }
    return methods;
}

void MethodsView::setChecked(EnsembleMethod method, bool checked) {
    for (int i = 0; i < m_list->count(); ++i) {
        QListWidgetItem* item = m_list->item(i);
        if (item->data(kMethodRole).toInt() == static_cast<int>(method)) {
            item->setCheckState(checked ? Qt::Checked : Qt::Unchecked);
        }
    }
}

void MethodsView::setSnapshot(SnapshotPtr snapshot) {
    const bool newRun = snapshot && (!m_snapshot || m_snapshot->run->runId != snapshot->run->runId);
    m_snapshot = std::move(snapshot);
    if (newRun && m_showingPlan) {
        showPlan();  // this run's numbers
    }
    if (newRun || !m_snapshot) {
        updateControls();
    }
}

void MethodsView::updateControls() {
    const bool haveData =
        m_snapshot && m_snapshot->run->missingData.empty() && !m_snapshot->run->regression;
    const bool anyChecked = !checkedMethods().empty();
    m_compare->setEnabled(haveData && anyChecked && !m_comparing);
    m_status->setCancellable(m_comparing);
    m_list->setEnabled(!m_comparing);
    const bool haveResult = m_outcome && m_outcome->result && !m_outcome->result->methods.empty();
    m_copy->setEnabled(haveResult);
    m_save->setEnabled(haveResult);
    if (m_snapshot && !haveData) {
        m_compare->setToolTip(
            m_snapshot->run->regression
                ? tr("The comparison measures classifiers (accuracy, ECE, OOD AUROC): this is a "
                     "regression experiment")
                : tr("This ensemble was opened without its data: nothing to train on"));
    } else if (!anyChecked) {
        m_compare->setToolTip(tr("Check at least one method to compare"));
    } else {
        m_compare->setToolTip(
            tr("Train and measure the checked methods on the engine thread, each with %1 "
               "(Ctrl+Enter)")
                .arg(plan()));
    }
}

void MethodsView::startComparison(const std::vector<EnsembleMethod>& methods) {
    if (methods.empty() || m_comparing) {
        return;
    }
    m_comparing = true;
    QStringList labels;
    for (EnsembleMethod m : methods) {
        labels << methodLabel(m);
    }
    m_status->start(tr("Comparing %1… (Esc cancels)").arg(labels.join(QStringLiteral(", "))));
    updateControls();
    Q_EMIT compareRequested(methods);
}

void MethodsView::setProgress(const CompareProgress& p) {
    if (!m_comparing || p.methods <= 0) {
        return;
    }
    const bool measuring = p.phase == ComparePhase::Measuring;
    const double within =
        measuring
            ? 1.0
            : (p.totalSteps > 0 ? std::clamp(static_cast<double>(p.step) / p.totalSteps, 0.0, 1.0)
                                : 0.0);
    m_status->setProgress((p.method + within) / p.methods,
                          tr("%1 of %2").arg(p.method + 1).arg(p.methods));
    const QString label = methodLabel(p.value);
    setMessage(measuring ? tr("Method %1 of %2, %3: measuring… (Esc cancels)")
                               .arg(p.method + 1)
                               .arg(p.methods)
                               .arg(label)
                         : tr("Method %1 of %2, %3: step %4 of %5 (Esc cancels)")
                               .arg(p.method + 1)
                               .arg(p.methods)
                               .arg(label, formatCount(p.step), formatCount(p.totalSteps)));
}

QString MethodsView::progressText() const {
    return m_status->progressText();
}

void MethodsView::endJob(bool sameExperiment) {
    const bool wasComparing = std::exchange(m_comparing, false);
    m_status->finish();
    const bool haveResult = m_outcome && m_outcome->result && !m_outcome->result->methods.empty();
    if (haveResult && !sameExperiment) {
        clearResults(
            tr("The experiment changed: the results shown were of the one before. "
               "Compare again to measure this one."));
        return;
    }
    if (haveResult) {
        // The comparison trains from the config, not the run's weights: after a Reset its
        // numbers still describe this experiment, but they were measured before it.
        m_fromPreviousRun = true;
        setMessage(
            tr("Shown: the comparison from before the Reset. Compare again to measure "
               "this run."));
    } else if (wasComparing) {
        setMessage(tr("The comparison stopped: a new run began. Compare again to measure it."));
    }
    updateControls();
}

void MethodsView::setOutcome(MethodsOutcomePtr outcome) {
    m_comparing = false;
    m_status->finish();
    if (!outcome) {
        updateControls();
        return;
    }
    // Always of the current run: the controller drops a job whose run was replaced.
    if (!outcome->error.isEmpty()) {
        setMessage(outcome->error, true);
    } else if (!outcome->result || outcome->result->methods.empty()) {
        // Cancelled before any method finished: what was shown stays.
        setMessage(tr("Cancelled before a method finished: nothing new to show."));
    } else {
        m_outcome = std::move(outcome);
        m_fromPreviousRun = false;
        showOutcome();
        const CompareResult& r = *m_outcome->result;
        const int finished = static_cast<int>(r.methods.size());
        const int asked = static_cast<int>(m_outcome->requested.size());
        if (m_outcome->cancelled) {
            setMessage(tr("Cancelled: %1 of %2 methods finished and are shown; Compare again "
                          "for the rest.")
                           .arg(finished)
                           .arg(asked));
        } else {
            QStringList labels;
            for (const MethodComparison& m : r.methods) {
                labels << methodLabel(m.method);
            }
            QString text =
                tr("%1: %2 compared, K = %3, %4 steps, seed %5")
                    .arg(QString::fromStdString(r.dataset), labels.join(QStringLiteral(", ")))
                    .arg(r.members)
                    .arg(formatCount(r.steps))
                    .arg(r.seed);
            if (!r.backendNotice.empty()) {
                text += QStringLiteral(" — ") + QString::fromStdString(r.backendNotice);
            }
            setMessage(text);
        }
    }
    updateControls();
}

void MethodsView::clearResults(const QString& why) {
    m_outcome.reset();
    m_maps->clear();
    m_maps->setVisible(false);
    m_note->setVisible(false);
    m_table->setRowCount(0);
    setMessage(why);
    updateControls();
}

void MethodsView::showOutcome() {
    const CompareResult& r = *m_outcome->result;
    m_maps->setOutcome(m_outcome, m_snapshot ? m_snapshot->run : nullptr);
    m_maps->setVisible(m_maps->count() > 0);

    const QString shift = QStringLiteral("%1 %2 %3")
                              .arg(QLatin1String(toString(r.shiftKind)))
                              .arg(r.shiftLevel)
                              .arg(QString::fromStdString(r.shiftUnit));
    const QString ood = r.oodName.empty()
                            ? tr("none for this data (no out-of-distribution set)")
                            : tr("mutual information, these rows against as many %1 points")
                                  .arg(QString::fromStdString(r.oodName));
    m_note->setText(
        tr("The ensemble of each method on the %1 %2 rows of %3 (K = %4, %5 steps, seed %6). "
           "OOD AUROC: %7. Shift NLL: under %8. Peak RSS: %9.")
            .arg(formatCount(r.rows), QString::fromStdString(r.split),
                 QString::fromStdString(r.dataset))
            .arg(r.members)
            .arg(formatCount(r.steps))
            .arg(r.seed)
            .arg(ood, shift,
                 r.peakRssSource == "VmHWM"
                     ? tr("VmHWM, reset for each method")
                     : tr("getrusage, the process's peak so far (not reset per method)")));
    m_note->setVisible(true);
    auto* shiftHeader = m_table->horizontalHeaderItem(static_cast<int>(MethodsColumn::ShiftNll));
    shiftHeader->setToolTip(tr("NLL of the evaluated rows under %1").arg(shift));

    m_table->setSortingEnabled(false);
    m_table->setRowCount(static_cast<int>(r.methods.size()));
    for (std::size_t i = 0; i < r.methods.size(); ++i) {
        const MethodComparison& m = r.methods[i];
        const int row = static_cast<int>(i);
        auto* name = new QTableWidgetItem(methodLabel(m.method));
        name->setData(kValueRole, static_cast<int>(m.method));
        name->setToolTip(QString::fromUtf8(ensembleMethodInfo(m.method).help));
        m_table->setItem(row, 0, name);
        for (int c = 1; c < kMethodsColumnCount; ++c) {
            const double v = valueOf(m, static_cast<MethodsColumn>(c));
            m_table->setItem(
                row, c,
                new NumberItem(cellText(v, kColumns[static_cast<std::size_t>(c)].decimals), v));
        }
    }
    m_table->setSortingEnabled(true);
    m_table->resizeColumnsToContents();
}

QString MethodsView::tableText(QChar separator) const {
    QStringList lines;
    QStringList header;
    for (int c = 0; c < kMethodsColumnCount; ++c) {
        header << field(m_table->horizontalHeaderItem(c)->text(), separator);
    }
    lines << header.join(separator);
    for (int row = 0; row < m_table->rowCount(); ++row) {
        QStringList fields;
        const auto method =
            static_cast<EnsembleMethod>(m_table->item(row, 0)->data(kValueRole).toInt());
        fields << field(QLatin1String(toString(method)), separator);
        for (int c = 1; c < kMethodsColumnCount; ++c) {
            const double v = m_table->item(row, c)->data(kValueRole).toDouble();
            // Every digit a double holds, so a pasted table is the report's numbers.
            fields << (std::isfinite(v) ? QString::number(v, 'g', 17) : QString());
        }
        lines << fields.join(separator);
    }
    return lines.join(QLatin1Char('\n')) + QLatin1Char('\n');
}

void MethodsView::copyTable() {
    if (m_table->rowCount() == 0) {
        return;
    }
    auto* mime = new QMimeData;
    mime->setText(tableText(QLatin1Char('\t')));
    mime->setData(QStringLiteral("text/csv"), tableText(QLatin1Char(',')).toUtf8());
    QApplication::clipboard()->setMimeData(mime);
    setMessage(tr("Copied the table as tab-separated text (and CSV)."));
}

bool MethodsView::saveReport(const QString& path, QString* error) const {
    if (!m_outcome || !m_outcome->result || m_outcome->result->methods.empty()) {
        *error = tr("Nothing to save yet: Compare first.");
        return false;
    }
    try {
        const bool csv = path.endsWith(QStringLiteral(".csv"), Qt::CaseInsensitive);
        writeFileAtomic(QFile::encodeName(path).toStdString(),
                        csv ? compareCsv(*m_outcome->result) : m_outcome->report.dump(2) + "\n");
    } catch (const std::exception& e) {
        *error = QString::fromStdString(e.what());
        return false;
    }
    return true;
}

QPushButton* MethodsView::cancelButton() const {
    return m_status->cancelButton();
}

void MethodsView::setMessage(const QString& text, bool error) {
    m_showingPlan = false;
    m_status->setMessage(text, error);
}

QString MethodsView::message() const {
    return m_status->message();
}

}  // namespace ensemble::ui

// The Runs view's details pane: one run's summary, note, tags, config and curves, or two and
// more side by side (their curves overlaid, what differs between them). Apart from
// runs_view.cpp (the table, filter and columns) and runs_view_actions.cpp (the edits).
#include <QCategoryAxis>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLegendMarker>
#include <QLineEdit>
#include <QLineSeries>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QTabWidget>
#include <QTableWidget>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>

#include "render/chart_axes.h"
#include "runs/run_fields.h"
#include "views/runs_model.h"
#include "views/runs_view.h"
#include "widgets/chart_legend.h"

namespace ensemble::ui {

namespace {

QString runsDetailText(const std::string& text) {
    return QString::fromStdString(text);
}

// More curves than this in one chart cannot be told apart; the rest of a selection is listed.
constexpr std::size_t kRunsMaxOverlay = 12;

// One colour per run, apart enough to tell a dozen lines apart (Tableau 10 and two more).
QColor runsColour(std::size_t i) {
    static const char* const colours[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2",
                                          "#59a14f", "#edc948", "#b07aa1", "#ff9da7",
                                          "#9c755f", "#bab0ac", "#17becf", "#7f3c8d"};
    return QColor(QLatin1String(colours[i % std::size(colours)]));
}

// "optimizer.lr = 0.01" per leaf, objects flattened to dotted keys, arrays as compact JSON.
void flattenRunConfig(const nlohmann::json& node, const std::string& prefix, QStringList& out) {
    if (node.is_object() && !node.empty()) {
        for (const auto& [key, value] : node.items()) {
            flattenRunConfig(value, prefix.empty() ? key : prefix + "." + key, out);
        }
        return;
    }
    const std::string text = node.is_string() ? node.get<std::string>() : node.dump();
    out << QStringLiteral("%1 = %2").arg(runsDetailText(prefix), runsDetailText(text));
}

}  // namespace

QWidget* RunsView::buildDetails() {
    m_details = new QTabWidget;
    m_details->setDocumentMode(true);
    m_details->setMinimumHeight(220);

    // Run: the summary, the note and tags (edited in place), the command and Open.
    auto* run = new QWidget;
    auto* runLayout = new QVBoxLayout(run);
    runLayout->setContentsMargins(0, 4, 0, 0);
    m_summary = new QPlainTextEdit;
    m_summary->setReadOnly(true);
    m_summary->setLineWrapMode(QPlainTextEdit::WidgetWidth);
    runLayout->addWidget(m_summary, 1);
    auto* form = new QFormLayout;
    form->setFieldGrowthPolicy(QFormLayout::ExpandingFieldsGrow);
    m_note = new QLineEdit;
    m_note->setObjectName(QStringLiteral("runsNote"));
    m_note->setToolTip(tr("The run's note: saved when you leave the field or press Enter"));
    connect(m_note, &QLineEdit::editingFinished, this, &RunsView::commitNote);
    m_tags = new QLineEdit;
    m_tags->setObjectName(QStringLiteral("runsTags"));
    m_tags->setToolTip(
        tr("The run's tags, separated by commas: saved when you leave the field "
           "or press Enter"));
    connect(m_tags, &QLineEdit::editingFinished, this, &RunsView::commitTags);
    form->addRow(tr("Note"), m_note);
    form->addRow(tr("Tags"), m_tags);
    runLayout->addLayout(form);
    auto* buttons = new QHBoxLayout;
    m_openButton = new QPushButton(tr("Open as experiment"));
    m_openButton->setToolTip(
        tr("Load the run's config into the Experiment panel, with its "
           "weights when its export or checkpoint still exists (Enter)"));
    connect(m_openButton, &QPushButton::clicked, this, &RunsView::openSelected);
    m_copyCommand = new QPushButton(tr("Copy command"));
    m_copyCommand->setToolTip(tr("Copy the ensemble-cli command that reproduces the run"));
    connect(m_copyCommand, &QPushButton::clicked, this, &RunsView::copyCommand);
    buttons->addWidget(m_openButton);
    buttons->addWidget(m_copyCommand);
    buttons->addStretch(1);
    runLayout->addLayout(buttons);
    m_details->addTab(run, tr("Run"));

    // Curves: the chosen figure against the step, one colour per run, test solid, train dashed.
    auto* curves = new QWidget;
    auto* curvesLayout = new QVBoxLayout(curves);
    curvesLayout->setContentsMargins(0, 4, 0, 0);
    m_metric = new QComboBox;
    m_metric->addItem(tr("Loss"), QStringLiteral("loss"));
    m_metric->addItem(tr("Accuracy"), QStringLiteral("accuracy"));
    m_metric->addItem(tr("RMSE"), QStringLiteral("rmse"));
    connect(m_metric, &QComboBox::currentIndexChanged, this, &RunsView::drawCurves);
    auto* metricRow = new QHBoxLayout;
    metricRow->addWidget(m_metric);
    auto* key = new QLabel(tr("solid: test, dashed: train"));
    metricRow->addWidget(key, 1);
    curvesLayout->addLayout(metricRow);
    m_chart = new QChart;
    m_chart->setMargins(QMargins(2, 2, 2, 2));
    m_chart->setAnimationOptions(QChart::NoAnimation);
    m_chartView = new QChartView(m_chart);
    m_chartView->setRenderHint(QPainter::Antialiasing);
    m_chartView->setMinimumHeight(160);
    curvesLayout->addWidget(m_chartView, 1);
    m_legend = new ChartLegend;
    m_legend->follow(m_chart);
    curvesLayout->addWidget(m_legend);
    m_details->addTab(curves, tr("Curves"));

    m_config = new QPlainTextEdit;
    m_config->setReadOnly(true);
    m_details->addTab(m_config, tr("Config"));

    m_differences = new QTableWidget;
    m_differences->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_differences->verticalHeader()->setVisible(false);
    m_differences->setWordWrap(false);
    m_details->addTab(m_differences, tr("Differences"));
    return m_details;
}

void RunsView::updateDetails() {
    const std::vector<std::int64_t> ids = selectedIds();
    m_shown.clear();
    if (runs::RunStore* store = m_model->store()) {
        try {
            for (const std::int64_t id : ids) {
                if (std::optional<runs::RunEntry> e = store->get(id)) {
                    m_shown.push_back(std::move(*e));
                }
            }
        } catch (const std::exception& e) {
            setMessage(runsDetailText(e.what()), true);
        }
    }
    const bool one = m_shown.size() == 1;
    const bool several = m_shown.size() >= 2;
    m_tagButton->setEnabled(!m_shown.empty());
    m_deleteButton->setEnabled(!m_shown.empty());
    m_openButton->setEnabled(one && m_shown.front().config.is_object());
    m_copyCommand->setEnabled(one && !m_shown.front().commandLine.empty());
    m_note->setEnabled(one);
    m_tags->setEnabled(one);
    m_details->setTabVisible(0, !several);
    m_details->setTabVisible(2, one);
    m_details->setTabVisible(3, several);
    if (one) {
        showOne(m_shown.front());
    } else if (several) {
        showSeveral(m_shown);
    } else {
        m_summary->setPlainText(
            tr("Select a run to see its config, curves and files; select "
               "two or more to compare them."));
        m_note->clear();
        m_tags->clear();
        m_config->clear();
    }
    drawCurves();
}

void RunsView::showOne(const runs::RunEntry& e) {
    const auto field = [&](const char* name) {
        return runsDetailText(runs::runFieldText(e, name));
    };
    QStringList lines;
    lines << tr("Run %1: %2 %3, %4")
                 .arg(field("id"), runsDetailText(e.program), runsDetailText(e.kind),
                      field("state"));
    lines << tr("Started %1 UTC").arg(field("started")) +
                 (e.ended > 0.0 ? tr(", ended %1 UTC, %2 s").arg(field("ended"), field("wall"))
                                : QString());
    lines << tr("Preset %1, dataset %2, method %3, %4 members, seed %5")
                 .arg(e.preset.empty() ? QStringLiteral("-") : runsDetailText(e.preset),
                      field("dataset"), field("method"), field("members"), field("seed"));
    if (!e.backend.empty()) {
        lines << tr("Backend %1, version %2, host %3")
                     .arg(runsDetailText(e.backend), runsDetailText(e.version),
                          runsDetailText(e.host));
    }
    if (e.parentId > 0) {
        lines << tr("Parent: run %1 (%2)").arg(e.parentId).arg(runsDetailText(e.relation));
    }
    if (!e.figures.empty()) {
        lines << tr("Figures:");
        for (const auto& [name, value] : e.figures) {
            lines << QStringLiteral("  %1  %2")
                         .arg(runsDetailText(name),
                              runsDetailText(runs::runFieldText(e, "figure." + name)));
        }
    }
    if (!e.files.empty()) {
        lines << tr("Files:");
        for (const runs::RunFile& f : e.files) {
            std::error_code error;
            const bool present = std::filesystem::exists(f.path, error);
            lines << QStringLiteral("  %1  %2  (%3)")
                         .arg(runsDetailText(f.role), runsDetailText(f.path),
                              present ? tr("present") : tr("gone"));
        }
    }
    lines << (e.commandLine.empty() ? tr("No ensemble-cli command reproduces this run.")
                                    : tr("Reproduce: %1").arg(runsDetailText(e.commandLine)));
    m_summary->setPlainText(lines.join(QLatin1Char('\n')));
    m_note->setText(runsDetailText(e.note));
    m_tags->setText(field("tag"));
    QStringList config;
    flattenRunConfig(e.config, {}, config);
    m_config->setPlainText(e.config.is_object() ? config.join(QLatin1Char('\n'))
                                                : tr("No config was recorded."));
}

void RunsView::showSeveral(const std::vector<runs::RunEntry>& entries) {
    // Two: runDifferences (`ensemble-cli runs diff`). More: the union of what differs from the
    // first, each run's value beside it.
    std::vector<std::string> fields;
    std::set<std::string> seen;
    for (std::size_t i = 1; i < entries.size(); ++i) {
        for (const runs::RunDifference& d : runs::runDifferences(entries[0], entries[i])) {
            if (seen.insert(d.field).second) {
                fields.push_back(d.field);
            }
        }
    }
    if (entries.size() > 2) {
        // Grouped as runDifferences groups them: columns, config keys, figures.
        const auto group = [](const std::string& f) {
            return f.rfind("config.", 0) == 0 ? 1 : f.rfind("figure.", 0) == 0 ? 2 : 0;
        };
        std::stable_sort(fields.begin(), fields.end(), [&](const auto& a, const auto& b) {
            return group(a) != group(b) ? group(a) < group(b) : group(a) > 0 && a < b;
        });
    }
    m_differences->clear();
    m_differences->setColumnCount(static_cast<int>(entries.size()) + 1);
    m_differences->setRowCount(static_cast<int>(fields.size()));
    QStringList headers{tr("field")};
    for (const runs::RunEntry& e : entries) {
        headers << tr("run %1").arg(e.id);
    }
    m_differences->setHorizontalHeaderLabels(headers);
    for (std::size_t r = 0; r < fields.size(); ++r) {
        const int row = static_cast<int>(r);
        m_differences->setItem(row, 0, new QTableWidgetItem(runsDetailText(fields[r])));
        for (std::size_t c = 0; c < entries.size(); ++c) {
            const std::string text = runs::runFieldText(entries[c], fields[r]);
            auto* item =
                new QTableWidgetItem(text.empty() ? QStringLiteral("-") : runsDetailText(text));
            m_differences->setItem(row, static_cast<int>(c) + 1, item);
        }
    }
    m_differences->resizeColumnsToContents();
    m_summary->clear();
    m_config->clear();
    m_note->clear();
    m_tags->clear();
}

QStringList RunsView::differingFields() const {
    QStringList out;
    if (m_shown.size() < 2) {
        return out;
    }
    for (int r = 0; r < m_differences->rowCount(); ++r) {
        out << m_differences->item(r, 0)->text();
    }
    return out;
}

void RunsView::drawCurves() {
    clearChart(m_chart);
    m_charted.clear();
    const std::string metric = m_metric->currentData().toString().toStdString();
    double xLo = HUGE_VAL, xHi = -HUGE_VAL, yLo = HUGE_VAL, yHi = -HUGE_VAL;
    std::vector<QLineSeries*> series;
    for (std::size_t i = 0; i < m_shown.size() && m_charted.size() < kRunsMaxOverlay; ++i) {
        const runs::RunEntry& e = m_shown[i];
        if (!e.curves.is_object()) {
            continue;
        }
        bool drawn = false;
        for (const char* split : {"test_", "train_"}) {
            const auto it = e.curves.find(split + metric);
            if (it == e.curves.end() || !it->is_array() || it->empty()) {
                continue;
            }
            auto* s = new QLineSeries;
            for (const nlohmann::json& point : *it) {
                if (!point.is_array() || point.size() < 2 || !point[0].is_number() ||
                    !point[1].is_number()) {
                    continue;
                }
                const double x = point[0].get<double>();
                const double y = point[1].get<double>();
                if (!std::isfinite(x) || !std::isfinite(y)) {
                    continue;
                }
                s->append(x, y);
                xLo = std::min(xLo, x);
                xHi = std::max(xHi, x);
                yLo = std::min(yLo, y);
                yHi = std::max(yHi, y);
            }
            QPen pen(runsColour(m_charted.size()));
            pen.setWidthF(split[1] == 'e' ? 2.0 : 1.2);
            if (split[1] == 'r') {
                pen.setStyle(Qt::DashLine);
            }
            s->setPen(pen);
            s->setName(tr("run %1").arg(e.id));
            m_chart->addSeries(s);
            if (drawn) {
                // The legend names each run once (its first series).
                m_chart->legend()->markers(s).first()->setVisible(false);
            }
            series.push_back(s);
            drawn = true;
        }
        if (drawn) {
            m_charted.push_back(e.id);
        }
    }
    QCategoryAxis* x = makeNiceAxis();
    x->setTitleText(tr("step"));
    QCategoryAxis* y = makeNiceAxis();
    m_chart->addAxis(x, Qt::AlignBottom);
    m_chart->addAxis(y, Qt::AlignLeft);
    for (QLineSeries* s : series) {
        s->attachAxis(x);
        s->attachAxis(y);
    }
    if (xHi >= xLo) {
        setNiceRange(x, xLo, std::max(xHi, xLo + 1), 5, TickKind::Integer);
        const double pad = yHi > yLo ? 0.0 : 0.5 * std::max(std::abs(yLo), 1e-3);
        setNiceRange(y, yLo - pad, yHi + pad, 5, TickKind::Real,
                     metric == "accuracy" ? 0.0 : -1e300, metric == "accuracy" ? 1.0 : 1e300);
    }
    QString title;
    if (m_shown.empty()) {
        title = tr("No run selected");
    } else if (m_charted.empty()) {
        title = tr("No %1 curves recorded").arg(m_metric->currentText().toLower());
    } else if (m_shown.size() > m_charted.size() && m_charted.size() == kRunsMaxOverlay) {
        title = tr("The first %1 of %2 selected runs").arg(kRunsMaxOverlay).arg(m_shown.size());
    }
    m_chart->setTitle(title);
    m_legend->refresh();
}

}  // namespace ensemble::ui

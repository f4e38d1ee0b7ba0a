#include "views/shift_view.h"

#include <QBoxLayout>
#include <QChart>
#include <QChartView>
#include <QComboBox>
#include <QDir>
#include <QDoubleSpinBox>
#include <QFile>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSaveFile>
#include <QSlider>
#include <QSpinBox>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <exception>
#include <utility>

#include "render/plot_helpers.h"
#include "std_string.h"
#include "views/shift_charts.h"
#include "views/shift_inputs.h"
#include "widgets/elided_label.h"
#include "widgets/job_status_row.h"
#include "widgets/lazy_refresh.h"
#include "widgets/picture_export.h"

namespace ensemble::ui {

namespace {

// What the shifts know of the run's data (shift/transforms.h shiftDataOf, from the run's
// description rather than its split).
ShiftData shiftDataOfRun(const RunInfo& run) {
    if (run.isImage) {
        return ShiftData::Images;
    }
    if (run.regression) {
        return ShiftData::Regression;
    }
    return run.features == 2 ? ShiftData::Planar : ShiftData::Tabular;
}

QString levelsText(const std::vector<double>& levels) {
    QStringList parts;
    for (double v : levels) {
        parts << QString::number(v, 'g', 6);
    }
    return parts.join(QStringLiteral(","));
}

// File names of the charts' pictures (each .png and .svg), in the charts' order.
constexpr std::array<const char*, 6> kChartFiles = {"shift_accuracy", "shift_nll",
                                                    "shift_brier",    "shift_ece",
                                                    "shift_coverage", "shift_risk_coverage"};

bool writeFile(const QString& path, const QByteArray& bytes, QString* error) {
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly) || out.write(bytes) != bytes.size() || !out.commit()) {
        *error = QStringLiteral("%1: %2").arg(path, out.errorString());
        return false;
    }
    return true;
}

}  // namespace

ShiftView::ShiftView(QWidget* parent) : QWidget(parent) {
    m_lazyRefresh = new LazyRefresh(this, [this] {
        updateControls();
        refreshLevel();
        refreshCharts();
    });
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(6, 6, 6, 6);

    // Rows, so the controls fit a narrow window: what to shift, how to measure, the actions.
    auto* bar = new QHBoxLayout;
    auto* bar2 = new QHBoxLayout;
    m_shift = new QComboBox;
    m_shift->setToolTip(
        tr("The shift applied to the test inputs (those that apply to this "
           "run's data)"));
    auto* shiftLabel = new QLabel(tr("&Shift"));
    shiftLabel->setBuddy(m_shift);
    m_levels = new QLineEdit;
    m_levels->setToolTip(
        tr("The levels, comma-separated (empty: the shift's defaults), as "
           "`ensemble-cli shift --levels`"));
    m_levels->setMinimumWidth(90);
    auto* levelsLabel = new QLabel(tr("&Levels"));
    levelsLabel->setBuddy(m_levels);
    m_alpha = new QDoubleSpinBox;
    m_alpha->setRange(0.01, 0.5);
    m_alpha->setSingleStep(0.01);
    m_alpha->setDecimals(2);
    m_alpha->setValue(kDefaultConformalAlpha);
    m_alpha->setToolTip(tr("Conformal α: the sets aim to cover 1 − α of the labels"));
    auto* alphaLabel = new QLabel(tr("&α"));
    alphaLabel->setBuddy(m_alpha);
    m_subset = new QSpinBox;
    m_subset->setRange(0, 100'000'000);
    m_subset->setSpecialValueText(tr("all"));
    m_subset->setToolTip(tr("The test split's first N rows (0: all), as `--subset N`"));
    auto* subsetLabel = new QLabel(tr("&Rows"));
    subsetLabel->setBuddy(m_subset);
    m_run = new QPushButton(tr("R&un"));
    m_run->setToolTip(tr("Measure the ensemble at every level (Ctrl+Enter)"));
    m_export = new QPushButton(tr("E&xport…"));
    m_export->setToolTip(
        tr("Write the figures (PNG), the report (JSON) and its CSVs to a "
           "folder"));
    bar->addWidget(shiftLabel);
    bar->addWidget(m_shift);
    bar->addWidget(levelsLabel);
    bar->addWidget(m_levels, 1);
    bar2->addWidget(alphaLabel);
    bar2->addWidget(m_alpha);
    bar2->addWidget(subsetLabel);
    bar2->addWidget(m_subset);
    bar2->addStretch(1);
    // The buttons on a row of their own: beside α and Rows they need more than the ~430 px an
    // image run's view has at 900 × 600 with the Experiment panel open.
    auto* bar3 = new QHBoxLayout;
    bar3->addStretch(1);
    bar3->addWidget(m_run);
    bar3->addWidget(m_export);
    layout->addLayout(bar);
    layout->addLayout(bar2);
    layout->addLayout(bar3);

    m_status = new JobStatusRow(this, tr("Stop the measurement (Esc)"));
    layout->addWidget(m_status);

    m_body = new QBoxLayout(QBoxLayout::LeftToRight);
    QBoxLayout* body = m_body;
    auto* left = new QVBoxLayout;
    m_inputs = new ShiftInputs;
    m_inputs->setMinimumSize(200, 200);
    m_slider = new QSlider(Qt::Horizontal);
    m_slider->setRange(0, 0);
    m_slider->setPageStep(1);
    m_slider->setTickPosition(QSlider::TicksBelow);
    m_slider->setToolTip(tr("The level shown (arrow keys, Home, End)"));
    // The level's figures wrap: a read-out shows its values, never only in a tooltip.
    m_levelLabel = new QLabel;
    m_levelLabel->setObjectName(QStringLiteral("LevelReadout"));
    m_levelLabel->setWordWrap(true);
    m_levelLabel->setTextFormat(Qt::PlainText);
    m_levelLabel->setTextInteractionFlags(Qt::TextSelectableByMouse);
    markReadout(m_levelLabel);
    auto* levelRow = new QHBoxLayout;
    auto* sliderLabel = new QLabel(tr("Le&vel"));
    sliderLabel->setBuddy(m_slider);
    levelRow->addWidget(sliderLabel);
    levelRow->addWidget(m_slider, 1);
    left->addWidget(m_inputs, 1);
    left->addLayout(levelRow);
    left->addWidget(m_levelLabel);
    body->addLayout(left, 2);

    m_grid = new QGridLayout;
    for (int i = 0; i < kCharts; ++i) {
        auto* chart = new QChart;
        chart->setAnimationOptions(QChart::NoAnimation);
        chart->legend()->setAlignment(Qt::AlignBottom);
        chart->setMargins(QMargins(2, 2, 2, 2));
        auto* view = new QChartView(chart);
        view->setRenderHint(QPainter::Antialiasing);
        view->setMinimumSize(200, 190);
        m_charts[static_cast<std::size_t>(i)] = chart;
        m_chartViews[static_cast<std::size_t>(i)] = view;
    }
    auto* right = new QVBoxLayout;
    auto* chartsKey = new QLabel(shiftChartsKey());
    chartsKey->setWordWrap(true);  // a narrow window wraps the key instead of widening the view
    chartsKey->setToolTip(
        tr("TS: after temperature scaling, fitted on the unshifted calibration half "
           "and measured on the other half"));
    right->addWidget(chartsKey);
    right->addLayout(m_grid, 1);
    body->addLayout(right, 5);
    layout->addLayout(body, 1);
    arrangeCharts();

    connect(m_run, &QPushButton::clicked, this, &ShiftView::start);
    connect(m_status, &JobStatusRow::cancelRequested, this, &ShiftView::cancelRequested);
    connect(m_export, &QPushButton::clicked, this, [this] { Q_EMIT exportRequested(); });
    connect(m_slider, &QSlider::valueChanged, this, [this] {
        refreshLevel();
        refreshCharts();
    });
    connect(m_shift, &QComboBox::currentIndexChanged, this, [this] { updateControls(); });
    JobStatusRow::addStartShortcut(this, m_run, [this] { start(); });
    setMessage(
        tr("Pick a shift and Run: the ensemble is measured at every level on the engine "
           "thread (the numbers of `ensemble-cli shift` for the same weights)."));
    updateControls();
}

void ShiftView::setSnapshot(SnapshotPtr snapshot) {
    const bool newRun = snapshot && (!m_snapshot || m_snapshot->run->runId != snapshot->run->runId);
    m_snapshot = std::move(snapshot);
    if (newRun) {
        fillShifts();
    }
    if (m_lazyRefresh->postponeWhileHidden()) {
        return;
    }
    updateControls();
    refreshLevel();  // the 2-D map follows training
}

void ShiftView::resizeEvent(QResizeEvent* event) {
    QWidget::resizeEvent(event);
    arrangeCharts();
}

void ShiftView::arrangeCharts() {
    // Narrow (900 × 600): the inputs above the charts, two charts a row; wide: beside them,
    // three a row.
    m_body->setDirection(width() >= 760 ? QBoxLayout::LeftToRight : QBoxLayout::TopToBottom);
    const int columns = width() >= 1250 ? 3 : 2;
    if (columns == m_columns) {
        return;
    }
    m_columns = columns;
    for (QChartView* view : m_chartViews) {
        m_grid->removeWidget(view);
    }
    for (int i = 0; i < kCharts; ++i) {
        m_grid->addWidget(m_chartViews[static_cast<std::size_t>(i)], i / columns, i % columns);
    }
}

void ShiftView::fillShifts() {
    const QString before = m_shift->currentData().toString();
    const QSignalBlocker block(m_shift);
    m_shift->clear();
    if (!m_snapshot) {
        return;
    }
    const ShiftData data = shiftDataOfRun(*m_snapshot->run);
    for (const ShiftKindInfo& row : EnumNames<ShiftKind>::table) {
        if (shiftApplies(row.value, data)) {
            m_shift->addItem(tr(row.label), QLatin1String(row.name));
            m_shift->setItemData(m_shift->count() - 1, tr(row.help), Qt::ToolTipRole);
        }
    }
    const int keep = m_shift->findData(before);
    m_shift->setCurrentIndex(std::max(keep, 0));
}

void ShiftView::updateControls() {
    const bool haveData = m_snapshot && m_snapshot->run->missingData.empty();
    const bool canRun = haveData && m_shift->count() > 0 && !m_measuring;
    m_run->setEnabled(canRun);
    m_status->setCancellable(m_measuring);
    m_export->setEnabled(m_outcome != nullptr && m_outcome->engineReport != nullptr);
    m_shift->setEnabled(!m_measuring);
    m_levels->setEnabled(!m_measuring);
    if (m_snapshot && m_shift->count() > 0) {
        ShiftKind kind = ShiftKind::Rotate;
        enumFromName(m_shift->currentData().toString().toStdString(), kind);
        const ShiftData data = shiftDataOfRun(*m_snapshot->run);
        const std::vector<double> levels = defaultShiftLevels(kind, data);
        m_levels->setPlaceholderText(levelsText(levels));
        m_levels->setToolTip(
            tr("The levels in %1, comma-separated (empty: %2), as `ensemble-cli shift --levels`")
                .arg(QLatin1String(shiftKindInfo(kind).levels[static_cast<std::size_t>(data)].unit),
                     levelsText(levels)));
    }
    if (m_snapshot && !haveData) {
        m_run->setToolTip(tr("This ensemble was opened without its data: nothing to shift"));
    } else {
        m_run->setToolTip(tr("Measure the ensemble at every level (Ctrl+Enter)"));
    }
}

ShiftRequest ShiftView::request() const {
    ShiftRequest r;
    r.shift = m_shift->currentData().toString().toStdString();
    const QString levels = m_levels->text().trimmed();
    if (!levels.isEmpty()) {
        r.levels = parseShiftLevels(levels.toStdString());  // ConfigError: the field's text
    }
    r.alpha = m_alpha->value();
    r.subset = m_subset->value();
    return r;
}

void ShiftView::start() {
    ShiftRequest r;
    try {
        r = request();
    } catch (const std::exception& e) {
        setMessage(str(e.what()), true);
        return;
    }
    m_measuring = true;
    m_status->start(tr("Measuring %1 at every level… (Esc cancels)").arg(m_shift->currentText()));
    updateControls();
    Q_EMIT shiftRequested(r);
}

void ShiftView::setProgress(qint64 done, qint64 total) {
    if (m_measuring) {
        m_status->setProgress(done, total);
    }
}

void ShiftView::endJob(bool sameExperiment) {
    const bool wasMeasuring = std::exchange(m_measuring, false);
    m_status->finish();
    if (m_outcome && !sameExperiment) {
        // Measured on another experiment's ensemble: gone with it.
        m_outcome.reset();
        m_inputs->clear();
        setMessage(tr("A new experiment: Run to measure its ensemble."));
        refreshCharts();
    } else if (m_outcome) {
        m_fromPreviousRun = true;
        setMessage(tr("Shown: the measurement of the run before the Reset (step %1). Run again "
                      "to measure this run.")
                       .arg(m_outcome->step));
    } else if (wasMeasuring) {
        setMessage(tr("The measurement stopped: a new run began. Run again to measure it."));
    }
    updateControls();
}

void ShiftView::setOutcome(ShiftOutcomePtr outcome) {
    m_measuring = false;
    m_status->finish();
    if (!outcome) {
        updateControls();
        return;
    }
    if (outcome->cancelled) {
        setMessage(tr("Cancelled: nothing measured. Run again to measure."));
    } else if (!outcome->error.isEmpty()) {
        setMessage(outcome->error, true);
    } else {
        // Always of the current run: the controller drops a job whose run was replaced.
        m_outcome = std::move(outcome);
        m_fromPreviousRun = false;
        const ShiftReport& r = *m_outcome->engineReport;
        const QSignalBlocker block(m_slider);
        m_slider->setRange(0, std::max(0, static_cast<int>(m_outcome->figures.levels.size()) - 1));
        m_slider->setValue(0);
        setMessage(tr("%1 at step %2: %3 test rows (temperature and conformal threshold fitted on "
                      "%4 unshifted rows, measured on %5), %6 members, T = %7")
                       .arg(m_shift->currentText())
                       .arg(m_outcome->step)
                       .arg(formatCount(r.rows), formatCount(r.calibrationRows),
                            formatCount(r.measureRows))
                       .arg(r.members.size())
                       .arg(formatValue(r.temperature)));
        refreshLevel();
        refreshCharts();
    }
    updateControls();
}

int ShiftView::levelIndex() const {
    return m_slider->value();
}

void ShiftView::setLevelIndex(int index) {
    m_slider->setValue(index);
}

QString ShiftView::levelText(int index) const {
    if (!m_outcome || index < 0 || index >= static_cast<int>(m_outcome->figures.levels.size())) {
        return {};
    }
    const ShiftFigures& f = m_outcome->figures;
    return QStringLiteral("%1 %2 %3")
        .arg(f.shift, QString::number(f.levels[static_cast<std::size_t>(index)], 'g', 6), f.unit);
}

void ShiftView::refreshLevel() {
    if (!m_outcome || !m_snapshot) {
        m_levelLabel->clear();
        return;
    }
    const int i = levelIndex();
    const std::size_t iu = static_cast<std::size_t>(i);
    const ShiftFigures& f = m_outcome->figures;
    if (iu >= f.levels.size()) {
        return;
    }
    const auto& first = f.metrics[0];
    const auto& second = f.metrics[1];
    const std::vector<double>& coverage =
        f.coverage.ensembleTs.empty() ? f.coverage.ensemble : f.coverage.ensembleTs;
    const QString text =
        tr("%1, ensemble: %2 %3, %4 %5, coverage %6 (target %7)")
            .arg(levelText(i), f.titles[0], formatValue(first.ensemble[iu]), f.titles[1],
                 formatValue(second.ensemble[iu]),
                 iu < coverage.size() ? formatValue(coverage[iu]) : QStringLiteral("–"),
                 formatValue(1.0 - f.alpha));
    m_levelLabel->setText(text);
    m_inputs->setCaption(levelText(i));
    if (iu >= m_outcome->previews.size()) {
        m_inputs->clear();
        return;
    }
    const ShiftPreview& preview = m_outcome->previews[iu];
    if (!preview.images.empty()) {
        m_inputs->setImages(preview.images);
        return;
    }
    const RunInfo& run = *m_snapshot->run;
    // One frame for every level: the grid's bounds and every moved point.
    QRectF frame(QPointF(run.bounds.xMin, run.bounds.yMin),
                 QPointF(run.bounds.xMax, run.bounds.yMax));
    for (const ShiftPreview& p : m_outcome->previews) {
        for (const QPointF& point : p.points) {
            frame = frame.united(QRectF(point, QSizeF(0, 0)));
        }
    }
    const double side = std::max(frame.width(), frame.height()) * 1.04;
    frame = QRectF(frame.center().x() - side / 2, frame.center().y() - side / 2, side, side);
    const QImage map =
        m_snapshot->hasGrid
            ? m_snapshot->heat[static_cast<std::size_t>(HeatQuantity::Probability)].image
            : QImage();
    m_inputs->setPoints(map, run.bounds, frame, preview.points, preview.labels, run.classes);
}

void ShiftView::refreshCharts() {
    const ShiftFigures empty;
    const ShiftFigures& f = m_outcome ? m_outcome->figures : empty;
    const double current =
        f.levels.empty() ? 0.0 : f.levels[std::min<std::size_t>(levelIndex(), f.levels.size() - 1)];
    // The axis names the unit without its note ("sigma (standardised)" is "sigma"): a chart
    // may be 200 px wide; the read-out under the slider gives the whole unit.
    const QString xTitle =
        f.levels.empty()
            ? QString()
            : QStringLiteral("%1 (%2)").arg(f.shift, f.unit.section(QStringLiteral(" ("), 0, 0));
    for (int m = 0; m < kShiftMetricCount; ++m) {
        const std::size_t mu = static_cast<std::size_t>(m);
        const QString title =
            f.titles[mu].isEmpty() ? shiftMetricTitle(static_cast<ShiftMetric>(m)) : f.titles[mu];
        fillShiftChart(m_charts[mu], title, f.levels, f.metrics[mu], xTitle, QString(), current,
                       f.titles[mu].isEmpty() ? m == 0 || m == 3 : f.rates[mu]);
    }
    fillShiftChart(m_charts[4],
                   f.coverageTitle.isEmpty() ? tr("Conformal coverage") : f.coverageTitle, f.levels,
                   f.coverage, xTitle, QString(), current, true,
                   f.levels.empty() ? std::numeric_limits<double>::quiet_NaN() : 1.0 - f.alpha,
                   tr("1 − α = %1").arg(formatValue(1.0 - f.alpha)));
    // The title stays short (a chart may be 200 px wide): on which rows, here.
    m_chartViews[4]->setToolTip(
        f.regression ? tr("The conformal interval's coverage on the measuring half (the rows "
                          "its width was not fitted on), against 1 − α")
                     : tr("The conformal (LAC) sets' coverage on the measuring half (the rows "
                          "the temperature and the threshold were not fitted on), against 1 − α"));
    const std::size_t i = static_cast<std::size_t>(levelIndex());
    fillRiskCoverageChart(
        m_charts[5], i < f.riskCoverage.size() ? f.riskCoverage[i] : std::vector<QPointF>{},
        // The level's number only: its shift and unit are on the other charts' axes.
        i < f.levels.size() ? tr("Risk–coverage at %1").arg(QString::number(f.levels[i], 'g', 6))
                            : tr("Risk–coverage"));
}

void ShiftView::setMessage(const QString& text, bool error) {
    m_status->setMessage(text, error);
}

QString ShiftView::message() const {
    return m_status->message();
}

QPushButton* ShiftView::cancelButton() const {
    return m_status->cancelButton();
}

bool ShiftView::exportTo(const QString& directory, QStringList* written, QString* error) {
    if (!m_outcome || !m_outcome->engineReport) {
        *error = tr("Nothing to export yet: Run a shift first.");
        return false;
    }
    const ShiftReport& report = *m_outcome->engineReport;
    QDir dir(directory);
    if (!dir.mkpath(QStringLiteral("."))) {
        *error = tr("%1: cannot create the folder").arg(directory);
        return false;
    }
    QStringList files;
    auto undo = [&files] {
        for (const QString& f : files) {
            QFile::remove(f);
        }
    };
    auto text = [&](const char* name, const std::string& content) {
        const QString path = dir.filePath(QLatin1String(name));
        if (!writeFile(path, QByteArray::fromStdString(content), error)) {
            return false;
        }
        files << path;
        return true;
    };
    // Each picture as PNG and, for papers and slides, as SVG; the SVG says which shift of
    // which run it shows.
    const QString description = tr("EnsembleLab: shift %1 on %2, step %3")
                                    .arg(str(m_outcome->request.shift), str(report.dataset))
                                    .arg(m_outcome->step);
    auto picture = [&](const char* stem, QWidget* widget, const QString& title) {
        const QString png = dir.filePath(QLatin1String(stem) + QStringLiteral(".png"));
        const QString svg = dir.filePath(QLatin1String(stem) + QStringLiteral(".svg"));
        if (!writePngPicture(widget, png, error)) {
            return false;
        }
        files << png;
        if (!writeSvgPicture(widget, svg, {title, description}, error)) {
            return false;
        }
        files << svg;
        return true;
    };
    bool ok = text("shift.json", m_outcome->report.dump(2) + "\n") &&
              text("shift_levels.csv", shiftLevelsCsv(report)) &&
              text("risk_coverage.csv", riskCoverageCsv(report)) &&
              text("set_sizes.csv", setSizesCsv(report)) && picture("shift", this, tr("Shift")) &&
              picture("shift_inputs", m_inputs, tr("Shift: the shifted inputs"));
    for (int c = 0; ok && c < kCharts; ++c) {
        const auto i = static_cast<std::size_t>(c);
        ok = picture(kChartFiles[i], m_chartViews[i], tr("Shift: %1").arg(m_charts[i]->title()));
    }
    if (!ok) {
        undo();
        return false;
    }
    *written = files;
    return true;
}

}  // namespace ensemble::ui

#include "views/shift_charts.h"

#include <QAreaSeries>
#include <QCategoryAxis>
#include <QChart>
#include <QLineSeries>
#include <QValueAxis>

#include <algorithm>
#include <cmath>
#include <limits>

#include "render/chart_axes.h"

namespace ensemble::ui {

namespace {

const QColor kEnsemble(200, 65, 60);
const QColor kMembers(74, 127, 181);
const QColor kReference(90, 90, 90);

// A line through the finite values of `values` at `levels` (NaN values leave a gap: Qt Charts
// cannot draw one, so they are skipped). Null when there is nothing to draw.
QLineSeries* line(const std::vector<double>& levels, const std::vector<double>& values,
                  const QString& name, const QPen& pen) {
    if (values.empty()) {
        return nullptr;
    }
    auto* s = new QLineSeries;
    s->setName(name);
    s->setPen(pen);
    for (std::size_t i = 0; i < levels.size() && i < values.size(); ++i) {
        if (std::isfinite(values[i])) {
            s->append(levels[i], values[i]);
        }
    }
    return s;
}

void widen(double& lo, double& hi, const std::vector<double>& values) {
    for (double v : values) {
        if (std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
        }
    }
}

}  // namespace

QString shiftChartsKey() {
    const auto swatch = [](const QColor& c, const QString& glyph, const QString& name) {
        return QStringLiteral("<span style=\"color:%1\"><b>%2</b></span>&nbsp;%3")
            .arg(c.name(), glyph,
                 QString(name).replace(QLatin1Char(' '), QStringLiteral("&nbsp;")));
    };
    QColor band = kMembers;
    band = band.lighter(150);
    return QStringList{
        swatch(kEnsemble, QStringLiteral("━━"), QObject::tr("ensemble")),
        swatch(kEnsemble, QStringLiteral("╍╍"), QObject::tr("ensemble, TS")),
        swatch(kMembers, QStringLiteral("━━"), QObject::tr("member median")),
        swatch(band, QStringLiteral("██"), QObject::tr("members' range")),
        swatch(kMembers, QStringLiteral("╍╍"), QObject::tr("member median, TS")),
        swatch(kReference, QStringLiteral("┄┄"), QObject::tr("1 − α")),
        swatch(QColor(230, 126, 34), QStringLiteral("┃"), QObject::tr("level shown"))}
        .join(QStringLiteral(" &nbsp; "));
}

QString shiftMetricTitle(ShiftMetric metric) {
    switch (metric) {
        case ShiftMetric::Accuracy:
            return QObject::tr("Accuracy");
        case ShiftMetric::Nll:
            return QObject::tr("NLL");
        case ShiftMetric::Brier:
            return QObject::tr("Brier");
        case ShiftMetric::Ece:
            return QObject::tr("ECE");
    }
    return {};
}

const char* shiftMetricKey(ShiftMetric metric) {
    switch (metric) {
        case ShiftMetric::Accuracy:
            return "accuracy";
        case ShiftMetric::Nll:
            return "nll";
        case ShiftMetric::Brier:
            return "brier";
        case ShiftMetric::Ece:
            return "ece";
    }
    return "";
}

void fillShiftChart(QChart* chart, const QString& title, const std::vector<double>& levels,
                    const ShiftSeries& series, const QString& xTitle, const QString& yTitle,
                    double current, bool probabilityAxis, double reference,
                    const QString& referenceName) {
    clearChart(chart);
    chart->setTitle(title);
    if (levels.empty()) {
        return;
    }
    std::vector<QAbstractSeries*> all;
    // The members' range first, so the lines are drawn over it.
    if (!series.membersMin.empty() && !series.membersMax.empty()) {
        auto* lower = line(levels, series.membersMin, {}, QPen());
        auto* upper = line(levels, series.membersMax, {}, QPen());
        auto* band = new QAreaSeries(upper, lower);
        upper->setParent(band);  // the area does not own its edges
        lower->setParent(band);
        band->setName(QObject::tr("members' range"));
        QColor fill = kMembers;
        fill.setAlpha(55);
        band->setBrush(fill);
        band->setPen(Qt::NoPen);
        all.push_back(band);
    }
    const QPen ensemblePen(kEnsemble, 2.4);
    QPen ensembleTsPen(kEnsemble, 1.8, Qt::DashLine);
    const QPen membersPen(kMembers, 1.8);
    QPen membersTsPen(kMembers, 1.4, Qt::DashLine);
    for (QLineSeries* s :
         {line(levels, series.membersMedian, QObject::tr("member median"), membersPen),
          line(levels, series.membersTsMedian, QObject::tr("member median, TS"), membersTsPen),
          line(levels, series.ensemble, QObject::tr("ensemble"), ensemblePen),
          line(levels, series.ensembleTs, QObject::tr("ensemble, TS"), ensembleTsPen)}) {
        if (s != nullptr) {
            all.push_back(s);
        }
    }
    double lo = std::numeric_limits<double>::infinity();
    double hi = -lo;
    for (const std::vector<double>* v :
         {&series.ensemble, &series.membersMedian, &series.membersMin, &series.membersMax,
          &series.ensembleTs, &series.membersTsMedian}) {
        widen(lo, hi, *v);
    }
    if (std::isfinite(reference)) {
        lo = std::min(lo, reference);
        hi = std::max(hi, reference);
        auto* ref = new QLineSeries;
        ref->setName(referenceName);
        ref->setPen(QPen(kReference, 1.4, Qt::DotLine));
        ref->append(levels.front(), reference);
        ref->append(levels.back(), reference);
        all.push_back(ref);
    }
    if (!(lo <= hi)) {
        lo = 0.0;
        hi = 1.0;
    }
    const double pad = 0.06 * std::max(hi - lo, 1e-3);
    // Every figure here is a rate or a non-negative loss: the axis never goes below 0.
    const double yLo = std::max(0.0, lo - pad);
    const double yHi = probabilityAxis ? std::min(1.0, hi + pad) : hi + pad;
    auto* marker = new QLineSeries;  // the slider's level
    marker->setPen(QPen(QColor(230, 126, 34), 1.2));
    marker->append(current, yLo);
    marker->append(current, yHi);
    all.push_back(marker);

    QCategoryAxis* x = makeNiceAxis();
    const double xLo = *std::min_element(levels.begin(), levels.end());
    const double xHi = *std::max_element(levels.begin(), levels.end());
    // Three ticks: the charts sit two a row in a narrow window (about 200 px each), where
    // five three-digit levels (0, 45, 90, 135, 180) would not fit side by side.
    setNiceRange(x, xLo, xHi > xLo ? xHi : xLo + 1.0, 3);
    x->setTitleText(xTitle);
    QCategoryAxis* y = makeNiceAxis();
    setNiceRange(y, yLo, yHi, 4, TickKind::Real, 0.0, probabilityAxis ? 1.0 : 1e300);
    if (!yTitle.isEmpty()) {
        y->setTitleText(yTitle);
    }
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    for (QAbstractSeries* s : all) {
        chart->addSeries(s);
        s->attachAxis(x);
        s->attachAxis(y);
    }
    chart->legend()->setVisible(false);  // one legend for all charts: ShiftView's key
}

void fillRiskCoverageChart(QChart* chart, const std::vector<QPointF>& curve, const QString& title) {
    clearChart(chart);
    chart->setTitle(title);
    auto* s = new QLineSeries;
    s->setName(QObject::tr("ensemble, by max-probability"));
    s->setPen(QPen(kEnsemble, 2.0));
    double hi = 0.0;
    for (const QPointF& point : curve) {
        if (std::isfinite(point.y())) {
            s->append(point);
            hi = std::max(hi, point.y());
        }
    }
    QCategoryAxis* x = makeNiceAxis();
    setNiceRange(x, 0.0, 1.0, 3, TickKind::Real, 0.0, 1.0);  // 0, 0.5, 1: fits 200 px
    x->setTitleText(QObject::tr("coverage"));
    QCategoryAxis* y = makeNiceAxis();
    setNiceRange(y, 0.0, std::max(hi * 1.05, 0.01), 4, TickKind::Real, 0.0, 1.0);
    y->setTitleText(QObject::tr("risk (error rate)"));
    chart->addAxis(x, Qt::AlignBottom);
    chart->addAxis(y, Qt::AlignLeft);
    chart->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
    chart->legend()->setVisible(false);
}

}  // namespace ensemble::ui

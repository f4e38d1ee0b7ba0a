#include "widgets/chart_legend.h"

#include <QAbstractSeries>
#include <QChart>
#include <QLegend>
#include <QLegendMarker>

namespace ensemble::ui {

namespace {

QString swatch(QLegendMarker* marker) {
    QColor colour = marker->brush().color();
    if (marker->brush().style() == Qt::NoBrush || colour.alpha() == 0) {
        colour = marker->pen().color();
    }
    colour.setAlpha(255);
    const bool line = marker->series() != nullptr &&
                      (marker->series()->type() == QAbstractSeries::SeriesTypeLine ||
                       marker->series()->type() == QAbstractSeries::SeriesTypeSpline);
    return QStringLiteral("<span style='color:%1'>%2</span>")
        .arg(colour.name(), line ? QStringLiteral("&#9473;&#9473;") : QStringLiteral("&#9679;"));
}

}  // namespace

ChartLegend::ChartLegend(QWidget* parent) : WrappingLabel(parent) {
    setTextFormat(Qt::RichText);
    setAlignment(Qt::AlignHCenter | Qt::AlignTop);
}

void ChartLegend::follow(QChart* chart) {
    m_chart = chart;
    chart->legend()->setVisible(false);
    refresh();
}

void ChartLegend::refresh() {
    QStringList entries;
    if (m_chart != nullptr) {
        for (QLegendMarker* marker : m_chart->legend()->markers()) {
            if (!marker->isVisible() || marker->label().isEmpty()) {
                continue;
            }
            // No break inside an entry: the line wraps between entries.
            entries << QStringLiteral("<span style='white-space:nowrap'>%1&nbsp;%2</span>")
                           .arg(swatch(marker), marker->label().toHtmlEscaped());
        }
    }
    setText(entries.join(QStringLiteral(" &nbsp; ")));
    setVisible(!entries.isEmpty());
}

}  // namespace ensemble::ui

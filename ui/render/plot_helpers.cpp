#include "render/plot_helpers.h"

#include <QLocale>

#include "render/text_fit.h"

#include <algorithm>
#include <cmath>

namespace ensemble::ui {

QString formatValue(double v) {
    if (!std::isfinite(v)) {
        return QStringLiteral("–");
    }
    const double a = std::abs(v);
    if (a != 0.0 && (a < 1e-3 || a >= 1e5)) {
        return QString::number(v, 'e', 2);
    }
    return QString::number(v, 'g', 3);
}

QString formatCount(int64_t v) {
    return QLocale(QLocale::English).toString(static_cast<qlonglong>(v));
}

QString formatRate(double v) {
    if (!std::isfinite(v) || v <= 0) {
        return QStringLiteral("–");
    }
    if (v >= 1e6) {
        return QString::number(v / 1e6, 'f', 2) + QStringLiteral("M");
    }
    if (v >= 1e4) {
        return QString::number(v / 1e3, 'f', 1) + QStringLiteral("k");
    }
    return QString::number(v, 'f', v >= 100 ? 0 : 1);
}

QRectF fitAspect(const QRectF& area, double aspect) {
    double w = area.width();
    double h = w / aspect;
    if (h > area.height()) {
        h = area.height();
        w = h * aspect;
    }
    return QRectF(area.left() + (area.width() - w) / 2, area.top() + (area.height() - h) / 2, w, h);
}

void drawVerticalText(QPainter& painter, const QPointF& centre, const QString& text) {
    painter.save();
    painter.translate(centre);
    painter.rotate(-90);
    const QFontMetricsF fm(painter.font());
    const double w = fm.horizontalAdvance(text);
    drawTextFitted(painter, QPointF(-w / 2, fm.ascent() / 2 - 1), text);
    painter.restore();
}

}  // namespace ensemble::ui

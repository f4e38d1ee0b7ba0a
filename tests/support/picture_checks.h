#pragma once

// What an exported picture holds: an SVG read back as XML (its drawing elements, its text, its
// title and description, the rasters its <image>s hold) and by Qt's SVG renderer, for the
// suites that check the views' picture export (tst_gui, tst_gui_shift, tst_gui_cnn).

#include <QAbstractAxis>
#include <QChart>
#include <QChartView>
#include <QFile>
#include <QImage>
#include <QLabel>
#include <QStringList>
#include <QSvgRenderer>
#include <QTextDocument>
#include <QWidget>
#include <QXmlStreamReader>

#include <vector>

namespace ensemble::test {

struct SvgContent {
    QString error;        // the XML reader's or renderer's complaint; empty when it parses
    int drawing = 0;      // path, polyline, polygon, line, rect, circle, ellipse, text, image
    QString text;         // every <text> element's content, joined by spaces
    QString title;        // the document's <title>
    QString description;  // its <desc>
};

inline SvgContent readSvg(const QString& path) {
    SvgContent svg;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        svg.error = path + QStringLiteral(": ") + file.errorString();
        return svg;
    }
    static const QStringList kDrawing = {
        QStringLiteral("path"),    QStringLiteral("polyline"), QStringLiteral("polygon"),
        QStringLiteral("line"),    QStringLiteral("rect"),     QStringLiteral("circle"),
        QStringLiteral("ellipse"), QStringLiteral("text"),     QStringLiteral("image")};
    QXmlStreamReader xml(&file);
    QStringList texts;
    while (!xml.atEnd()) {
        if (xml.readNext() != QXmlStreamReader::StartElement) {
            continue;
        }
        const QString name = xml.name().toString();
        if (kDrawing.contains(name)) {
            ++svg.drawing;
        }
        if (name == QLatin1String("text")) {
            texts << xml.readElementText(QXmlStreamReader::IncludeChildElements);
        } else if (name == QLatin1String("title") && svg.title.isEmpty()) {
            svg.title = xml.readElementText();
        } else if (name == QLatin1String("desc") && svg.description.isEmpty()) {
            svg.description = xml.readElementText();
        }
    }
    if (xml.hasError()) {
        svg.error = QStringLiteral("%1: line %2: %3")
                        .arg(path)
                        .arg(xml.lineNumber())
                        .arg(xml.errorString());
    } else if (!QSvgRenderer(path).isValid()) {
        svg.error = path + QStringLiteral(": QSvgRenderer cannot read it");
    }
    svg.text = texts.join(QLatin1Char(' ')).simplified();
    return svg;
}

// A raster an SVG holds (<image> with a PNG data URI): the size it is drawn at, in the
// document's units, and the image itself, decoded.
struct SvgImage {
    QSizeF size;
    QImage image;
};

inline std::vector<SvgImage> svgImages(const QString& path) {
    std::vector<SvgImage> images;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly)) {
        return images;
    }
    QXmlStreamReader xml(&file);
    const QString png = QStringLiteral("data:image/png;base64,");
    while (!xml.atEnd()) {
        if (xml.readNext() != QXmlStreamReader::StartElement ||
            xml.name() != QLatin1String("image")) {
            continue;
        }
        const QXmlStreamAttributes a = xml.attributes();
        QString href = a.value(QLatin1String("xlink:href")).toString();
        if (href.isEmpty()) {
            href = a.value(QLatin1String("href")).toString();
        }
        SvgImage image;
        image.size = QSizeF(a.value(QLatin1String("width")).toDouble(),
                            a.value(QLatin1String("height")).toDouble());
        if (href.startsWith(png)) {
            image.image.loadFromData(QByteArray::fromBase64(href.mid(png.size()).toLatin1()),
                                     "PNG");
        }
        images.push_back(image);
    }
    return images;
}

// The titles of the charts `view` shows (each chart's and each visible axis title), which its
// SVG must hold as text when Qt Charts painted into the generator.
inline QStringList chartTexts(const QWidget* view) {
    QStringList texts;
    for (const QChartView* chartView : view->findChildren<QChartView*>()) {
        if (!chartView->isVisibleTo(view) || chartView->chart() == nullptr) {
            continue;
        }
        const QChart* chart = chartView->chart();
        if (!chart->title().isEmpty()) {
            texts << chart->title();
        }
        for (const QAbstractAxis* axis : chart->axes()) {
            if (axis->isVisible() && axis->isTitleVisible() && !axis->titleText().isEmpty()) {
                texts << axis->titleText();
            }
        }
    }
    return texts;
}

// The plain texts of the labels `view` shows (rich text and empty labels left out).
inline QStringList labelTexts(const QWidget* view) {
    QStringList texts;
    for (const QLabel* label : view->findChildren<QLabel*>()) {
        const QString text = label->text().simplified();
        if (label->isVisibleTo(view) && text.size() > 2 && !Qt::mightBeRichText(text)) {
            texts << text;
        }
    }
    return texts;
}

}  // namespace ensemble::test

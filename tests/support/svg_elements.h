#pragma once

// An SVG document read back as XML for the suites that check a drawing's numbers (tst_reproduce:
// the reproductions' figures): its elements with their attributes and text, the group each
// sits in, and a panel's y axis read from its tick lines and labels, so that a mark's pixel
// row maps back to the value it stands for. Qt Core only (QXmlStreamReader).

#include <QRegularExpression>
#include <QString>
#include <QStringList>
#include <QXmlStreamReader>

#include <cmath>
#include <string>
#include <vector>

namespace ensemble::test {

// An SVG document as its elements, each with the id of the innermost group around it that has
// one, and a text element's text (entities resolved).
struct SvgElement {
    QString name;
    QXmlStreamAttributes attributes;
    QString text;
    QString group;
    QString attr(const char* key) const { return attributes.value(QLatin1String(key)).toString(); }
};
struct ParsedSvg {
    QString error;  // empty: well-formed
    QString root;
    std::vector<SvgElement> elements;
    const SvgElement* byId(const QString& id) const {
        for (const SvgElement& e : elements) {
            if (e.attr("id") == id) {
                return &e;
            }
        }
        return nullptr;
    }
};

inline ParsedSvg parseSvg(const std::string& svg) {
    ParsedSvg parsed;
    QXmlStreamReader xml(QByteArray::fromStdString(svg));
    std::vector<QString> groups;
    while (!xml.atEnd()) {
        xml.readNext();
        if (xml.isStartElement()) {
            SvgElement e;
            e.name = xml.name().toString();
            e.attributes = xml.attributes();
            e.group = groups.empty() ? QString() : groups.back();
            if (parsed.root.isEmpty()) {
                parsed.root = e.name;
            }
            if (e.name == QLatin1String("g")) {
                const QString id = e.attr("id");
                groups.push_back(id.isEmpty() && !groups.empty() ? groups.back() : id);
            } else if (e.name == QLatin1String("text") || e.name == QLatin1String("title")) {
                e.text = xml.readElementText();
            }
            parsed.elements.push_back(e);
        } else if (xml.isEndElement() && xml.name() == QLatin1String("g")) {
            groups.pop_back();
        }
    }
    if (xml.hasError()) {
        parsed.error = xml.errorString();
    }
    return parsed;
}

// A panel's y axis read back from its ticks: the pixel row of each tick line and the value its
// label prints; value(pixel) interpolates between the first and the last.
struct AxisReading {
    std::vector<double> pixels;
    std::vector<double> values;
    double value(double pixel) const {
        return values.front() + (pixel - pixels.front()) * (values.back() - values.front()) /
                                    (pixels.back() - pixels.front());
    }
    // A hundredth of a pixel (the document's precision) in data units, and a little over.
    double tolerance() const {
        return 0.011 *
               std::abs((values.back() - values.front()) / (pixels.back() - pixels.front()));
    }
};

inline AxisReading yAxisOf(const ParsedSvg& svg, const QString& panel) {
    AxisReading axis;
    for (const SvgElement& e : svg.elements) {
        if (e.group != panel) {
            continue;
        }
        if (e.name == QLatin1String("line") && e.attr("class") == QLatin1String("ytick")) {
            axis.pixels.push_back(e.attr("y1").toDouble());
        } else if (e.name == QLatin1String("text") &&
                   e.attr("class") == QLatin1String("ytick-label")) {
            axis.values.push_back(e.text.toDouble());
        }
    }
    return axis;
}

// The texts of `panel` with class `cls`.
inline QStringList textsOf(const ParsedSvg& svg, const QString& panel, const char* cls) {
    QStringList texts;
    for (const SvgElement& e : svg.elements) {
        if (e.group == panel && e.name == QLatin1String("text") &&
            e.attr("class") == QLatin1String(cls)) {
            texts << e.text;
        }
    }
    return texts;
}

// Whether any attribute holds "nan" or "inf", or any text the word NaN or inf.
inline bool hasNonFiniteText(const ParsedSvg& svg) {
    const QRegularExpression word(QStringLiteral("\\b(nan|inf|infinity)\\b"),
                                  QRegularExpression::CaseInsensitiveOption);
    for (const SvgElement& e : svg.elements) {
        for (const QXmlStreamAttribute& a : e.attributes) {
            const QString v = a.value().toString().toLower();
            if (v.contains(QLatin1String("nan")) || v.contains(QLatin1String("inf"))) {
                return true;
            }
        }
        if (word.match(e.text).hasMatch()) {
            return true;
        }
    }
    return false;
}

}  // namespace ensemble::test

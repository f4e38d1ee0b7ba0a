// Every view readable at 900 x 600: the window at the size the README promises,
// trained on 2-D data, on tiny MNIST-format images (a CNN, so the Filters view shows) and on a
// 1-D regression, each view of the view table in front in turn, and no text anywhere wider
// than its room. Widgets are measured (a label's text against its rectangle, a button's, a
// combo box's, a field's, a table cell's; text elided with "…" counts only with the full text
// in its tooltip); Qt Charts' text items must not be truncated; the QPainter views draw text
// through drawTextFitted(), which records what it had to cut (TextFitLog).
#include <QAbstractButton>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QGraphicsSimpleTextItem>
#include <QGraphicsTextItem>
#include <QGroupBox>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRadioButton>
#include <QScrollArea>
#include <QScrollBar>
#include <QStyleOptionComboBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextDocument>
#include <QToolButton>
#include <QtCharts/QChartView>
#include <QtTest>

#include <memory>

#include "config/config.h"
#include "controller/engine_controller.h"
#include "main_window.h"
#include "panels/experiment_panel.h"
#include "render/text_fit.h"
#include "support/gui_test_support.h"
#include "support/test_support.h"
#include "view_table.h"
#include "views/filters_view.h"
#include "views/images_view.h"
#include "views/methods_view.h"

using ensemble::test::makeWindow;
using ensemble::test::waitFresh;
using ensemble::test::waitSnapshot;
using ensemble::ui::MainWindow;
using ensemble::ui::TextFitLog;
using ensemble::ui::viewTable;
using nlohmann::json;

namespace {

const QSize kReadmeSize(900, 600);

// The widget and up to three of its parents, class#name from the outermost, for a message.
QString widgetPath(const QWidget* w) {
    QStringList path;
    for (const QObject* o = w; o != nullptr; o = o->parent()) {
        path.prepend(QString::fromLatin1(o->metaObject()->className()) +
                     (o->objectName().isEmpty() ? QString() : QLatin1Char('#') + o->objectName()));
        if (path.size() >= 4) {
            break;
        }
    }
    return path.join(QLatin1Char('/'));
}

QString problem(const QWidget* w, const QString& text, double needed, double room) {
    return QStringLiteral("%1: \"%2\" needs %3 px, has %4")
        .arg(widgetPath(w), text)
        .arg(needed, 0, 'f', 0)
        .arg(room, 0, 'f', 0);
}

// Text ending in "…" is fine only when the whole of it is in the tooltip.
bool elidedWithTooltip(const QWidget* w, const QString& shown) {
    if (!shown.endsWith(QChar(0x2026))) {
        return false;
    }
    const QString stem = shown.chopped(1).trimmed();
    return !w->toolTip().isEmpty() && w->toolTip().contains(stem);
}

QString plainText(const QLabel* label) {
    const QString text = label->text();
    if (label->textFormat() == Qt::RichText ||
        (label->textFormat() == Qt::AutoText && Qt::mightBeRichText(text))) {
        QTextDocument doc;
        doc.setHtml(text);
        return doc.toPlainText();
    }
    if (label->buddy() != nullptr) {
        // A mnemonic: "&Rows" shows as "Rows" (and "&&" as "&").
        QString shown = text;
        shown.replace(QStringLiteral("&&"), QStringLiteral("\x01"));
        shown.remove(QLatin1Char('&'));
        shown.replace(QLatin1Char('\x01'), QLatin1Char('&'));
        return shown;
    }
    return text;
}

void checkLabel(const QLabel* label, QStringList& out) {
    const QString text = plainText(label);
    if (text.trimmed().isEmpty() || elidedWithTooltip(label, text)) {
        return;
    }
    const QFontMetrics fm(label->font());
    const QRect room = label->contentsRect().adjusted(label->margin(), label->margin(),
                                                      -label->margin(), -label->margin());
    if (label->wordWrap()) {
        // Wrapping breaks at spaces only: each word must fit, and the lines the height.
        for (const QString& word : text.split(QRegularExpression(QStringLiteral("\\s+")))) {
            if (fm.horizontalAdvance(word) > room.width() + 1) {
                out << problem(label, word, fm.horizontalAdvance(word), room.width());
            }
        }
        const QRect needed = fm.boundingRect(room, Qt::TextWordWrap | label->alignment(), text);
        if (needed.height() > room.height() + 2) {
            out << problem(label, text, needed.height(), room.height()) +
                       QStringLiteral(" (height)");
        }
        return;
    }
    for (const QString& line : text.split(QLatin1Char('\n'))) {
        const int needed = fm.horizontalAdvance(line);
        if (needed > room.width() + 1) {
            out << problem(label, line, needed, room.width());
        }
    }
}

void checkButton(const QAbstractButton* button, QStringList& out) {
    QString text = button->text();
    text.remove(QLatin1Char('&'));
    if (text.isEmpty() || elidedWithTooltip(button, text)) {
        return;
    }
    if (const auto* tool = qobject_cast<const QToolButton*>(button);
        tool != nullptr && tool->toolButtonStyle() == Qt::ToolButtonIconOnly) {
        return;
    }
    const QFontMetrics fm(button->font());
    const int textWidth = fm.horizontalAdvance(text);
    int needed = 0;
    if (qobject_cast<const QCheckBox*>(button) != nullptr ||
        qobject_cast<const QRadioButton*>(button) != nullptr) {
        needed = button->sizeHint().width();  // indicator, spacing and text, exactly
    } else {
        const int icon = button->icon().isNull() ? 0 : button->iconSize().width() + 4;
        needed = textWidth + icon + 8;  // the narrowest padding of any style's bevel
    }
    if (needed > button->width() + 1) {
        out << problem(button, text, needed, button->width());
    }
}

void checkCombo(const QComboBox* combo, QStringList& out) {
    const QString text = combo->currentText();
    if (text.isEmpty() || combo->isEditable()) {
        return;  // an editable combo's text is its line edit, checked as one
    }
    QStyleOptionComboBox option;
    option.initFrom(combo);
    option.editable = false;
    const QRect field = combo->style()->subControlRect(QStyle::CC_ComboBox, &option,
                                                       QStyle::SC_ComboBoxEditField, combo);
    const int icon =
        combo->itemIcon(combo->currentIndex()).isNull() ? 0 : combo->iconSize().width() + 4;
    const int needed = combo->fontMetrics().horizontalAdvance(text) + icon;
    if (needed > field.width() + 1) {
        out << problem(combo, text, needed, field.width());
    }
}

void checkLineEdit(const QLineEdit* edit, QStringList& out) {
    const QString text = edit->displayText();
    if (text.isEmpty()) {
        return;
    }
    // QLineEdit's text area: its contents rectangle less the text margins and 2 px each side.
    const QMargins m = edit->textMargins();
    QStyleOptionFrame option;
    option.initFrom(edit);
    option.lineWidth = edit->hasFrame()
                           ? edit->style()->pixelMetric(QStyle::PM_DefaultFrameWidth, &option, edit)
                           : 0;
    const QRect r = edit->style()->subElementRect(QStyle::SE_LineEditContents, &option, edit);
    const int room = r.width() - m.left() - m.right() - 4;
    const int needed = edit->fontMetrics().horizontalAdvance(text);
    if (needed > room + 1) {
        out << problem(edit, text, needed, room);
    }
}

void checkGroupBox(const QGroupBox* box, QStringList& out) {
    const int needed = box->fontMetrics().horizontalAdvance(box->title()) + 16;
    if (!box->title().isEmpty() && needed > box->width() + 1) {
        out << problem(box, box->title(), needed, box->width());
    }
}

void checkTable(const QTableView* table, QStringList& out) {
    const QAbstractItemModel* model = table->model();
    if (model == nullptr) {
        return;
    }
    const QFontMetrics fm(table->font());
    for (int c = 0; c < model->columnCount(); ++c) {
        if (table->isColumnHidden(c)) {
            continue;
        }
        const int room = table->columnWidth(c) - 6;  // the item's margins and the grid line
        for (int r = 0; r < model->rowCount(); ++r) {
            const QString text = model->index(r, c).data().toString();
            const int needed = fm.horizontalAdvance(text);
            if (needed > room) {
                out << problem(table, QStringLiteral("[%1,%2] %3").arg(r).arg(c).arg(text), needed,
                               room);
            }
        }
        const QString header = model->headerData(c, Qt::Horizontal).toString();
        const int headerNeeded = table->horizontalHeader()->fontMetrics().horizontalAdvance(header);
        if (table->horizontalHeader()->isVisible() && headerNeeded > room + 2) {
            out << problem(table, QStringLiteral("header ") + header, headerNeeded, room);
        }
    }
}

// Qt Charts cuts a label or legend entry that does not fit to "text..." (QChartPresenter's
// truncation) or "…".
void checkChart(const QChartView* view, QStringList& out) {
    if (view->scene() == nullptr) {
        return;
    }
    for (const QGraphicsItem* item : view->scene()->items()) {
        if (!item->isVisible()) {
            continue;
        }
        QString text;
        if (const auto* t = dynamic_cast<const QGraphicsTextItem*>(item)) {
            text = t->toPlainText();
        } else if (const auto* s = dynamic_cast<const QGraphicsSimpleTextItem*>(item)) {
            text = s->text();
        }
        if (text.endsWith(QStringLiteral("...")) || text.endsWith(QChar(0x2026))) {
            const QRectF box = item->sceneBoundingRect();
            out << QStringLiteral("%1: chart text cut to \"%2\" (%3x%4 at %5,%6)")
                       .arg(widgetPath(view), text)
                       .arg(box.width())
                       .arg(box.height())
                       .arg(box.x())
                       .arg(box.y());
        }
    }
}

// Every visible widget under `root` whose text does not fit.
QStringList clippedWidgets(QWidget* root) {
    QStringList out;
    QList<QWidget*> widgets = root->findChildren<QWidget*>();
    widgets.prepend(root);
    for (QWidget* w : widgets) {
        if (!w->isVisibleTo(root->window()) || w->width() <= 0 || w->height() <= 0) {
            continue;
        }
        if (auto* label = qobject_cast<QLabel*>(w)) {
            checkLabel(label, out);
        } else if (auto* button = qobject_cast<QAbstractButton*>(w)) {
            checkButton(button, out);
        } else if (auto* combo = qobject_cast<QComboBox*>(w)) {
            checkCombo(combo, out);
        } else if (auto* edit = qobject_cast<QLineEdit*>(w)) {
            checkLineEdit(edit, out);
        } else if (auto* box = qobject_cast<QGroupBox*>(w)) {
            checkGroupBox(box, out);
        } else if (auto* table = qobject_cast<QTableView*>(w)) {
            checkTable(table, out);
        } else if (auto* chart = qobject_cast<QChartView*>(w)) {
            checkChart(chart, out);
        }
    }
    return out;
}

// What the QPainter code under `root` had to cut, or drew out of its widget or over other
// text, each widget drawn on its own (without its children) at its own size.
QStringList clippedPainting(QWidget* root) {
    QStringList out;
    QList<QWidget*> widgets = root->findChildren<QWidget*>();
    widgets.prepend(root);
    TextFitLog::setRecording(true);
    for (QWidget* w : widgets) {
        if (!w->isVisibleTo(root->window()) || w->width() <= 0 || w->height() <= 0) {
            continue;
        }
        QImage image(w->size(), QImage::Format_ARGB32_Premultiplied);
        w->render(&image, QPoint(), QRegion(), QWidget::DrawWindowBackground);
        for (const ensemble::ui::TextFitProblem& p : TextFitLog::take()) {
            out << QStringLiteral("%1 painted \"%2\" as \"%3\": needs %4 px, room %5x%6 at %7,%8")
                       .arg(widgetPath(w), p.text, p.shown)
                       .arg(p.needed, 0, 'f', 0)
                       .arg(p.room.width(), 0, 'f', 0)
                       .arg(p.room.height(), 0, 'f', 0)
                       .arg(p.room.x(), 0, 'f', 0)
                       .arg(p.room.y(), 0, 'f', 0);
        }
    }
    TextFitLog::setRecording(false);
    return out;
}

// Starts the current run on the controller and waits until it has finished.
bool startAndFinish(MainWindow& w) {
    w.controller()->start();
    return waitSnapshot(
        w, [](const auto& s) { return s.finished && !s.running; }, 120000);
}

void settle() {
    for (int i = 0; i < 5; ++i) {
        QCoreApplication::processEvents();
    }
}

}  // namespace

class TestReadable : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase() { ensemble::test::isolateSettings(); }
    void twoDimensionalRun();
    void imageRun();
    void regressionRun();
    void theCheckSeesClippedText();

  private:
    // Brings every view that applies to the front in turn and checks the whole window.
    void checkEveryView(MainWindow& w, int expectedViews);
};

void TestReadable::checkEveryView(MainWindow& w, int expectedViews) {
    qInfo().noquote() << QStringLiteral("window %1 x %2").arg(w.width()).arg(w.height());
    int shown = 0;
    QStringList failures;
    for (const auto& row : viewTable()) {
        if (!w.setView(row.id)) {
            continue;
        }
        ++shown;
        settle();
        const QString name = QLatin1String(row.key);
        // Paint the whole window first: Qt Charts lays its text out when it draws.
        const QPixmap shot = w.grab();
        settle();
        // READABLE_SHOTS=folder keeps each view's picture, to look at what the test saw.
        if (const QByteArray folder = qgetenv("READABLE_SHOTS"); !folder.isEmpty()) {
            shot.save(QStringLiteral("%1/%2-%3.png")
                          .arg(QString::fromLocal8Bit(folder), QTest::currentTestFunction(), name));
        }
        const QStringList painted = clippedPainting(w.currentView());
        // Views reflow to the window's width and scroll only downwards: nothing is cut at the
        // right edge.
        for (QWidget* p = w.currentView(); p != nullptr; p = p->parentWidget()) {
            if (auto* area = qobject_cast<QScrollArea*>(p)) {
                if (area->horizontalScrollBar()->maximum() > 0) {
                    failures << name + QStringLiteral(": %1 px wider than the window shows")
                                           .arg(area->horizontalScrollBar()->maximum());
                }
                break;
            }
        }
        for (const QString& p : painted + clippedWidgets(&w)) {
            failures << name + QStringLiteral(": ") + p;
        }
    }
    QCOMPARE(shown, expectedViews);
    failures.removeDuplicates();
    for (const QString& f : failures) {
        qWarning().noquote() << f;
    }
    QVERIFY2(failures.isEmpty(), "text wider than its room (listed above)");
}

void TestReadable::twoDimensionalRun() {
    auto w = makeWindow(kReadmeSize);
    json c = ensemble::test::smallConfig({.steps = 120, .threads = 1});
    c["training"]["eval_every"] = 40;
    w->loadExperiment(c, QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(startAndFinish(*w));
    QCOMPARE(w->size(), kReadmeSize);
    // The Methods view with its results: the maps, the note and the filled table.
    QVERIFY(w->setView(QStringLiteral("methods")));
    QSignalSpy compared(w->controller(), &ensemble::ui::EngineController::methodsFinished);
    w->methodsView()->compareButton()->click();
    QVERIFY(compared.wait(ensemble::test::progressWaitMs(120000)));
    QVERIFY(w->methodsView()->table()->rowCount() > 0);
    // Boundary, Members, Curves, Calibration, Sweep, Shift, Active learning, Methods.
    checkEveryView(*w, 8);
    // Wider, where the charts stand side by side and the test accuracy was cut at 1,100 px.
    w->resize(1100, 650);
    settle();
    QCOMPARE(w->size(), QSize(1100, 650));
    checkEveryView(*w, 8);
    w->resize(kReadmeSize);
    settle();

    // The learning rate as a log range: its two fields show their numbers whole.
    QComboBox* lrMode = nullptr;
    for (QComboBox* combo : w->panel()->findChildren<QComboBox*>()) {
        if (combo->findData(QStringLiteral("log")) >= 0 &&
            combo->findData(QStringLiteral("list")) >= 0) {
            lrMode = combo;
        }
    }
    QVERIFY(lrMode != nullptr);
    lrMode->setCurrentIndex(lrMode->findData(QStringLiteral("log")));
    settle();
    const QStringList panel = clippedWidgets(w->panel());
    for (const QString& p : panel) {
        qWarning().noquote() << p;
    }
    QVERIFY(panel.isEmpty());
}

void TestReadable::imageRun() {
    QTemporaryDir dir;
    QVERIFY(ensemble::test::writeIdx(dir.path(), "train-images-idx3-ubyte",
                                     "train-labels-idx1-ubyte", 200, 1));
    QVERIFY(ensemble::test::writeIdx(dir.path(), "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                     1200, 2));
    json c = ensemble::loadConfigJson("mnist-cnn");
    c["dataset"]["path"] = dir.path().toStdString();
    // The recipe's first layer (32 filters of 3 x 3), a small rest: the Filters view's strip.
    c["model"]["layers"] = json::array({{{"type", "conv"}, {"filters", 32}, {"kernel", 3}},
                                        {{"type", "pool"}, {"kind", "max"}, {"size", 4}},
                                        {{"type", "dense"}, {"units", 16}}});
    c["ensemble"]["members"] = 4;
    c["training"]["batch_size"] = 20;
    c["training"]["epochs"] = 0;
    c["training"]["steps"] = 20;
    c["backend"] = {{"kind", "cpu"}, {"threads", 1}};
    auto w = makeWindow(kReadmeSize);
    w->loadExperiment(c, QString());
    QVERIFY2(w->panel()->isValid(),
             qPrintable(w->panel()->errors().values().join(QStringLiteral("; "))));
    QVERIFY(waitFresh(*w));
    QVERIFY(startAndFinish(*w));
    // A digit drawn on the Images and Filters views: the vote bars and feature maps.
    QVERIFY(w->setView(QStringLiteral("images")));
    settle();
    ensemble::ui::DigitCanvas* canvas = w->imagesView()->canvas();
    const double k = canvas->width() / 224.0;
    canvas->drawStroke({QPointF(40 * k, 100 * k), QPointF(180 * k, 104 * k)});
    QVERIFY(QTest::qWaitFor([&] { return w->imagesView()->bars()->ensemble().size() == 10; },
                            ensemble::test::progressWaitMs(20000)));
    QVERIFY(w->setView(QStringLiteral("filters")));
    settle();
    ensemble::ui::DigitCanvas* pen = w->filtersView()->canvas();
    const double f = pen->width() / 224.0;
    pen->drawStroke({QPointF(60 * f, 60 * f), QPointF(160 * f, 170 * f)});
    QVERIFY(QTest::qWaitFor([&] { return w->filtersView()->featureMaps()->rows() == 4; },
                            ensemble::test::progressWaitMs(20000)));
    // The confusion matrix counts run to four digits (1200 test images).
    // Members, Curves, Calibration, Sweep, Images, Filters, Shift, Active learning, Methods.
    checkEveryView(*w, 9);
}

void TestReadable::regressionRun() {
    auto w = makeWindow(kReadmeSize);
    json c = ensemble::loadConfigJson("sine");
    c["training"]["steps"] = 60;
    c["training"]["eval_every"] = 20;
    c["training"].erase("epochs");
    c["backend"] = {{"kind", "cpu"}, {"threads", 1}};
    w->loadExperiment(c, QString());
    QVERIFY(waitFresh(*w));
    QVERIFY(startAndFinish(*w));
    // Members, Curves, Calibration, Sweep, Regression, Shift.
    checkEveryView(*w, 6);
}

// The checks can fail: a label, a button and painted text that do not fit are all reported.
void TestReadable::theCheckSeesClippedText() {
    QWidget root;
    root.resize(300, 100);
    auto* label = new QLabel(QStringLiteral("ensemble of 16 members, train loss 0.0137"), &root);
    label->setGeometry(0, 0, 60, 20);
    auto* button = new QPushButton(QStringLiteral("Compare with another ensemble"), &root);
    button->setGeometry(0, 30, 50, 24);
    auto* fits = new QLabel(QStringLiteral("ok"), &root);
    fits->setGeometry(0, 60, 100, 20);
    root.show();
    auto* field = new QLineEdit(QStringLiteral("0.00666667"), &root);
    field->setGeometry(120, 60, 40, 24);
    field->show();
    const QStringList widgets = clippedWidgets(&root);
    QCOMPARE(widgets.size(), 3);
    QVERIFY(widgets[2].contains(QStringLiteral("0.00666667")));
    delete field;
    QVERIFY(widgets[0].contains(QStringLiteral("ensemble of 16")));
    QVERIFY(widgets[1].contains(QStringLiteral("Compare with")));
    // Elided with the full text in the tooltip is readable.
    label->setText(label->fontMetrics().elidedText(label->text(), Qt::ElideRight, 55));
    label->setToolTip(QStringLiteral("ensemble of 16 members, train loss 0.0137"));
    QCOMPARE(clippedWidgets(&root).size(), 1);

    QImage image(100, 40, QImage::Format_RGB32);
    TextFitLog::setRecording(true);
    {
        QPainter p(&image);
        const QString shown = ensemble::ui::drawTextFitted(p, QRectF(0, 0, 40, 20), Qt::AlignLeft,
                                                           QStringLiteral("test accuracy 0.9875"));
        QVERIFY(shown.endsWith(QChar(0x2026)));
        ensemble::ui::drawTextFitted(p, QRectF(0, 20, 100, 20), Qt::AlignLeft,
                                     QStringLiteral("fits"));
        ensemble::ui::drawTextFitted(p, QPointF(80, 30), QStringLiteral("past the edge"));
    }
    const auto problems = TextFitLog::take();
    TextFitLog::setRecording(false);
    QCOMPARE(problems.size(), std::size_t{2});
    QCOMPARE(problems[0].text, QStringLiteral("test accuracy 0.9875"));
    QCOMPARE(problems[1].text, QStringLiteral("past the edge"));
}

QTEST_MAIN(TestReadable)
#include "tst_readable.moc"

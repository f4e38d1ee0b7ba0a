// Every view readable at 900 x 600: the window at the size the README promises, trained on 2-D data
// (its Shift view measured, a reproduction run), on tiny MNIST-format images (a CNN, so the Filters
// view shows) and on a 1-D regression, each view of the view table in front in turn, and no text
// anywhere wider than its room; the presets loaded one after another in one window; the F1 key
// list. Widgets are measured (a label's text against its rectangle, a button's, a combo box's, a
// field's, a table cell's; text elided with "…" counts only with the full text in its tooltip, and
// never for a read-out of values, kReadoutProperty); Qt Charts' text items must not be truncated;
// the QPainter views draw text through drawTextFitted(), which records what it had to cut or drew
// past the device or the painter's clip (TextFitLog), and a pane that scrolls inside a view must
// show its first line whole.
#include <QAbstractButton>
#include <QApplication>
#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
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
#include <QStatusBar>
#include <QStyleOptionComboBox>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTextBrowser>
#include <QTextDocument>
#include <QToolButton>
#include <QVBoxLayout>
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
#include "view_tabs.h"
#include "views/filters_view.h"
#include "views/images_view.h"
#include "views/methods_view.h"
#include "views/reproduce_view.h"
#include "views/shift_view.h"
#include "widgets/elided_label.h"

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

bool isReadout(const QWidget* w) {
    return w->property(ensemble::ui::kReadoutProperty).toBool();
}

// What an elided text leaves to its tooltip ("…" and all after the stem); empty when `shown`
// is not elided or the tooltip lacks the stem.
QString cutToTooltip(const QWidget* w, const QString& shown) {
    if (!shown.endsWith(QChar(0x2026))) {
        return {};
    }
    const QString stem = shown.chopped(1).trimmed();
    const qsizetype at = w->toolTip().indexOf(stem);
    return stem.isEmpty() || at < 0 ? QString() : w->toolTip().mid(at + stem.size()).trimmed();
}

// Figures cut off: a read-out of values, its numbers only in the tooltip ("…, NLL 0.71").
// Not the status bar's passing messages: the run's figures stand in the counters beside them.
bool cutsFigures(const QWidget* w, const QString& cut) {
    static const QRegularExpression figure(QStringLiteral("\\d"));
    for (const QWidget* p = w; p != nullptr; p = p->parentWidget()) {
        if (qobject_cast<const QStatusBar*>(p) != nullptr) {
            return false;
        }
    }
    return cut.contains(figure);
}

// Text ending in "…" is fine only when the whole of it is in the tooltip, and never in a
// read-out of values, marked (kReadoutProperty) or with figures in the part cut off
// (checkLabel reports those).
bool elidedWithTooltip(const QWidget* w, const QString& shown) {
    const QString cut = cutToTooltip(w, shown);
    return !cut.isEmpty() && !isReadout(w) && !cutsFigures(w, cut);
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
    if (const QString cut = cutToTooltip(label, text);
        !cut.isEmpty() && (isReadout(label) || cutsFigures(label, cut))) {
        out << QStringLiteral("%1: read-out cut to \"%2\", its values only in the tooltip \"%3\"")
                   .arg(widgetPath(label), text, label->toolTip());
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

// The part of `w` (its own coordinates) that the nearest scroll area between it and `root`
// shows; null when no scroll area inside `root` holds it.
QRect shownByInnerScrollArea(const QWidget* w, const QWidget* root) {
    for (const QWidget* p = w->parentWidget(); p != nullptr && p != root; p = p->parentWidget()) {
        if (const auto* area = qobject_cast<const QAbstractScrollArea*>(p)) {
            const QWidget* port = area->viewport();
            if (!port->isAncestorOf(w)) {
                return {};
            }
            const QPoint at = w->mapTo(port, QPoint(0, 0));
            return QRect(at, w->size()).intersected(port->rect()).translated(-at);
        }
    }
    return {};
}

// A pane that scrolls must show, at the top, its first line of text whole (a row of digit
// tiles whose labels lie below the pane's edge cannot be read at any scroll position), and
// nothing cut at its sides (views scroll only downwards).
void checkScrolledText(const QWidget* w, const QRect& shown,
                       const std::vector<ensemble::ui::TextFitDrawn>& drawn, QStringList& out) {
    const ensemble::ui::TextFitDrawn* first = nullptr;
    for (const auto& d : drawn) {
        if (first == nullptr || d.box.top() < first->box.top()) {
            first = &d;
        }
        if (d.box.intersects(QRectF(shown)) &&
            (d.box.left() < shown.left() - 0.5 || d.box.right() > shown.right() + 1.5)) {
            out << QStringLiteral(
                       "%1 painted \"%2\" cut at the side of its scroll area (%3 px of %4)")
                       .arg(widgetPath(w), d.text)
                       .arg(shown.width())
                       .arg(d.box.width(), 0, 'f', 0);
        }
    }
    if (first != nullptr && !QRectF(shown).adjusted(-0.5, -0.5, 1.5, 1.5).contains(first->box)) {
        out << QStringLiteral(
                   "%1: its scroll area shows %2 px of it, its first line \"%3\" (y %4 to %5) "
                   "not whole")
                   .arg(widgetPath(w))
                   .arg(shown.height())
                   .arg(first->text)
                   .arg(first->box.top(), 0, 'f', 0)
                   .arg(first->box.bottom(), 0, 'f', 0);
    }
}

// What the QPainter code under `root` had to cut, or drew out of its widget or its clip or
// over other text, each widget drawn on its own (without its children) at its own size; and
// the text of a pane scrolled inside `root` that its scroll area cannot show.
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
        if (const QRect shown = shownByInnerScrollArea(w, root); !shown.isNull()) {
            checkScrolledText(w, shown, TextFitLog::drawn(), out);
        }
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

// Measures the Shift view's first shift at its default levels and shows the middle level, so
// that the view shows its charts' titles and its read-outs.
bool measureShift(MainWindow& w) {
    if (!w.setView(QStringLiteral("shift"))) {
        return false;
    }
    ensemble::ui::ShiftView* view = w.shiftView();
    view->subsetBox()->setValue(200);  // the first 200 test rows: quick, the same text
    const auto outcome = ensemble::test::clickAndWaitFor<ensemble::ui::ShiftOutcomePtr>(
        view->runButton(), w.controller(), &ensemble::ui::EngineController::shiftFinished, 60000);
    if (outcome == nullptr || outcome->figures.levels.empty()) {
        return false;
    }
    view->setLevelIndex(static_cast<int>(outcome->figures.levels.size() / 2));
    settle();
    return true;
}

// Runs deep-ensembles-fig1 with one seed in the Reproduce view, so that it shows its table of
// ours against the paper and its summary.
bool reproduceFigureOne(MainWindow& w) {
    if (!w.setView(QStringLiteral("reproduce"))) {
        return false;
    }
    auto* view = w.viewTabs()->viewAs<ensemble::ui::ReproduceView>(ensemble::ui::ViewId::Reproduce);
    if (!view->setReproduction(QStringLiteral("deep-ensembles-fig1"))) {
        return false;
    }
    view->setCount(1);
    const auto outcome = ensemble::test::clickAndWaitFor<ensemble::ui::ReproduceOutcomePtr>(
        view->runButton(), w.controller(), &ensemble::ui::EngineController::reproduceFinished,
        60000);
    settle();
    return outcome != nullptr && outcome->error.isEmpty() && view->table()->rowCount() > 0;
}

// A help dialog on a screen `screen` tall: it fits, its text scrolls where it is longer, and
// its Close button shows.
QStringList helpDialogProblems(const QDialog* box, int screen) {
    QStringList out;
    if (box->frameGeometry().height() > screen) {
        out << QStringLiteral("%1 is %2 px tall, the screen %3")
                   .arg(widgetPath(box))
                   .arg(box->frameGeometry().height())
                   .arg(screen);
    }
    const auto* text = box->findChild<const QTextBrowser*>();
    if (text == nullptr) {
        out << widgetPath(box) + QStringLiteral(": no text that scrolls");
    } else if (text->document()->size().height() > text->viewport()->height() + 1 &&
               text->verticalScrollBarPolicy() == Qt::ScrollBarAlwaysOff) {
        out << widgetPath(box) + QStringLiteral(": its text is taller than it and cannot scroll");
    }
    const auto* buttons = box->findChild<const QDialogButtonBox*>();
    const QAbstractButton* close =
        buttons != nullptr ? buttons->button(QDialogButtonBox::Close) : nullptr;
    if (close == nullptr || !close->isVisibleTo(box) ||
        !box->rect().contains(QRect(close->mapTo(box, QPoint(0, 0)), close->size())) ||
        box->frameGeometry().height() > screen) {
        out << widgetPath(box) + QStringLiteral(": its Close button is out of reach");
    }
    out << clippedWidgets(const_cast<QDialog*>(box));
    return out;
}

}  // namespace

class TestReadable : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void initTestCase() { ensemble::test::isolateSettings(); }
    void twoDimensionalRun();
    void imageRun();
    void regressionRun();
    void presetsOneAfterAnother();
    void theKeyListFitsASmallScreen();
    void theCheckSeesClippedText();

  private:
    // Brings every view that applies to the front in turn and checks the whole window
    // (`expectedViews` of them; any number when negative).
    void checkEveryView(MainWindow& w, int expectedViews);
    QString m_shotTag;  // added to the pictures' names (READABLE_SHOTS)
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
            shot.save(QStringLiteral("%1/%2%3-%4.png")
                          .arg(QString::fromLocal8Bit(folder), QTest::currentTestFunction(),
                               m_shotTag, name));
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
    if (expectedViews >= 0) {
        QCOMPARE(shown, expectedViews);
    }
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
    // The Shift view measured: its charts' titles and its level's read-out.
    QVERIFY(measureShift(*w));
    // The Reproduce view with a table: the cheapest row, one seed.
    QVERIFY(reproduceFigureOne(*w));
    // Boundary, Members, Curves, Calibration, Sweep, Shift, Active learning, Methods, Runs,
    // Reproduce.
    checkEveryView(*w, 10);
    // Wider, where the charts stand side by side and the test accuracy was cut at 1,100 px;
    // and at 1,280 px, the README's pictures' size (the Shift view three charts a row).
    for (const QSize size : {QSize(1100, 650), QSize(1280, 820)}) {
        w->resize(size);
        settle();
        QCOMPARE(w->size(), size);
        checkEveryView(*w, 10);
    }
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
    // A short run takes a curve point at every step (at least 30 a run), each through the 1,200
    // test images: 5 steps, not 20, for a quarter of that.
    c["training"]["steps"] = 5;
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
    QVERIFY(measureShift(*w));
    // The confusion matrix counts run to four digits (1200 test images).
    // Members, Curves, Calibration, Sweep, Images, Filters, Shift, Active learning, Methods,
    // Runs, Reproduce.
    checkEveryView(*w, 11);
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
    QVERIFY(measureShift(*w));
    // Members, Curves, Calibration, Sweep, Regression, Shift, Runs, Reproduce.
    checkEveryView(*w, 8);
}

// The presets one after another in one window, each checked: what one preset leaves behind
// (the panel's width after mnist-cnn's layer rows, once) must not cramp the next; back at the
// first, the panel can be as narrow as it was.
void TestReadable::presetsOneAfterAnother() {
    // mnist-cnn on tiny MNIST-format files (the real ones take a minute to load). 300 test
    // images: the recipe's first measurement passes them through four members several times,
    // minutes under ASan at 2,000; imageRun checks the four-digit counts.
    QTemporaryDir dir;
    QVERIFY(ensemble::test::writeIdx(dir.path(), "train-images-idx3-ubyte",
                                     "train-labels-idx1-ubyte", 200, 1));
    QVERIFY(ensemble::test::writeIdx(dir.path(), "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte",
                                     300, 2));
    auto w = makeWindow(kReadmeSize);
    QMap<QString, int> panelWidth;
    QMap<QString, int> dockWidth;  // the dock goes back once the rows need less
    for (const char* name : {"spirals", "mnist-cnn", "moons", "cubic", "spirals"}) {
        const QString preset = QLatin1String(name);
        json c = json::parse(ensemble::presetText(name));
        if (c["dataset"]["kind"] == "mnist") {
            c["dataset"]["path"] = dir.path().toStdString();
        }
        // As the preset box loads it (RunSession's presetChosen).
        w->loadExperiment(c, preset);
        QCOMPARE(w->panel()->presetName(), preset);
        // mnist-cnn's first measurement takes tens of seconds under ASan beside another suite.
        QVERIFY2(waitFresh(*w, ensemble::test::progressWaitMs(30000)), name);
        settle();
        QCOMPARE(w->size(), kReadmeSize);
        qInfo().noquote() << preset;
        m_shotTag = QLatin1Char('-') + preset;
        checkEveryView(*w, -1);
        const QStringList panel = clippedWidgets(w->panel());
        for (const QString& p : panel) {
            qWarning().noquote() << preset + QStringLiteral(": ") + p;
        }
        QVERIFY(panel.isEmpty());
        const int width = w->panel()->minimumSizeHint().width();
        if (panelWidth.contains(preset)) {
            QVERIFY2(width <= panelWidth.value(preset),
                     qPrintable(QStringLiteral("%1 again: the panel at least %2 px wide, first %3")
                                    .arg(preset)
                                    .arg(width)
                                    .arg(panelWidth.value(preset))));
        }
        panelWidth.insert(preset, width);
        const int docked = w->panel()->width();
        if (dockWidth.contains(preset)) {
            QVERIFY2(docked <= dockWidth.value(preset),
                     qPrintable(QStringLiteral("%1 again: the dock %2 px wide, first %3")
                                    .arg(preset)
                                    .arg(docked)
                                    .arg(dockWidth.value(preset))));
        }
        dockWidth.insert(preset, docked);
    }
}

// F1 opens the key list, which fits an 800-px screen: its text scrolls, Close shows.
void TestReadable::theKeyListFitsASmallScreen() {
    auto w = makeWindow(kReadmeSize);
    w->activateWindow();
    QVERIFY(QTest::qWaitForWindowActive(w.get()));
    QTest::keyClick(w.get(), Qt::Key_F1);
    QDialog* box = nullptr;
    QVERIFY(QTest::qWaitFor([&] {
        box = w->findChild<QDialog*>(QStringLiteral("ShortcutsBox"));
        return box != nullptr && box->isVisible();
    }));
    settle();
    const int screen = std::min(800, box->screen()->availableGeometry().height());
    QVERIFY(box->frameGeometry().height() <= screen);
    const QStringList problems = helpDialogProblems(box, screen);
    for (const QString& p : problems) {
        qWarning().noquote() << p;
    }
    QVERIFY(problems.isEmpty());
    box->close();
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
    // Elided with the full text in the tooltip is readable, for a caption...
    const QString caption = QStringLiteral("the members' votes under each image");
    label->setText(label->fontMetrics().elidedText(caption, Qt::ElideRight, 55));
    label->setToolTip(caption);
    QCOMPARE(clippedWidgets(&root).size(), 1);
    // ...but not for a read-out of values: figures cut off (the Shift view's level read-out)...
    const QString readout = QStringLiteral("rotate 90 degrees, ensemble: accuracy 0.25, NLL 1.9");
    label->setText(label->fontMetrics().elidedText(readout, Qt::ElideRight, 55));
    label->setToolTip(readout);
    QCOMPARE(clippedWidgets(&root).size(), 2);
    QVERIFY(clippedWidgets(&root).join(QLatin1Char('\n')).contains(QStringLiteral("read-out")));
    // ...or a label marked as one.
    label->setText(label->fontMetrics().elidedText(caption, Qt::ElideRight, 55));
    label->setToolTip(caption);
    ensemble::ui::markReadout(label);
    QCOMPARE(clippedWidgets(&root).size(), 2);
    label->setProperty(ensemble::ui::kReadoutProperty, false);

    // A pane that scrolls, too short for the line under its first row of tiles.
    {
        QWidget view;
        auto* area = new QScrollArea(&view);
        area->setWidgetResizable(true);
        auto* tiles = new QWidget;
        tiles->setMinimumHeight(300);
        area->setWidget(tiles);
        area->setGeometry(0, 0, 200, 60);
        view.resize(200, 60);
        view.show();
        QVERIFY(QTest::qWaitForWindowExposed(&view));
        const QRect shown = shownByInnerScrollArea(tiles, &view);
        QCOMPARE(shown.height(), area->viewport()->height());
        QStringList out;
        checkScrolledText(tiles, shown, {{QRectF(4, 70, 60, 14), QStringLiteral("7")}}, out);
        QCOMPARE(out.size(), 1);
        out.clear();
        checkScrolledText(tiles, shown,
                          {{QRectF(4, 20, 60, 14), QStringLiteral("7")},
                           {QRectF(4, 50, 60, 14), QStringLiteral("1")}},
                          out);
        QVERIFY(out.isEmpty());  // the row below a whole one is what scrolling is for
    }

    // A help dialog taller than the screen, its text in a label: too tall, no Close.
    {
        QDialog tall;
        tall.setObjectName(QStringLiteral("Tall"));
        auto* layout = new QVBoxLayout(&tall);
        layout->addWidget(new QLabel(QStringLiteral("F1\n").repeated(80)));
        tall.resize(300, 1100);
        tall.show();
        QVERIFY(helpDialogProblems(&tall, 800).size() >= 2);
    }

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
        // A label given a cell below the device's edge, and one past the painter's clip.
        ensemble::ui::drawTextFitted(p, QRectF(0, 32, 100, 20), Qt::AlignCenter,
                                     QStringLiteral("7"));
        p.setClipRect(QRectF(50, 0, 40, 20));
        ensemble::ui::drawTextFitted(p, QPointF(70, 15), QStringLiteral("title"));
    }
    const auto problems = TextFitLog::take();
    TextFitLog::setRecording(false);
    QCOMPARE(problems.size(), std::size_t{4});
    QCOMPARE(problems[0].text, QStringLiteral("test accuracy 0.9875"));
    QCOMPARE(problems[1].text, QStringLiteral("past the edge"));
    QCOMPARE(problems[2].text, QStringLiteral("7"));
    QCOMPARE(problems[3].text, QStringLiteral("title"));
}

QTEST_MAIN(TestReadable)
#include "tst_readable.moc"

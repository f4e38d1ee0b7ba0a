// The view table: one row per view, keys and shortcuts unique, today's documented Ctrl+1 …
// Ctrl+8 kept, and the tabs, the View menu and --view's help all built from it.
#include <QAction>
#include <QKeySequence>
#include <QMenu>
#include <QSet>
#include <QtTest>

#include "view_table.h"
#include "view_tabs.h"

using ensemble::ui::kViewCount;
using ensemble::ui::ViewId;
using ensemble::ui::ViewRow;
using ensemble::ui::viewTable;

class TestViewTable : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void rowsAreUniqueAndAddressedById();
    void todaysShortcutsAreKept();
    void tabsMenuAndHelpReadTheTable();
};

void TestViewTable::rowsAreUniqueAndAddressedById() {
    QSet<QString> keys;
    QSet<QString> shortcuts;
    for (const ViewRow& row : viewTable()) {
        QCOMPARE(&ensemble::ui::viewRow(row.id), &row);
        const QString key = QLatin1String(row.key);
        QVERIFY2(!keys.contains(key), row.key);
        keys << key;
        const QString sequence = QKeySequence(row.shortcut).toString(QKeySequence::PortableText);
        QVERIFY2(!shortcuts.contains(sequence), row.key);
        shortcuts << sequence;
        QCOMPARE(ensemble::ui::viewByKey(key.toUpper()), std::optional<ViewId>(row.id));
        QVERIFY(!ensemble::ui::viewHelp(row.id).isEmpty());
    }
    QCOMPARE(keys.size(), kViewCount);
    QVERIFY(!ensemble::ui::viewByKey(QStringLiteral("nope")).has_value());
}

// README's key table documents Ctrl+1 … Ctrl+8 in this order.
void TestViewTable::todaysShortcutsAreKept() {
    const char* order[] = {"boundary", "members", "curves",  "calibration",
                           "sweep",    "images",  "filters", "regression"};
    for (int i = 0; i < 8; ++i) {
        const ViewId id = *ensemble::ui::viewByKey(QLatin1String(order[i]));
        QCOMPARE(QKeySequence(ensemble::ui::viewRow(id).shortcut),
                 QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
    }
}

void TestViewTable::tabsMenuAndHelpReadTheTable() {
    ensemble::ui::ViewTabs tabs;
    QCOMPARE(tabs.count(), kViewCount);
    QMenu menu;
    tabs.addViewActions(&menu);
    QCOMPARE(menu.actions().size(), kViewCount);
    const QString help = ensemble::ui::viewOptionHelp();
    for (const ViewRow& row : viewTable()) {
        QVERIFY(tabs.view(row.id) != nullptr);
        QVERIFY(help.contains(QLatin1String(row.key)));
        QAction* a = menu.actions().at(static_cast<int>(row.id));
        QCOMPARE(a->text(), ensemble::ui::viewTitle(row.id));
        QCOMPARE(a->shortcut(), QKeySequence(row.shortcut));
        QVERIFY(a->toolTip().contains(ensemble::ui::viewHelp(row.id)));
    }
    // Before any run: the views for any data and the Boundary (the app starts on a 2-D preset).
    QVERIFY(tabs.setView(ViewId::Calibration));
    QCOMPARE(tabs.currentViewId(), ViewId::Calibration);
    QVERIFY(!tabs.setView(ViewId::Images));
    QCOMPARE(tabs.currentViewId(), ViewId::Calibration);
}

QTEST_MAIN(TestViewTable)
#include "tst_view_table.moc"

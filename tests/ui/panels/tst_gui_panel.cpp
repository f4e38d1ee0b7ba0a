// The Experiment panel's rows against the schema: a row can be edited exactly when its key
// applies (the schema's condition, or the form's own for keys the schema leaves open), the
// form's own conditions name real choices, and every dataset kind is one the panel can place.
#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QScrollArea>
#include <QtTest>

#include <algorithm>
#include <string>

#include "config/config.h"
#include "config/config_schema.h"
#include "panels/experiment_panel.h"
#include "panels/panel_kinds.h"

using ensemble::Choice;
using ensemble::Condition;
using ensemble::configSchema;
using ensemble::KeySpec;
using ensemble::keySpec;
using ensemble::KeyType;
using ensemble::ui::ExperimentPanel;
using nlohmann::json;

namespace {

QString qstr(const std::string& s) {
    return QString::fromStdString(s);
}

bool editable(ExperimentPanel& panel, QWidget* editor) {
    return editor->isEnabled() && editor->isVisibleTo(&panel);
}

const Condition& conditionOf(const KeySpec& spec) {
    return spec.when.always() ? ensemble::ui::formCondition(spec.key) : spec.when;
}

}  // namespace

class TestGuiPanel : public QObject {
    Q_OBJECT

  private Q_SLOTS:
    void rowsFollowTheirConditions();
    void formConditionsNameSchemaChoices();
    void everyDatasetKindHasOneFamily();
    void anUnusedRowSaysSoInsteadOfAValue();
    void thePanelNarrowsAgainAfterACnn();
    void aValueThatCannotTrainWarnsBesideItsField();
};

void TestGuiPanel::rowsFollowTheirConditions() {
    ExperimentPanel panel;
    auto* kind = panel.findChild<QComboBox*>(QStringLiteral("dataset.kind"));
    QVERIFY(kind != nullptr);
    int conditional = 0;
    for (const KeySpec& spec : configSchema()) {
        QWidget* editor = panel.editor(qstr(spec.key));
        if (editor == nullptr) {
            continue;  // a key the form does not show
        }
        panel.setConfig(ensemble::defaultConfigJson());
        const Condition& when = conditionOf(spec);
        if (when.always()) {
            QVERIFY2(editable(panel, editor), spec.key.c_str());
            continue;
        }
        ++conditional;
        auto* decider = panel.findChild<QComboBox*>(qstr(when.key));
        QVERIFY2(decider != nullptr, when.key.c_str());
        // Under every dataset kind, so that chains (dataset.target <- dataset.task <-
        // dataset.kind) are reached, every value of the decider, chosen as a person would.
        for (int k = 0; k < kind->count(); ++k) {
            kind->setCurrentIndex(k);
            for (int i = 0; i < decider->count(); ++i) {
                decider->setCurrentIndex(i);
                const json config = panel.config();
                const std::string value = decider->currentData().toString().toStdString();
                const bool applies =
                    ensemble::keyApplies(keySpec(when.key), config) &&
                    std::find(when.values.begin(), when.values.end(), value) != when.values.end();
                const QByteArray where = QStringLiteral("%1 with %2 = %3, dataset.kind = %4")
                                             .arg(qstr(spec.key), qstr(when.key), qstr(value),
                                                  kind->currentData().toString())
                                             .toUtf8();
                QVERIFY2(editable(panel, editor) == applies, where.constData());
                // Not applying, the row shows "not used" and why, never a value.
                auto* unused = panel.findChild<QLabel*>(qstr(spec.key + ".unused"));
                // (A row another row replaces is hidden whole: nothing to say there.)
                if (unused != nullptr && unused->parentWidget()->isVisibleTo(&panel)) {
                    QVERIFY2(unused->isVisibleTo(&panel) == !applies, where.constData());
                    QVERIFY2(applies || unused->toolTip().contains(qstr(when.key)),
                             qPrintable(unused->toolTip()));
                }
                if (!spec.when.always()) {
                    // The engine agrees: the form's config keeps the key exactly then.
                    QVERIFY2(config[spec.section()].contains(spec.name()) == applies,
                             where.constData());
                }
            }
        }
    }
    QVERIFY(conditional >= 10);
}

void TestGuiPanel::formConditionsNameSchemaChoices() {
    for (const KeySpec& spec : configSchema()) {
        const Condition& own = ensemble::ui::formCondition(spec.key);
        if (own.always()) {
            continue;
        }
        // One condition per key: where the schema has one, the form adds none.
        QVERIFY2(spec.when.always(), spec.key.c_str());
        const KeySpec& decider = keySpec(own.key);
        QVERIFY2(decider.type == KeyType::Choice, spec.key.c_str());
        // Some kinds read the key and some do not (else it needs no condition).
        QVERIFY2(!own.values.empty() && own.values.size() < decider.choices.size(),
                 spec.key.c_str());
        for (const std::string& v : own.values) {
            QVERIFY2(std::any_of(decider.choices.begin(), decider.choices.end(),
                                 [&](const Choice& c) { return v == c.name; }),
                     (spec.key + ": " + v).c_str());
        }
    }
}

void TestGuiPanel::everyDatasetKindHasOneFamily() {
    // A dataset kind the panel cannot place (generated, a CSV file, images, a shipped table)
    // would get the wrong rows: a new kind needs its answer in panel_kinds.cpp.
    for (const Choice& c : keySpec("dataset.kind").choices) {
        const int families = int{ensemble::ui::isGeneratedDataset(c.name)} +
                             int{ensemble::ui::isCsvDataset(c.name)} +
                             int{ensemble::ui::isImageDataset(c.name)} +
                             int{ensemble::ui::isShippedDataset(c.name)};
        QVERIFY2(families == 1, c.name);
    }
    for (const bool regression : {false, true}) {
        QCOMPARE(ensemble::ui::isRegressionLikelihood(ensemble::ui::defaultLikelihood(regression)),
                 regression);
    }
}

void TestGuiPanel::anUnusedRowSaysSoInsteadOfAValue() {
    // The walkthrough's cases: Task for the cubic regression, Classes for MNIST, Points and
    // Features for a CSV file showed values (greyed) that nothing used.
    ExperimentPanel panel;
    const auto unusedSays = [&panel](const char* key) {
        auto* unused =
            panel.findChild<QLabel*>(QString::fromLatin1(key) + QStringLiteral(".unused"));
        QWidget* editor = panel.editor(QString::fromLatin1(key));
        return unused != nullptr && editor != nullptr && unused->isVisibleTo(&panel) &&
                       !editor->isVisibleTo(&panel)
                   ? unused->text() + QStringLiteral(" | ") + unused->toolTip()
                   : QString();
    };
    panel.setConfig(json::parse(ensemble::presetText("cubic")));
    QString said = unusedSays("dataset.task");
    QVERIFY2(said.startsWith(QStringLiteral("not used")) &&
                 said.contains(QStringLiteral("only when dataset.kind is csv")) &&
                 said.contains(QStringLiteral("it is cubic")),
             qPrintable(said));
    panel.setConfig(json::parse(ensemble::presetText("mnist-mlp")));
    said = unusedSays("dataset.classes");
    QVERIFY2(said.contains(QStringLiteral("it is mnist")), qPrintable(said));
    json csv = ensemble::defaultConfigJson();
    csv["dataset"] = {{"kind", "csv"}, {"path", "points.csv"}};
    panel.setConfig(csv);
    QVERIFY2(!unusedSays("dataset.n").isEmpty(), "dataset.n");
    QVERIFY2(!unusedSays("dataset.features").isEmpty(), "dataset.features");
    // Applying again, the editor is back with the value it kept.
    panel.setConfig(json::parse(ensemble::presetText("spirals")));
    QVERIFY(unusedSays("dataset.n").isEmpty());
    QVERIFY(panel.editor(QStringLiteral("dataset.n"))->isVisibleTo(&panel));
}

void TestGuiPanel::thePanelNarrowsAgainAfterACnn() {
    // mnist-cnn's layer rows widen the panel; a preset without them lets it narrow again (it
    // stayed about 470 px wide, not draggable narrower, leaving the views 400 px at 900 x 600).
    ExperimentPanel panel;
    panel.resize(300, 700);
    panel.show();
    auto* scroll = panel.findChild<QScrollArea*>();
    QVERIFY(scroll != nullptr);
    panel.setConfig(json::parse(ensemble::presetText("spirals")));
    QCoreApplication::processEvents();
    const int mlp = scroll->minimumWidth();
    panel.setConfig(json::parse(ensemble::presetText("mnist-cnn")));
    QCoreApplication::processEvents();
    const int cnn = scroll->minimumWidth();
    // The layer rows fit the MLP panel's width since their add buttons went three a row; what
    // matters is that nothing they leave behind keeps the panel wider.
    QVERIFY2(cnn >= mlp, qPrintable(QStringLiteral("%1 vs %2").arg(cnn).arg(mlp)));
    panel.setConfig(json::parse(ensemble::presetText("spirals")));
    QCoreApplication::processEvents();
    QCOMPARE(scroll->minimumWidth(), mlp);
}

// The engine's configWarnings, as ensemble-cli prints them, beside the field: amber, the form
// still valid (Train stays enabled); a schedule entry's value, which no field shows, under the
// summary; a fixed value clears both.
void TestGuiPanel::aValueThatCannotTrainWarnsBesideItsField() {
    ExperimentPanel panel;
    panel.show();
    json config = ensemble::defaultConfigJson();
    config["optimizer"]["lr"] = 0;
    panel.setConfig(config);
    QVERIFY(panel.isValid());
    QLabel* shown = panel.errorLabel(QStringLiteral("optimizer.lr"));
    QVERIFY(shown != nullptr);
    const std::string expected = ensemble::configWarnings(config).at(0).message;
    QCOMPARE(panel.warnings().value(QStringLiteral("optimizer.lr")), qstr(expected));
    QVERIFY(shown->isVisibleTo(&panel));
    QCOMPARE(shown->text(), QStringLiteral("Warning: ") + qstr(expected));
    QVERIFY(shown->property("warning").toBool());
    auto* value = panel.findChild<QWidget*>(QStringLiteral("learningRateValue"));
    QVERIFY(value != nullptr);
    QVERIFY(value->property("warning").toBool());
    QVERIFY(!value->property("invalid").toBool());

    // One member's value: the field names the member as the CLI does.
    config["ensemble"]["members"] = 3;
    config["optimizer"]["lr"] = json::array({0.1, 0.0, 0.1});
    panel.setConfig(config);
    QVERIFY(panel.isValid());
    QVERIFY2(panel.warnings()
                 .value(QStringLiteral("optimizer.lr"))
                 .startsWith(QStringLiteral("optimizer.lr[1]: 0 cannot train")),
             qPrintable(panel.warnings().value(QStringLiteral("optimizer.lr"))));

    // A schedule entry's value has no field: the panel says it under the summary.
    config["optimizer"]["lr"] = 0.01;
    config["training"]["schedule"] = json::array({{{"step", 5}, {"set", {{"optimizer.lr", 0}}}}});
    panel.setConfig(config);
    QVERIFY(panel.warnings().isEmpty());
    auto* fieldless = panel.findChild<QLabel*>(QStringLiteral("panel.warnings"));
    QVERIFY(fieldless != nullptr && fieldless->isVisibleTo(&panel));
    QVERIFY2(fieldless->text().contains(
                 QStringLiteral("training.schedule[0].set.optimizer.lr: 0 cannot train")),
             qPrintable(fieldless->text()));
    QVERIFY(!shown->isVisibleTo(&panel));

    config["training"]["schedule"] = json::array();
    panel.setConfig(config);
    QVERIFY(!fieldless->isVisibleTo(&panel));
    QVERIFY(!value->property("warning").toBool());
}

QTEST_MAIN(TestGuiPanel)
#include "tst_gui_panel.moc"

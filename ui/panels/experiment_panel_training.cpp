// The Ensemble, Optimizer and Backend sections of the Experiment panel: the members, how they
// learn (the per-member learning rate in its three forms, when to stop) and where they run.

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStandardItemModel>

#include <algorithm>

#include "panels/experiment_panel.h"
#include "panels/form_binding.h"
#include "registry/registry.h"

namespace ensemble::ui {

namespace {

using nlohmann::json;

QComboBox* modeCombo(const QList<QPair<QString, QString>>& items) {
    auto* box = new QComboBox;
    for (const auto& [text, data] : items) {
        box->addItem(text, data);
    }
    return box;
}

}  // namespace

void ExperimentPanel::buildEnsembleSection(QFormLayout* ens) {
    QSpinBox* members = m_form->addSpin(ens, "ensemble.members", tr("Members K"));
    m_form->row(QStringLiteral("ensemble.members"))->store = [members](json& c) {
        json& e = c["ensemble"];
        e["members"] = members->value();
        if (e.contains("switched_off") && e["switched_off"].is_array()) {
            // The switches have no field here (Members holds them): members beyond a smaller
            // K are gone, so their switches go too rather than making the experiment invalid.
            json kept = json::array();
            for (const json& m : e["switched_off"]) {
                if (!m.is_number_integer() || m.get<int64_t>() < members->value()) {
                    kept.push_back(m);
                }
            }
            e["switched_off"] = kept;
        }
    };
    m_form->addChoice(ens, "ensemble.method", tr("Method"));
    m_form->addDoubleSpin(ens, "model.dropout", tr("Dropout rate"), 0.05, 3);
    m_form->addChoice(ens, "ensemble.bootstrap", tr("Data per member"));
    m_form->addSpin(ens, "ensemble.seed", tr("Seed"));
}

void ExperimentPanel::buildOptimizerSection(QFormLayout* opt) {
    m_form->addChoice(opt, "optimizer.kind", tr("Kind"));

    // The learning rate: one value, a log range over the members, or a list of K.
    auto* lrRow = new QWidget;
    auto* lrLayout = new QHBoxLayout(lrRow);
    lrLayout->setContentsMargins(0, 0, 0, 0);
    auto* mode = modeCombo({{tr("value"), QStringLiteral("value")},
                            {tr("log range"), QStringLiteral("log")},
                            {tr("list"), QStringLiteral("list")}});
    auto* stack = new QStackedWidget;
    auto* value = new QLineEdit;
    value->setObjectName(QStringLiteral("learningRateValue"));
    auto* range = new QWidget;
    auto* rangeLayout = new QHBoxLayout(range);
    rangeLayout->setContentsMargins(0, 0, 0, 0);
    auto* low = new QLineEdit;
    auto* high = new QLineEdit;
    rangeLayout->addWidget(low);
    rangeLayout->addWidget(new QLabel(QStringLiteral("–")));
    rangeLayout->addWidget(high);
    auto* list = new QLineEdit;
    list->setPlaceholderText(tr("one per member"));
    stack->addWidget(value);
    stack->addWidget(range);
    stack->addWidget(list);
    lrLayout->addWidget(mode);
    lrLayout->addWidget(stack, 1);
    FormRow& lr = m_form->addRow(opt, QStringLiteral("optimizer.lr"), tr("Learning rate"), lrRow);
    lr.marked = {value, low, high, list};
    lr.load = [mode, value, low, high, list](const json& c) {
        const json& v = *valueOrDefault(c, keySpec("optimizer.lr"));
        if (v.is_object() && v.contains("log_uniform") && v["log_uniform"].is_array() &&
            v["log_uniform"].size() == 2) {
            setCombo(mode, QStringLiteral("log"));
            low->setText(numbersText(v["log_uniform"][0]));
            high->setText(numbersText(v["log_uniform"][1]));
            value->setText(numbersText(v["log_uniform"][0]));
        } else if (v.is_array()) {
            setCombo(mode, QStringLiteral("list"));
            list->setText(numbersText(v));
        } else {
            setCombo(mode, QStringLiteral("value"));
            const double x = valueOf(c, "optimizer.lr").get<double>();
            value->setText(formatNumber(x));
            // A decade each side: round numbers a field shows whole (x / 3 read "0666667").
            low->setText(formatNumber(x / 10.0));
            high->setText(formatNumber(x * 10.0));
        }
    };
    lr.store = [mode, value, low, high, list](json& c) {
        const QString m = currentName(mode);
        if (m == QStringLiteral("log")) {
            json lo;
            json hi;
            QString error;
            const bool ok =
                parseNumbers(low->text(), lo, error) && parseNumbers(high->text(), hi, error);
            c["optimizer"]["lr"] = json{{"log_uniform",
                                         {ok ? lo : json(low->text().toStdString()),
                                          ok ? hi : json(high->text().toStdString())}}};
        } else {
            c["optimizer"]["lr"] =
                numbersOrText((m == QStringLiteral("list") ? list : value)->text());
        }
    };
    lr.check = [mode, value, low, high, list] {
        if (currentName(mode) == QStringLiteral("log")) {
            // The upper end's reason wins when both are wrong.
            const QString highError = numbersError(high->text());
            return highError.isEmpty() ? numbersError(low->text()) : highError;
        }
        return numbersError((currentName(mode) == QStringLiteral("list") ? list : value)->text());
    };
    lr.refresh = [mode, stack](const json&) { stack->setCurrentIndex(mode->currentIndex()); };
    m_form->watch(mode);
    for (QLineEdit* e : {value, low, high, list}) {
        m_form->watch(e);
    }

    m_form->addNumbers(opt, "optimizer.momentum", tr("Momentum"));
    m_form->addNumbers(opt, "optimizer.weight_decay", tr("Weight decay"));
    m_form->addSpin(opt, "training.batch_size", tr("Batch size"));

    // Stop after: steps or epochs, one row for both keys. "until paused" is the app's run
    // control, not a config value: the config keeps the steps or epochs last chosen, and a
    // saved experiment the steps actually trained.
    auto* stopRow = new QWidget;
    auto* stopLayout = new QHBoxLayout(stopRow);
    stopLayout->setContentsMargins(0, 0, 0, 0);
    m_stopMode = modeCombo({{tr("steps"), QStringLiteral("steps")},
                            {tr("epochs"), QStringLiteral("epochs")},
                            {tr("until paused"), QStringLiteral("paused")}});
    m_steps = schemaSpinBox("training.steps", 100);
    m_steps->setObjectName(QStringLiteral("stopAfterSteps"));
    m_epochs = schemaDoubleSpinBox("training.epochs", 1.0, 2);
    stopLayout->addWidget(m_steps, 1);
    stopLayout->addWidget(m_epochs, 1);
    stopLayout->addWidget(m_stopMode);
    FormRow& stop =
        m_form->addRow(opt, QStringLiteral("training.steps"), tr("Stop after"), stopRow);
    stop.otherKeys = {QStringLiteral("training.epochs")};
    stop.marked = {m_steps, m_epochs};
    stop.load = [this](const json& c) {
        m_steps->setValue(intOf(c, "training.steps"));
        m_blockSteps = std::max(1, m_steps->value());
        const double epochs = valueOf(c, "training.epochs").get<double>();
        m_blockEpochs = epochs > 0 ? epochs : 1.0;
        m_epochs->setValue(epochs > 0 ? epochs : 1.0);
        setCombo(m_stopMode, epochs > 0 ? QStringLiteral("epochs") : QStringLiteral("steps"));
    };
    stop.store = [this](json& c) {
        json& t = c["training"];
        if (m_finiteStopMode == QStringLiteral("epochs")) {
            t["epochs"] = m_epochs->value();
        } else {
            t["steps"] = m_steps->value();
            t["epochs"] = 0;
        }
    };
    stop.refresh = [this](const json&) {
        const QString stopMode = currentName(m_stopMode);
        if (stopMode != QStringLiteral("paused")) {
            m_finiteStopMode = stopMode;
        }
        m_steps->setVisible(stopMode == QStringLiteral("steps"));
        m_epochs->setVisible(stopMode == QStringLiteral("epochs"));
    };
    m_form->watch(m_steps);
    m_form->watch(m_epochs);
    m_form->watch(m_stopMode);

    // The paper's adversarial training (0: off), in standardised input units.
    QDoubleSpinBox* eps =
        m_form->addDoubleSpin(opt, "training.adversarial_eps", tr("Adversarial ε"), 0.01, 4);
    eps->setSpecialValueText(tr("off"));
    // 0 as the schema's default writes it (an integer), so an untouched config is unchanged.
    m_form->row(QStringLiteral("training.adversarial_eps"))->store = [eps](json& c) {
        c["training"]["adversarial_eps"] = eps->value() > 0.0 ? json(eps->value()) : json(0);
    };
}

void ExperimentPanel::buildBackendSection(QFormLayout* be) {
    m_backend = m_form->addChoice(be, "backend.kind", tr("Device"));
    QSpinBox* threads = m_form->addSpin(be, "backend.threads", tr("CPU threads"));
    threads->setSpecialValueText(tr("all cores"));
    m_form->addSpin(be, "backend.device", tr("CUDA device"));
    // Shown for auto and cuda only (panel_kinds.cpp): the CPU computes in FP32.
    m_form->addChoice(be, "backend.math", tr("GPU math"));
    // CUDA stays listed where it cannot run, saying why.
    std::string reason;
    const int cuda = m_backend->findData(QString::fromUtf8(toString(BackendKind::Cuda)));
    auto* items = qobject_cast<QStandardItemModel*>(m_backend->model());
    if (cuda >= 0 && items != nullptr && !cudaAvailable(0, reason)) {
        const QString why = tr("Unavailable: %1").arg(QString::fromStdString(reason));
        QStandardItem* item = items->item(cuda);
        item->setEnabled(false);
        item->setToolTip(why);
        item->setText(tr("CUDA (unavailable)"));
        m_backend->setItemData(cuda, why, Qt::ToolTipRole);
    }
}

}  // namespace ensemble::ui

#include "panels/experiment_panel.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFileDialog>
#include <QFileInfo>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QScrollArea>
#include <QScrollBar>
#include <QSettings>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStandardItemModel>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/registry.h"
#include "core/errors.h"
#include "data/dataset.h"
#include "data_kinds.h"
#include "io/config.h"
#include "panels/field_input.h"
#include "panels/layer_list_editor.h"

namespace ensemble::ui {

namespace {

using nlohmann::json;

QString str(const std::string& s) {
    return QString::fromStdString(s);
}

QString formatNumber(double v) {
    return QString::number(v, 'g', 6);
}

// "0.1" -> 0.1; "0.1, 0.2" -> [0.1, 0.2]. Empty optional and `error` set when not numbers.
bool parseNumbers(const QString& text, json& out, QString& error) {
    const QStringList parts =
        text.split(QRegularExpression(QStringLiteral("[,;\\s]+")), Qt::SkipEmptyParts);
    if (parts.isEmpty()) {
        error = QStringLiteral("expected a number");
        return false;
    }
    json list = json::array();
    for (const QString& p : parts) {
        bool ok = false;
        const double v = p.toDouble(&ok);
        if (!ok || !std::isfinite(v)) {
            error = QStringLiteral("\"%1\" is not a number").arg(p);
            return false;
        }
        list.push_back(v);
    }
    out = list.size() == 1 ? list[0] : list;
    return true;
}

QString numbersText(const json& v) {
    if (v.is_number()) {
        return formatNumber(v.get<double>());
    }
    QStringList parts;
    if (v.is_array()) {
        for (const auto& x : v) {
            parts << (x.is_number() ? formatNumber(x.get<double>()) : str(x.dump()));
        }
    }
    return parts.join(QStringLiteral(", "));
}

void setCombo(QComboBox* box, const QString& data) {
    const int i = box->findData(data);
    if (i >= 0) {
        box->setCurrentIndex(i);
    }
}

// A key's value in `c`, or its schema default when absent or of the wrong type (a hand-edited
// file): the form shows something sensible and the parser names the problem.
const json& valueOf(const json& c, const char* key) {
    const KeySpec& spec = keySpec(key);
    const json& v = *valueOrDefault(c, spec);
    return v.type() == spec.defaultValue.type() || (v.is_number() && spec.defaultValue.is_number())
               ? v
               : spec.defaultValue;
}

int intOf(const json& c, const char* key) {
    const json& v = valueOf(c, key);
    if (v.is_number_integer()) {
        const int64_t x = v.get<int64_t>();
        return static_cast<int>(std::clamp<int64_t>(x, std::numeric_limits<int>::min(),
                                                    std::numeric_limits<int>::max()));
    }
    return static_cast<int>(v.get<double>());
}

double doubleOf(const json& c, const char* key) {
    return valueOf(c, key).get<double>();
}

QString textOf(const json& c, const char* key) {
    return str(valueOf(c, key).get<std::string>());
}

int clampToInt(double v) {
    return static_cast<int>(
        std::clamp<double>(v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

// Editors whose ranges come from the key's schema row.
QSpinBox* spinFor(const char* key, int step = 1) {
    const KeySpec& spec = keySpec(key);
    auto* s = new QSpinBox;
    if (spec.type == KeyType::Seed) {
        s->setRange(0, std::numeric_limits<int>::max());
    } else {
        s->setRange(clampToInt(spec.min), clampToInt(spec.max));
    }
    s->setSingleStep(step);
    s->setGroupSeparatorShown(true);
    s->setKeyboardTracking(true);
    return s;
}

QDoubleSpinBox* doubleSpinFor(const char* key, double step, int decimals) {
    const KeySpec& spec = keySpec(key);
    auto* s = new QDoubleSpinBox;
    s->setRange(spec.min, spec.max);
    s->setSingleStep(step);
    s->setDecimals(decimals);
    return s;
}

QComboBox* comboFor(const char* key) {
    auto* box = new QComboBox;
    for (const Choice& c : keySpec(key).choices) {
        box->addItem(QString::fromUtf8(c.label), QString::fromUtf8(c.name));
    }
    return box;
}

QComboBox* combo(const QList<QPair<QString, QString>>& items) {
    auto* box = new QComboBox;
    for (const auto& [text, data] : items) {
        box->addItem(text, data);
    }
    return box;
}

// Where the form keeps a key's editor: a parent key covers its sub-keys and list items.
bool coversKey(const QString& field, const QString& key) {
    return key == field || key.startsWith(field + QLatin1Char('.')) ||
           key.startsWith(field + QLatin1Char('['));
}

}  // namespace

ExperimentPanel::ExperimentPanel(QWidget* parent) : QWidget(parent) {
    build();
    setConfig(defaultConfigJson());
}

QLabel* ExperimentPanel::addField(QFormLayout* form, const QString& key, const QString& label,
                                  QWidget* editor) {
    // The tooltip is the key's meaning from the schema, the words of docs/configuration.md.
    const KeySpec& spec = keySpec(key.toStdString());
    editor->setToolTip(QStringLiteral("%1 (%2)").arg(str(plainHelp(spec)), key));
    editor->setObjectName(key);
    // The editor and its error share one field cell: the error wraps under the editor at the
    // cell's width and its row grows with it. (A spanning QFormLayout row of its own got a
    // height for the wrong width and was drawn over the next row.)
    auto* cell = new QWidget;
    auto* column = new QVBoxLayout(cell);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(2);
    column->addWidget(editor);
    auto* error = new QLabel;
    error->setObjectName(key + QStringLiteral(".error"));
    error->setWordWrap(true);
    error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Minimum);
    error->setStyleSheet(QStringLiteral("color: #b03a2e; font-size: 11px;"));
    error->setVisible(false);
    column->addWidget(error);
    // The label lines up with the editor, not with the middle of editor and error.
    auto* name = new QLabel(label);
    name->setObjectName(key + QStringLiteral(".label"));
    name->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    name->setMinimumHeight(editor->sizeHint().height());
    form->addRow(name, cell);
    m_editors.insert(key, editor);
    m_errorLabels.insert(key, error);
    return error;
}

void ExperimentPanel::build() {
    auto* outer = new QVBoxLayout(this);
    outer->setContentsMargins(0, 0, 0, 0);

    // Presets, Open, Save.
    auto* top = new QHBoxLayout;
    top->setContentsMargins(8, 8, 8, 4);
    m_preset = new QComboBox;
    m_preset->setToolTip(tr("Built-in experiments (resources/presets)"));
    for (const std::string& name : presetNames()) {
        m_preset->addItem(str(name), str(name));
    }
    m_preset->addItem(tr("Custom"), QString());
    auto* open = new QToolButton;
    open->setIcon(style()->standardIcon(QStyle::SP_DialogOpenButton));
    open->setToolTip(tr("Open an experiment file (Ctrl+O)"));
    auto* save = new QToolButton;
    save->setIcon(style()->standardIcon(QStyle::SP_DialogSaveButton));
    save->setToolTip(tr("Save the experiment as JSON (Ctrl+S)"));
    top->addWidget(new QLabel(tr("Preset")));
    top->addWidget(m_preset, 1);
    top->addWidget(open);
    top->addWidget(save);
    outer->addLayout(top);
    connect(open, &QToolButton::clicked, this, &ExperimentPanel::openRequested);
    connect(save, &QToolButton::clicked, this, &ExperimentPanel::saveRequested);
    connect(m_preset, &QComboBox::activated, this, [this](int index) {
        const QString name = m_preset->itemData(index).toString();
        if (!name.isEmpty()) {
            Q_EMIT presetChosen(name);
        }
    });

    auto* scroll = new QScrollArea;
    m_scroll = scroll;
    scroll->setWidgetResizable(true);
    scroll->setFrameShape(QFrame::NoFrame);
    scroll->setHorizontalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    auto* content = new QWidget;
    m_content = content;
    auto* column = new QVBoxLayout(content);
    column->setContentsMargins(8, 4, 8, 8);
    column->setSpacing(8);
    scroll->setWidget(content);
    outer->addWidget(scroll, 1);

    auto section = [column](const QString& title) {
        auto* box = new QGroupBox(title);
        auto* form = new QFormLayout(box);
        form->setFieldGrowthPolicy(QFormLayout::AllNonFixedFieldsGrow);
        form->setLabelAlignment(Qt::AlignRight | Qt::AlignTop);
        form->setVerticalSpacing(4);
        column->addWidget(box);
        return form;
    };

    // Dataset.
    QFormLayout* data = section(tr("Dataset"));
    m_kind = comboFor("dataset.kind");
    addField(data, QStringLiteral("dataset.kind"), tr("Kind"), m_kind);
    buildTaskFields(data);
    m_n = spinFor("dataset.n", 100);
    addField(data, QStringLiteral("dataset.n"), tr("Points"), m_n);
    m_noise = doubleSpinFor("dataset.noise", 0.01, 3);
    addField(data, QStringLiteral("dataset.noise"), tr("Noise"), m_noise);
    m_rotations = doubleSpinFor("dataset.rotations", 0.25, 2);
    addField(data, QStringLiteral("dataset.rotations"), tr("Rotations"), m_rotations);
    m_classes = spinFor("dataset.classes");
    addField(data, QStringLiteral("dataset.classes"), tr("Classes"), m_classes);
    m_testFraction = doubleSpinFor("dataset.test_fraction", 0.05, 2);
    addField(data, QStringLiteral("dataset.test_fraction"), tr("Test fraction"), m_testFraction);
    m_dataSeed = spinFor("dataset.seed");
    addField(data, QStringLiteral("dataset.seed"), tr("Data seed"), m_dataSeed);
    auto* pathRow = new QWidget;
    auto* pathLayout = new QHBoxLayout(pathRow);
    pathLayout->setContentsMargins(0, 0, 0, 0);
    m_path = new QLineEdit;
    m_path->setPlaceholderText(tr("default folders"));
    m_browse = new QToolButton;
    m_browse->setText(QStringLiteral("…"));
    m_browse->setToolTip(tr("Choose the CSV file or the MNIST folder"));
    pathLayout->addWidget(m_path, 1);
    pathLayout->addWidget(m_browse);
    addField(data, QStringLiteral("dataset.path"), tr("Path"), pathRow);
    m_editors.insert(QStringLiteral("dataset.path"), m_path);
    m_regenerate = new QPushButton(tr("Regenerate"));
    m_regenerate->setToolTip(tr("Draw a new dataset (next data seed) and start over"));
    data->addRow(QString(), m_regenerate);
    connect(m_regenerate, &QPushButton::clicked, this, [this] {
        m_dataSeed->setValue(m_dataSeed->value() + 1);
        Q_EMIT regenerateRequested();
    });
    connect(m_browse, &QToolButton::clicked, this, [this] {
        QSettings settings;
        const QString kind = m_kind->currentData().toString();
        QString chosen;
        if (kind == QStringLiteral("csv")) {
            const QString dir = settings.value(QStringLiteral("data/csvFolder")).toString();
            chosen = QFileDialog::getOpenFileName(this, tr("CSV dataset"), dir,
                                                  tr("CSV files (*.csv);;All files (*)"));
            if (!chosen.isEmpty()) {
                settings.setValue(QStringLiteral("data/csvFolder"), QFileInfo(chosen).path());
            }
        } else {
            const QString key = QStringLiteral("data/%1Folder").arg(kind);
            chosen = QFileDialog::getExistingDirectory(this, tr("MNIST folder"),
                                                       settings.value(key).toString());
            if (!chosen.isEmpty()) {
                settings.setValue(key, chosen);
            }
        }
        if (!chosen.isEmpty()) {
            m_path->setText(chosen);
        }
    });

    // Model.
    buildModelSection(section(tr("Model")));

    // Ensemble.
    QFormLayout* ens = section(tr("Ensemble"));
    m_members = spinFor("ensemble.members");
    addField(ens, QStringLiteral("ensemble.members"), tr("Members K"), m_members);
    m_bootstrap = comboFor("ensemble.bootstrap");
    addField(ens, QStringLiteral("ensemble.bootstrap"), tr("Data per member"), m_bootstrap);
    m_ensembleSeed = spinFor("ensemble.seed");
    addField(ens, QStringLiteral("ensemble.seed"), tr("Seed"), m_ensembleSeed);

    // Optimizer.
    QFormLayout* opt = section(tr("Optimizer"));
    m_optimizer = comboFor("optimizer.kind");
    addField(opt, QStringLiteral("optimizer.kind"), tr("Kind"), m_optimizer);
    auto* lrRow = new QWidget;
    auto* lrLayout = new QHBoxLayout(lrRow);
    lrLayout->setContentsMargins(0, 0, 0, 0);
    m_lrMode = combo({{tr("value"), QStringLiteral("value")},
                      {tr("log range"), QStringLiteral("log")},
                      {tr("list"), QStringLiteral("list")}});
    m_lrStack = new QStackedWidget;
    m_lrValue = new QLineEdit;
    m_lrValue->setObjectName(QStringLiteral("learningRateValue"));
    auto* range = new QWidget;
    auto* rangeLayout = new QHBoxLayout(range);
    rangeLayout->setContentsMargins(0, 0, 0, 0);
    m_lrLow = new QLineEdit;
    m_lrHigh = new QLineEdit;
    rangeLayout->addWidget(m_lrLow);
    rangeLayout->addWidget(new QLabel(QStringLiteral("–")));
    rangeLayout->addWidget(m_lrHigh);
    m_lrList = new QLineEdit;
    m_lrList->setPlaceholderText(tr("one per member"));
    m_lrStack->addWidget(m_lrValue);
    m_lrStack->addWidget(range);
    m_lrStack->addWidget(m_lrList);
    lrLayout->addWidget(m_lrMode);
    lrLayout->addWidget(m_lrStack, 1);
    addField(opt, QStringLiteral("optimizer.lr"), tr("Learning rate"), lrRow);
    m_momentum = new QLineEdit;
    addField(opt, QStringLiteral("optimizer.momentum"), tr("Momentum"), m_momentum);
    m_weightDecay = new QLineEdit;
    addField(opt, QStringLiteral("optimizer.weight_decay"), tr("Weight decay"), m_weightDecay);
    m_batch = spinFor("training.batch_size");
    addField(opt, QStringLiteral("training.batch_size"), tr("Batch size"), m_batch);
    auto* stopRow = new QWidget;
    auto* stopLayout = new QHBoxLayout(stopRow);
    stopLayout->setContentsMargins(0, 0, 0, 0);
    // "until paused" is the app's run control, not a config value: the config keeps the
    // steps or epochs last chosen, and a saved experiment the steps actually trained.
    m_stopMode = combo({{tr("steps"), QStringLiteral("steps")},
                        {tr("epochs"), QStringLiteral("epochs")},
                        {tr("until paused"), QStringLiteral("paused")}});
    m_steps = spinFor("training.steps", 100);
    m_steps->setObjectName(QStringLiteral("stopAfterSteps"));
    m_epochs = doubleSpinFor("training.epochs", 1.0, 2);
    stopLayout->addWidget(m_steps, 1);
    stopLayout->addWidget(m_epochs, 1);
    stopLayout->addWidget(m_stopMode);
    addField(opt, QStringLiteral("training.steps"), tr("Stop after"), stopRow);
    m_editors.insert(QStringLiteral("training.epochs"), stopRow);
    m_errorLabels.insert(QStringLiteral("training.epochs"),
                         m_errorLabels.value(QStringLiteral("training.steps")));
    // The paper's adversarial training (0: off), in standardised input units.
    m_adversarialEps = doubleSpinFor("training.adversarial_eps", 0.01, 4);
    m_adversarialEps->setSpecialValueText(tr("off"));
    addField(opt, QStringLiteral("training.adversarial_eps"), tr("Adversarial ε"),
             m_adversarialEps);

    // Backend.
    QFormLayout* be = section(tr("Backend"));
    m_backend = comboFor("backend.kind");
    addField(be, QStringLiteral("backend.kind"), tr("Device"), m_backend);
    m_threads = spinFor("backend.threads");
    m_threads->setSpecialValueText(tr("all cores"));
    addField(be, QStringLiteral("backend.threads"), tr("CPU threads"), m_threads);
    m_device = spinFor("backend.device");
    addField(be, QStringLiteral("backend.device"), tr("CUDA device"), m_device);
    {
        std::string reason;
        const bool cuda = cudaAvailable(0, reason);
        auto* items = qobject_cast<QStandardItemModel*>(m_backend->model());
        if (!cuda && items != nullptr) {
            QStandardItem* item = items->item(2);
            item->setEnabled(false);
            item->setToolTip(tr("Unavailable: %1").arg(str(reason)));
            item->setText(tr("CUDA (unavailable)"));
            m_backend->setItemData(2, tr("Unavailable: %1").arg(str(reason)), Qt::ToolTipRole);
        }
    }

    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    m_summary->setStyleSheet(QStringLiteral("color: palette(mid); font-size: 11px;"));
    column->addWidget(m_summary);
    column->addStretch(1);

    setStyleSheet(QStringLiteral(
        "QLineEdit[invalid=\"true\"], QSpinBox[invalid=\"true\"], "
        "QDoubleSpinBox[invalid=\"true\"], QComboBox[invalid=\"true\"] "
        "{ border: 1px solid #c0392b; background: #fdf0ee; border-radius: 2px; padding: 1px; }"
        // A changed row that waits for Reset (the window's banner says so).
        "QLabel[pending=\"true\"] { color: #8a5a00; font-weight: bold; }"));

    // The wheel scrolls the form unless a field has focus; Enter/Escape leave the field.
    (new FieldInputFilter(this))->install(this);
    updateMinimumWidth();

    // Every editor reports edits.
    for (QSpinBox* s : {m_n, m_classes, m_dataSeed, m_members, m_ensembleSeed, m_batch, m_steps,
                        m_threads, m_device}) {
        connect(s, &QSpinBox::valueChanged, this, &ExperimentPanel::onEdited);
    }
    for (QDoubleSpinBox* s : {m_noise, m_rotations, m_testFraction, m_epochs, m_adversarialEps}) {
        connect(s, &QDoubleSpinBox::valueChanged, this, &ExperimentPanel::onEdited);
    }
    for (QLineEdit* e :
         {m_path, m_hidden, m_lrValue, m_lrLow, m_lrHigh, m_lrList, m_momentum, m_weightDecay}) {
        connect(e, &QLineEdit::textChanged, this, &ExperimentPanel::onEdited);
    }
    for (QComboBox* c : {m_kind, m_modelKind, m_activation, m_bootstrap, m_optimizer, m_lrMode,
                         m_stopMode, m_backend}) {
        connect(c, &QComboBox::currentIndexChanged, this, &ExperimentPanel::onEdited);
    }
}

// --- The task: classification or regression, and the likelihood that goes with it ---------

void ExperimentPanel::buildTaskFields(QFormLayout* data) {
    m_task = comboFor("dataset.task");
    addField(data, QStringLiteral("dataset.task"), tr("Task"), m_task);
    m_target = new QLineEdit;
    m_target->setPlaceholderText(QStringLiteral("y"));
    addField(data, QStringLiteral("dataset.target"), tr("Target column"), m_target);
    m_likelihood = comboFor("model.likelihood");
    addField(data, QStringLiteral("model.likelihood"), tr("Likelihood"), m_likelihood);
    m_features = spinFor("dataset.features");
    addField(data, QStringLiteral("dataset.features"), tr("Features"), m_features);
    connect(m_task, &QComboBox::currentIndexChanged, this, &ExperimentPanel::onEdited);
    connect(m_likelihood, &QComboBox::currentIndexChanged, this, &ExperimentPanel::onEdited);
    connect(m_target, &QLineEdit::textChanged, this, &ExperimentPanel::onEdited);
    connect(m_features, &QSpinBox::valueChanged, this, &ExperimentPanel::onEdited);
}

void ExperimentPanel::loadTaskFields(const json& c) {
    setCombo(m_task, textOf(c, "dataset.task"));
    m_target->setText(textOf(c, "dataset.target"));
    setCombo(m_likelihood, textOf(c, "model.likelihood"));
    m_features->setValue(intOf(c, "dataset.features"));
}

void ExperimentPanel::storeTaskFields(json& c) const {
    c["dataset"]["task"] = m_task->currentData().toString().toStdString();
    c["dataset"]["target"] = m_target->text().trimmed().toStdString();
    c["dataset"]["features"] = m_features->value();
    c["model"]["likelihood"] = m_likelihood->currentData().toString().toStdString();
}

bool ExperimentPanel::regressionTask() const {
    const QString kind = m_kind->currentData().toString();
    const DatasetKindInfo& info = datasetKindNamed(kind);
    return info.taskFromConfig ? m_task->currentData().toString() ==
                                     QString::fromUtf8(toString(DataTask::Regression))
                               : info.task == DataTask::Regression;
}

void ExperimentPanel::syncLikelihood() {
    // A categorical head on regression data (or the reverse) is a config error: follow the
    // dataset, keeping gaussian or mse if the person chose one.
    const bool regression = regressionTask();
    const QString likelihood = m_likelihood->currentData().toString();
    const bool categorical = likelihood == QStringLiteral("categorical");
    if (regression == !categorical) {
        return;
    }
    const bool loading = m_loading;
    m_loading = true;  // part of the edit that caused it, not an edit of its own
    setCombo(m_likelihood, regression ? QStringLiteral("gaussian") : QStringLiteral("categorical"));
    m_loading = loading;
}

void ExperimentPanel::updateTaskEnabled() {
    const QString kind = m_kind->currentData().toString();
    const DatasetKindInfo& info = datasetKindNamed(kind);
    const bool regressionGenerator =
        info.source == DataSource::Generator && info.task == DataTask::Regression;
    m_task->setEnabled(info.taskFromConfig);
    m_target->setEnabled(info.taskFromConfig && regressionTask());
    m_features->setEnabled(kind == QStringLiteral("linear"));
    if (regressionGenerator) {
        m_n->setEnabled(true);
        m_noise->setEnabled(kind != QStringLiteral("sine"));  // sine's noise is its own
        m_regenerate->setEnabled(true);
        m_path->setEnabled(false);
        m_browse->setEnabled(false);
    }
    // Only the likelihoods the dataset's task accepts can be chosen.
    if (auto* model = qobject_cast<QStandardItemModel*>(m_likelihood->model())) {
        const bool regression = regressionTask();
        for (int i = 0; i < m_likelihood->count(); ++i) {
            const bool categorical =
                m_likelihood->itemData(i).toString() == QStringLiteral("categorical");
            if (QStandardItem* item = model->item(i)) {
                item->setEnabled(categorical != regression);
            }
        }
    }
}

void ExperimentPanel::updateMinimumWidth() {
    m_content->ensurePolished();
    const int bar = m_scroll->verticalScrollBar()->sizeHint().width();
    m_scroll->setMinimumWidth(m_content->minimumSizeHint().width() + bar);
}

void ExperimentPanel::changeEvent(QEvent* event) {
    QWidget::changeEvent(event);
    if (event->type() == QEvent::FontChange || event->type() == QEvent::StyleChange) {
        if (m_scroll != nullptr) {
            updateMinimumWidth();
        }
    }
}

void ExperimentPanel::setConfig(const json& input, const QString& preset) {
    m_loading = true;
    m_base = input.is_object() ? input : json::object();
    const json c = withDefaults(m_base);
    setCombo(m_kind, textOf(c, "dataset.kind"));
    m_n->setValue(intOf(c, "dataset.n"));
    m_noise->setValue(doubleOf(c, "dataset.noise"));
    m_rotations->setValue(doubleOf(c, "dataset.rotations"));
    m_classes->setValue(intOf(c, "dataset.classes"));
    m_testFraction->setValue(doubleOf(c, "dataset.test_fraction"));
    m_dataSeed->setValue(intOf(c, "dataset.seed"));
    m_path->setText(textOf(c, "dataset.path"));
    loadTaskFields(c);

    loadModelSection(c);

    m_members->setValue(intOf(c, "ensemble.members"));
    setCombo(m_bootstrap, textOf(c, "ensemble.bootstrap"));
    m_ensembleSeed->setValue(intOf(c, "ensemble.seed"));

    setCombo(m_optimizer, textOf(c, "optimizer.kind"));
    const json& lr = *valueOrDefault(c, keySpec("optimizer.lr"));
    if (lr.is_object() && lr.contains("log_uniform") && lr["log_uniform"].is_array() &&
        lr["log_uniform"].size() == 2) {
        setCombo(m_lrMode, QStringLiteral("log"));
        m_lrLow->setText(numbersText(lr["log_uniform"][0]));
        m_lrHigh->setText(numbersText(lr["log_uniform"][1]));
        m_lrValue->setText(numbersText(lr["log_uniform"][0]));
    } else if (lr.is_array()) {
        setCombo(m_lrMode, QStringLiteral("list"));
        m_lrList->setText(numbersText(lr));
    } else {
        setCombo(m_lrMode, QStringLiteral("value"));
        const double v = doubleOf(c, "optimizer.lr");
        m_lrValue->setText(formatNumber(v));
        m_lrLow->setText(formatNumber(v / 3.0));
        m_lrHigh->setText(formatNumber(v * 3.0));
    }
    m_momentum->setText(numbersText(*valueOrDefault(c, keySpec("optimizer.momentum"))));
    m_weightDecay->setText(numbersText(*valueOrDefault(c, keySpec("optimizer.weight_decay"))));

    m_batch->setValue(intOf(c, "training.batch_size"));
    m_steps->setValue(intOf(c, "training.steps"));
    m_blockSteps = std::max(1, m_steps->value());
    const double epochs = doubleOf(c, "training.epochs");
    m_blockEpochs = epochs > 0 ? epochs : 1.0;
    m_epochs->setValue(epochs > 0 ? epochs : 1.0);
    setCombo(m_stopMode, epochs > 0 ? QStringLiteral("epochs") : QStringLiteral("steps"));
    m_adversarialEps->setValue(doubleOf(c, "training.adversarial_eps"));

    setCombo(m_backend, textOf(c, "backend.kind"));
    m_threads->setValue(intOf(c, "backend.threads"));
    m_device->setValue(intOf(c, "backend.device"));

    const int presetIndex = m_preset->findData(preset);
    m_preset->setCurrentIndex(presetIndex >= 0 && !preset.isEmpty() ? presetIndex
                                                                    : m_preset->count() - 1);
    m_loading = false;
    updateEnabled();
    validate();
}

void ExperimentPanel::extendStopAfter(int64_t step, double epoch) {
    const bool loading = m_loading;
    m_loading = true;  // not a person's edit
    if (m_finiteStopMode == QStringLiteral("epochs")) {
        m_epochs->setValue(std::max(m_epochs->value(), epoch) + m_blockEpochs);
    } else {
        const int64_t next = std::max<int64_t>(m_steps->value(), step) + m_blockSteps;
        m_steps->setValue(static_cast<int>(std::min<int64_t>(next, m_steps->maximum())));
    }
    m_loading = loading;
    validate();
}

bool ExperimentPanel::untilPaused() const {
    return m_stopMode->currentData().toString() == QStringLiteral("paused");
}

void ExperimentPanel::setUntilPaused(bool untilPaused) {
    if (untilPaused == this->untilPaused()) {
        return;
    }
    const bool loading = m_loading;
    m_loading = true;  // not a person's edit: no edited() signal
    setCombo(m_stopMode, untilPaused ? QStringLiteral("paused") : m_finiteStopMode);
    m_loading = loading;
    updateEnabled();
}

QString ExperimentPanel::presetName() const {
    return m_preset->currentData().toString();
}

void ExperimentPanel::updateEnabled() {
    const QString kind = m_kind->currentData().toString();
    const DatasetKindInfo& info = datasetKindNamed(kind);
    const bool generated = info.source == DataSource::Generator;
    m_n->setEnabled(generated);
    m_noise->setEnabled(generated);
    m_rotations->setEnabled(kind == QStringLiteral("spirals"));
    m_classes->setEnabled(kind == QStringLiteral("blobs"));
    m_testFraction->setEnabled(info.source != DataSource::IdxImages);
    m_regenerate->setEnabled(generated);
    m_path->setEnabled(!generated);
    m_browse->setEnabled(!generated);
    updateModelSection();
    const int lrMode = m_lrMode->currentIndex();
    m_lrStack->setCurrentIndex(lrMode);
    m_momentum->setEnabled(m_optimizer->currentData().toString() == QStringLiteral("sgd"));
    const QString stop = m_stopMode->currentData().toString();
    if (stop != QStringLiteral("paused")) {
        m_finiteStopMode = stop;
    }
    m_steps->setVisible(stop == QStringLiteral("steps"));
    m_epochs->setVisible(stop == QStringLiteral("epochs"));
    const QString backend = m_backend->currentData().toString();
    m_threads->setEnabled(backend != QStringLiteral("cuda"));
    m_device->setEnabled(backend != QStringLiteral("cpu"));
    updateTaskEnabled();
}

void ExperimentPanel::onEdited() {
    if (m_loading) {
        return;
    }
    syncLikelihood();
    updateEnabled();
    if (m_preset->currentIndex() != m_preset->count() - 1) {
        m_preset->setCurrentIndex(m_preset->count() - 1);  // edited: no longer the preset
    }
    validate();
    Q_EMIT edited();
}

json ExperimentPanel::config() const {
    json c = m_base;
    if (!c.is_object()) {
        c = json::object();
    }
    for (const std::string& section : configSections()) {
        if (!c.contains(section) || !c[section].is_object()) {
            c[section] = json::object();
        }
    }
    json& d = c["dataset"];
    d["kind"] = m_kind->currentData().toString().toStdString();
    d["n"] = m_n->value();
    d["noise"] = m_noise->value();
    d["rotations"] = m_rotations->value();
    d["classes"] = m_classes->value();
    d["test_fraction"] = m_testFraction->value();
    d["seed"] = m_dataSeed->value();
    d["path"] = m_path->text().trimmed().toStdString();
    storeTaskFields(c);

    storeModelSection(c);

    c["ensemble"]["members"] = m_members->value();
    if (c["ensemble"].contains("switched_off") && c["ensemble"]["switched_off"].is_array()) {
        // The switches have no field here (Members holds them): members beyond a smaller K
        // are gone, so their switches go too rather than making the experiment invalid.
        json kept = json::array();
        for (const json& m : c["ensemble"]["switched_off"]) {
            if (!m.is_number_integer() || m.get<int64_t>() < m_members->value()) {
                kept.push_back(m);
            }
        }
        c["ensemble"]["switched_off"] = kept;
    }
    c["ensemble"]["bootstrap"] = m_bootstrap->currentData().toString().toStdString();
    c["ensemble"]["seed"] = m_ensembleSeed->value();

    json& o = c["optimizer"];
    o["kind"] = m_optimizer->currentData().toString().toStdString();
    QString error;
    json v;
    const QString mode = m_lrMode->currentData().toString();
    if (mode == QStringLiteral("log")) {
        json lo;
        json hi;
        const bool ok =
            parseNumbers(m_lrLow->text(), lo, error) && parseNumbers(m_lrHigh->text(), hi, error);
        o["lr"] = json{{"log_uniform",
                        {ok ? lo : json(m_lrLow->text().toStdString()),
                         ok ? hi : json(m_lrHigh->text().toStdString())}}};
    } else {
        const QString text = mode == QStringLiteral("list") ? m_lrList->text() : m_lrValue->text();
        o["lr"] = parseNumbers(text, v, error) ? v : json(text.toStdString());
    }
    o["momentum"] =
        parseNumbers(m_momentum->text(), v, error) ? v : json(m_momentum->text().toStdString());
    o["weight_decay"] = parseNumbers(m_weightDecay->text(), v, error)
                            ? v
                            : json(m_weightDecay->text().toStdString());

    json& t = c["training"];
    t["batch_size"] = m_batch->value();
    if (m_finiteStopMode == QStringLiteral("epochs")) {
        t["epochs"] = m_epochs->value();
    } else {
        t["steps"] = m_steps->value();
        t["epochs"] = 0;
    }
    // 0 as the schema's default writes it (an integer), so an untouched config is unchanged.
    if (m_adversarialEps->value() > 0.0) {
        t["adversarial_eps"] = m_adversarialEps->value();
    } else {
        t["adversarial_eps"] = 0;
    }
    json& b = c["backend"];
    b["kind"] = m_backend->currentData().toString().toStdString();
    b["threads"] = m_threads->value();
    b["device"] = m_device->value();
    // The form shows every field; keys the other fields made inapplicable are not stored.
    dropInapplicable(c, nullptr);
    return c;
}

QString ExperimentPanel::fieldFor(const QString& errorKey) const {
    QString best;
    for (auto it = m_editors.constBegin(); it != m_editors.constEnd(); ++it) {
        if (coversKey(it.key(), errorKey) && it.key().size() > best.size()) {
            best = it.key();
        }
    }
    return best;
}

void ExperimentPanel::validate() {
    const bool wasValid = m_errors.isEmpty();
    m_errors.clear();
    // The form's own checks first (text that is not a number cannot reach the parser).
    auto checkNumbers = [this](QLineEdit* edit, const QString& key) {
        json v;
        QString error;
        if (edit->isEnabled() && !parseNumbers(edit->text(), v, error)) {
            m_errors.insert(key, error);
        }
    };
    const QString mode = m_lrMode->currentData().toString();
    if (mode == QStringLiteral("log")) {
        checkNumbers(m_lrLow, QStringLiteral("optimizer.lr"));
        checkNumbers(m_lrHigh, QStringLiteral("optimizer.lr"));
    } else {
        checkNumbers(mode == QStringLiteral("list") ? m_lrList : m_lrValue,
                     QStringLiteral("optimizer.lr"));
    }
    checkNumbers(m_momentum, QStringLiteral("optimizer.momentum"));
    checkNumbers(m_weightDecay, QStringLiteral("optimizer.weight_decay"));
    checkModelSection();
    const json c = config();
    if (m_errors.isEmpty()) {
        // Then the engine's parser: its message names the key and the reason.
        try {
            const ExperimentConfig parsed = parseConfig(c);
            if (parsed.backend.kind == BackendKind::Cuda) {
                std::string reason;
                if (!cudaAvailable(parsed.backend.device, reason)) {
                    m_errors.insert(QStringLiteral("backend.kind"),
                                    tr("CUDA is not available: %1").arg(str(reason)));
                }
            }
            const auto& lr = parsed.optimizer.lr;
            if (!lr.empty()) {
                const auto [lo, hi] = std::minmax_element(lr.begin(), lr.end());
                m_summary->setText(
                    *lo == *hi
                        ? tr("K = %1 members, lr %2 each").arg(parsed.ensemble.members).arg(*lo)
                        : tr("K = %1 members, lr from %2 to %3")
                              .arg(parsed.ensemble.members)
                              .arg(*lo, 0, 'g', 3)
                              .arg(*hi, 0, 'g', 3));
            }
        } catch (const ConfigError& e) {
            const QString key = str(e.key());
            QString field = fieldFor(key);
            if (field.isEmpty()) {
                field = QStringLiteral("dataset.kind");
            }
            m_errors.insert(field, key.isEmpty() || key == field
                                       ? str(e.reason())
                                       : QStringLiteral("%1: %2").arg(key, str(e.reason())));
        } catch (const std::exception& e) {
            m_errors.insert(QStringLiteral("dataset.kind"), str(e.what()));
        }
    }
    markErrors();
    if (wasValid != m_errors.isEmpty()) {
        Q_EMIT validityChanged(m_errors.isEmpty());
    }
}

void ExperimentPanel::markErrors() {
    for (auto it = m_errorLabels.constBegin(); it != m_errorLabels.constEnd(); ++it) {
        const QString text = m_errors.value(it.key());
        if (it.key() == QStringLiteral("training.epochs")) {
            continue;  // shares the steps row's label
        }
        QString shown = text;
        if (it.key() == QStringLiteral("training.steps") && shown.isEmpty()) {
            shown = m_errors.value(QStringLiteral("training.epochs"));
        }
        it.value()->setText(shown);
        it.value()->setVisible(!shown.isEmpty());
    }
    markLayerErrors();
    auto mark = [this](QWidget* w, bool invalid) {
        if (w->property("invalid").toBool() != invalid) {
            w->setProperty("invalid", invalid);
            w->style()->unpolish(w);
            w->style()->polish(w);
        }
    };
    QList<QWidget*> targets;
    for (auto it = m_editors.constBegin(); it != m_editors.constEnd(); ++it) {
        const bool invalid = m_errors.contains(it.key());
        QList<QWidget*> widgets{it.value()};
        if (it.key() == QStringLiteral("optimizer.lr")) {
            widgets = {m_lrValue, m_lrLow, m_lrHigh, m_lrList};
        } else if (it.key() == QStringLiteral("training.steps") ||
                   it.key() == QStringLiteral("training.epochs")) {
            widgets = {m_steps, m_epochs};
        } else if (it.key() == QStringLiteral("dataset.path")) {
            widgets = {m_path};
        }
        for (QWidget* w : widgets) {
            const bool already = targets.contains(w);
            if (!already) {
                targets << w;
                mark(w, invalid);
            } else if (invalid) {
                mark(w, true);
            }
        }
    }
}

void ExperimentPanel::setPendingKeys(const QStringList& keys) {
    for (QLabel* label : findChildren<QLabel*>()) {
        if (!label->objectName().endsWith(QStringLiteral(".label"))) {
            continue;
        }
        const QString key = label->objectName().chopped(6);
        const bool pending =
            keys.contains(key) || (key == QStringLiteral("training.steps") &&
                                   keys.contains(QStringLiteral("training.epochs")));
        if (label->property("pending").toBool() != pending) {
            label->setProperty("pending", pending);
            label->setToolTip(pending ? tr("Changed: applies on Reset (R)") : QString());
            label->style()->unpolish(label);
            label->style()->polish(label);
        }
    }
}

QStringList ExperimentPanel::pendingKeys() const {
    QStringList keys;
    for (const QLabel* label : findChildren<QLabel*>()) {
        if (label->property("pending").toBool()) {
            keys << label->objectName().chopped(6);
        }
    }
    return keys;
}

QWidget* ExperimentPanel::editor(const QString& key) const {
    return m_editors.value(key);
}

QLabel* ExperimentPanel::errorLabel(const QString& key) const {
    return m_errorLabels.value(key);
}

// --- The Model section ------------------------------------------------------------------------

namespace {

bool isImageKind(const QString& kind) {
    return datasetKindNamed(kind).source == DataSource::IdxImages;
}

// "model.layers[2].kernel: reason" -> row 2, field "kernel" (-1 when it names no row).
int layerErrorRow(const QString& message, QString& field) {
    static const QRegularExpression re(QStringLiteral("^model\\.layers\\[(\\d+)\\](?:\\.(\\w+))?"));
    const QRegularExpressionMatch m = re.match(message);
    if (!m.hasMatch()) {
        return -1;
    }
    field = m.captured(2);
    return m.captured(1).toInt();
}

}  // namespace

void ExperimentPanel::buildModelSection(QFormLayout* model) {
    m_modelForm = model;
    m_modelKind = comboFor("model.kind");
    addField(model, QStringLiteral("model.kind"), tr("Kind"), m_modelKind);
    m_hidden = new QLineEdit;
    m_hidden->setPlaceholderText(QStringLiteral("32, 32"));
    addField(model, QStringLiteral("model.hidden"), tr("Hidden layers"), m_hidden);
    m_layers = new LayerListEditor;
    addField(model, QStringLiteral("model.layers"), tr("Layers"), m_layers);
    // The row's tooltip is the schema's long help; each field has its own.
    m_layers->setToolTip(QString());
    m_activation = comboFor("model.activation");
    addField(model, QStringLiteral("model.activation"), tr("Activation"), m_activation);
    connect(m_layers, &LayerListEditor::edited, this, &ExperimentPanel::onEdited);
    // New rows need the form's input rules (the wheel scrolls the form) and a wider panel.
    connect(m_layers, &LayerListEditor::edited, this, [this] {
        installLayerInput();
        updateMinimumWidth();
    });
}

void ExperimentPanel::loadModelSection(const json& c) {
    setCombo(m_modelKind, textOf(c, "model.kind"));
    QStringList widths;
    for (const auto& w : valueOf(c, "model.hidden")) {
        widths << str(w.dump());
    }
    m_hidden->setText(widths.join(QStringLiteral(", ")));
    // A config of the other kind has no model.layers: the editor then offers the recipe.
    const bool hasLayers =
        c.contains("model") && c["model"].is_object() && c["model"].contains("layers");
    m_layers->setLayers(hasLayers ? c["model"]["layers"] : keySpec("model.layers").defaultValue);
    installLayerInput();
    setCombo(m_activation, textOf(c, "model.activation"));
}

void ExperimentPanel::storeModelSection(json& c) const {
    json& m = c["model"];
    const QString kind = m_modelKind->currentData().toString();
    m["kind"] = kind.toStdString();
    // Only the kind's own key is stored (the schema's conditional rows): a cnn config holds
    // layers, an mlp config hidden. dropInapplicable() then removes the other one if loaded.
    if (kind == QStringLiteral("cnn")) {
        m["layers"] = m_layers->layers();
        m.erase("hidden");
    } else {
        json hidden = json::array();
        for (const QString& p : m_hidden->text().split(
                 QRegularExpression(QStringLiteral("[,;\\s]+")), Qt::SkipEmptyParts)) {
            bool ok = false;
            const int w = p.toInt(&ok);
            hidden.push_back(ok ? json(w) : json(p.toStdString()));
        }
        m["hidden"] = hidden;
        m.erase("layers");
    }
    m["activation"] = m_activation->currentData().toString().toStdString();
}

void ExperimentPanel::installLayerInput() {
    // The panel's filter (made after the form is built); installing again is harmless.
    if (auto* filter = findChild<FieldInputFilter*>(QString(), Qt::FindDirectChildrenOnly)) {
        filter->install(m_layers);
    }
}

void ExperimentPanel::updateModelSection() {
    const bool image = isImageKind(m_kind->currentData().toString());
    if (auto* items = qobject_cast<QStandardItemModel*>(m_modelKind->model())) {
        const int cnn = m_modelKind->findData(QStringLiteral("cnn"));
        if (QStandardItem* item = cnn >= 0 ? items->item(cnn) : nullptr) {
            // A config that already says cnn keeps it selectable, so the error can be read
            // and the kind switched back.
            item->setEnabled(image);
            const QString why =
                image ? QString()
                      : tr("CNN members need an image dataset (MNIST or Fashion-MNIST): they "
                           "read [1, 28, 28] images");
            m_modelKind->setItemData(cnn, why.isEmpty() ? QVariant() : QVariant(why),
                                     Qt::ToolTipRole);
        }
    }
    const bool cnn = m_modelKind->currentData().toString() == QStringLiteral("cnn");
    if (m_modelForm != nullptr) {
        m_modelForm->setRowVisible(m_hidden->parentWidget(), !cnn);
        const bool changed = m_layers->parentWidget()->isVisibleTo(this) != cnn;
        m_modelForm->setRowVisible(m_layers->parentWidget(), cnn);
        if (changed && m_scroll != nullptr) {
            updateMinimumWidth();  // the layer rows are wider than the MLP's fields
        }
    }
}

void ExperimentPanel::checkModelSection() {
    if (m_modelKind->currentData().toString() == QStringLiteral("cnn")) {
        return;  // the layer list's spin boxes only hold integers; the parser judges the rest
    }
    for (const QString& p : m_hidden->text().split(QRegularExpression(QStringLiteral("[,;\\s]+")),
                                                   Qt::SkipEmptyParts)) {
        bool ok = false;
        p.toInt(&ok);
        if (!ok) {
            m_errors.insert(QStringLiteral("model.hidden"),
                            tr("\"%1\" is not a layer width; write widths like 32, 32").arg(p));
            break;
        }
    }
}

void ExperimentPanel::markLayerErrors() {
    const QString message = m_errors.value(QStringLiteral("model.layers"));
    QString field;
    const int row = layerErrorRow(message, field);
    if (row >= 0 && row < m_layers->rowCount()) {
        // At the row it names; the field's name leads the reason there.
        const QString reason = message.mid(message.indexOf(QStringLiteral(": ")) + 2);
        m_layers->showError(row, field,
                            field.isEmpty() ? reason : QStringLiteral("%1: %2").arg(field, reason));
        if (QLabel* label = m_errorLabels.value(QStringLiteral("model.layers"))) {
            label->setVisible(false);
        }
    } else {
        m_layers->showError(-1, QString(), QString());
    }
}

}  // namespace ensemble::ui

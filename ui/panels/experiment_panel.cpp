#include "panels/experiment_panel.h"

#include <QComboBox>
#include <QDockWidget>
#include <QDoubleSpinBox>
#include <QEvent>
#include <QFormLayout>
#include <QGroupBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QMainWindow>
#include <QScrollArea>
#include <QScrollBar>
#include <QSpinBox>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "config/config.h"
#include "core/errors.h"
#include "panels/field_input.h"
#include "panels/form_binding.h"
#include "panels/panel_kinds.h"
#include "registry/registry.h"
#include "std_string.h"

namespace ensemble::ui {

namespace {

using nlohmann::json;

}  // namespace

ExperimentPanel::ExperimentPanel(QWidget* parent)
    : QWidget(parent), m_form(std::make_unique<FormBinding>(this, [this] { onEdited(); })) {
    m_loading = true;  // building is no edit; setConfig ends it
    build();
    setConfig(defaultConfigJson());
}

ExperimentPanel::~ExperimentPanel() = default;

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
    buildDatasetSection(section(tr("Dataset")));
    buildModelSection(section(tr("Model")));
    buildEnsembleSection(section(tr("Ensemble")));
    buildOptimizerSection(section(tr("Optimizer")));
    buildBackendSection(section(tr("Backend")));
    buildActiveSection(section(tr("Active learning")));

    m_summary = new QLabel;
    m_summary->setWordWrap(true);
    m_summary->setStyleSheet(QStringLiteral("color: palette(mid); font-size: 11px;"));
    column->addWidget(m_summary);
    m_fieldlessWarnings = new QLabel;
    m_fieldlessWarnings->setObjectName(QStringLiteral("panel.warnings"));
    m_fieldlessWarnings->setWordWrap(true);
    m_fieldlessWarnings->setStyleSheet(QStringLiteral("color: #8a5a00; font-size: 11px;"));
    m_fieldlessWarnings->setVisible(false);
    column->addWidget(m_fieldlessWarnings);
    column->addStretch(1);

    setStyleSheet(QStringLiteral(
        "QLineEdit[invalid=\"true\"], QSpinBox[invalid=\"true\"], "
        "QDoubleSpinBox[invalid=\"true\"], QComboBox[invalid=\"true\"] "
        "{ border: 1px solid #c0392b; background: #fdf0ee; border-radius: 2px; padding: 1px; }"
        // A value that parses but cannot train (a learning rate of 0): Train stays enabled.
        "QLineEdit[warning=\"true\"], QSpinBox[warning=\"true\"], "
        "QDoubleSpinBox[warning=\"true\"], QComboBox[warning=\"true\"] "
        "{ border: 1px solid #b9770e; background: #fdf6e3; border-radius: 2px; padding: 1px; }"
        // A changed row that waits for Reset (the window's banner says so).
        "QLabel[pending=\"true\"] { color: #8a5a00; font-weight: bold; }"));

    // The wheel scrolls the form unless a field has focus; Enter/Escape leave the field.
    (new FieldInputFilter(this))->install(this);
    updateMinimumWidth();
}

void ExperimentPanel::updateMinimumWidth() {
    m_content->ensurePolished();
    // Rows shown or hidden just now: the layout's hint is recomputed before it is read, or the
    // panel keeps the width of the rows before (mnist-cnn's layer list, for every later preset).
    // Deepest first, so each group box's new hint reaches the column's cached item.
    const QList<QLayout*> layouts = m_content->findChildren<QLayout*>();
    for (auto it = layouts.rbegin(); it != layouts.rend(); ++it) {
        (*it)->invalidate();
        (*it)->activate();
    }
    if (QLayout* layout = m_content->layout()) {
        layout->invalidate();
        layout->activate();
    }
    const int bar = m_scroll->verticalScrollBar()->sizeHint().width();
    const int before = m_scroll->minimumWidth();
    m_scroll->setMinimumWidth(m_content->minimumSizeHint().width() + bar);
    followMinimumWidthInDock(before);
}

void ExperimentPanel::followMinimumWidthInDock(int minimumBefore) {
    auto* dock = qobject_cast<QDockWidget*>(parentWidget());
    auto* window = dock != nullptr ? qobject_cast<QMainWindow*>(dock->parentWidget()) : nullptr;
    if (window == nullptr || dock->isFloating()) {
        return;
    }
    const int now = m_scroll->minimumWidth();
    if (now > minimumBefore && now > width()) {
        // The rows need more than the dock had (mnist-cnn's layer list): it is pushed wider.
        // Remembered, so that it goes back once they need less.
        if (m_widthBeforeGrowth == 0) {
            m_widthBeforeGrowth = width();
        }
    } else if (now < minimumBefore && m_widthBeforeGrowth > 0 &&
               m_scroll->width() <= minimumBefore + 2) {
        // Still at the width the rows forced (not dragged wider since): back to the width
        // the person had, or to what the rows need now if that is more.
        window->resizeDocks({dock}, {std::max(now, m_widthBeforeGrowth)}, Qt::Horizontal);
        m_widthBeforeGrowth = 0;
    } else if (now < minimumBefore) {
        m_widthBeforeGrowth = 0;  // dragged meanwhile: the person's width stands
    }
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
    m_form->load(withDefaults(m_base));
    const int presetIndex = m_preset->findData(preset);
    m_preset->setCurrentIndex(presetIndex >= 0 && !preset.isEmpty() ? presetIndex
                                                                    : m_preset->count() - 1);
    m_shownPreset = m_preset->currentIndex();
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
    return currentName(m_stopMode) == QStringLiteral("paused");
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

void ExperimentPanel::keepShownPreset() {
    if (m_shownPreset >= 0) {
        m_preset->setCurrentIndex(m_shownPreset);
    }
}

QString ExperimentPanel::presetName() const {
    return m_preset->currentData().toString();
}

void ExperimentPanel::updateEnabled() {
    m_form->refresh(config());
    if (m_scroll != nullptr) {
        // Rows shown, hidden or standing in for their editors ("not used"): the widest row
        // decides (mnist-cnn's layer list widens the panel, a preset after it narrows it).
        updateMinimumWidth();
    }
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
    m_shownPreset = m_preset->currentIndex();
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
    m_form->store(c);
    // The form stores every row; keys the other rows made inapplicable are not kept.
    dropInapplicable(c, nullptr);
    return c;
}

void ExperimentPanel::validate() {
    const bool wasValid = m_errors.isEmpty();
    m_errors.clear();
    m_warnings.clear();
    QStringList fieldlessWarnings;
    // The form's own checks first (text that is not a number cannot reach the parser).
    m_form->check(m_errors);
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
            // The engine's warnings, as ensemble-cli prints them, beside their fields.
            for (const ConfigWarning& warning : configWarnings(c)) {
                const QString key = str(warning.key);
                const QString field = m_form->fieldFor(key);
                const QString message = key == field ? str(warning.message) : str(warning.text());
                if (field.isEmpty()) {
                    fieldlessWarnings << message;
                } else if (!m_warnings.contains(field)) {
                    m_warnings.insert(field, message);
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
            QString field = m_form->fieldFor(key);
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
    m_form->markErrors(m_errors, m_warnings);
    // A warning no field shows (a training.schedule entry's value) goes under the summary.
    m_fieldlessWarnings->setText(
        fieldlessWarnings.isEmpty()
            ? QString()
            : tr("Warning: %1").arg(fieldlessWarnings.join(QLatin1Char('\n'))));
    m_fieldlessWarnings->setVisible(!fieldlessWarnings.isEmpty());
    if (wasValid != m_errors.isEmpty()) {
        Q_EMIT validityChanged(m_errors.isEmpty());
    }
}

void ExperimentPanel::setPendingKeys(const QStringList& keys) {
    m_form->setPending(keys, tr("Changed: applies on Reset (R)"));
}

QStringList ExperimentPanel::pendingKeys() const {
    return m_form->pendingKeys();
}

QWidget* ExperimentPanel::editor(const QString& key) const {
    const FormRow* row = m_form->row(key);
    return row != nullptr ? row->editor : nullptr;
}

QLabel* ExperimentPanel::errorLabel(const QString& key) const {
    const FormRow* row = m_form->row(key);
    return row != nullptr ? row->error : nullptr;
}

}  // namespace ensemble::ui

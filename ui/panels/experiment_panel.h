#pragma once

// The Experiment dock: every config key a person edits, as a form over the config JSON (the
// same file the CLI reads). Each edit re-validates through the engine's own parser, so the
// reasons shown are the engine's ("model.hidden[1]: expected a width between 1 and 65536, got
// 0"); the field the reason names is marked in place and Train stays disabled until it is
// fixed. Keys the form does not show are kept as loaded.

#include <QMap>
#include <QString>
#include <QWidget>

#include <memory>

#include <nlohmann/json.hpp>

class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QScrollArea;
class QSpinBox;

namespace ensemble::ui {

class FormBinding;
class LayerListEditor;

class ExperimentPanel : public QWidget {
    Q_OBJECT

  public:
    explicit ExperimentPanel(QWidget* parent = nullptr);
    ~ExperimentPanel() override;

    // Shows `config` (missing keys at their defaults). `preset` selects the preset combo's
    // entry; empty shows "Custom".
    void setConfig(const nlohmann::json& config, const QString& preset = {});
    // The form as a config: the loaded JSON with every key the form shows overwritten.
    nlohmann::json config() const;

    bool isValid() const { return m_errors.isEmpty(); }
    // Reasons by config key ("optimizer.lr" -> "expected a number ..."), empty when valid.
    QMap<QString, QString> errors() const { return m_errors; }
    // Values that parse but cannot train, by field (the engine's configWarnings, as the CLI
    // prints them); they do not make the form invalid.
    QMap<QString, QString> warnings() const { return m_warnings; }
    QString presetName() const;
    // A preset chosen in the box was not loaded (the person kept the trained run): the box
    // names the experiment shown again.
    void keepShownPreset();
    // Stop after "until paused": the run has no end (the app's run control; config() keeps the
    // last steps or epochs). setUntilPaused does not count as an edit.
    bool untilPaused() const;
    void setUntilPaused(bool untilPaused);
    // Continue: Stop after grows by the length it had when the experiment was loaded, counted
    // from where the run is (`step`, `epoch`). Not an edit.
    void extendStopAfter(int64_t step, double epoch);

    // Marks the rows of `keys` (edits that wait for Reset: the run has started); empty clears.
    void setPendingKeys(const QStringList& keys);
    QStringList pendingKeys() const;

    // For tests and the window: the editor of a key ("ensemble.members") and its error label.
    QWidget* editor(const QString& key) const;
    QLabel* errorLabel(const QString& key) const;
    QComboBox* presetCombo() const { return m_preset; }
    QComboBox* backendCombo() const { return m_backend; }
    LayerListEditor* layerEditor() const { return m_layers; }

  Q_SIGNALS:
    void edited();  // any change by the person (not by setConfig)
    void validityChanged(bool valid);
    void presetChosen(const QString& name);
    void regenerateRequested();
    void openRequested();
    void saveRequested();

  protected:
    void changeEvent(QEvent* event) override;

  private:
    void build();
    // One function per section, each in its own file (experiment_panel_dataset.cpp,
    // _model.cpp, _training.cpp): it builds the section's rows, and each row says how its key
    // loads, stores, checks and refreshes (FormBinding). Which rows apply is the binding's one
    // rule: the schema's conditions, and the form's own for the keys the schema leaves open.
    void buildDatasetSection(QFormLayout* form);
    void buildModelSection(QFormLayout* form);
    void buildEnsembleSection(QFormLayout* form);
    // The optimizer's keys and training's batch size, stop and adversarial training.
    void buildOptimizerSection(QFormLayout* form);
    void buildBackendSection(QFormLayout* form);
    // The active.* keys (experiment_panel_active.cpp).
    void buildActiveSection(QFormLayout* form);
    // The scroll area never scrolls sideways, so it must be as wide as the widest label and
    // editor need in the current font; recomputed when the font changes.
    void updateMinimumWidth();
    // In a docked Experiment dock: a dock the rows pushed wider goes back to the width it had
    // once they need less again (after mnist-cnn, the next preset's views get their room back).
    void followMinimumWidthInDock(int minimumBefore);
    void updateEnabled();
    void onEdited();
    void validate();
    // Whether the dataset as chosen is a regression one (cubic, sine, linear, csv regression).
    bool regressionTask() const;
    // Switches model.likelihood to the dataset's task (gaussian for regression, categorical
    // for classification) when the current one does not fit it.
    void syncLikelihood();
    // New layer rows get the form's wheel and key rules (FieldInputFilter).
    void installLayerInput();

    nlohmann::json m_base;
    bool m_loading = false;
    QMap<QString, QString> m_errors;
    QMap<QString, QString> m_warnings;
    std::unique_ptr<FormBinding> m_form;

    QComboBox* m_preset = nullptr;
    int m_shownPreset = -1;  // the box's entry for the experiment the form shows
    QComboBox* m_kind = nullptr;
    QComboBox* m_task = nullptr;
    QComboBox* m_likelihood = nullptr;
    QComboBox* m_modelKind = nullptr;
    LayerListEditor* m_layers = nullptr;
    QComboBox* m_stopMode = nullptr;
    QString m_finiteStopMode = QStringLiteral("steps");  // the mode before "until paused"
    int m_blockSteps = 1;  // Stop after as loaded: the length Continue adds
    double m_blockEpochs = 1.0;
    QSpinBox* m_steps = nullptr;
    QDoubleSpinBox* m_epochs = nullptr;
    QComboBox* m_backend = nullptr;
    QScrollArea* m_scroll = nullptr;
    QWidget* m_content = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_fieldlessWarnings = nullptr;
    int m_widthBeforeGrowth = 0;  // the dock's width before the rows pushed it wider
};

}  // namespace ensemble::ui

#pragma once

// The Experiment dock: every config key a person edits, as a form over the config JSON (the
// same file the CLI reads). Each edit re-validates through the engine's own parser, so the
// reasons shown are the engine's ("model.hidden[1]: expected a width between 1 and 65536, got
// 0"); the field the reason names is marked in place and Train stays disabled until it is
// fixed. Keys the form does not show are kept as loaded.

#include <QMap>
#include <QString>
#include <QWidget>

#include <nlohmann/json.hpp>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QPushButton;
class QScrollArea;
class QSpinBox;
class QStackedWidget;
class QToolButton;

namespace ensemble::ui {

class LayerListEditor;

class ExperimentPanel : public QWidget {
    Q_OBJECT

  public:
    explicit ExperimentPanel(QWidget* parent = nullptr);

    // Shows `config` (missing keys at their defaults). `preset` selects the preset combo's
    // entry; empty shows "Custom".
    void setConfig(const nlohmann::json& config, const QString& preset = {});
    // The form as a config: the loaded JSON with every key the form shows overwritten.
    nlohmann::json config() const;

    bool isValid() const { return m_errors.isEmpty(); }
    // Reasons by config key ("optimizer.lr" -> "expected a number ..."), empty when valid.
    QMap<QString, QString> errors() const { return m_errors; }
    QString presetName() const;
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
    // The scroll area never scrolls sideways, so it must be as wide as the widest label and
    // editor need in the current font; recomputed when the font changes.
    void updateMinimumWidth();
    void updateEnabled();
    void onEdited();
    void validate();
    void markErrors();
    QString fieldFor(const QString& errorKey) const;
    QLabel* addField(QFormLayout* form, const QString& key, const QString& label, QWidget* editor);
    // The Model section (model.kind, model.hidden for mlp, the layer list for cnn), kept apart
    // from the other sections: build, load from a config, store into one, enable.
    void buildModelSection(QFormLayout* form);
    void loadModelSection(const nlohmann::json& config);
    void storeModelSection(nlohmann::json& config) const;
    void updateModelSection();
    // New layer rows get the form's wheel and key rules (FieldInputFilter).
    void installLayerInput();
    // The form's own check of the Model section (text that is not a width).
    void checkModelSection();
    // Shows an error of model.layers at the row and field it names.
    void markLayerErrors();
    // The task rows of the Dataset section (dataset.task, dataset.target, model.likelihood,
    // dataset.features): built, loaded, stored and enabled apart from the rest of the form.
    void buildTaskFields(QFormLayout* data);
    void loadTaskFields(const nlohmann::json& c);
    void storeTaskFields(nlohmann::json& c) const;
    void updateTaskEnabled();
    // Whether the dataset as chosen is a regression one (cubic, sine, linear, csv regression).
    bool regressionTask() const;
    // Switches model.likelihood to the dataset's task (gaussian for regression, categorical
    // for classification) when the current one does not fit it.
    void syncLikelihood();

    nlohmann::json m_base;
    bool m_loading = false;
    QMap<QString, QString> m_errors;
    QMap<QString, QWidget*> m_editors;
    QMap<QString, QLabel*> m_errorLabels;

    QComboBox* m_preset = nullptr;
    QComboBox* m_kind = nullptr;
    QSpinBox* m_n = nullptr;
    QDoubleSpinBox* m_noise = nullptr;
    QDoubleSpinBox* m_rotations = nullptr;
    QSpinBox* m_classes = nullptr;
    QDoubleSpinBox* m_testFraction = nullptr;
    QSpinBox* m_dataSeed = nullptr;
    QLineEdit* m_path = nullptr;
    QToolButton* m_browse = nullptr;
    QPushButton* m_regenerate = nullptr;
    QComboBox* m_task = nullptr;
    QLineEdit* m_target = nullptr;
    QComboBox* m_likelihood = nullptr;
    QSpinBox* m_features = nullptr;
    QComboBox* m_modelKind = nullptr;
    QFormLayout* m_modelForm = nullptr;
    QLineEdit* m_hidden = nullptr;
    LayerListEditor* m_layers = nullptr;
    QComboBox* m_activation = nullptr;
    QSpinBox* m_members = nullptr;
    QComboBox* m_bootstrap = nullptr;
    QSpinBox* m_ensembleSeed = nullptr;
    QComboBox* m_optimizer = nullptr;
    QComboBox* m_lrMode = nullptr;
    QStackedWidget* m_lrStack = nullptr;
    QLineEdit* m_lrValue = nullptr;
    QLineEdit* m_lrLow = nullptr;
    QLineEdit* m_lrHigh = nullptr;
    QLineEdit* m_lrList = nullptr;
    QLineEdit* m_momentum = nullptr;
    QLineEdit* m_weightDecay = nullptr;
    QSpinBox* m_batch = nullptr;
    QDoubleSpinBox* m_adversarialEps = nullptr;  // training.adversarial_eps
    QComboBox* m_stopMode = nullptr;
    QString m_finiteStopMode = QStringLiteral("steps");  // the mode before "until paused"
    int m_blockSteps = 1;  // Stop after as loaded: the length Continue adds
    double m_blockEpochs = 1.0;
    QSpinBox* m_steps = nullptr;
    QDoubleSpinBox* m_epochs = nullptr;
    QComboBox* m_backend = nullptr;
    QSpinBox* m_threads = nullptr;
    QSpinBox* m_device = nullptr;
    QScrollArea* m_scroll = nullptr;
    QWidget* m_content = nullptr;
    QLabel* m_summary = nullptr;
};

}  // namespace ensemble::ui

#pragma once

// The Experiment form's rows bound to config keys. A row is built once with everything about
// its key: the schema's range, tooltip and choices, how it loads from and stores into a config,
// the form's own check, how it refreshes. Which rows apply is one rule for all of them: the
// schema's condition (KeySpec::when), plus the form's own for keys the schema leaves open
// (formCondition, panel_kinds.h), both read from the form's config. A row that does not apply
// shows "not used" (greyed, the reason in its tooltip) in its editor's place, or is hidden where
// another row takes its place (model.hidden and model.layers).

#include <QList>
#include <QMap>
#include <QString>
#include <QStringList>

#include <functional>
#include <memory>
#include <vector>

#include <nlohmann/json.hpp>

#include "config/config_schema.h"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QFormLayout;
class QLabel;
class QLineEdit;
class QSpinBox;
class QWidget;

namespace ensemble::ui {

// One row of the form: a config key (or keys edited together), its editor and its hooks.
struct FormRow {
    QString key;               // "dataset.n"
    QStringList otherKeys;     // further keys the row edits (training.epochs beside training.steps)
    QWidget* input = nullptr;  // the widget placed in the form: enabled or disabled as a whole
    QWidget* editor = nullptr;  // what ExperimentPanel::editor(key) returns (default: input)
    QWidget* cell = nullptr;    // input and error label: the row shown or hidden
    QFormLayout* form = nullptr;
    QLabel* label = nullptr;  // the row's name; bold while its edit waits for Reset
    QLabel* error = nullptr;
    // Shown in the editor's place while the row does not apply: a greyed editor would show a
    // value nothing uses (Classes 2 for MNIST), so the row says it is not used, and why.
    QLabel* unused = nullptr;
    QList<QWidget*> marked;  // outlined while the row has an error (default: editor)
    bool hideWhenInapplicable = false;
    bool applies = true;  // as of the last refresh

    std::function<void(const nlohmann::json& config)> load;  // config has every default
    std::function<void(nlohmann::json& config)> store;
    // The form's own check, before the parser (text that is not a number): the reason, or
    // empty. Run only while the row applies.
    std::function<QString()> check;
    // After applicability: what else follows the config (a stack page, a choice's items).
    std::function<void(const nlohmann::json& config)> refresh;
    // After the row's error label shows `error` (the layer list shows it at its row instead).
    std::function<void(const QString& error)> showError;

    QStringList keys() const { return QStringList{key} + otherKeys; }
};

// Whether a key's row applies to `config`: the schema's condition (keyApplies), and the form's
// own where it has one, its decider read the same way (with its default, itself applying).
bool rowApplies(const KeySpec& spec, const nlohmann::json& config);
// Why a row does not apply to `config`: "only when dataset.kind is csv; it is cubic".
QString whyRowIsUnused(const KeySpec& spec, const nlohmann::json& config);

class FormBinding {
  public:
    // `edited` is called on every change of a bound editor (the panel filters its own loads).
    FormBinding(QWidget* owner, std::function<void()> edited);

    // A row of `key` in `form` showing `input`, with the schema's help as its tooltip and an
    // error label under it. The caller sets load, store and the rest.
    FormRow& addRow(QFormLayout* form, const QString& key, const QString& label, QWidget* input);
    // Rows whose editor, range, choices, loading and storing all come from the key's schema row.
    QSpinBox* addSpin(QFormLayout* form, const char* key, const QString& label, int step = 1);
    QDoubleSpinBox* addDoubleSpin(QFormLayout* form, const char* key, const QString& label,
                                  double step, int decimals);
    QComboBox* addChoice(QFormLayout* form, const char* key, const QString& label);
    QCheckBox* addCheck(QFormLayout* form, const char* key, const QString& label);
    QLineEdit* addText(QFormLayout* form, const char* key, const QString& label,
                       const QString& placeholder = {});
    // A per-member key typed as numbers ("0.9" or "0.9, 0.95, ..."), checked by the form.
    QLineEdit* addNumbers(QFormLayout* form, const char* key, const QString& label);

    // Edits of an editor the caller built are reported too.
    void watch(QSpinBox* box);
    void watch(QDoubleSpinBox* box);
    void watch(QComboBox* box);
    void watch(QCheckBox* box);
    void watch(QLineEdit* edit);

    void load(const nlohmann::json& config) const;
    void store(nlohmann::json& config) const;
    // Applies, hides or disables each row for `config`, then refreshes it. True when a row was
    // shown or hidden (the form's width may change).
    bool refresh(const nlohmann::json& config);
    // The form's own checks of the applying rows, by key.
    void check(QMap<QString, QString>& errors) const;
    // Shows `errors` (by key) under their rows and outlines their editors; a row without an
    // error shows its entry of `warnings` (values that parse but cannot train) in amber.
    void markErrors(const QMap<QString, QString>& errors,
                    const QMap<QString, QString>& warnings = {}) const;
    void setPending(const QStringList& keys, const QString& tooltip) const;
    QStringList pendingKeys() const;

    // The key whose row shows an error of `errorKey` ("model.hidden[1]" -> "model.hidden");
    // empty when no row covers it.
    QString fieldFor(const QString& errorKey) const;
    // The row that edits `key` (its own or one of its otherKeys); null when none does.
    FormRow* row(const QString& key);
    const FormRow* row(const QString& key) const;

  private:
    QWidget* m_owner;
    std::function<void()> m_edited;
    std::vector<std::unique_ptr<FormRow>> m_rows;  // form order; rows stay where they are
};

// Spin boxes with the range of the key's schema row (a seed: any non-negative int).
QSpinBox* schemaSpinBox(const char* key, int step = 1);
QDoubleSpinBox* schemaDoubleSpinBox(const char* key, double step, int decimals);

// Value helpers shared by the rows. A key's value in `config`, or its schema default when
// absent or of the wrong type (a hand-edited file): the form shows something sensible and the
// parser names the problem.
const nlohmann::json& valueOf(const nlohmann::json& config, const char* key);
int intOf(const nlohmann::json& config, const char* key);  // clamped to int
QString textOf(const nlohmann::json& config, const char* key);
QString formatNumber(double v);
// A number or a list of numbers as the form writes it ("0.1, 0.2").
QString numbersText(const nlohmann::json& v);
// "0.1" -> 0.1; "0.1, 0.2" -> [0.1, 0.2]. False with `error` set when not numbers.
bool parseNumbers(const QString& text, nlohmann::json& out, QString& error);
// The numbers in `text`, or `text` as typed when it is not numbers (the form's check names
// it before the parser sees it).
nlohmann::json numbersOrText(const QString& text);
// Why `text` is not numbers; empty when it is.
QString numbersError(const QString& text);
// Splits a list the person typed ("32, 32", "32 32").
QStringList listItems(const QString& text);
// Selects the item whose data is `data` (unchanged when none has it).
void setCombo(QComboBox* box, const QString& data);
QString currentName(const QComboBox* box);
// Enables the items of `box` whose data (a choice's name) `enable` accepts.
void enableItems(QComboBox* box, const std::function<bool(const QString& name)>& enable);

}  // namespace ensemble::ui

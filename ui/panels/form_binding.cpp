#include "panels/form_binding.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>
#include <QSpinBox>
#include <QStandardItemModel>
#include <QStyle>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <limits>
#include <utility>

#include "panels/panel_kinds.h"
#include "std_string.h"

namespace ensemble::ui {

namespace {

using nlohmann::json;

int clampToInt(double v) {
    return static_cast<int>(
        std::clamp<double>(v, std::numeric_limits<int>::min(), std::numeric_limits<int>::max()));
}

// Where the form keeps a key's editor: a parent key covers its sub-keys and list items.
bool coversKey(const QString& field, const QString& key) {
    return key == field || key.startsWith(field + QLatin1Char('.')) ||
           key.startsWith(field + QLatin1Char('['));
}

// keyApplies() for a condition the schema does not hold (the form's own).
bool conditionHolds(const Condition& when, const json& config) {
    if (when.always()) {
        return true;
    }
    const KeySpec& decider = keySpec(when.key);
    if (!keyApplies(decider, config)) {
        return false;
    }
    const json& v = *valueOrDefault(config, decider);
    return v.is_string() && std::find(when.values.begin(), when.values.end(),
                                      v.get<std::string>()) != when.values.end();
}

void setStyleProperty(QWidget* w, const char* name, bool on) {
    if (w->property(name).toBool() != on) {
        w->setProperty(name, on);
        w->style()->unpolish(w);
        w->style()->polish(w);
    }
}

}  // namespace

bool rowApplies(const KeySpec& spec, const json& config) {
    return keyApplies(spec, config) && conditionHolds(formCondition(spec.key), config);
}

QString whyRowIsUnused(const KeySpec& spec, const json& config) {
    // The schema's condition first, then the form's; the first that fails is the reason, with
    // the deciding key's value as the config has it.
    for (const Condition* when : {&spec.when, &formCondition(spec.key)}) {
        if (when->always() || conditionHolds(*when, config)) {
            continue;
        }
        QString reason = str(conditionText(*when, false));
        const KeySpec& decider = keySpec(when->key);
        const json* value = valueOrDefault(config, decider);
        if (keyApplies(decider, config) && value != nullptr && value->is_string()) {
            reason += QObject::tr("; it is %1").arg(str(value->get<std::string>()));
        } else if (!keyApplies(decider, config)) {
            reason += QObject::tr("; %1 does not apply either").arg(str(when->key));
        }
        return reason;
    }
    return {};
}

FormBinding::FormBinding(QWidget* owner, std::function<void()> edited)
    : m_owner(owner), m_edited(std::move(edited)) {}

FormRow& FormBinding::addRow(QFormLayout* form, const QString& key, const QString& label,
                             QWidget* input) {
    // The tooltip is the key's meaning from the schema, the words of docs/configuration.md.
    const KeySpec& spec = keySpec(key.toStdString());
    input->setToolTip(QStringLiteral("%1 (%2)").arg(str(plainHelp(spec)), key));
    input->setObjectName(key);
    // The editor and its error share one field cell: the error wraps under the editor at the
    // cell's width and its row grows with it. (A spanning QFormLayout row of its own got a
    // height for the wrong width and was drawn over the next row.)
    auto* cell = new QWidget;
    auto* column = new QVBoxLayout(cell);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(2);
    column->addWidget(input);
    auto* error = new QLabel;
    error->setObjectName(key + QStringLiteral(".error"));
    error->setWordWrap(true);
    error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    error->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Minimum);
    // Red for an error; amber for a warning (a value that parses but cannot train).
    error->setStyleSheet(
        QStringLiteral("QLabel { color: #b03a2e; font-size: 11px; } "
                       "QLabel[warning=\"true\"] { color: #8a5a00; }"));
    error->setVisible(false);
    auto* unused = new QLabel(QObject::tr("not used"));
    unused->setObjectName(key + QStringLiteral(".unused"));
    unused->setEnabled(false);  // greyed, as the editor it stands for would be
    unused->setMinimumHeight(input->sizeHint().height());
    unused->setVisible(false);
    column->addWidget(unused);
    column->addWidget(error);
    // The label lines up with the editor, not with the middle of editor and error.
    auto* name = new QLabel(label);
    name->setObjectName(key + QStringLiteral(".label"));
    name->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
    name->setMinimumHeight(input->sizeHint().height());
    form->addRow(name, cell);

    auto row = std::make_unique<FormRow>();
    row->key = key;
    row->input = input;
    row->editor = input;
    row->cell = cell;
    row->form = form;
    row->label = name;
    row->error = error;
    row->unused = unused;
    row->marked = {input};
    m_rows.push_back(std::move(row));
    return *m_rows.back();
}

QSpinBox* FormBinding::addSpin(QFormLayout* form, const char* key, const QString& label, int step) {
    const KeySpec& spec = keySpec(key);
    QSpinBox* box = schemaSpinBox(key, step);
    FormRow& row = addRow(form, str(key), label, box);
    row.load = [box, key](const json& c) { box->setValue(intOf(c, key)); };
    row.store = [box, spec = &spec](json& c) { c[spec->section()][spec->name()] = box->value(); };
    watch(box);
    return box;
}

QDoubleSpinBox* FormBinding::addDoubleSpin(QFormLayout* form, const char* key, const QString& label,
                                           double step, int decimals) {
    const KeySpec& spec = keySpec(key);
    QDoubleSpinBox* box = schemaDoubleSpinBox(key, step, decimals);
    FormRow& row = addRow(form, str(key), label, box);
    row.load = [box, key](const json& c) { box->setValue(valueOf(c, key).get<double>()); };
    row.store = [box, spec = &spec](json& c) { c[spec->section()][spec->name()] = box->value(); };
    watch(box);
    return box;
}

QComboBox* FormBinding::addChoice(QFormLayout* form, const char* key, const QString& label) {
    const KeySpec& spec = keySpec(key);
    auto* box = new QComboBox;
    for (const Choice& c : spec.choices) {
        box->addItem(QString::fromUtf8(c.label), QString::fromUtf8(c.name));
    }
    FormRow& row = addRow(form, str(key), label, box);
    row.load = [box, key](const json& c) { setCombo(box, textOf(c, key)); };
    row.store = [box, spec = &spec](json& c) {
        c[spec->section()][spec->name()] = currentName(box).toStdString();
    };
    watch(box);
    return box;
}

QCheckBox* FormBinding::addCheck(QFormLayout* form, const char* key, const QString& label) {
    const KeySpec& spec = keySpec(key);
    auto* box = new QCheckBox;
    FormRow& row = addRow(form, str(key), label, box);
    row.load = [box, key](const json& c) {
        const json& v = valueOf(c, key);
        box->setChecked(v.is_boolean() && v.get<bool>());
    };
    row.store = [box, spec = &spec](json& c) {
        c[spec->section()][spec->name()] = box->isChecked();
    };
    watch(box);
    return box;
}

QLineEdit* FormBinding::addText(QFormLayout* form, const char* key, const QString& label,
                                const QString& placeholder) {
    const KeySpec& spec = keySpec(key);
    auto* edit = new QLineEdit;
    edit->setPlaceholderText(placeholder);
    FormRow& row = addRow(form, str(key), label, edit);
    row.load = [edit, key](const json& c) { edit->setText(textOf(c, key)); };
    row.store = [edit, spec = &spec](json& c) {
        c[spec->section()][spec->name()] = edit->text().trimmed().toStdString();
    };
    watch(edit);
    return edit;
}

QLineEdit* FormBinding::addNumbers(QFormLayout* form, const char* key, const QString& label) {
    const KeySpec& spec = keySpec(key);
    auto* edit = new QLineEdit;
    FormRow& row = addRow(form, str(key), label, edit);
    row.load = [edit, spec = &spec](const json& c) {
        edit->setText(numbersText(*valueOrDefault(c, *spec)));
    };
    row.store = [edit, spec = &spec](json& c) {
        c[spec->section()][spec->name()] = numbersOrText(edit->text());
    };
    row.check = [edit] { return numbersError(edit->text()); };
    watch(edit);
    return edit;
}

void FormBinding::watch(QSpinBox* box) {
    QObject::connect(box, &QSpinBox::valueChanged, m_owner, [this] { m_edited(); });
}

void FormBinding::watch(QDoubleSpinBox* box) {
    QObject::connect(box, &QDoubleSpinBox::valueChanged, m_owner, [this] { m_edited(); });
}

void FormBinding::watch(QComboBox* box) {
    QObject::connect(box, &QComboBox::currentIndexChanged, m_owner, [this] { m_edited(); });
}

void FormBinding::watch(QCheckBox* box) {
    QObject::connect(box, &QCheckBox::toggled, m_owner, [this] { m_edited(); });
}

void FormBinding::watch(QLineEdit* edit) {
    QObject::connect(edit, &QLineEdit::textChanged, m_owner, [this] { m_edited(); });
}

void FormBinding::load(const json& config) const {
    for (const auto& row : m_rows) {
        if (row->load) {
            row->load(config);
        }
    }
}

void FormBinding::store(json& config) const {
    for (const auto& row : m_rows) {
        if (row->store) {
            row->store(config);
        }
    }
}

bool FormBinding::refresh(const json& config) {
    bool shownOrHidden = false;
    for (const auto& row : m_rows) {
        row->applies = rowApplies(keySpec(row->key.toStdString()), config);
        if (row->hideWhenInapplicable) {
            shownOrHidden |= row->cell->isVisibleTo(m_owner) != row->applies;
            row->form->setRowVisible(row->cell, row->applies);
        } else {
            // The editor keeps its value for when the row applies again; meanwhile it is out of
            // sight and out of the tab order, and "not used" stands in its place.
            row->input->setEnabled(row->applies);
            row->input->setVisible(row->applies);
            row->unused->setVisible(!row->applies);
            row->unused->setToolTip(
                row->applies ? QString()
                             : QObject::tr("%1 is not used: %2")
                                   .arg(row->key)
                                   .arg(whyRowIsUnused(keySpec(row->key.toStdString()), config)));
        }
        if (row->refresh) {
            row->refresh(config);
        }
    }
    return shownOrHidden;
}

void FormBinding::check(QMap<QString, QString>& errors) const {
    for (const auto& row : m_rows) {
        if (row->applies && row->check) {
            const QString error = row->check();
            if (!error.isEmpty()) {
                errors.insert(row->key, error);
            }
        }
    }
}

void FormBinding::markErrors(const QMap<QString, QString>& errors,
                             const QMap<QString, QString>& warnings) const {
    for (const auto& row : m_rows) {
        QString shown;
        QString warning;
        bool invalid = false;
        bool warned = false;
        for (const QString& key : row->keys()) {
            invalid |= errors.contains(key);
            warned |= warnings.contains(key);
            if (shown.isEmpty()) {
                shown = errors.value(key);
            }
            if (warning.isEmpty()) {
                warning = warnings.value(key);
            }
        }
        // An error outranks a warning: the config must parse before it can be trained.
        const bool showsWarning = shown.isEmpty() && !warning.isEmpty();
        if (showsWarning) {
            shown = QObject::tr("Warning: %1").arg(warning);
        }
        row->error->setText(shown);
        row->error->setVisible(!shown.isEmpty());
        setStyleProperty(row->error, "warning", showsWarning);
        if (row->showError) {
            row->showError(showsWarning ? QString() : shown);
        }
        for (QWidget* w : row->marked) {
            setStyleProperty(w, "invalid", invalid);
            setStyleProperty(w, "warning", warned && !invalid);
        }
    }
}

void FormBinding::setPending(const QStringList& keys, const QString& tooltip) const {
    for (const auto& row : m_rows) {
        const QStringList own = row->keys();
        const bool pending =
            std::any_of(own.begin(), own.end(), [&](const QString& k) { return keys.contains(k); });
        if (row->label->property("pending").toBool() != pending) {
            row->label->setToolTip(pending ? tooltip : QString());
            setStyleProperty(row->label, "pending", pending);
        }
    }
}

QStringList FormBinding::pendingKeys() const {
    QStringList keys;
    for (const auto& row : m_rows) {
        if (row->label->property("pending").toBool()) {
            keys << row->key;
        }
    }
    return keys;
}

QString FormBinding::fieldFor(const QString& errorKey) const {
    QString best;
    for (const auto& row : m_rows) {
        for (const QString& key : row->keys()) {
            if (coversKey(key, errorKey) && key.size() > best.size()) {
                best = key;
            }
        }
    }
    return best;
}

FormRow* FormBinding::row(const QString& key) {
    return const_cast<FormRow*>(std::as_const(*this).row(key));
}

const FormRow* FormBinding::row(const QString& key) const {
    for (const auto& row : m_rows) {
        if (row->keys().contains(key)) {
            return row.get();
        }
    }
    return nullptr;
}

QSpinBox* schemaSpinBox(const char* key, int step) {
    const KeySpec& spec = keySpec(key);
    auto* box = new QSpinBox;
    if (spec.type == KeyType::Seed) {
        box->setRange(0, std::numeric_limits<int>::max());
    } else {
        box->setRange(clampToInt(spec.min), clampToInt(spec.max));
    }
    box->setSingleStep(step);
    box->setGroupSeparatorShown(true);
    box->setKeyboardTracking(true);
    return box;
}

QDoubleSpinBox* schemaDoubleSpinBox(const char* key, double step, int decimals) {
    const KeySpec& spec = keySpec(key);
    auto* box = new QDoubleSpinBox;
    // An excluded end (model.dropout's (0, 1)) becomes the nearest value the box can show.
    const double unit = std::pow(10.0, -decimals);
    box->setRange(spec.minExclusive ? spec.min + unit : spec.min,
                  spec.maxExclusive ? spec.max - unit : spec.max);
    box->setSingleStep(step);
    box->setDecimals(decimals);
    return box;
}

const json& valueOf(const json& config, const char* key) {
    const KeySpec& spec = keySpec(key);
    const json& v = *valueOrDefault(config, spec);
    return v.type() == spec.defaultValue.type() || (v.is_number() && spec.defaultValue.is_number())
               ? v
               : spec.defaultValue;
}

int intOf(const json& config, const char* key) {
    const json& v = valueOf(config, key);
    if (v.is_number_integer()) {
        const int64_t x = v.get<int64_t>();
        return static_cast<int>(std::clamp<int64_t>(x, std::numeric_limits<int>::min(),
                                                    std::numeric_limits<int>::max()));
    }
    return static_cast<int>(v.get<double>());
}

QString textOf(const json& config, const char* key) {
    return str(valueOf(config, key).get<std::string>());
}

QString formatNumber(double v) {
    return QString::number(v, 'g', 6);
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

QStringList listItems(const QString& text) {
    return text.split(QRegularExpression(QStringLiteral("[,;\\s]+")), Qt::SkipEmptyParts);
}

bool parseNumbers(const QString& text, json& out, QString& error) {
    const QStringList parts = listItems(text);
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

json numbersOrText(const QString& text) {
    json v;
    QString error;
    return parseNumbers(text, v, error) ? v : json(text.toStdString());
}

QString numbersError(const QString& text) {
    json v;
    QString error;
    return parseNumbers(text, v, error) ? QString() : error;
}

void setCombo(QComboBox* box, const QString& data) {
    const int i = box->findData(data);
    if (i >= 0) {
        box->setCurrentIndex(i);
    }
}

QString currentName(const QComboBox* box) {
    return box->currentData().toString();
}

void enableItems(QComboBox* box, const std::function<bool(const QString& name)>& enable) {
    auto* items = qobject_cast<QStandardItemModel*>(box->model());
    if (items == nullptr) {
        return;
    }
    for (int i = 0; i < box->count(); ++i) {
        if (QStandardItem* item = items->item(i)) {
            item->setEnabled(enable(box->itemData(i).toString()));
        }
    }
}

}  // namespace ensemble::ui

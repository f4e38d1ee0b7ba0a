// The Model section of the Experiment panel: model.kind, the MLP's widths or the CNN's layer
// list (one shown at a time, as the schema's conditions say), and the activation.

#include <QComboBox>
#include <QFormLayout>
#include <QLabel>
#include <QLineEdit>
#include <QRegularExpression>

#include "panels/experiment_panel.h"
#include "panels/field_input.h"
#include "panels/form_binding.h"
#include "panels/layer_list_editor.h"
#include "panels/panel_kinds.h"

namespace ensemble::ui {

namespace {

using nlohmann::json;

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
    m_modelKind = m_form->addChoice(model, "model.kind", tr("Kind"));
    // Kinds that read images need an image dataset. A config that already says cnn keeps it
    // selectable, so the error can be read and the kind switched back.
    m_form->row(QStringLiteral("model.kind"))->refresh = [this](const json&) {
        const bool images = isImageDataset(currentName(m_kind).toStdString());
        enableItems(m_modelKind, [images](const QString& name) {
            return images || !modelNeedsImages(name.toStdString());
        });
        const QVariant why =
            images ? QVariant()
                   : QVariant(tr("CNN members need an image dataset (MNIST or Fashion-MNIST): "
                                 "they read [1, 28, 28] images"));
        for (int i = 0; i < m_modelKind->count(); ++i) {
            if (modelNeedsImages(m_modelKind->itemData(i).toString().toStdString())) {
                m_modelKind->setItemData(i, why, Qt::ToolTipRole);
            }
        }
    };

    auto* hidden = new QLineEdit;
    hidden->setPlaceholderText(QStringLiteral("32, 32"));
    FormRow& hiddenRow =
        m_form->addRow(model, QStringLiteral("model.hidden"), tr("Hidden layers"), hidden);
    hiddenRow.hideWhenInapplicable = true;
    hiddenRow.load = [hidden](const json& c) {
        QStringList widths;
        for (const auto& w : valueOf(c, "model.hidden")) {
            widths << QString::fromStdString(w.dump());
        }
        hidden->setText(widths.join(QStringLiteral(", ")));
    };
    // A width that is not a number is stored as typed: the form's check names it first.
    hiddenRow.store = [hidden](json& c) {
        json widths = json::array();
        for (const QString& p : listItems(hidden->text())) {
            bool ok = false;
            const int w = p.toInt(&ok);
            widths.push_back(ok ? json(w) : json(p.toStdString()));
        }
        c["model"]["hidden"] = widths;
    };
    hiddenRow.check = [hidden] {
        for (const QString& p : listItems(hidden->text())) {
            bool ok = false;
            p.toInt(&ok);
            if (!ok) {
                return tr("\"%1\" is not a layer width; write widths like 32, 32").arg(p);
            }
        }
        return QString();
    };
    m_form->watch(hidden);

    m_layers = new LayerListEditor;
    FormRow& layersRow =
        m_form->addRow(model, QStringLiteral("model.layers"), tr("Layers"), m_layers);
    // The row's tooltip is the schema's long help; each field has its own.
    m_layers->setToolTip(QString());
    layersRow.hideWhenInapplicable = true;
    // A config of the other kind has no model.layers: the editor then offers the recipe. The
    // spin boxes only hold integers, so the parser judges the rest (no check of the form's).
    layersRow.load = [this](const json& c) {
        const bool hasLayers =
            c.contains("model") && c["model"].is_object() && c["model"].contains("layers");
        m_layers->setLayers(hasLayers ? c["model"]["layers"]
                                      : keySpec("model.layers").defaultValue);
        installLayerInput();
    };
    layersRow.store = [this](json& c) { c["model"]["layers"] = m_layers->layers(); };
    // An error that names a layer is shown at its row and field, the field's name first.
    layersRow.showError = [this, label = layersRow.error](const QString& message) {
        QString field;
        const int row = layerErrorRow(message, field);
        if (row >= 0 && row < m_layers->rowCount()) {
            const QString reason = message.mid(message.indexOf(QStringLiteral(": ")) + 2);
            m_layers->showError(
                row, field, field.isEmpty() ? reason : QStringLiteral("%1: %2").arg(field, reason));
            label->setVisible(false);
        } else {
            m_layers->showError(-1, QString(), QString());
        }
    };
    connect(m_layers, &LayerListEditor::edited, this, &ExperimentPanel::onEdited);
    // New rows need the form's input rules (the wheel scrolls the form) and a wider panel.
    connect(m_layers, &LayerListEditor::edited, this, [this] {
        installLayerInput();
        updateMinimumWidth();
    });

    m_form->addChoice(model, "model.activation", tr("Activation"));
}

void ExperimentPanel::installLayerInput() {
    // The panel's filter (made after the form is built); installing again is harmless.
    if (auto* filter = findChild<FieldInputFilter*>(QString(), Qt::FindDirectChildrenOnly)) {
        filter->install(m_layers);
    }
}

}  // namespace ensemble::ui

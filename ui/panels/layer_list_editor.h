#pragma once

// The Model section's editor of `model.layers` (model.kind cnn): one row per layer, conv, pool,
// dense or dropout, with its fields, and buttons to add, remove and reorder rows. The editor only
// shapes the list; the engine's parser judges it, and the panel hands the parser's reason
// back with showError() at the row and field it names ("model.layers[2].kernel").

#include <QList>
#include <QString>
#include <QWidget>

#include <nlohmann/json.hpp>

#include "model/architecture.h"

class QComboBox;
class QDoubleSpinBox;
class QFrame;
class QLabel;
class QPushButton;
class QSpinBox;
class QStackedWidget;
class QToolButton;
class QVBoxLayout;

namespace ensemble::ui {

class LayerListEditor : public QWidget {
    Q_OBJECT

  public:
    explicit LayerListEditor(QWidget* parent = nullptr);

    // Shows `layers` (a model.layers value). A list the rows cannot show as written (a
    // hand-edited file: an unknown type, a kernel of 0, not a list) is kept as it is, so the
    // parser still names the problem, until the person edits a row.
    void setLayers(const nlohmann::json& layers);
    nlohmann::json layers() const;

    int rowCount() const { return static_cast<int>(m_rows.size()); }
    // Row `row`'s type ("conv", "pool", "dense", "dropout").
    QString rowType(int row) const;
    // The editor of a row's field: "type", "filters", "kernel", "stride", "padding", "kind",
    // "size", "units" or "rate" (null when out of range).
    QWidget* fieldEditor(int row, const QString& field) const;
    QLabel* rowError(int row) const;
    QWidget* rowWidget(int row) const;

    // Row and field actions, as the buttons do them.
    void addLayer(LayerKind kind);
    void removeLayer(int row);
    void moveLayer(int row, int delta);
    void resetToRecipe();

    // Marks the row and field an error names; `row` < 0 clears every mark.
    void showError(int row, const QString& field, const QString& message);

  Q_SIGNALS:
    void edited();

  private:
    struct Row {
        QFrame* frame = nullptr;
        QLabel* index = nullptr;
        QComboBox* type = nullptr;
        QStackedWidget* fields = nullptr;
        QSpinBox* filters = nullptr;
        QSpinBox* kernel = nullptr;
        QSpinBox* stride = nullptr;
        QComboBox* padding = nullptr;
        QComboBox* poolKind = nullptr;
        QSpinBox* size = nullptr;
        QSpinBox* units = nullptr;
        QDoubleSpinBox* l2 = nullptr;  // dense: its weights' L2 coefficient
        QDoubleSpinBox* rate = nullptr;
        QToolButton* up = nullptr;
        QToolButton* down = nullptr;
        QToolButton* remove = nullptr;
        QLabel* error = nullptr;
    };

    Row makeRow();
    void setRow(Row& row, const nlohmann::json& layer);
    nlohmann::json rowJson(const Row& row) const;
    void rebuild(const nlohmann::json& layers);
    void renumber();
    void personEdited();

    QVBoxLayout* m_list = nullptr;
    QList<Row> m_rows;
    // A loaded list the rows cannot show as written, kept until the person edits.
    nlohmann::json m_raw;
    bool m_rawActive = false;
    bool m_loading = false;
};

}  // namespace ensemble::ui

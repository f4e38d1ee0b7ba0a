#include "panels/layer_list_editor.h"

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFrame>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>
#include <QSpinBox>
#include <QStackedWidget>
#include <QStyle>
#include <QToolButton>
#include <QVBoxLayout>

#include <algorithm>

#include "model/architecture.h"

namespace ensemble::ui {

namespace {

using nlohmann::json;

// The parser's limits (model/architecture.cpp): a spin box cannot leave them, so what it
// still rejects is a list that does not fit the image (too many pools, a conv after a dense).
constexpr int kMaxUnits = 65536;
constexpr int kMaxKernel = 64;

// The names of E's rows (model/architecture.h), in table order.
template <NamedEnum E>
QStringList namesOf() {
    QStringList names;
    for (const auto& row : EnumNames<E>::table) {
        names << QString::fromUtf8(row.name);
    }
    return names;
}

QString nameOf(auto value) {
    return QString::fromUtf8(toString(value));
}

// The layer a "+ type" button adds: Flax's conv and pool, a dense of 128 units, dropout 0.5
// (Gal et al.'s rate before the output layer).
constexpr double kNewDropoutRate = 0.5;
// The largest l2 the box offers (the parser takes up to 1e6; Gal et al.'s c is 3.5).
constexpr double kMaxL2 = 1000.0;
// The largest rate the box offers: the parser takes [0, 1), the box shows three decimals.
constexpr double kMaxRate = 0.999;

json newLayer(LayerKind kind) {
    LayerSpec s;
    s.kind = kind;
    s.filters = 32;
    s.kernel = 3;
    s.size = 2;
    s.units = 128;
    s.rate = kNewDropoutRate;
    return layersToJson({s})[0];
}

QSpinBox* spin(int lo, int hi, const QString& name, const QString& tip) {
    auto* s = new QSpinBox;
    s->setRange(lo, hi);
    s->setObjectName(name);
    s->setToolTip(tip);
    s->setKeyboardTracking(true);
    return s;
}

QComboBox* choices(const QStringList& items, const QString& name, const QString& tip) {
    auto* box = new QComboBox;
    for (const QString& item : items) {
        box->addItem(item, item);
    }
    box->setObjectName(name);
    box->setToolTip(tip);
    return box;
}

// The integer `name` of `layer`, or `fallback` when absent or not an integer.
int intField(const json& layer, const char* name, int fallback) {
    if (layer.is_object() && layer.contains(name) && layer[name].is_number_integer()) {
        return static_cast<int>(std::clamp<int64_t>(layer[name].get<int64_t>(), 0, kMaxUnits));
    }
    return fallback;
}

// A dropout's rate, or `fallback` when absent or not a number the box can show.
double rateField(const json& layer, double fallback) {
    if (layer.is_object() && layer.contains("rate") && layer["rate"].is_number()) {
        const double rate = layer["rate"].get<double>();
        return rate >= 0.0 && rate <= kMaxRate ? rate : fallback;
    }
    return fallback;
}

// A dense layer's l2, or 0 when absent or not a number the box can show.
double l2Field(const json& layer) {
    if (layer.is_object() && layer.contains("l2") && layer["l2"].is_number()) {
        const double l2 = layer["l2"].get<double>();
        return l2 >= 0.0 && l2 <= kMaxL2 ? l2 : 0.0;
    }
    return 0.0;
}

QString textField(const json& layer, const char* name, const QString& fallback) {
    if (layer.is_object() && layer.contains(name) && layer[name].is_string()) {
        return QString::fromStdString(layer[name].get<std::string>());
    }
    return fallback;
}

void setInvalid(QWidget* w, bool invalid) {
    if (w->property("invalid").toBool() != invalid) {
        w->setProperty("invalid", invalid);
        w->style()->unpolish(w);
        w->style()->polish(w);
    }
}

}  // namespace

LayerListEditor::LayerListEditor(QWidget* parent) : QWidget(parent) {
    auto* column = new QVBoxLayout(this);
    column->setContentsMargins(0, 0, 0, 0);
    column->setSpacing(4);
    m_list = new QVBoxLayout;
    m_list->setContentsMargins(0, 0, 0, 0);
    m_list->setSpacing(4);
    column->addLayout(m_list);

    // Three buttons a row: the five in one row made the panel's dock wider than the views
    // leave it (tst_readable).
    constexpr int kButtonsPerRow = 3;
    auto* buttons = new QGridLayout;
    buttons->setContentsMargins(0, 0, 0, 0);
    buttons->setSpacing(4);
    int cell = 0;
    for (const auto& row : EnumNames<LayerKind>::table) {
        const QString type = QString::fromUtf8(row.name);
        auto* add = new QPushButton(tr("+ %1").arg(type));
        add->setObjectName(QStringLiteral("addLayer.%1").arg(type));
        add->setToolTip(
            row.value == LayerKind::Dense || row.value == LayerKind::Dropout
                ? tr("Add a %1 layer at the end (before the implicit output layer)").arg(type)
                : tr("Add a %1 layer after the last conv or pool layer").arg(type));
        const LayerKind kind = row.value;
        connect(add, &QPushButton::clicked, this, [this, kind] { addLayer(kind); });
        buttons->addWidget(add, cell / kButtonsPerRow, cell % kButtonsPerRow);
        ++cell;
    }
    auto* recipe = new QPushButton(tr("Recipe"));
    recipe->setObjectName(QStringLiteral("layersRecipe"));
    recipe->setToolTip(
        tr("Back to the default stack, Flax's MNIST CNN: conv 32 3x3, avg-pool 2, "
           "conv 64 3x3, avg-pool 2, dense 256"));
    connect(recipe, &QPushButton::clicked, this, &LayerListEditor::resetToRecipe);
    buttons->addWidget(recipe, cell / kButtonsPerRow, cell % kButtonsPerRow);
    buttons->setColumnStretch(kButtonsPerRow, 1);
    column->addLayout(buttons);

    setLayers(layersToJson(recipeLayers()));
}

LayerListEditor::Row LayerListEditor::makeRow() {
    Row r;
    r.frame = new QFrame;
    r.frame->setFrameShape(QFrame::StyledPanel);
    auto* outer = new QVBoxLayout(r.frame);
    outer->setContentsMargins(4, 3, 4, 3);
    outer->setSpacing(2);

    auto* head = new QHBoxLayout;
    head->setSpacing(4);
    r.index = new QLabel;
    r.index->setMinimumWidth(r.index->fontMetrics().horizontalAdvance(QStringLiteral("[00]")));
    r.type = choices(namesOf<LayerKind>(), QStringLiteral("type"), tr("The layer's type"));
    r.up = new QToolButton;
    r.up->setIcon(style()->standardIcon(QStyle::SP_ArrowUp));
    r.up->setToolTip(tr("Move up"));
    r.up->setObjectName(QStringLiteral("up"));
    r.down = new QToolButton;
    r.down->setIcon(style()->standardIcon(QStyle::SP_ArrowDown));
    r.down->setToolTip(tr("Move down"));
    r.down->setObjectName(QStringLiteral("down"));
    r.remove = new QToolButton;
    r.remove->setIcon(style()->standardIcon(QStyle::SP_TitleBarCloseButton));
    r.remove->setToolTip(tr("Remove this layer"));
    r.remove->setObjectName(QStringLiteral("remove"));
    head->addWidget(r.index);
    head->addWidget(r.type, 1);
    head->addWidget(r.up);
    head->addWidget(r.down);
    head->addWidget(r.remove);
    outer->addLayout(head);

    // The fields of each type, in a stack the type combo turns.
    r.fields = new QStackedWidget;
    auto grid = [](QWidget* page) {
        auto* g = new QGridLayout(page);
        g->setContentsMargins(0, 0, 0, 0);
        g->setHorizontalSpacing(4);
        g->setVerticalSpacing(2);
        return g;
    };
    auto* conv = new QWidget;
    QGridLayout* cg = grid(conv);
    r.filters = spin(1, kMaxUnits, QStringLiteral("filters"), tr("Output channels F"));
    r.kernel = spin(1, kMaxKernel, QStringLiteral("kernel"), tr("Kernel size k (k x k)"));
    r.stride = spin(1, kMaxKernel, QStringLiteral("stride"), tr("Stride"));
    r.padding = choices(namesOf<Padding>(), QStringLiteral("padding"),
                        tr("same: the output keeps ceil(in / stride) positions; valid: no "
                           "padding"));
    cg->addWidget(new QLabel(tr("filters")), 0, 0);
    cg->addWidget(r.filters, 0, 1);
    cg->addWidget(new QLabel(tr("kernel")), 0, 2);
    cg->addWidget(r.kernel, 0, 3);
    cg->addWidget(new QLabel(tr("stride")), 1, 0);
    cg->addWidget(r.stride, 1, 1);
    cg->addWidget(new QLabel(tr("padding")), 1, 2);
    cg->addWidget(r.padding, 1, 3);
    cg->setColumnStretch(1, 1);
    cg->setColumnStretch(3, 1);
    auto* pool = new QWidget;
    QGridLayout* pg = grid(pool);
    r.poolKind = choices(namesOf<PoolKind>(), QStringLiteral("kind"),
                         tr("Average or maximum over each window"));
    r.size = spin(1, kMaxKernel, QStringLiteral("size"), tr("Window size s (stride s)"));
    pg->addWidget(new QLabel(tr("kind")), 0, 0);
    pg->addWidget(r.poolKind, 0, 1);
    pg->addWidget(new QLabel(tr("size")), 0, 2);
    pg->addWidget(r.size, 0, 3);
    pg->setColumnStretch(1, 1);
    pg->setColumnStretch(3, 1);
    auto* dense = new QWidget;
    QGridLayout* dg = grid(dense);
    r.units = spin(1, kMaxUnits, QStringLiteral("units"),
                   tr("Units (the input is flattened "
                      "before the first dense layer)"));
    dg->addWidget(new QLabel(tr("units")), 0, 0);
    dg->addWidget(r.units, 0, 1);
    r.l2 = new QDoubleSpinBox;
    r.l2->setRange(0.0, kMaxL2);
    r.l2->setDecimals(4);
    r.l2->setSingleStep(0.5);
    r.l2->setObjectName(QStringLiteral("l2"));
    r.l2->setToolTip(
        tr("L2 penalty c: c x sum(W^2) of the layer's weights (not its bias) is added to the "
           "loss (Keras's l2(c)), under every optimizer; 0: none. With active.l2_per_label "
           "each round uses c / N"));
    r.l2->setKeyboardTracking(true);
    dg->addWidget(new QLabel(tr("l2")), 0, 2);
    dg->addWidget(r.l2, 0, 3);
    dg->setColumnStretch(1, 1);
    dg->setColumnStretch(3, 1);
    auto* dropout = new QWidget;
    QGridLayout* rg = grid(dropout);
    r.rate = new QDoubleSpinBox;
    r.rate->setRange(0.0, kMaxRate);
    r.rate->setDecimals(3);
    r.rate->setSingleStep(0.05);
    r.rate->setObjectName(QStringLiteral("rate"));
    r.rate->setToolTip(
        tr("The probability of dropping each value in training (inverted dropout: "
           "the kept ones are scaled by 1/(1 - rate)); none at prediction"));
    r.rate->setKeyboardTracking(true);
    rg->addWidget(new QLabel(tr("rate")), 0, 0);
    rg->addWidget(r.rate, 0, 1);
    rg->setColumnStretch(1, 1);
    // In the order of EnumNames<LayerKind>: the type combo's index is the page's.
    r.fields->addWidget(conv);
    r.fields->addWidget(pool);
    r.fields->addWidget(dense);
    r.fields->addWidget(dropout);
    outer->addWidget(r.fields);

    r.error = new QLabel;
    r.error->setObjectName(QStringLiteral("error"));
    r.error->setWordWrap(true);
    r.error->setTextInteractionFlags(Qt::TextSelectableByMouse);
    r.error->setSizePolicy(QSizePolicy::Ignored, QSizePolicy::Minimum);
    r.error->setStyleSheet(QStringLiteral("color: #b03a2e; font-size: 11px;"));
    r.error->setVisible(false);
    outer->addWidget(r.error);

    // The stacked pages keep the height of the largest; a row is only as tall as its type.
    connect(r.type, &QComboBox::currentIndexChanged, r.fields, [fields = r.fields](int i) {
        fields->setCurrentIndex(i);
        for (int p = 0; p < fields->count(); ++p) {
            fields->widget(p)->setSizePolicy(
                QSizePolicy::Preferred, p == i ? QSizePolicy::Preferred : QSizePolicy::Ignored);
        }
        fields->adjustSize();
    });
    QFrame* frame = r.frame;
    auto rowOf = [this, frame] {
        for (int i = 0; i < m_rows.size(); ++i) {
            if (m_rows[i].frame == frame) {
                return i;
            }
        }
        return -1;
    };
    connect(r.up, &QToolButton::clicked, this, [this, rowOf] { moveLayer(rowOf(), -1); });
    connect(r.down, &QToolButton::clicked, this, [this, rowOf] { moveLayer(rowOf(), 1); });
    connect(r.remove, &QToolButton::clicked, this, [this, rowOf] { removeLayer(rowOf()); });
    for (QSpinBox* s : {r.filters, r.kernel, r.stride, r.size, r.units}) {
        connect(s, &QSpinBox::valueChanged, this, &LayerListEditor::personEdited);
    }
    connect(r.rate, &QDoubleSpinBox::valueChanged, this, &LayerListEditor::personEdited);
    connect(r.l2, &QDoubleSpinBox::valueChanged, this, &LayerListEditor::personEdited);
    for (QComboBox* c : {r.type, r.padding, r.poolKind}) {
        connect(c, &QComboBox::currentIndexChanged, this, &LayerListEditor::personEdited);
    }
    return r;
}

void LayerListEditor::setRow(Row& r, const json& layer) {
    const QString type = textField(layer, "type", nameOf(LayerKind::Conv));
    const int t = std::max<qsizetype>(0, namesOf<LayerKind>().indexOf(type));
    // Every type's fields get a value, so switching a row's type shows sensible numbers.
    r.filters->setValue(intField(layer, "filters", 32));
    r.kernel->setValue(intField(layer, "kernel", 3));
    r.stride->setValue(intField(layer, "stride", 1));
    r.padding->setCurrentIndex(
        std::max(0, r.padding->findData(textField(layer, "padding", nameOf(Padding::Same)))));
    r.poolKind->setCurrentIndex(
        std::max(0, r.poolKind->findData(textField(layer, "kind", nameOf(PoolKind::Avg)))));
    r.size->setValue(intField(layer, "size", 2));
    r.units->setValue(intField(layer, "units", 128));
    r.rate->setValue(rateField(layer, kNewDropoutRate));
    r.l2->setValue(l2Field(layer));
    r.type->setCurrentIndex(t);
    Q_EMIT r.type->currentIndexChanged(t);  // size the stack also when the index stayed
}

json LayerListEditor::rowJson(const Row& r) const {
    LayerSpec s;
    enumFromName(r.type->currentData().toString().toStdString(), s.kind);
    s.filters = r.filters->value();
    s.kernel = r.kernel->value();
    s.stride = r.stride->value();
    enumFromName(r.padding->currentData().toString().toStdString(), s.padding);
    enumFromName(r.poolKind->currentData().toString().toStdString(), s.pool);
    s.size = r.size->value();
    s.units = r.units->value();
    s.rate = r.rate->value();
    s.l2 = s.kind == LayerKind::Dense ? r.l2->value() : 0.0;
    return layersToJson({s})[0];
}

void LayerListEditor::rebuild(const json& layers) {
    m_loading = true;
    for (Row& r : m_rows) {
        // Later: the row's own remove or move button may be what is being clicked.
        m_list->removeWidget(r.frame);
        r.frame->hide();
        r.frame->deleteLater();
    }
    m_rows.clear();
    if (layers.is_array()) {
        for (const json& layer : layers) {
            Row r = makeRow();
            setRow(r, layer);
            m_list->addWidget(r.frame);
            m_rows.push_back(r);
        }
    }
    renumber();
    m_loading = false;
}

void LayerListEditor::setLayers(const json& layers) {
    rebuild(layers);
    // Shown as written? Otherwise keep the list so the parser names what is wrong.
    m_rawActive = false;
    m_rawActive = this->layers() != layers;
    m_raw = m_rawActive ? layers : nlohmann::json();
}

json LayerListEditor::layers() const {
    if (m_rawActive) {
        return m_raw;
    }
    json out = json::array();
    for (const Row& r : m_rows) {
        out.push_back(rowJson(r));
    }
    return out;
}

QString LayerListEditor::rowType(int row) const {
    return row >= 0 && row < rowCount() ? m_rows[row].type->currentData().toString() : QString();
}

QWidget* LayerListEditor::fieldEditor(int row, const QString& field) const {
    if (row < 0 || row >= rowCount()) {
        return nullptr;
    }
    const Row& r = m_rows[row];
    if (field == QStringLiteral("type")) {
        return r.type;
    }
    if (field == QStringLiteral("filters")) {
        return r.filters;
    }
    if (field == QStringLiteral("kernel")) {
        return r.kernel;
    }
    if (field == QStringLiteral("stride")) {
        return r.stride;
    }
    if (field == QStringLiteral("padding")) {
        return r.padding;
    }
    if (field == QStringLiteral("kind")) {
        return r.poolKind;
    }
    if (field == QStringLiteral("size")) {
        return r.size;
    }
    if (field == QStringLiteral("units")) {
        return r.units;
    }
    if (field == QStringLiteral("rate")) {
        return r.rate;
    }
    if (field == QStringLiteral("l2")) {
        return r.l2;
    }
    return nullptr;
}

QLabel* LayerListEditor::rowError(int row) const {
    return row >= 0 && row < rowCount() ? m_rows[row].error : nullptr;
}

QWidget* LayerListEditor::rowWidget(int row) const {
    return row >= 0 && row < rowCount() ? m_rows[row].frame : nullptr;
}

void LayerListEditor::addLayer(LayerKind kind) {
    json list = layers();
    if (!list.is_array()) {
        list = json::array();
    }
    const json layer = newLayer(kind);
    std::size_t at = list.size();
    if (kind == LayerKind::Conv || kind == LayerKind::Pool) {
        // Convolutions and pools come before the flatten: after the last of them.
        const std::string conv = toString(LayerKind::Conv);
        const std::string pool = toString(LayerKind::Pool);
        at = 0;
        for (std::size_t i = 0; i < list.size(); ++i) {
            const std::string type =
                list[i].is_object() ? list[i].value("type", std::string()) : std::string();
            if (type == conv || type == pool) {
                at = i + 1;
            }
        }
    }
    list.insert(list.begin() + static_cast<std::ptrdiff_t>(at), layer);
    m_rawActive = false;
    rebuild(list);
    personEdited();
}

void LayerListEditor::removeLayer(int row) {
    if (row < 0 || row >= rowCount()) {
        return;
    }
    m_rawActive = false;
    json list = layers();
    list.erase(list.begin() + row);
    rebuild(list);
    personEdited();
}

void LayerListEditor::moveLayer(int row, int delta) {
    const int to = row + delta;
    if (row < 0 || row >= rowCount() || to < 0 || to >= rowCount()) {
        return;
    }
    m_rawActive = false;
    json list = layers();
    std::swap(list[static_cast<std::size_t>(row)], list[static_cast<std::size_t>(to)]);
    rebuild(list);
    personEdited();
}

void LayerListEditor::resetToRecipe() {
    m_rawActive = false;
    rebuild(layersToJson(recipeLayers()));
    personEdited();
}

void LayerListEditor::renumber() {
    for (int i = 0; i < m_rows.size(); ++i) {
        Row& r = m_rows[i];
        r.frame->setObjectName(QStringLiteral("layer.%1").arg(i));
        r.index->setText(QStringLiteral("[%1]").arg(i));
        r.index->setToolTip(tr("model.layers[%1]").arg(i));
        r.up->setEnabled(i > 0);
        r.down->setEnabled(i + 1 < m_rows.size());
    }
}

void LayerListEditor::personEdited() {
    if (m_loading) {
        return;
    }
    m_rawActive = false;  // the rows are the list now
    Q_EMIT edited();
}

void LayerListEditor::showError(int row, const QString& field, const QString& message) {
    for (int i = 0; i < m_rows.size(); ++i) {
        Row& r = m_rows[i];
        const bool here = i == row;
        r.error->setText(here ? message : QString());
        r.error->setVisible(here && !message.isEmpty());
        for (const QString& f :
             {QStringLiteral("type"), QStringLiteral("filters"), QStringLiteral("kernel"),
              QStringLiteral("stride"), QStringLiteral("padding"), QStringLiteral("kind"),
              QStringLiteral("size"), QStringLiteral("units"), QStringLiteral("rate"),
              QStringLiteral("l2")}) {
            setInvalid(fieldEditor(i, f), here && f == field);
        }
    }
}

}  // namespace ensemble::ui

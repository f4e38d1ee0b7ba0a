#pragma once

// Widgets side by side while each gets at least `columnWidth` pixels, stacked otherwise: two
// charts at 900 x 600 with the Experiment panel open go one above the other (the view scrolls)
// instead of squeezing their labels.

#include <QWidget>

class QBoxLayout;

namespace ensemble::ui {

class ReflowRow : public QWidget {
    Q_OBJECT

  public:
    explicit ReflowRow(int columnWidth, QWidget* parent = nullptr);
    void addWidget(QWidget* widget, int stretch = 1);
    bool stacked() const;
    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;

  protected:
    void resizeEvent(QResizeEvent* event) override;

  private:
    void reflow(int width);

    QBoxLayout* m_box = nullptr;
    int m_columnWidth = 0;
};

}  // namespace ensemble::ui

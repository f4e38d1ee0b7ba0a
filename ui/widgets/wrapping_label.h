#pragma once

// A word-wrapped label whose height follows its width without making its parent layout
// height-for-width. A QLabel with word wrap does: a view in a resizable scroll area then asks
// for its children's preferred heights (a 560 px plot) and scrolls at 900 x 600 instead of
// fitting the window. This one wraps to the width it gets and asks for the lines that takes.

#include <QLabel>

namespace ensemble::ui {

class WrappingLabel : public QLabel {
    Q_OBJECT

  public:
    explicit WrappingLabel(QWidget* parent = nullptr);
    bool hasHeightForWidth() const override { return false; }
    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;

  protected:
    void resizeEvent(QResizeEvent* event) override;

  private:
    int m_heightAt = -1;  // the width the last height was computed for
};

}  // namespace ensemble::ui

#pragma once

// A one-line label that never widens its window: text that does not fit is elided at the end
// ("…") and the full text becomes the tooltip. For the status bar's messages.

#include <QLabel>

namespace ensemble::ui {

class ElidedLabel : public QLabel {
    Q_OBJECT

  public:
    explicit ElidedLabel(QWidget* parent = nullptr);

    void setFullText(const QString& text);
    QString fullText() const { return m_full; }
    bool isElided() const { return m_elided; }

    QSize minimumSizeHint() const override;
    QSize sizeHint() const override;

  protected:
    void resizeEvent(QResizeEvent* event) override;
    void changeEvent(QEvent* event) override;

  private:
    void relayout();

    QString m_full;
    bool m_elided = false;
};

}  // namespace ensemble::ui

#pragma once

// A one-line label that never widens its window: text that does not fit is elided at the end
// ("…") and the full text becomes the tooltip. For the status bar's messages and captions,
// never for a read-out of values (below).

#include <QLabel>

namespace ensemble::ui {

// A read-out: a label whose text is figures (a level's accuracy, NLL, coverage...). It shows
// all of its text, wrapping rather than eliding: a value only in a tooltip is not read.
// tst_readable holds every widget with the property to that (elided with a tooltip is fine for
// a path or a caption, not for a read-out).
inline constexpr const char* kReadoutProperty = "readout";
inline void markReadout(QWidget* label) {
    label->setProperty(kReadoutProperty, true);
}

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

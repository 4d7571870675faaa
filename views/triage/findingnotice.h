// The window's non-modal notice of a finding the live triage made (views/triage/livetriage.h): a bar above
// the views, in the finding's severity colour, with its text, Open (the finding in the triage wizard) and
// Dismiss; a later notice replaces it (a warning does not replace a critical one not yet looked at) and the
// bar counts those not yet looked at.
#pragma once

#include <QFrame>

class QLabel;
class QPushButton;

namespace fp8scope {

class FindingNotice : public QFrame
{
    Q_OBJECT
public:
    explicit FindingNotice(QWidget *parent = nullptr);

    // Shows notice `index` (its text and severity: true for critical).
    void showNotice(int index, const QString &text, bool critical);
    int index() const { return m_index; }
    QString text() const;
    int unseen() const { return m_unseen; }
    QPushButton *openButton() const { return m_open; }
    QPushButton *dismissButton() const { return m_dismiss; }

Q_SIGNALS:
    void openRequested(int index);

private:
    QLabel *m_text;
    QLabel *m_count;
    QPushButton *m_open;
    QPushButton *m_dismiss;
    int m_index = -1;
    int m_unseen = 0;
    bool m_critical = false;
};

} // namespace fp8scope

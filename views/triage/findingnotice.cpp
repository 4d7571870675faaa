#include "findingnotice.h"

#include <QHBoxLayout>
#include <QLabel>
#include <QPushButton>

namespace fp8scope {

FindingNotice::FindingNotice(QWidget *parent)
    : QFrame(parent)
    , m_text(new QLabel(this))
    , m_count(new QLabel(this))
    , m_open(new QPushButton(tr("Open"), this))
    , m_dismiss(new QPushButton(tr("Dismiss"), this))
{
    setObjectName(QStringLiteral("findingNotice"));
    setFrameShape(QFrame::StyledPanel);
    setAutoFillBackground(true);
    m_text->setWordWrap(true);
    m_text->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_open->setToolTip(tr("Show the finding in the triage wizard"));
    auto *layout = new QHBoxLayout(this);
    layout->setContentsMargins(8, 4, 8, 4);
    layout->addWidget(m_text, 1);
    layout->addWidget(m_count);
    layout->addWidget(m_open);
    layout->addWidget(m_dismiss);
    connect(m_open, &QPushButton::clicked, this, [this] {
        m_unseen = 0;
        hide();
        Q_EMIT openRequested(m_index);
    });
    connect(m_dismiss, &QPushButton::clicked, this, [this] {
        m_unseen = 0;
        hide();
    });
    hide();
}

void FindingNotice::showNotice(int index, const QString &text, bool critical)
{
    ++m_unseen;
    // A critical notice not looked at yet stays in view; a warning after it only counts.
    if (isVisible() && m_critical && !critical) {
        m_count->setText(tr("(%1 new)").arg(m_unseen));
        m_count->setVisible(true);
        return;
    }
    m_index = index;
    m_critical = critical;
    m_text->setText(text);
    m_count->setText(m_unseen > 1 ? tr("(%1 new)").arg(m_unseen) : QString());
    m_count->setVisible(m_unseen > 1);
    // Okabe-Ito's vermillion for a critical finding, its orange for a warning, light enough to read on.
    QPalette p = palette();
    p.setColor(QPalette::Window, critical ? QColor(0xF6, 0xD0, 0xB8) : QColor(0xFA, 0xE6, 0xB8));
    p.setColor(QPalette::WindowText, QColor(0x20, 0x20, 0x20));
    setPalette(p);
    show();
}

QString FindingNotice::text() const
{
    return m_text->text();
}

} // namespace fp8scope

#include "startpage.h"

#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QPushButton>
#include <QVBoxLayout>

namespace fp8scope {

StartPage::StartPage(QWidget *parent)
    : QWidget(parent)
    , m_recent(new QListWidget(this))
{
    setObjectName(QStringLiteral("startPage"));
    auto *column = new QWidget(this);
    column->setMaximumWidth(640);
    auto *layout = new QVBoxLayout(column);
    auto *title = new QLabel(tr("<h2>fp8scope</h2>"
                                "<p>Open the folder of a training run as it came off the cluster, or a folder of "
                                "runs (an FP8 run and its BF16 baseline): logs, TensorBoard events, Transformer "
                                "Engine statistics, tensor dumps and evaluation results are read into a store "
                                "beside them. You can also drop a folder on this window.</p>"),
        column);
    title->setObjectName(QStringLiteral("startTitle"));
    title->setWordWrap(true);
    auto *open = new QPushButton(tr("Open Folder..."), column);
    open->setObjectName(QStringLiteral("startOpenFolder"));
    open->setDefault(true);
    auto *demo = new QPushButton(tr("Try the Demo (a synthetic BF16/FP8 pair)"), column);
    demo->setObjectName(QStringLiteral("startDemo"));
    auto *recentLabel = new QLabel(tr("Recent folders"), column);
    recentLabel->setObjectName(QStringLiteral("startRecentLabel"));
    m_recent->setObjectName(QStringLiteral("startRecent"));
    m_recent->setTextElideMode(Qt::ElideMiddle);
    layout->addWidget(title);
    layout->addWidget(open);
    layout->addWidget(demo);
    layout->addSpacing(12);
    layout->addWidget(recentLabel);
    m_recent->setMaximumHeight(m_recent->fontMetrics().height() * 14);
    layout->addWidget(m_recent);
    layout->addStretch(1);

    auto *outer = new QHBoxLayout(this);
    outer->addStretch(1);
    outer->addWidget(column, 4);
    outer->addStretch(1);

    connect(open, &QPushButton::clicked, this, &StartPage::openFolderRequested);
    connect(demo, &QPushButton::clicked, this, &StartPage::demoRequested);
    connect(m_recent, &QListWidget::itemActivated, this, [this](QListWidgetItem *item) {
        if (item->flags() & Qt::ItemIsEnabled)
            Q_EMIT openRecentRequested(item->data(Qt::UserRole).toString());
    });
    setRecentFolders({});
}

void StartPage::setRecentFolders(const QStringList &folders)
{
    m_recent->clear();
    for (const QString &f : folders) {
        auto *item = new QListWidgetItem(f, m_recent);
        item->setData(Qt::UserRole, f);
        item->setToolTip(f);
        if (!QFileInfo(f).isDir()) {
            item->setFlags(Qt::NoItemFlags);
            item->setToolTip(tr("%1 (no longer there)").arg(f));
        }
    }
    if (folders.isEmpty()) {
        auto *none = new QListWidgetItem(tr("None yet: the folders you open are listed here."), m_recent);
        none->setFlags(Qt::NoItemFlags);
    }
}

} // namespace fp8scope

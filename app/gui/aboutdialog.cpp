#include "aboutdialog.h"

#include "app/common/version.h"
#include "icons.h"

#include <QApplication>
#include <QClipboard>
#include <QDialogButtonBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPushButton>
#include <QTableWidget>
#include <QVBoxLayout>

namespace fp8scope {

AboutDialog::AboutDialog(const QList<ComponentVersion> &components, const QString &backendStatus, QWidget *parent)
    : QDialog(parent)
{
    setObjectName(QStringLiteral("aboutDialog"));
    setWindowTitle(tr("About fp8scope"));

    auto *icon = new QLabel(this);
    icon->setPixmap(applicationIcon().pixmap(96, 96));
    icon->setAlignment(Qt::AlignTop);
    const QString revision = fp8scopeRevision();
    const QString date = fp8scopeRevisionDate();
    auto *title = new QLabel(this);
    title->setObjectName(QStringLiteral("aboutTitle"));
    title->setTextFormat(Qt::RichText);
    title->setOpenExternalLinks(true);
    title->setWordWrap(true);
    title->setText(tr("<h2>fp8scope %1</h2>").arg(fp8scopeVersion().toHtmlEscaped())
        + (revision.isEmpty() ? QString()
                              : tr("<p>Built from %1%2.</p>")
                                    .arg(revision.toHtmlEscaped(),
                                        date.isEmpty() ? QString() : tr(" of %1").arg(date.toHtmlEscaped())))
        + tr("<p>An inspector for FP8 training runs: the comparison with the BF16 baseline, the triage of early "
             "divergence, mid-run instability, loss spikes and downstream gaps, and the FP8 numerics of tensor "
             "dumps.</p><p>GPL-3.0-or-later. <a href=\"%1\">%1</a></p>")
              .arg(QStringLiteral(FP8SCOPE_HOMEPAGE)));

    m_rows = components;
    m_rows.append({tr("Compute backend"), backendStatus});
    auto *table = new QTableWidget(int(m_rows.size()), 2, this);
    m_table = table;
    table->setObjectName(QStringLiteral("aboutVersions"));
    table->setHorizontalHeaderLabels({tr("Component"), tr("Version")});
    table->verticalHeader()->hide();
    table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    table->setSelectionMode(QAbstractItemView::NoSelection);
    table->horizontalHeader()->setStretchLastSection(true);
    fillTable();
    table->resizeColumnToContents(0);
    table->setMinimumHeight(table->verticalHeader()->length() + table->horizontalHeader()->height() + 4);

    auto *buttons = new QDialogButtonBox(QDialogButtonBox::Close, this);
    QPushButton *copy = buttons->addButton(tr("&Copy Versions"), QDialogButtonBox::ActionRole);
    copy->setObjectName(QStringLiteral("copyVersions"));
    copy->setToolTip(tr("Copy the versions to the clipboard, for a bug report"));
    connect(copy, &QPushButton::clicked, this, [this] { QApplication::clipboard()->setText(m_text); });
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::reject);

    auto *top = new QHBoxLayout;
    top->addWidget(icon);
    top->addWidget(title, 1);
    auto *layout = new QVBoxLayout(this);
    layout->addLayout(top);
    layout->addWidget(table, 1);
    layout->addWidget(buttons);
    resize(560, 520);
}

void AboutDialog::fillTable()
{
    m_text = versionLine(QStringLiteral("fp8scope")) + QLatin1Char('\n');
    for (int i = 0; i < m_rows.size(); ++i) {
        m_table->setItem(i, 0, new QTableWidgetItem(m_rows[i].component));
        m_table->setItem(i, 1, new QTableWidgetItem(m_rows[i].version));
        m_text += m_rows[i].component + QStringLiteral(": ") + m_rows[i].version + QLatin1Char('\n');
    }
}

void AboutDialog::setBackendStatus(const QString &status)
{
    m_rows.back().version = status;
    fillTable();
}

} // namespace fp8scope

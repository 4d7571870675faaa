#include "tableexport.h"

#include <QAbstractItemModel>
#include <QAction>
#include <QClipboard>
#include <QFileDialog>
#include <QGuiApplication>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QMessageBox>
#include <QSaveFile>
#include <QStandardItem>
#include <QTableView>

#include <algorithm>
#include <cmath>

namespace fp8scope {

QTableView *newTableView(const QString &name, QWidget *parent)
{
    auto *t = new QTableView(parent);
    t->setObjectName(name);
    t->setSelectionBehavior(QAbstractItemView::SelectRows);
    t->setSelectionMode(QAbstractItemView::SingleSelection);
    t->setEditTriggers(QAbstractItemView::NoEditTriggers);
    t->verticalHeader()->hide();
    t->horizontalHeader()->setStretchLastSection(true);
    t->setAlternatingRowColors(true);
    t->setWordWrap(false);
    return t;
}

QString tableText(const QAbstractItemModel *model, const QList<int> &rows, bool csv)
{
    const QChar sep = csv ? QLatin1Char(',') : QLatin1Char('\t');
    const auto field = [csv](QString f) {
        if (csv && (f.contains(QLatin1Char(',')) || f.contains(QLatin1Char('"')) || f.contains(QLatin1Char('\n'))))
            f = QLatin1Char('"') + f.replace(QLatin1Char('"'), QStringLiteral("\"\"")) + QLatin1Char('"');
        else if (!csv)
            f.replace(QLatin1Char('\t'), QLatin1Char(' ')).replace(QLatin1Char('\n'), QLatin1Char(' '));
        return f;
    };
    QStringList header;
    for (int c = 0; c < model->columnCount(); ++c)
        header << field(model->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString());
    QString out = header.join(sep) + QLatin1Char('\n');
    QList<int> which = rows;
    if (which.isEmpty()) {
        for (int r = 0; r < model->rowCount(); ++r)
            which << r;
    }
    for (int r : which) {
        if (r < 0 || r >= model->rowCount())
            continue;
        QStringList fields;
        for (int c = 0; c < model->columnCount(); ++c) {
            const QModelIndex i = model->index(r, c);
            const QVariant exact = i.data(Qt::UserRole);
            fields << field(exact.typeId() == QMetaType::Double
                    ? QString::number(exact.toDouble(), 'g', QLocale::FloatingPointShortest)
                    : i.data(Qt::DisplayRole).toString());
        }
        out += fields.join(sep) + QLatin1Char('\n');
    }
    return out;
}

void addTableActions(QTableView *view, const QString &fileName)
{
    view->setContextMenuPolicy(Qt::ActionsContextMenu);
    auto *copy = new QAction(QObject::tr("&Copy"), view);
    copy->setObjectName(view->objectName() + QStringLiteral("Copy"));
    copy->setShortcut(QKeySequence::Copy);
    copy->setShortcutContext(Qt::WidgetWithChildrenShortcut);
    QObject::connect(copy, &QAction::triggered, view, [view] {
        QList<int> rows;
        if (view->selectionModel()) {
            for (const QModelIndex &i : view->selectionModel()->selectedRows())
                rows << i.row();
        }
        std::sort(rows.begin(), rows.end());
        QGuiApplication::clipboard()->setText(tableText(view->model(), rows));
    });
    auto *save = new QAction(QObject::tr("&Export as CSV..."), view);
    save->setObjectName(view->objectName() + QStringLiteral("Export"));
    QObject::connect(save, &QAction::triggered, view, [view, fileName] {
        const QString path
            = QFileDialog::getSaveFileName(view, QObject::tr("Export table"), fileName, QObject::tr("CSV (*.csv)"));
        if (path.isEmpty())
            return;
        QSaveFile f(path);
        if (!f.open(QIODevice::WriteOnly | QIODevice::Text) || f.write(tableText(view->model(), {}, true).toUtf8()) < 0
            || !f.commit())
            QMessageBox::warning(view, QObject::tr("Export table"), QObject::tr("%1: %2").arg(path, f.errorString()));
    });
    view->addActions({copy, save});
}

QStandardItem *textItem(const QString &text)
{
    auto *i = new QStandardItem(text);
    i->setToolTip(text);
    i->setEditable(false);
    return i;
}

QStandardItem *numberItem(double v, int decimals)
{
    auto *i = new QStandardItem(!std::isfinite(v) ? QString()
            : decimals < 0                        ? QLocale().toString(v, 'g', 6)
                                                  : QLocale().toString(v, 'f', decimals));
    i->setData(v, Qt::UserRole);
    i->setToolTip(QString::number(v, 'g', QLocale::FloatingPointShortest));
    i->setTextAlignment(Qt::AlignRight | Qt::AlignVCenter);
    i->setEditable(false);
    return i;
}

} // namespace fp8scope

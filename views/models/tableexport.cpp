#include "tableexport.h"

#include <QAbstractItemModel>
#include <QAction>
#include <QClipboard>
#include <QFileDialog>
#include <QGuiApplication>
#include <QHeaderView>
#include <QHelpEvent>
#include <QItemSelectionModel>
#include <QLocale>
#include <QMessageBox>
#include <QPointer>
#include <QSaveFile>
#include <QScrollBar>
#include <QStandardItem>
#include <QStyle>
#include <QTableView>
#include <QTimer>
#include <QToolTip>

#include <algorithm>
#include <cmath>

namespace fp8scope {

namespace {

// Whether every cell of a column (of the first rows) is a number: such a column is never narrowed.
bool numericColumn(const QAbstractItemModel *model, int column)
{
    const int rows = std::min(model->rowCount(), 200);
    bool any = false;
    for (int r = 0; r < rows; ++r) {
        QString text = model->index(r, column).data().toString().trimmed();
        if (text.isEmpty())
            continue;
        text.remove(QLatin1Char('%')).remove(QLatin1Char('x'));
        bool ok = false;
        text.toDouble(&ok);
        if (!ok) // as the locale writes it (group separators)
            QLocale().toDouble(text, &ok);
        if (!ok)
            return false;
        any = true;
    }
    return any;
}

// Fits the columns again as the table is resized or its rows change (coalesced to one fit an event loop turn),
// and shows a cut cell's whole text on hover where the model gives no tooltip of its own.
class ColumnFitter : public QObject
{
public:
    explicit ColumnFitter(QTableView *table)
        : QObject(table)
        , m_table(table)
        , m_viewport(table->viewport())
    {
        table->installEventFilter(this);
        m_viewport->installEventFilter(this);
        m_timer.setSingleShot(true);
        m_timer.setInterval(0);
        connect(&m_timer, &QTimer::timeout, this, [this] { fitColumnsToWidth(m_table); });
    }

    void follow(QAbstractItemModel *model)
    {
        if (m_model == model)
            return;
        if (m_model)
            disconnect(m_model, nullptr, this, nullptr);
        m_model = model;
        if (!model)
            return;
        connect(model, &QAbstractItemModel::modelReset, this, [this] { m_timer.start(); });
        connect(model, &QAbstractItemModel::layoutChanged, this, [this] { m_timer.start(); });
        connect(model, &QAbstractItemModel::rowsInserted, this, [this] { m_timer.start(); });
        connect(model, &QAbstractItemModel::rowsRemoved, this, [this] { m_timer.start(); });
        connect(model, &QAbstractItemModel::dataChanged, this, [this] { m_timer.start(); });
        m_timer.start();
    }

    bool eventFilter(QObject *watched, QEvent *event) override
    {
        if (watched == m_table && (event->type() == QEvent::Resize || event->type() == QEvent::Show)) {
            follow(m_table->model());
            m_timer.start();
        } else if (watched == m_viewport && event->type() == QEvent::ToolTip) {
            // (Compared by the pointer kept: the viewport's events go on while the table is being destroyed.)
            auto *help = static_cast<QHelpEvent *>(event);
            const QModelIndex index = m_table->indexAt(help->pos());
            if (index.isValid() && !index.data(Qt::ToolTipRole).isValid()) {
                const QString text = index.data().toString();
                const int room = m_table->columnWidth(index.column()) - 8;
                if (!text.isEmpty() && m_table->fontMetrics().horizontalAdvance(text) > room) {
                    QToolTip::showText(help->globalPos(), text, m_table->viewport());
                    return true;
                }
            }
        }
        return QObject::eventFilter(watched, event);
    }

private:
    QTableView *m_table;
    QObject *m_viewport;
    QPointer<QAbstractItemModel> m_model;
    QTimer m_timer;
};

} // namespace

void fitColumnsToWidth(QTableView *table)
{
    QAbstractItemModel *model = table->model();
    QHeaderView *header = table->horizontalHeader();
    if (!model || model->columnCount() == 0)
        return;
    const int columns = model->columnCount();
    std::vector<int> natural(size_t(columns), 0);
    std::vector<bool> keep(size_t(columns), false);
    int total = 0;
    for (int c = 0; c < columns; ++c) {
        if (table->isColumnHidden(c))
            continue;
        natural[size_t(c)]
            = std::max(header->sectionSizeHint(c), static_cast<QAbstractItemView *>(table)->sizeHintForColumn(c)) + 4;
        keep[size_t(c)] = numericColumn(model, c);
        total += natural[size_t(c)];
    }
    int room = table->viewport()->width() > 0 ? table->viewport()->width() : table->width();
    // A vertical scroll bar about to appear takes its width.
    if (!table->verticalScrollBar()->isVisible() && table->verticalScrollBarPolicy() != Qt::ScrollBarAlwaysOff
        && model->rowCount() * std::max(1, table->verticalHeader()->defaultSectionSize()) > table->viewport()->height())
        room -= table->style()->pixelMetric(QStyle::PM_ScrollBarExtent);
    std::vector<int> widths = natural;
    if (total > room) {
        // The widest text columns narrowed to one width `cap`, the largest that fits (water filling).
        int fixed = 0;
        std::vector<int> text;
        for (int c = 0; c < columns; ++c) {
            if (table->isColumnHidden(c))
                continue;
            if (keep[size_t(c)])
                fixed += natural[size_t(c)];
            else
                text.push_back(natural[size_t(c)]);
        }
        std::sort(text.begin(), text.end());
        int left = room - fixed, cap = text.empty() ? 0 : text.back();
        for (size_t i = 0; i < text.size(); ++i) {
            const int share = left / int(text.size() - i);
            if (text[i] > share) {
                cap = share;
                break;
            }
            left -= text[i];
        }
        for (int c = 0; c < columns; ++c) {
            if (!keep[size_t(c)])
                widths[size_t(c)] = std::min(natural[size_t(c)], std::max(cap, kLeastColumnWidth));
        }
        // Still too wide (many numbers): the numbers' columns as wide as their values, their headers cut.
        int sum = 0;
        for (int c = 0; c < columns; ++c)
            sum += table->isColumnHidden(c) ? 0 : widths[size_t(c)];
        for (int c = 0; c < columns && sum > room; ++c) {
            if (table->isColumnHidden(c) || !keep[size_t(c)])
                continue;
            const int values = static_cast<QAbstractItemView *>(table)->sizeHintForColumn(c) + 4;
            const int narrower = std::max(values, widths[size_t(c)] - (sum - room));
            sum -= widths[size_t(c)] - std::min(narrower, widths[size_t(c)]);
            widths[size_t(c)] = std::min(narrower, widths[size_t(c)]);
        }
    }
    for (int c = 0; c < columns; ++c) {
        if (!table->isColumnHidden(c) && header->sectionResizeMode(c) == QHeaderView::Interactive)
            header->resizeSection(c, widths[size_t(c)]);
    }
    // All in view: from the first column.
    table->horizontalScrollBar()->setValue(0);
}

QTableView *newTableView(const QString &name, QWidget *parent, bool fitWidth)
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
    if (fitWidth)
        new ColumnFitter(t);
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

#include "statstablemodel.h"

#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QLocale>

#include <limits>

namespace fp8scope {

StatsTableModel::StatsTableModel(QObject *parent)
    : QAbstractTableModel(parent)
{
}

void StatsTableModel::setRows(std::vector<Row> rows)
{
    beginResetModel();
    m_rows = std::move(rows);
    endResetModel();
}

void StatsTableModel::follow(Workspace *workspace, Selection *selection)
{
    const auto refresh = [this, workspace, selection] { setRows(rowsOf(*workspace, *selection)); };
    connect(selection, &Selection::changed, this, refresh);
    connect(workspace, &Workspace::changed, this, [refresh](Workspace::Parts parts) {
        if (parts & (Workspace::Statistics | Workspace::Closed))
            refresh();
    });
}

std::vector<StatsTableModel::Row> StatsTableModel::rowsOf(const Workspace &workspace, const Selection &selection)
{
    std::vector<Row> rows;
    const RunRef run = selection.run();
    if (!workspace.run(run))
        return rows;
    const Catalog &catalog = workspace.catalog();
    // Without a selected step, each statistic's latest value (a checkpoint's dumps have no step at all).
    const qint64 step = selection.step() >= 0 ? selection.step() : std::numeric_limits<qint64>::max();
    auto add = [&](const std::vector<Series> &series, bool tensorLevel) {
        for (const Series &s : series) {
            if (auto p = catalog.valueAt(s, step))
                rows.push_back({s.stat, p->value, p->step, s.source, s.recipe, tensorLevel});
        }
    };
    const auto at = [&](const QString &layer, const QString &tensor) {
        std::vector<Series> out;
        for (const Series &s : catalog.seriesAt(run, layer, tensor)) {
            if (s.axis == SeriesAxis::Step)
                out.push_back(s);
        }
        return out;
    };
    if (!selection.layer().isEmpty() && !selection.tensor().isEmpty())
        add(at(selection.layer(), selection.tensor()), true);
    add(at(QString(), QString()), false);
    for (const Eval &e : catalog.evals(run)) {
        rows.push_back({e.task + QStringLiteral(" / ") + e.metric, e.value, -1, e.file,
            e.inference.isEmpty() ? QString() : tr("inference %1").arg(e.inference), false, true});
    }
    return rows;
}

int StatsTableModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int StatsTableModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant StatsTableModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Row &r = m_rows[size_t(index.row())];
    if (role == Qt::TextAlignmentRole && (index.column() == ValueColumn || index.column() == StepColumn))
        return int(Qt::AlignRight | Qt::AlignVCenter);
    if ((role == SortValueRole || role == Qt::UserRole) && index.column() == ValueColumn)
        return r.value; // the exact value, for sorting and for copies (views/models/tableexport)
    if (role != Qt::DisplayRole && role != Qt::ToolTipRole)
        return {};
    switch (index.column()) {
    case StatColumn: return r.stat;
    case ValueColumn:
        return role == Qt::ToolTipRole ? QString::number(r.value, 'g', QLocale::FloatingPointShortest)
                                       : QLocale().toString(r.value, 'g', 8);
    case StepColumn: return r.eval ? QVariant() : QVariant(r.step);
    case SourceColumn: return r.source;
    case RecipeColumn: return r.recipe;
    case ScopeColumn: return r.eval ? tr("evaluation") : r.tensorLevel ? tr("tensor") : tr("run");
    default: return {};
    }
}

QVariant StatsTableModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case StatColumn: return tr("Statistic");
    case ValueColumn: return tr("Value");
    case StepColumn: return tr("Step");
    case SourceColumn: return tr("Source");
    case RecipeColumn: return tr("Recipe");
    case ScopeColumn: return tr("Scope");
    default: return {};
    }
}

} // namespace fp8scope

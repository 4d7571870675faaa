#include "runlistmodel.h"

#include "views/workspace/workspace.h"

#include <QLocale>

namespace fp8scope {

RunListModel::RunListModel(Workspace *workspace, QObject *parent)
    : QAbstractTableModel(parent)
    , m_workspace(workspace)
{
    connect(workspace, &Workspace::loaded, this, [this] {
        beginResetModel();
        endResetModel();
    });
    connect(workspace, &Workspace::closed, this, [this] {
        beginResetModel();
        endResetModel();
    });
    connect(workspace, &Workspace::runVisibilityChanged, this,
        [this](int run) { Q_EMIT dataChanged(index(run, NameColumn), index(run, NameColumn), {Qt::CheckStateRole}); });
}

int RunListModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : m_workspace->runCount();
}

int RunListModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunListModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const WorkspaceRun &run = m_workspace->run(index.row());
    if (role == RunIndexRole)
        return index.row();
    switch (index.column()) {
    case NameColumn:
        if (role == Qt::DisplayRole)
            return run.info.displayName.isEmpty() ? run.info.name : run.info.displayName;
        if (role == Qt::DecorationRole)
            return run.colour;
        if (role == Qt::CheckStateRole)
            return run.visible ? Qt::Checked : Qt::Unchecked;
        if (role == Qt::ToolTipRole) // the whole name (the view elides long ones) and where it came from
            return QStringLiteral("%1\n%2").arg(run.info.name, m_workspace->folders().value(run.source));
        break;
    case PrecisionColumn:
        if (role == Qt::DisplayRole)
            return run.info.precision;
        break;
    case RecipeColumn:
        if (role == Qt::DisplayRole)
            return run.info.recipe;
        break;
    case BaselineColumn:
        if (role == Qt::DisplayRole) {
            const int b = m_workspace->baselineOf(index.row());
            return b >= 0 ? m_workspace->run(b).info.name : QString();
        }
        break;
    case PointsColumn:
        if (role == Qt::DisplayRole)
            return QLocale().toString(run.info.pointCount);
        if (role == Qt::TextAlignmentRole)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        break;
    default: break;
    }
    return {};
}

bool RunListModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || index.column() != NameColumn
        || role != Qt::CheckStateRole)
        return false;
    m_workspace->setRunVisible(index.row(), value.toInt() == Qt::Checked);
    return true;
}

Qt::ItemFlags RunListModel::flags(const QModelIndex &index) const
{
    Qt::ItemFlags f = QAbstractTableModel::flags(index);
    if (index.isValid() && index.column() == NameColumn)
        f |= Qt::ItemIsUserCheckable;
    return f;
}

QVariant RunListModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case NameColumn: return tr("Run");
    case PrecisionColumn: return tr("Precision");
    case RecipeColumn: return tr("Recipe");
    case BaselineColumn: return tr("Baseline");
    case PointsColumn: return tr("Points");
    default: return {};
    }
}

} // namespace fp8scope

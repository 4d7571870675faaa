#include "problemsmodel.h"

#include "views/workspace/workspace.h"

#include <QFileInfo>

namespace fp8scope {

ProblemsModel::ProblemsModel(Workspace *workspace, QObject *parent)
    : QAbstractTableModel(parent)
    , m_workspace(workspace)
{
    auto reset = [this] {
        beginResetModel();
        endResetModel();
    };
    connect(workspace, &Workspace::loaded, this, reset);
    connect(workspace, &Workspace::closed, this, reset);
    connect(workspace, &Workspace::problemsAdded, this, reset);
}

int ProblemsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_workspace->problems().size());
}

int ProblemsModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ProblemsModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const ProblemEntry &p = m_workspace->problems()[size_t(index.row())];
    switch (role) {
    case PathRole: return p.path;
    case LineRole: return qint64(p.line);
    case OffsetRole: return qint64(p.offset);
    case Qt::ToolTipRole: return p.path;
    case Qt::DisplayRole:
        switch (index.column()) {
        case FileColumn: return QFileInfo(p.path).fileName();
        case LineColumn:
            if (p.line > 0)
                return tr("line %1").arg(p.line);
            return p.offset >= 0 ? tr("offset %1").arg(p.offset) : QString();
        case MessageColumn: return p.message;
        default: return {};
        }
    default: return {};
    }
}

QVariant ProblemsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case FileColumn: return tr("File");
    case LineColumn: return tr("Where");
    case MessageColumn: return tr("Problem");
    default: return {};
    }
}

} // namespace fp8scope

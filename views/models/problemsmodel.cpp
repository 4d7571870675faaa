#include "problemsmodel.h"

#include "core/session/foldersession.h"
#include "views/workspace/workspace.h"

#include <QFileInfo>
#include <QPalette>

#include <algorithm>

namespace fp8scope {

ProblemsModel::ProblemsModel(QObject *parent)
    : QAbstractTableModel(parent)
{
}

void ProblemsModel::setProblems(std::vector<ProblemEntry> problems)
{
    const auto same = [](const ProblemEntry &a, const ProblemEntry &b) {
        return a.path == b.path && a.line == b.line && a.offset == b.offset && a.message == b.message
            && a.storeError == b.storeError && a.skipped == b.skipped;
    };
    const size_t shown = m_problems.size();
    if (problems.size() > shown && std::equal(m_problems.begin(), m_problems.end(), problems.begin(), same)) {
        beginInsertRows({}, int(shown), int(problems.size()) - 1);
        m_problems = std::move(problems);
        endInsertRows();
        return;
    }
    if (problems.size() == shown && std::equal(m_problems.begin(), m_problems.end(), problems.begin(), same))
        return;
    beginResetModel();
    m_problems = std::move(problems);
    endResetModel();
}

void ProblemsModel::follow(Workspace *workspace)
{
    const auto update = [this, workspace] { setProblems(workspace->problems()); };
    connect(workspace, &Workspace::changed, this, [update](Workspace::Parts parts) {
        if (parts & (Workspace::Loaded | Workspace::Closed | Workspace::Problems))
            update();
    });
    update();
}

int ProblemsModel::rowCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : int(m_problems.size());
}

int ProblemsModel::skippedCount() const
{
    return int(std::count_if(m_problems.begin(), m_problems.end(), [](const ProblemEntry &p) { return p.skipped; }));
}

int ProblemsModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant ProblemsModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const ProblemEntry &p = m_problems[size_t(index.row())];
    switch (role) {
    case PathRole: return p.path;
    case LineRole: return qint64(p.line);
    case OffsetRole: return qint64(p.offset);
    case Qt::ToolTipRole: // the whole message, which the column may cut
        return index.column() == MessageColumn ? p.message : p.path;
    case Qt::ForegroundRole: // a file left out is said, but is no failure
        return p.skipped ? QVariant(QPalette().brush(QPalette::Disabled, QPalette::Text)) : QVariant();
    case Qt::DisplayRole:
        switch (index.column()) {
        case FileColumn: return QFileInfo(p.path).fileName();
        case LineColumn: return FolderSession::placeOf(p);
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

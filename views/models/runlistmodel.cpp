#include "runlistmodel.h"

#include "views/workspace/workspace.h"

#include <QBrush>
#include <QLocale>
#include <QTimer>

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
    connect(workspace, &Workspace::runVisibilityChanged, this, [this](RunRef run) {
        const int row = m_workspace->indexOf(run);
        if (row >= 0)
            Q_EMIT dataChanged(index(row, NameColumn), index(row, NameColumn), {Qt::CheckStateRole});
    });
    connect(workspace, &Workspace::dataAppended, this, &RunListModel::updateProgress);
    // "advanced 4 s ago" ages while nothing is written.
    auto *clock = new QTimer(this);
    clock->setInterval(1000);
    connect(clock, &QTimer::timeout, this, [this] {
        for (int row = 0; row < rowCount(); ++row) {
            if (m_workspace->runs()[size_t(row)].advanced.isValid())
                Q_EMIT dataChanged(index(row, AdvancedColumn), index(row, AdvancedColumn));
        }
    });
    clock->start();
}

void RunListModel::updateProgress()
{
    if (rowCount() > 0)
        Q_EMIT dataChanged(index(0, PointsColumn), index(rowCount() - 1, AdvancedColumn));
}

QString RunListModel::agoText(qint64 ms)
{
    const qint64 s = std::max<qint64>(0, ms) / 1000;
    if (s < 60)
        return tr("%1 s ago").arg(s);
    if (s < 3600)
        return tr("%1 min ago").arg(s / 60);
    return tr("%1 h ago").arg(s / 3600);
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
    const WorkspaceRun &run = m_workspace->runs()[size_t(index.row())];
    if (role == RunRole)
        return QVariant::fromValue(run.run.ref);
    switch (index.column()) {
    case NameColumn:
        if (role == Qt::DisplayRole)
            return run.run.label();
        if (role == Qt::DecorationRole)
            return run.colour;
        if (role == Qt::CheckStateRole)
            return run.visible ? Qt::Checked : Qt::Unchecked;
        if (role == Qt::ToolTipRole) // the whole name (the view elides long ones), where it came from, versions
            return QString(run.run.label()
                + (run.run.displayName.isEmpty() ? QString() : tr(" (run %1)").arg(run.run.name)) + QLatin1Char('\n')
                + run.run.folder + (run.versions.isEmpty() ? QString() : QString(QLatin1Char('\n') + run.versions)));
        break;
    case PrecisionColumn:
        if (role == Qt::DisplayRole)
            return run.run.precision;
        break;
    case RecipeColumn:
        if (role == Qt::DisplayRole)
            return run.run.recipe;
        break;
    case BaselineColumn:
        if (role == Qt::DisplayRole) {
            const WorkspaceRun *b = m_workspace->run(run.pairing.baseline);
            return b ? b->run.label() : QString();
        }
        if (role == Qt::ToolTipRole)
            return tr("Baseline: %1").arg(run.pairing.reason);
        break;
    case PointsColumn:
        if (role == Qt::DisplayRole)
            return QLocale().toString(run.run.pointCount);
        if (role == Qt::TextAlignmentRole)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case LatestStepColumn:
        if (role == Qt::DisplayRole)
            return run.latestStep >= 0 ? QLocale().toString(run.latestStep) : QString();
        if (role == Qt::TextAlignmentRole)
            return int(Qt::AlignRight | Qt::AlignVCenter);
        break;
    case AdvancedColumn: {
        if (!run.advanced.isValid())
            break; // not since it was opened: a finished run, or one not written yet
        const QDateTime now = QDateTime::currentDateTimeUtc();
        const bool stalled = m_workspace->isStalled(run.run.ref, now);
        if (role == Qt::DisplayRole)
            return stalled ? tr("stopped, %1").arg(agoText(run.advanced.msecsTo(now)))
                           : agoText(run.advanced.msecsTo(now));
        if (role == Qt::ToolTipRole)
            return stalled ? tr("No new step since %1: the run stopped writing (or its job is stuck)")
                                 .arg(QLocale().toString(run.advanced.toLocalTime(), QLocale::ShortFormat))
                           : tr("Step %1 arrived %2").arg(run.latestStep).arg(agoText(run.advanced.msecsTo(now)));
        if (role == Qt::ForegroundRole && stalled)
            return QBrush(QColor(0xD5, 0x5E, 0x00));
        break;
    }
    default: break;
    }
    return {};
}

bool RunListModel::setData(const QModelIndex &index, const QVariant &value, int role)
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || index.column() != NameColumn
        || role != Qt::CheckStateRole)
        return false;
    m_workspace->setRunVisible(m_workspace->runAt(index.row()), value.toInt() == Qt::Checked);
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
    case LatestStepColumn: return tr("Step");
    case AdvancedColumn: return tr("Advanced");
    default: return {};
    }
}

} // namespace fp8scope

#include "runlistmodel.h"

#include <QBrush>
#include <QLocale>
#include <QTimer>

#include <algorithm>

namespace fp8scope {

RunListModel::RunListModel(QObject *parent)
    : QAbstractTableModel(parent)
{
    // "advanced 4 s ago" ages while nothing is written.
    auto *clock = new QTimer(this);
    clock->setInterval(1000);
    connect(clock, &QTimer::timeout, this, [this] {
        for (int row = 0; row < rowCount(); ++row) {
            if (m_rows[size_t(row)].run.advanced.isValid())
                Q_EMIT dataChanged(index(row, AdvancedColumn), index(row, AdvancedColumn));
        }
    });
    clock->start();
}

void RunListModel::setRows(std::vector<Row> rows)
{
    const bool sameRuns = rows.size() == m_rows.size()
        && std::equal(rows.begin(), rows.end(), m_rows.begin(),
            [](const Row &a, const Row &b) { return a.run.run.ref == b.run.run.ref; });
    if (!sameRuns) {
        beginResetModel();
        m_rows = std::move(rows);
        endResetModel();
        return;
    }
    std::vector<int> changed;
    for (size_t i = 0; i < rows.size(); ++i) {
        const Row &a = rows[i], &b = m_rows[i];
        if (a.run.visible != b.run.visible || a.run.latestStep != b.run.latestStep || a.run.advanced != b.run.advanced
            || a.run.run.pointCount != b.run.run.pointCount || a.baseline != b.baseline
            || a.stallThresholdMs != b.stallThresholdMs || a.run.colour != b.run.colour
            || a.run.run.label() != b.run.run.label() || a.run.run.precision != b.run.run.precision
            || a.run.run.recipe != b.run.run.recipe || a.run.pairing.reason != b.run.pairing.reason
            || a.run.versions != b.run.versions)
            changed.push_back(int(i));
    }
    m_rows = std::move(rows);
    for (int row : changed)
        Q_EMIT dataChanged(index(row, 0), index(row, ColumnCount - 1));
}

void RunListModel::follow(Workspace *workspace)
{
    const auto update = [this, workspace] {
        std::vector<Row> rows;
        rows.reserve(workspace->runs().size());
        for (const WorkspaceRun &r : workspace->runs()) {
            const WorkspaceRun *b = workspace->run(r.pairing.baseline);
            rows.push_back({r, b ? workspace->runName(b->run.ref) : QString(), workspace->stallThresholdMs(r.run.ref)});
        }
        setRows(std::move(rows));
    };
    connect(workspace, &Workspace::changed, this, [update](Workspace::Parts parts) {
        if (parts
            & (Workspace::Loaded | Workspace::Closed | Workspace::Visibility | Workspace::Appended
                | Workspace::Following))
            update();
    });
    connect(this, &RunListModel::visibilityRequested, workspace, &Workspace::setRunVisible);
    update();
}

bool RunListModel::isStalled(const Row &row, const QDateTime &now) const
{
    return row.stallThresholdMs >= 0 && row.run.advanced.isValid()
        && row.run.advanced.msecsTo(now) > row.stallThresholdMs;
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
    return parent.isValid() ? 0 : int(m_rows.size());
}

int RunListModel::columnCount(const QModelIndex &parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant RunListModel::data(const QModelIndex &index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid))
        return {};
    const Row &row = m_rows[size_t(index.row())];
    const WorkspaceRun &run = row.run;
    if (role == RunRole)
        return QVariant::fromValue(run.run.ref);
    switch (index.column()) {
    case NameColumn:
        // Shortened by what the runs' names share: eliding names that share their ends cuts out what differs.
        if (role == Qt::DisplayRole)
            return run.shortLabel.isEmpty() ? run.run.label() : run.shortLabel;
        if (role == Qt::DecorationRole)
            return run.colour;
        if (role == Qt::CheckStateRole)
            return run.visible ? Qt::Checked : Qt::Unchecked;
        if (role == Qt::ToolTipRole) // the whole name, its group, where it came from, versions
            return QString(run.run.label()
                + (run.run.displayName.isEmpty() ? QString() : tr(" (run %1)").arg(run.run.name)) + QLatin1Char('\n')
                + (run.run.group.isEmpty() ? QString() : tr("group %1\n").arg(run.run.group)) + run.run.folder
                + (run.versions.isEmpty() ? QString() : QString(QLatin1Char('\n') + run.versions)));
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
        if (role == Qt::DisplayRole)
            return row.baseline;
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
        const bool stalled = isStalled(row, now);
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
    Q_EMIT visibilityRequested(m_rows[size_t(index.row())].run.run.ref, value.toInt() == Qt::Checked);
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

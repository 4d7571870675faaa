// The runs of the workspace as a table: name (with the run's colour and a visibility check box), precision,
// recipe, the baseline it is paired with (the reason in its tooltip), its points, its newest step and, while
// its folder is followed, how long ago that advanced ("stopped" for a run that stopped writing). Unchecking a
// run hides it in every view.
#pragma once

#include "views/workspace/workspace.h"

#include <QAbstractTableModel>

#include <vector>

namespace fp8scope {

class RunListModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column {
        NameColumn,
        PrecisionColumn,
        RecipeColumn,
        BaselineColumn,
        PointsColumn,
        LatestStepColumn,
        AdvancedColumn,
        ColumnCount
    };
    enum Role { RunRole = Qt::UserRole + 1 }; // the row's RunRef

    // A run as the list shows it.
    struct Row {
        WorkspaceRun run;
        QString baseline; // the label of the run it is paired with (empty: none)
        qint64 stallThresholdMs = -1; // no new step for longer: it stopped writing (-1: it cannot stop)
    };

    explicit RunListModel(QObject *parent = nullptr);
    // Shows `rows`: the same runs in the same order change in place (dataChanged for the rows that changed),
    // others reset the model.
    void setRows(std::vector<Row> rows);
    // Shows a workspace's runs as it loads, closes, hides and shows them and its runs grow; a check box
    // changed here sets the run's visibility there.
    void follow(Workspace *workspace);
    // "4 s ago", "3 min ago": how long ago a run advanced.
    static QString agoText(qint64 ms);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role) const override;
    bool setData(const QModelIndex &index, const QVariant &value, int role) override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

Q_SIGNALS:
    // A check box was changed: the run is to be shown or hidden (follow() passes it to the workspace).
    void visibilityRequested(fp8scope::RunRef run, bool visible);

private:
    bool isStalled(const Row &row, const QDateTime &now) const;
    std::vector<Row> m_rows;
};

} // namespace fp8scope

// The runs of the workspace as a table: name (with the run's colour and a visibility check box), precision,
// recipe, the baseline it is paired with (the reason in its tooltip), its points, its newest step and, while
// its folder is followed, how long ago that advanced ("stopped" for a run that stopped writing). Unchecking a
// run hides it in every view.
#pragma once

#include <QAbstractTableModel>

namespace fp8scope {

class Workspace;

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

    explicit RunListModel(Workspace *workspace, QObject *parent = nullptr);
    // "4 s ago", "3 min ago": how long ago a run advanced.
    static QString agoText(qint64 ms);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role) const override;
    bool setData(const QModelIndex &index, const QVariant &value, int role) override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    void updateProgress();
    Workspace *m_workspace;
};

} // namespace fp8scope

// The runs of the workspace as a table: name (with the run's colour and a visibility check box), precision,
// recipe, the baseline it is paired with (the reason in its tooltip) and its points. Unchecking a run hides it
// in every view.
#pragma once

#include <QAbstractTableModel>

namespace fp8scope {

class Workspace;

class RunListModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { NameColumn, PrecisionColumn, RecipeColumn, BaselineColumn, PointsColumn, ColumnCount };
    enum Role { RunRole = Qt::UserRole + 1 }; // the row's RunRef

    explicit RunListModel(Workspace *workspace, QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role) const override;
    bool setData(const QModelIndex &index, const QVariant &value, int role) override;
    Qt::ItemFlags flags(const QModelIndex &index) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    Workspace *m_workspace;
};

} // namespace fp8scope

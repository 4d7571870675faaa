// Import problems of the workspace (file, line or byte offset, what was wrong), for the problems panel.
#pragma once

#include <QAbstractTableModel>

namespace fp8scope {

class Workspace;

class ProblemsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { FileColumn, LineColumn, MessageColumn, ColumnCount };
    enum Role { PathRole = Qt::UserRole + 1, LineRole, OffsetRole };

    explicit ProblemsModel(Workspace *workspace, QObject *parent = nullptr);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    Workspace *m_workspace;
};

} // namespace fp8scope

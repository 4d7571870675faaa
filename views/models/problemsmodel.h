// Import problems of the workspace (file, line or byte offset, what was wrong), for the problems panel.
#pragma once

#include "core/query/querytypes.h"

#include <QAbstractTableModel>

#include <vector>

namespace fp8scope {

class Workspace;

class ProblemsModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    enum Column { FileColumn, LineColumn, MessageColumn, ColumnCount };
    enum Role { PathRole = Qt::UserRole + 1, LineRole, OffsetRole };

    explicit ProblemsModel(QObject *parent = nullptr);

    // Shows `problems`: rows appended when they extend those shown (a view keeps its selection and scroll),
    // otherwise the model is reset.
    void setProblems(std::vector<ProblemEntry> problems);
    // Shows a workspace's problems as it loads, closes and finds more.
    void follow(Workspace *workspace);

    int rowCount(const QModelIndex &parent = {}) const override;
    // The rows that are files left out (in no format read), not failures.
    int skippedCount() const;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::vector<ProblemEntry> m_problems;
};

} // namespace fp8scope

// Every statistic known for the selection (run, layer, tensor, step): the tensor's series from the logs and
// from recomputation, then the run-level series (loss, grad norm, ...), each at the selected step (or the
// last point before it), with its source and recipe; then the run's evaluation scores. Values show eight
// significant digits (a cosine of 0.9996 is not 1); Qt::UserRole holds the exact value, which copies and CSV
// carry (views/models/tableexport).
#pragma once

#include <QAbstractTableModel>

#include <vector>

namespace fp8scope {

class Selection;
class Workspace;

class StatsTableModel : public QAbstractTableModel
{
    Q_OBJECT
public:
    // The recipe next to the statistic: the same statistic is listed once per recipe it was recomputed under.
    enum Column { StatColumn, RecipeColumn, ValueColumn, SourceColumn, StepColumn, ScopeColumn, ColumnCount };
    enum Role { SortValueRole = Qt::UserRole + 1 };

    // A statistic as the table shows it.
    struct Row {
        QString stat;
        double value = 0;
        qint64 step = 0;
        QString source;
        QString recipe;
        bool tensorLevel = false;
        bool eval = false; // an evaluation score (no step; source is the results file)
    };

    explicit StatsTableModel(QObject *parent = nullptr);
    // Shows `rows` (a reset: another selection lists other statistics).
    void setRows(std::vector<Row> rows);
    // Shows the statistics of a workspace's selection, again when the selection or the run's statistics change.
    void follow(Workspace *workspace, Selection *selection);
    // What the selection's run has at its layer, tensor and step, read from the workspace's catalog.
    static std::vector<Row> rowsOf(const Workspace &workspace, const Selection &selection);

    int rowCount(const QModelIndex &parent = {}) const override;
    int columnCount(const QModelIndex &parent = {}) const override;
    QVariant data(const QModelIndex &index, int role) const override;
    QVariant headerData(int section, Qt::Orientation orientation, int role) const override;

private:
    std::vector<Row> m_rows;
};

} // namespace fp8scope

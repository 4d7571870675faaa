// The comparison's evaluation scores as a bar chart: per task (and inference precision of the run) the
// baseline's bar and the run's side by side, each with its standard error, the run's in red where it is a
// significant drop. The bars lie along the score axis and the tasks stand one under another, their names
// written level (twenty tasks read as well as two); the chart asks for the height its rows need (the
// comparison scrolls it), and the legend sits above the axes, off the bars. An ordinary plot view, so it
// exports as the others do.
#pragma once

#include "core/analysis/comparetables.h"
#include "views/plotting/plotview.h"

class QCPBars;
class QCPErrorBars;

namespace fp8scope {

class EvalChart : public PlotView
{
    Q_OBJECT
public:
    explicit EvalChart(QWidget *parent = nullptr);

    void setRows(const std::vector<analysis::EvalRow> &rows, const QString &baselineName, const QString &runName,
        const QColor &runColour);
    const std::vector<analysis::EvalRow> &rows() const { return m_rows; }
    QString csv() const override;
    QString title() const override;
    // The height a task's row takes: its label's lines and a gap.
    int rowHeight() const;

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    std::vector<analysis::EvalRow> m_rows;
    QString m_baselineName, m_runName;
};

} // namespace fp8scope

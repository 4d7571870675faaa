// Where a comparison's statistic departs, marked on a curve view: a line at the departure's step and its
// interval shaded, placed on the view's x axis (steps, consumed samples or tokens) and kept there as the
// view is redrawn. The Comparison tab marks its overlay and difference with it, the triage wizard its loss.
#pragma once

#include "core/analysis/comparisondata.h"

#include <QObject>

class QCPItemRect;
class QCPItemStraightLine;

namespace fp8scope {

class CurveView;

class DepartureMark : public QObject
{
    Q_OBJECT
public:
    explicit DepartureMark(CurveView *view);

    // The comparison whose departure to mark (none: nothing marked).
    void setComparison(std::shared_ptr<const ComparisonData> data);
    // The line's x on the plot, NaN while hidden.
    double x() const;
    void update();

private:
    CurveView *m_view;
    std::shared_ptr<const ComparisonData> m_data;
    QCPItemRect *m_interval;
    QCPItemStraightLine *m_line;
};

} // namespace fp8scope

#include "departureclass.h"

#include "seriesmath.h"

#include <algorithm>
#include <cmath>
#include <span>

namespace fp8scope::analysis {

namespace {

// The median of the finite values of loss at the indices [from, to).
double medianOf(const StepSeries &loss, size_t from, size_t to)
{
    to = std::min(to, loss.size());
    return from < to ? median(std::span<const double>(loss.values.data() + from, to - from)) : NAN;
}

} // namespace

std::optional<int64_t> warmupEndOf(const StepSeries &learningRate, int64_t until)
{
    double top = -INFINITY;
    size_t n = 0;
    for (size_t i = 0; i < learningRate.size() && learningRate.steps[i] <= until; ++i, ++n) {
        if (std::isfinite(learningRate.values[i]))
            top = std::max(top, learningRate.values[i]);
    }
    if (n < 2 || !(top > 0))
        return std::nullopt;
    for (size_t i = 0; i < n; ++i) {
        if (learningRate.values[i] >= 0.98 * top)
            return learningRate.steps[i];
    }
    return std::nullopt;
}

DepartureClass classifyDeparture(const StepSeries &loss, int64_t departure, int64_t plannedSteps,
    std::optional<int64_t> warmupEnd, const DepartureClassOptions &o)
{
    DepartureClass c;
    const double fraction = double(departure) / double(std::max<int64_t>(plannedSteps, 1));
    const size_t before
        = size_t(std::lower_bound(loss.steps.begin(), loss.steps.end(), departure) - loss.steps.begin());
    c.evidence = {{QStringLiteral("fraction_of_plan"), fraction},
        {QStringLiteral("planned_steps"), double(plannedSteps)}, {QStringLiteral("points_before"), double(before)}};
    if (warmupEnd)
        c.evidence.insert(QStringLiteral("warmup_end"), double(*warmupEnd));
    const QString percent = QString::number(100.0 * fraction, 'f', fraction < 0.01 ? 2 : 1);
    // 1. Never tracked: it parts at its first points. (Without the loss's points, the plan and the warm-up
    // decide alone.)
    if (!loss.empty() && before < size_t(o.minPointsBefore)) {
        c.early = true;
        c.why = before == 0 ? QStringLiteral("it never tracked its baseline: it parts from its first point")
                            : QStringLiteral("it never tracked its baseline: it parts after its first %1 point%2")
                                  .arg(before)
                                  .arg(before == 1 ? QString() : QStringLiteral("s"));
        return c;
    }
    // 2. Late in the plan: mid-run, whatever the loss did.
    if (fraction >= o.earlyFraction) {
        c.why = QStringLiteral("it parts at %1 % of the planned steps").arg(percent);
        return c;
    }
    // 3. During the learning-rate warm-up.
    if (warmupEnd && departure <= *warmupEnd) {
        c.early = true;
        c.why = QStringLiteral("it parts during the learning-rate warm-up (to step %1)").arg(*warmupEnd);
        return c;
    }
    if (loss.empty()) {
        c.why = QStringLiteral("it parts at %1 % of the planned steps (the loss's points are not known)").arg(percent);
        c.early = true;
        return c;
    }
    // 4. While the loss still falls fast: in the second half of the way to the departure it fell by more than
    // a tenth of its fall from the start. The start is the highest of the first three points (the loss at
    // initialisation); the levels at the departure and half way are medians of five points.
    double start = -INFINITY;
    for (size_t i = 0; i < std::min<size_t>(3, before); ++i) {
        if (std::isfinite(loss.values[i]))
            start = std::max(start, loss.values[i]);
    }
    const size_t half
        = size_t(std::lower_bound(loss.steps.begin(), loss.steps.begin() + qsizetype(before), departure / 2)
            - loss.steps.begin());
    const double atDeparture = medianOf(loss, before >= 5 ? before - 5 : 0, before);
    const double halfWay = medianOf(loss, half >= 2 ? half - 2 : 0, std::min(half + 3, before));
    // Its lowest level over the whole log (the lowest median of five consecutive points).
    double lowest = INFINITY;
    for (size_t i = 0; i + 5 <= loss.size(); ++i)
        lowest = std::min(lowest, medianOf(loss, i, i + 5));
    if (!std::isfinite(lowest))
        lowest = atDeparture;
    const double fall = start - atDeparture, recent = halfWay - atDeparture;
    const double share = fall > 0 ? recent / fall : INFINITY;
    const double made = start - lowest > 0 ? fall / (start - lowest) : 1.0;
    c.evidence.insert(QStringLiteral("loss_start"), start);
    c.evidence.insert(QStringLiteral("loss_half_way"), halfWay);
    c.evidence.insert(QStringLiteral("loss_at_departure"), atDeparture);
    c.evidence.insert(QStringLiteral("loss_lowest"), lowest);
    c.evidence.insert(QStringLiteral("fall_made"), made);
    if (std::isfinite(share))
        c.evidence.insert(QStringLiteral("recent_fall_share"), share);
    if (!(fall > 0)) {
        c.early = true;
        c.why = QStringLiteral("the loss had not fallen before it parts");
        return c;
    }
    if (made < o.fallMade) {
        c.early = true;
        c.why = QStringLiteral("the loss was still in its initial fall: it had made %1 % of its fall from the start "
                               "to its lowest level")
                    .arg(100.0 * made, 0, 'f', 0);
        return c;
    }
    if (share > o.stillFallingShare) {
        c.early = true;
        c.why = QStringLiteral("the loss was still falling fast: from step %1 to the departure it fell by %2 % of "
                               "its fall from the start")
                    .arg(departure / 2)
                    .arg(100.0 * share, 0, 'f', 0);
        return c;
    }
    c.why = QStringLiteral("it tracked its baseline through the loss's initial fall%1 (from step %2 to the "
                           "departure the loss fell by only %3 % of its fall from the start, which was %4 % of its "
                           "fall to its lowest level) and parts later, at %5 % of the planned steps")
                .arg(warmupEnd ? QStringLiteral(" and past the learning-rate warm-up (to step %1)").arg(*warmupEnd)
                               : QString())
                .arg(departure / 2)
                .arg(100.0 * share, 0, 'f', 1)
                .arg(100.0 * made, 0, 'f', 0)
                .arg(percent);
    return c;
}

} // namespace fp8scope::analysis

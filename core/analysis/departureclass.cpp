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

GapGrowth gapGrowth(const Departure &dep, int64_t from, int64_t departure)
{
    GapGrowth g;
    const Departure::Trace &trace = dep.trace;
    const std::vector<int64_t> &steps = trace.steps;
    if (trace.difference.size() != steps.size() || trace.edge.size() != steps.size() || steps.size() < 10)
        return g;
    const size_t a = size_t(std::lower_bound(steps.begin(), steps.end(), from) - steps.begin());
    const size_t d = size_t(std::lower_bound(steps.begin(), steps.end(), departure) - steps.begin());
    const size_t n = steps.size();
    // Levels: medians of the raw differences over k points (a quarter of the points from the start of tracking to
    // the departure, at least five) at the start of tracking, just before the departure and at the end. Raw, not
    // the running median: a centred window would carry the rise after the departure into the points before it.
    if (d < a + 10 || n < d + 10)
        return g;
    const size_t k = std::min(std::max<size_t>(5, (d - a) / 4), (n - d) / 2);
    const auto level = [&](size_t from, size_t to) {
        return median(std::span<const double>(trace.difference.data() + from, to - from));
    };
    g.atFrom = level(a, a + k);
    g.atDeparture = level(d - k, d);
    g.atEnd = level(n - k, n);
    g.before = g.atDeparture - g.atFrom;
    const double spanBefore = double(steps[d - k / 2 - 1] - steps[a + k / 2]),
                 spanAfter = double(steps[n - k / 2 - 1] - steps[d - k / 2 - 1]);
    g.rateBefore = spanBefore > 0 ? g.before / spanBefore : 0;
    g.rateAfter = spanAfter > 0 ? (g.atEnd - g.atDeparture) / spanAfter : 0;
    // The rise before is told from noise as the departure tells a gap: beyond 4 sigmas of the difference of two
    // medians of k points (1.25 sigma / sqrt(k) each).
    g.noise = 4.0 * 1.25 * (std::isfinite(dep.noise) ? dep.noise : 0.0) * std::sqrt(2.0 / double(k));
    g.gradual = g.before > g.noise && g.rateBefore > 0 && g.rateBefore >= 0.5 * g.rateAfter;
    return g;
}

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
    std::optional<int64_t> warmupEnd, const DepartureClassOptions &o, const Tracking *tracking)
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
    // 4. Tracking, judged once the loss's initial fall is over: the first step t from which, in the second half of
    // the way to t, the loss fell by no more than a tenth of its fall from the start (the start is the highest of
    // the first three points, levels at t and half way are medians of five points). Before that both runs fall
    // steeply and a band says little; after it, a run that stayed within the band for as many points as a
    // departure is judged on has shown that it tracks.
    double start = -INFINITY;
    for (size_t i = 0; i < std::min<size_t>(3, before); ++i) {
        if (std::isfinite(loss.values[i]))
            start = std::max(start, loss.values[i]);
    }
    const auto shareAt = [&](size_t at) -> double {
        // The share of the fall from the start to the point `at` made in the second half of the way to it.
        const int64_t step = loss.steps[at];
        const size_t half
            = size_t(std::lower_bound(loss.steps.begin(), loss.steps.begin() + qsizetype(at + 1), step / 2)
                - loss.steps.begin());
        // Only where the two levels' points are apart (else they are one level and the share says nothing).
        if (at < 4 || half + 3 > at - 4)
            return INFINITY;
        const double level = medianOf(loss, at - 4, at + 1);
        const double halfWay = medianOf(loss, half >= 2 ? half - 2 : 0, half + 3);
        const double fall = start - level;
        return fall > 0 ? (halfWay - level) / fall : INFINITY;
    };
    std::optional<int64_t> fallEnd;
    for (size_t i = std::min<size_t>(4, before); i < before; ++i) {
        if (shareAt(i) <= o.stillFallingShare) {
            fallEnd = loss.steps[i];
            break;
        }
    }
    const double atDeparture = medianOf(loss, before >= 5 ? before - 5 : 0, before);
    double lowest = INFINITY;
    for (size_t i = 0; i + 5 <= loss.size(); ++i)
        lowest = std::min(lowest, medianOf(loss, i, i + 5));
    if (!std::isfinite(lowest))
        lowest = atDeparture;
    c.evidence.insert(QStringLiteral("loss_start"), start);
    c.evidence.insert(QStringLiteral("loss_at_departure"), atDeparture);
    c.evidence.insert(QStringLiteral("loss_lowest"), lowest);
    if (start - lowest > 0)
        c.evidence.insert(QStringLiteral("fall_made"), (start - atDeparture) / (start - lowest));
    if (before > 0 && std::isfinite(shareAt(before - 1)))
        c.evidence.insert(QStringLiteral("recent_fall_share"), shareAt(before - 1));
    if (!(start - atDeparture > 0)) {
        c.early = true;
        c.why = QStringLiteral("the loss had not fallen before it parts");
        return c;
    }
    if (!fallEnd) {
        c.early = true;
        c.why = QStringLiteral("it parts while the loss is still in its initial fall (in the second half of the way "
                               "to the departure it fell by more than %1 % of its fall from the start)")
                    .arg(100.0 * o.stillFallingShare, 0, 'f', 0);
        return c;
    }
    c.evidence.insert(QStringLiteral("fall_end"), double(*fallEnd));
    const int64_t from = std::max(*fallEnd, warmupEnd.value_or(*fallEnd));
    size_t tracked = 0, counted = 0;
    if (tracking) {
        for (size_t i = 0; i < tracking->steps.size() && tracking->steps[i] < departure; ++i) {
            if (tracking->steps[i] >= from) {
                ++counted;
                tracked += tracking->inBand[i] ? 1 : 0;
            }
        }
    } else {
        for (size_t i = 0; i < before; ++i)
            tracked += loss.steps[i] >= from ? 1 : 0;
        counted = tracked;
    }
    c.evidence.insert(QStringLiteral("tracked_from"), double(from));
    c.evidence.insert(QStringLiteral("tracked_points"), double(tracked));
    const QString after = warmupEnd && *warmupEnd > *fallEnd
        ? QStringLiteral("the learning-rate warm-up (to step %1)").arg(*warmupEnd)
        : QStringLiteral("the loss's initial fall (to step %1)").arg(*fallEnd);
    if (int(tracked) < o.minTrackedPoints) {
        c.early = true;
        c.why = QStringLiteral("it never tracked its baseline: after %1 it stayed within the band for %2 point%3 "
                               "(of %4) before it parts, fewer than %5")
                    .arg(after)
                    .arg(tracked)
                    .arg(tracked == 1 ? QString() : QStringLiteral("s"))
                    .arg(counted)
                    .arg(o.minTrackedPoints);
        return c;
    }
    c.why = QStringLiteral("it tracked its baseline: after %1 it stayed within the band for %2 points before it "
                           "parts at %3 % of the planned steps")
                .arg(after)
                .arg(tracked)
                .arg(percent);
    return c;
}

} // namespace fp8scope::analysis

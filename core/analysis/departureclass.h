// Early divergence or mid-run instability: what a departure of the loss is (docs/TRIAGE.md, "The verdict").
// Tracking decides, in one sentence: a departure is mid-run when, before it, the run stayed within its baseline's
// band for at least 16 points after the loss's initial fall and the learning-rate warm-up were over (or it parts
// after a tenth of the planned steps); otherwise it is early. The loss's fall only says when tracking can be
// judged from; it never vetoes a run that tracked.
#pragma once

#include "seriesmath.h"

#include "core/query/stepseries.h"

#include <QJsonObject>
#include <QString>

#include <cstdint>
#include <optional>
#include <vector>

namespace fp8scope::analysis {

struct DepartureClassOptions {
    double earlyFraction = 0.10; // a departure from this share of the planned steps on is mid-run
    int minPointsBefore = 8; // fewer points before the departure: the run never tracked its baseline
    // The loss's initial fall is over at the first step t where, in the second half of the way to t, it fell by
    // no more than this share of its fall from the start of the log to t.
    double stillFallingShare = 0.10;
    // Tracked: at least this many points within the band after the initial fall and the warm-up: twice the fewest
    // a departure is judged on (DepartureOptions::minPoints, 8), so that the band held over more evidence than it
    // takes to say a run left it (a handful of points inside it is what noise gives a run that is already
    // leaving).
    int minTrackedPoints = 16;
};

// Which of the aligned points before a departure lay within the baseline's band (the departure's trace:
// |smoothed difference| <= edge), at the steps the loss is judged on.
struct Tracking {
    std::vector<int64_t> steps;
    std::vector<bool> inBand;
};

struct DepartureClass {
    bool early = false;
    QString why; // the rule that decided, in words
    QJsonObject evidence; // fraction_of_plan, points_before, warmup_end, loss_start, loss_half_way, ...
};

// `loss` is the loss the fall is judged on (the baseline's at the aligned steps, or a run's own), `departure`
// the step the run parts at, `plannedSteps` its plan, `warmupEnd` the step its learning rate stops rising,
// `tracking` the band's verdict on each point before it (none: a run on its own, which tracked its own course at
// every point before it left it).
DepartureClass classifyDeparture(const StepSeries &loss, int64_t departure, int64_t plannedSteps,
    std::optional<int64_t> warmupEnd, const DepartureClassOptions &options = {}, const Tracking *tracking = nullptr);

// How a gap grew: gradually from the start (FP8's cost, growing smoothly) or in a break after tracking. Over the
// aligned points from `from` (where tracking is judged from) to the departure, the difference (medians of a
// quarter of those points, at least five, at each end) rose by `before`; `rateBefore` and `rateAfter` are its mean
// rates before and after the departure (per step). Gradual: the rise before stands out of the noise (`noise`: 4
// sigmas of the difference of two such medians, as the departure tells a gap) and its rate is no less than half
// the rate after.
struct GapGrowth {
    double atFrom = 0, atDeparture = 0, atEnd = 0;
    double before = 0, rateBefore = 0, rateAfter = 0, noise = 0;
    bool gradual = false;
};
GapGrowth gapGrowth(const Departure &departure, int64_t from, int64_t step);

// Where a learning rate stops rising: the first step it reaches 98 % of its highest value up to `until`;
// nullopt without two points.
std::optional<int64_t> warmupEndOf(const StepSeries &learningRate, int64_t until);

} // namespace fp8scope::analysis

#include "spikeexcess.h"

#include <algorithm>
#include <cstdlib>

namespace fp8scope::analysis {

namespace {

// The spikes of `a` that `b` has no spike within `tolerance` steps of.
size_t unmatchedSpikes(const SpikeReport &a, const SpikeReport &b, int64_t tolerance)
{
    size_t n = 0;
    for (const Spike &x : a.spikes) {
        const bool matched = std::any_of(
            b.spikes.begin(), b.spikes.end(), [&](const Spike &y) { return std::abs(y.step - x.step) <= tolerance; });
        n += matched ? 0 : 1;
    }
    return n;
}

} // namespace

SpikeExcess compareSpikes(const StepSeries &run, const StepSeries &baseline, const SpikeExcessOptions &o)
{
    SpikeExcess e;
    e.baseline = findSpikes(baseline, o.spikes);
    e.run = findSpikes(run, o.spikes);
    // Spikes both runs have at the same steps are the data's (the same batches in the same order), not the
    // precision's: the test compares the spikes only one of them has. The same batch's spike starts in the log
    // interval that holds its step in each run, or (the runs' intervals differ, or one run's mean catches its
    // start a point later) the next: within the larger interval. Wider, a spike of each run's own that happen to
    // fall near each other would be taken for the data's. The exposure is the steps a run's points cover, not
    // their number: runs logged at other intervals see the same spikes in more or fewer points.
    e.tolerance = std::max(medianInterval(baseline), medianInterval(run));
    e.runOnly = unmatchedSpikes(e.run, e.baseline, e.tolerance);
    e.baselineOnly = unmatchedSpikes(e.baseline, e.run, e.tolerance);
    e.shared = e.run.spikes.size() - e.runOnly;
    e.runSpan = std::max<int64_t>(e.run.span, 1);
    e.baselineSpan = std::max<int64_t>(e.baseline.span, 1);
    e.p = spikeRateMidP(e.runOnly, size_t(e.runSpan), e.baselineOnly, size_t(e.baselineSpan));
    e.more = e.runOnly >= o.minSpikes && e.p < o.alpha;
    return e;
}

} // namespace fp8scope::analysis

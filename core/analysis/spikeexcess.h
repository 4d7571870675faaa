// Whether a run spikes more than its baseline (docs/TRIAGE.md, "Loss spikes"): the spikes only one of the two
// has (those at the same steps in both are the data's), compared as two Poisson rates over the steps each
// covers.
#pragma once

#include "core/analysis/seriesmath.h"

#include <cstdint>

namespace fp8scope::analysis {

struct SpikeExcessOptions {
    SpikeOptions spikes;
    double alpha = 0.05; // one-sided significance of the rate test (its mid-p value)
    size_t minSpikes = 3; // the run's own spikes: at least this many
};

struct SpikeExcess {
    SpikeReport run, baseline;
    size_t runOnly = 0, baselineOnly = 0, shared = 0;
    int64_t runSpan = 0, baselineSpan = 0; // the steps each covers (the exposure)
    int64_t tolerance = 0; // spikes this close in steps are the same spike
    double p = 1.0; // the one-sided mid-p value of the rate test
    bool more = false; // the run spikes more than its baseline
};

// `run` and `baseline` are the losses up to where each departs (or whole).
SpikeExcess compareSpikes(const StepSeries &run, const StepSeries &baseline, const SpikeExcessOptions &options = {});

} // namespace fp8scope::analysis

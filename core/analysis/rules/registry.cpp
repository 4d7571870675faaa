// The triage engine's rules, in the order they run (a later rule reads what an earlier one found: the spikes
// and the layer signals read the departure, the what-if the layer signals). docs/TRIAGE.md follows this list.
#include "core/analysis/rules.h"

namespace fp8scope::analysis {

const std::vector<PairRule> &pairRules()
{
    static const std::vector<PairRule> rules {
        {"loss-departure", "the loss leaves the baseline's band for good", rules::lossDeparture},
        {"blow-up", "the loss stops being a number for good; the first non-finite value; recoveries", rules::blowUp},
        {"loss-gap", "the loss's gap at the end against the gap the baseline accepts", rules::lossGap},
        {"grad-norm-departure", "the grad norm does, with a tolerance of its own", rules::gradNormDeparture},
        {"loss-spikes", "the run's own spikes outnumber the baseline's before the departure", rules::lossSpikes},
        {"config-differences", "config keys and key-package versions that differ, by class", rules::configDifferences},
        {"layer-signals", "per-layer statistics that moved against their peers, most suspect first",
            rules::layerSignals},
        {"precision-switches", "GEMMs the run switched to high precision by itself (AutoswitchGemm)",
            rules::precisionSwitches},
        {"recipe-what-if", "the first suspect's evidence dump under each recipe the run could use",
            rules::recipeWhatIf},
        {"truncated-statistics", "statistics the TE log prints too small to read", rules::truncatedStatistics},
        {"eval-gaps", "evaluation drops beyond the corrected threshold, notable drops below it", rules::evalGaps},
        {"inference-precision", "a gap that narrows under another inference precision", rules::inferencePrecision},
        {"checkpoint-audit", "the inference checkpoint's scales and weights (core/audit)", rules::checkpointAudit},
        {"skipped-iterations", "skipped and NaN iterations against the baseline's", rules::skippedIterations},
        {"restarts", "a log that goes back: a crash and a resume", rules::restarts},
    };
    return rules;
}

const std::vector<RunRule> &runRules()
{
    static const std::vector<RunRule> rules {
        {"run-blow-up", "a loss that rises for good", rules::runBlowUp},
        {"blow-up", "the loss stops being a number for good; the first non-finite value; recoveries",
            rules::runBlowUpNonFinite},
        {"loss-spikes", "spikes, and those that never recover", rules::runSpikes},
        {"skipped-iterations", "skipped and NaN iterations after the start-up", rules::runSkippedIterations},
        {"restarts", "a log that goes back: a crash and a resume", rules::runRestarts},
    };
    return rules;
}

} // namespace fp8scope::analysis

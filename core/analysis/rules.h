// The triage engine's rules: each one pure function over what triageinputs.h gathered, adding its findings
// (and, for the departure and the layer signals, what the verdict reads) to the comparison being made, and one
// registry that lists them in the order they run; docs/TRIAGE.md describes them in that order. A new rule is
// one file in core/analysis/rules and one line in rules/registry.cpp.
#pragma once

#include "triageinputs.h"

#include <vector>

namespace fp8scope::analysis {

struct PairRule {
    const char *name; // as docs/TRIAGE.md names it
    const char *what; // one line
    void (*apply)(const PairInputs &in, const TriageOptions &options, Comparison &c);
};
struct RunRule {
    const char *name;
    const char *what;
    void (*apply)(const RunInputs &in, const TriageOptions &options, RunCheck &r);
};

// In the order they run: a later rule may read what an earlier one found (the departure, the layer signals).
const std::vector<PairRule> &pairRules();
const std::vector<RunRule> &runRules();

namespace rules {

// Pair rules (rules/*.cpp).
void lossDeparture(const PairInputs &in, const TriageOptions &o, Comparison &c);
void blowUp(const PairInputs &in, const TriageOptions &o, Comparison &c);
void lossGap(const PairInputs &in, const TriageOptions &o, Comparison &c);
void gradNormDeparture(const PairInputs &in, const TriageOptions &o, Comparison &c);
void lossSpikes(const PairInputs &in, const TriageOptions &o, Comparison &c);
void configDifferences(const PairInputs &in, const TriageOptions &o, Comparison &c);
void layerSignals(const PairInputs &in, const TriageOptions &o, Comparison &c);
void precisionSwitches(const PairInputs &in, const TriageOptions &o, Comparison &c);
void recipeWhatIf(const PairInputs &in, const TriageOptions &o, Comparison &c);
void truncatedStatistics(const PairInputs &in, const TriageOptions &o, Comparison &c);
void evalGaps(const PairInputs &in, const TriageOptions &o, Comparison &c);
void inferencePrecision(const PairInputs &in, const TriageOptions &o, Comparison &c);
void skippedIterations(const PairInputs &in, const TriageOptions &o, Comparison &c);
void restarts(const PairInputs &in, const TriageOptions &o, Comparison &c);
void checkpointAudit(const PairInputs &in, const TriageOptions &o, Comparison &c);

// Rules of a run on its own.
void runBlowUp(const RunInputs &in, const TriageOptions &o, RunCheck &r);
void runBlowUpNonFinite(const RunInputs &in, const TriageOptions &o, RunCheck &r);
void runSpikes(const RunInputs &in, const TriageOptions &o, RunCheck &r);
void runSkippedIterations(const RunInputs &in, const TriageOptions &o, RunCheck &r);
void runRestarts(const RunInputs &in, const TriageOptions &o, RunCheck &r);

// Shared by rules.
// A statistic that cannot be exactly zero (an MSE, a scale, an amax) whose values read 0.0000 was printed
// too small for the TE log's four decimals (underflows% and overflows% of 0 are real).
bool isTruncated(const SeriesPoints &s);
// The skipped-iterations finding of `run` (with the baseline's counts when it is given).
std::optional<Finding> skippedFinding(
    const RunInputs &run, int64_t planned, const RunInputs *baseline, const TriageOptions &options);
// A departure's numbers as a finding's evidence (step, interval, offset before, noise, band, gap at the end,
// points).
QJsonObject departureEvidence(const Departure &d);
// A run's blow-up (its loss not a number to the end of its log), the first non-finite value it logged, and the
// recoveries it needed (rules/blowup.cpp).
std::vector<Finding> blowUpFindings(const RunInputs &run, const TriageOptions &options);
// The restart finding of a run's rewinds.
std::optional<Finding> restartFinding(const RunInputs &run);

} // namespace rules

} // namespace fp8scope::analysis

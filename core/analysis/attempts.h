// The evaluation path of one baseline: every FP8 (MXFP8, NVFP4) attempt compared with it, what each changed
// (against the baseline, and against the attempt it derives from) in the groups users think in, its outcome,
// whether it fixed what its parent had, and the final candidate by a stated rule. The CLI's `attempts`
// command prints it; docs/TRIAGE.md ("The attempts of one baseline") has the rules.
#pragma once

#include "triage.h"

#include "core/query/catalog.h"

#include <QJsonObject>
#include <QMap>

#include <optional>
#include <vector>

namespace fp8scope::analysis {

// What kind of change a group is: a typed state the rules match on ("tried in"); its name is for people.
enum class ChangeKind {
    PrecisionAndRecipe,
    ParallelLayout,
    DeterministicMode,
    Bf16Layers,
    Fp8Parameters,
    Version,
    Key
};

struct AttemptChange {
    QString key; // the config key, or "version of PACKAGE"
    QString from; // the baseline's (or parent's) value; "(unset)" where it has none
    QString to; // the attempt's
    QString group; // the group's name: "precision and recipe", "parallel layout", "deterministic mode", "BF16 fallback
                   // layers", "FP8 parameters", "version of PACKAGE", or the key
    ChangeKind kind = ChangeKind::Key;
};

// The group a differing key belongs to: keys that make one change together share it (deterministic mode's flag
// and its environment variables; the parallel layout's sizes; the recipe's settings); any other key is its own.
// Its kind, and its name.
std::pair<ChangeKind, QString> classifyChange(const QString &key, bool version);
QString changeGroup(const QString &key, bool version);

struct Attempt {
    RunRef run;
    QString name;
    RunRef parent; // invalid: derives from the baseline alone
    QString parentName;
    QString parentSource; // "fp8scope.json" (the user said), "closest earlier attempt", or empty
    std::vector<AttemptChange> changes; // against the baseline, incidental keys (paths, names) left out
    std::vector<AttemptChange> fromParent; // against the parent (against the baseline where there is none)
    QStringList groupsFromParent; // the distinct groups of fromParent
    // More than one group changed from its parent (from the baseline, going to FP8 is one: precision and recipe):
    // not one change at a time.
    bool severalAtOnce = false;
    // The outcome, from its comparison with the baseline.
    Verdict verdict = Verdict::None;
    // Whether its loss comparison with the baseline means what it says (the comparison's own, as the wizard's
    // first step says it): a verdict compared with care carries its caveat wherever it is shown.
    ComparabilityLevel comparability = ComparabilityLevel::Unknown;
    QString comparabilityText;
    std::optional<int64_t> departure;
    double endGap = NAN; // the smoothed loss difference at the last aligned step (run - baseline)
    double endEdge = NAN; // what the band allows there (tolerance + band)
    bool spikes = false; // a loss-spikes warning
    QMap<QString, int> evalGaps; // inference precision ("" unknown) -> significant gaps
    int auditFindings = -1; // of its inference checkpoint; -1: it has none
    int bf16Layers = 0; // layers kept in BF16 (Megatron's first/last-layer flags)
    // Against its parent: "fixed" (the parent had a problem, this one is healthy), "partly" (the same class,
    // departing later), "no" (still there, or worse), "" (the parent was healthy, or there is none).
    QString fixesParent;
    // The loss difference to the baseline as judged (smoothed, run - baseline) and the edge it must stay under,
    // at most kTracePoints of them spread evenly, for a plot.
    std::vector<int64_t> traceSteps;
    std::vector<double> traceGap, traceEdge;
    bool healthy() const;
};
constexpr size_t kTracePoints = 4000;

struct AttemptsResult {
    RunRef baseline;
    QString baselineName;
    std::vector<Attempt> attempts; // in name order (natural)
    std::optional<size_t> candidate; // the user's choice where there is one, else by candidateRule()
    std::optional<size_t> ruleCandidate; // by candidateRule()
    CandidateSource candidateSource = CandidateSource::None; // the rule's, confirmed by the user, or the user's
    QString candidateNote; // the user's note
};

// The rule the final candidate is chosen by, in words.
QString candidateRule();
// What follows an attempt's verdict wherever it is printed: ", compared with care" where its comparison with the
// baseline is (the wizard's first step says why), else nothing.
QString comparabilityCaveat(const Attempt &a);

// The loss gap of an attempt as a plot and the table show it (Attempt's endGap, endEdge and trace).
struct LossGap {
    double endGap = NAN, endEdge = NAN;
    std::vector<int64_t> steps;
    std::vector<double> gap, edge;
};
LossGap lossGapOf(const StatComparison &loss);

// The attempts of `baseline` among the triage's comparisons; `gaps` (when given, one per comparison, in their
// order) spares comparing the loss again.
AttemptsResult attemptsOf(const Catalog &catalog, RunRef baseline, const std::vector<Comparison> &comparisons,
    const std::vector<LossGap> *gaps = nullptr);
// The same, comparing every run the catalog pairs with `baseline` (the window's Attempts tab); a pair whose
// triage stamp (triageStamp: the engine, the options, both stores' data generation) is unchanged since it was
// last compared here is not compared again.
AttemptsResult computeAttempts(const Catalog &catalog, RunRef baseline, const TriageOptions &options = {});
// The runs some other run is paired with as its baseline, in the catalog's order.
std::vector<RunRef> baselinesWithAttempts(const Catalog &catalog);

// The attempts of the same baseline that already tried what a next step of `run` suggests: a change from `run` to
// the attempt that the step's action names (the recipe it proposes, the BF16 fallback flags, a config key), with
// how that attempt came out against the baseline compared with `run`.
struct TriedBy {
    RunRef run;
    QString name;
    QString change; // "--fp8-recipe: mxfp8 -> blockwise", and " with N other change(s)" where there were more
    QString outcome; // "healthy", "departs later (step 2400, not 1600)", "departs at the same step", ...
    bool fixed = false; // healthy where `run` was not
    QString text() const; // "tried in NAME (CHANGE): OUTCOME"
};
std::vector<TriedBy> triedBy(const Catalog &catalog, const NextStep &step, const AttemptsResult &attempts, RunRef run);

QJsonObject attemptsJson(const AttemptsResult &result);

} // namespace fp8scope::analysis

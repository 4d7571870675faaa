// The triage engine: an FP8 run against its baseline (the query layer's pairing), and a run without one
// against itself. It tells apart early divergence (software, versions, a recently enabled feature),
// mid-run instability (layers whose statistics moved first), loss spikes and a downstream-score gap, and
// says what to try next, one change at a time. The rules and thresholds are in docs/TRIAGE.md; every number
// a finding quotes is in its evidence.
#pragma once

#include "seriesmath.h"

#include "core/query/catalog.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

namespace fp8scope::analysis {

enum class Verdict { None, EarlyDivergence, MidRunInstability, LossSpikes, DownstreamGap };
QString verdictName(Verdict v); // "none", "early-divergence", ...

enum class Severity { Info, Warning, Critical };
QString severityName(Severity s);

struct Finding {
    QString kind; // loss-departure, loss-spikes, config-difference, version-difference, layer-signal, eval-gap,
                  // inference-precision, run-blow-up, truncated-statistic
    Severity severity = Severity::Info;
    QString layer, tensor, stat, key, task;
    std::optional<int64_t> step; // where it starts
    std::optional<int64_t> lastStep; // where it ends, for a finding that spans steps (spikes, skipped steps)
    QString summary;
    QJsonObject evidence;
    QString suggestion;
};

struct TriageOptions {
    DepartureOptions departure;
    // The grad norm's departure: it is noisier and its level differs more between precisions than the loss's
    // (a tenth of the baseline's is within what healthy FP8 runs show).
    DepartureOptions gradNormDeparture {.relativeTolerance = 0.10, .absoluteTolerance = 0.0};
    SpikeOptions spikes;
    OnsetOptions onset;
    double earlyFraction = 0.10; // a departure before this share of the planned steps is early divergence
    double evalSigmas = 3.0; // an eval gap counts beyond this many combined standard errors
    double spikeAlpha = 0.05; // the run's own spikes outnumber the baseline's at this one-sided significance
    size_t minSpikes = 3; // ... and number at least this many
    // The run is still being written (fp8scope-cli watch): a layer signal while the loss has not departed
    // (yet) is an early warning, weighed as one before a departure, rather than a signal the loss never
    // followed.
    bool live = false;
};

struct Comparison {
    RunRef baseline;
    RunRef run;
    Verdict verdict = Verdict::None;
    std::optional<int64_t> departure;
    std::optional<int64_t> lead; // departure - onset of the first layer signal
    int64_t plannedSteps = 0;
    std::vector<Finding> findings; // most important first
    bool fromStore = false; // read back from the store, not computed now
};

struct RunCheck {
    RunRef run;
    Verdict verdict = Verdict::None;
    std::optional<int64_t> departure; // where the loss leaves its own course (a blow-up, a sustained rise)
    std::vector<Finding> findings;
    bool fromStore = false;
};

struct TriageResult {
    std::vector<Comparison> comparisons;
    std::vector<RunCheck> runs;
};

// One statistic of a run against its baseline (the loss, the grad norm, ...): its aligned points, their
// difference, the band and the departure. What `fp8scope-cli compare` prints.
struct StatComparison {
    QString stat; // canonical
    bool found = false; // both runs have it
    QString baselineSource, runSource;
    std::optional<StepSeries> baselinePoints, runPoints; // as read, at each run's own steps (when it has it)
    bool intervalMeans = false; // Megatron's interval means aligned over the sparser series' window
    DepartureOptions options; // the tolerance it was judged with
    // What the runs were aligned on: "step", or "consumed samples" / "consumed tokens" when both logged them
    // and their batch sizes differ (their rates per step differ by more than 1 %). The departure's step and
    // interval are the run's steps either way; its trace's steps are on the axis.
    QString axis = QStringLiteral("step");
    std::optional<int64_t> baselineStep; // the baseline's step where the run departs (the same consumed samples)
    Departure departure; // its trace holds the aligned points
};
StatComparison compareStatistic(
    const Catalog &catalog, RunRef baseline, RunRef run, const QString &stat, const TriageOptions &options = {});

// One comparison; *loss (when given) gets the loss's StatComparison it was judged on.
Comparison compareRuns(const Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options = {},
    StatComparison *loss = nullptr);
// A run on its own.
RunCheck checkRun(const Catalog &catalog, RunRef run, const TriageOptions &options = {});
// Every run with a baseline against it, and every run without one that has a loss, on its own.
TriageResult triage(const Catalog &catalog, const TriageOptions &options = {});
// What triage() works on: (baseline, run) pairs, and runs to check alone (baseline invalid).
struct TriageTarget {
    RunRef baseline;
    RunRef run;
};
std::vector<TriageTarget> triageTargets(const Catalog &catalog);

// The same, through the store: a result stored with the stamp the data and engine have now is read back;
// any other is computed and stored (a store that cannot take it is reported in *errors, the result still
// returned). The stamp: the engine's version, the options, and the data generation of the stores of both runs.
Comparison compareRunsStored(
    Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options = {}, QStringList *errors = nullptr);
RunCheck checkRunStored(Catalog &catalog, RunRef run, const TriageOptions &options = {}, QStringList *errors = nullptr);
TriageResult triageStored(Catalog &catalog, const TriageOptions &options = {}, QStringList *errors = nullptr);
// The stamp a result of (baseline, run) computed now carries (baseline invalid: a run checked alone).
QString triageStamp(const Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options);
// The version of the engine's rules: moved whenever a rule or threshold changes, so that results stored by an
// older engine are computed again.
constexpr int kTriageEngineVersion = 4;

// What a finding is, whatever its rank and steps: its kind, layer, tensor, statistic, key and task, joined. A
// user's review (core/store FindingReview) is kept under it, so that it outlives the result computed again.
QString findingIdentity(const Finding &f);

// The finding as the CLI's JSON prints it (fields that do not apply are left out).
QJsonObject findingJson(const Finding &f);

// What a config key is to a comparison of a baseline and its FP8 twin.
enum class KeyClass { Expected, Incidental, Suspect, Other };
KeyClass classifyConfigKey(const QString &key);

} // namespace fp8scope::analysis

// The triage engine: an FP8 run against its baseline (the query layer's pairing), and a run without one
// against itself. It tells apart early divergence (software, versions, a recently enabled feature),
// mid-run instability (layers whose statistics moved first), loss spikes and a downstream-score gap, and
// says what to try next, one change at a time. The rules and thresholds are in docs/TRIAGE.md; every number
// a finding quotes is in its evidence.
#pragma once

#include "findingkind.h"
#include "seriesmath.h"

#include "core/audit/checkpointaudit.h"
#include "core/numerics/whatif.h"
#include "core/query/catalog.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <optional>
#include <vector>

namespace fp8scope::analysis {

// NotComparable: the two runs have no loss statistic in common, so nothing says whether they part.
enum class Verdict { None, EarlyDivergence, MidRunInstability, LossSpikes, DownstreamGap, NotComparable };
QString verdictName(Verdict v); // "none", "early-divergence", ..., "not-comparable"

enum class Severity { Info, Warning, Critical };
QString severityName(Severity s);

struct Finding {
    FindingKind kind = FindingKind::LossDeparture; // findingkind.h: its name, rank, wizard step, ...
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
    // The loss gap at the end a comparison accepts where its baseline's manifest sets none (loss_gap_bar): what
    // one team accepts over 24k steps (TE #1419); in the loss's units.
    double lossGapBar = 0.01;
    // An eval gap counts beyond this many combined standard errors below the baseline: about a 5 % family-wise
    // level over 20 tasks (Bonferroni, one-sided), so a harness's usual task list does not gap by chance.
    double evalSigmas = 3.0;
    // A drop of at least this many standard errors that stays below evalSigmas is said as information (a
    // notable drop: one-sided 2.3 % for a single task, not corrected for the many tasks).
    double evalNotableSigmas = 2.0;
    double spikeAlpha = 0.05; // the run's own spikes outnumber the baseline's at this one-sided significance
    size_t minSpikes = 3; // ... and number at least this many
    // The checkpoint audit's thresholds (the audit of the run's inference checkpoint the triage reads).
    AuditThresholds audit;
    // The run is still being written (fp8scope-cli watch): a layer signal while the loss has not departed
    // (yet) is an early warning, weighed as one before a departure, rather than a signal the loss never
    // followed.
    bool live = false;
};

// What a next step proposes to change, typed, so that an attempt that changed it is found by what it changed, not
// by the step's words ("tried in": core/analysis/attempts triedBy).
struct Proposal {
    enum class Kind { Recipe, Bf16Layers, ConfigValue };
    Kind kind = Kind::ConfigValue;
    QString recipe; // Recipe: the recipe's family (current, mxfp8, blockwise, nvfp4; recipeFamily)
    QStringList layers; // Bf16Layers: the layers kept in BF16; empty for the first and last layers
    QString key; // ConfigValue: the config key, and the value proposed (the baseline's)
    QString value;
    bool operator==(const Proposal &) const = default;
};
QString proposalKindName(Proposal::Kind kind);

// One change to try, off one finding, in the order to try them (one at a time).
struct NextStep {
    FindingKind kind; // of the finding it acts on
    QString finding; // that finding's identity (findingIdentity)
    QString what; // the finding's summary
    QString action; // what to change
    QString config; // a config the action applies, as it pastes (YAML), or empty
    std::vector<Proposal> proposals; // what the action proposes, each on its own (alternatives, one at a time)
};

// Whether a loss comparison of the two runs means what it says: the model shape, data and plan agree, both
// train in a precision of the family they are meant to (the baseline high, the run low), with the same
// implementation. WithCare lists the differences that a loss comparison does not account for.
enum class ComparabilityLevel { Comparable, WithCare, Unknown };
struct ComparabilityRow {
    QString key; // the config key, or "precision" / "implementation"
    QString baseline;
    QString run;
    QString aspect; // "model shape", "data", "plan", "precision family", "implementation"; empty: a config key that
                    // differs and changes none of them (listed after those that do)
};
struct Comparability {
    ComparabilityLevel level = ComparabilityLevel::Unknown;
    std::vector<ComparabilityRow> rows;
    QString text; // "Comparable: ...", "Compared with care: ...", or why it cannot be told
};
// The aspect of comparability a config key belongs to ("model shape", "data", "plan"), or "" for none.
QString comparabilityAspect(const QString &key);

// The tensor dump the class's evidence (histogram, recipe what-if) is read from: of the first suspect's layer
// and tensor, the dump whose step shows the most damage in the suspect's statistic at or after its onset and
// within the departure window; the nearest to the onset when none is there. `why` says which and why.
struct EvidenceDump {
    Dump dump;
    QString stat; // the suspect's statistic it was chosen by
    int64_t onset = 0;
    std::optional<double> value; // that statistic at the dump's step, where logged
    std::optional<double> early; // the statistic's early level
    bool afterOnset = false; // false: no dump at or after the onset, the nearest taken
    QString why;
};

struct Comparison {
    RunRef baseline; // invalid for a run checked alone (comparisonOf(RunCheck))
    RunRef run;
    Verdict verdict = Verdict::None;
    std::optional<int64_t> departure;
    std::optional<int64_t> lead; // departure - onset of the first layer signal
    int64_t plannedSteps = 0;
    std::vector<Finding> findings; // most important first
    bool fromStore = false; // read back from the store, not computed now
    // What every front end displays and none derives again (finishComparison):
    std::vector<Finding> suspects; // layer signals with an onset before the departure (or live), most suspect first
    std::vector<NextStep> nextSteps; // what to try next, the reviews applied; for a healthy verdict only FP8's cost
    Comparability comparability;
    std::optional<EvidenceDump> evidence;
    // The recipe what-if from metrics already recomputed on the evidence dump (empty when none), and the best
    // FP8 recipe of it by whatif.h's criterion.
    std::vector<WhatIfScore> whatIf;
    std::optional<size_t> whatIfBest;
    // The audit of the inference checkpoint the run's folder holds (core/audit), when it holds one; a comparison
    // read back from the store reads it again (cachedAudit: once while the checkpoint's files hold, which the
    // stored result's stamp covers).
    std::optional<AuditResult> audit;
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
// A run checked alone as a Comparison with an invalid baseline, its next steps made, for the front ends that
// display comparisons (the wizard, the report).
Comparison comparisonOf(const Catalog &catalog, const RunCheck &check);
// Fills what a comparison carries beside its findings (suspects, evidence dump, what-if, comparability, next
// steps with the stored reviews applied). compareRuns and the stored triage call it; call it again after a
// review changed.
void finishComparison(const Catalog &catalog, Comparison *c, const TriageOptions &options = {});
// The dump the first suspect's evidence is read from; nullopt when its layer and tensor have none.
// `windowEnd`: the last step the damage is looked for at (the departure window's end, or the run's last step).
std::optional<EvidenceDump> chooseEvidenceDump(
    const Catalog &catalog, RunRef run, const Finding &suspect, std::optional<int64_t> windowEnd);

// The end of the window the evidence dump is looked for in: as long after the departure as the onset came
// before it (at least a tenth of the planned steps), or the run's end without a departure.
std::optional<int64_t> evidenceWindowEnd(const Comparison &c, int64_t onset);

// Whether a finding of (run, baseline) was dismissed by a review kept in the store.
bool isDismissed(const std::vector<FindingReview> &reviews, const Finding &f);
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
// returned). The stamp: the rules' digest, the options, and the data generation of the stores of both runs.
Comparison compareRunsStored(
    Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options = {}, QStringList *errors = nullptr);
RunCheck checkRunStored(Catalog &catalog, RunRef run, const TriageOptions &options = {}, QStringList *errors = nullptr);
TriageResult triageStored(Catalog &catalog, const TriageOptions &options = {}, QStringList *errors = nullptr);
// The stamp a result of (baseline, run) computed now carries (baseline invalid: a run checked alone).
QString triageStamp(const Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options);
// The rules' digest: a hash of the sources the triage's answers come from (the analysis, the audit, the queries
// they read; core/analysis/rulesdigest.cmake writes it at build time), and those files, relative to core/. It is
// in every stamp, so results stored by other rules are computed again, with no revision moved by hand.
QString rulesDigest();
QStringList rulesDigestFiles();

// What a finding is, whatever its rank and steps: its kind, layer, tensor, statistic, key and task, joined. A
// user's review (core/store FindingReview) is kept under it, so that it outlives the result computed again.
QString findingIdentity(const Finding &f);

// The finding as the CLI's JSON prints it (fields that do not apply are left out).
QJsonObject findingJson(const Finding &f);
// The triage as `fp8scope-cli triage --json` prints it (core/analysis/triagejson.cpp): a comparison, a run checked
// alone, and their parts.
QJsonArray findingsJson(const std::vector<Finding> &findings);
QJsonArray nextStepsJson(const std::vector<NextStep> &steps);
QString comparabilityName(ComparabilityLevel level);
QJsonObject comparisonJson(const Catalog &catalog, const Comparison &c);
QJsonObject runCheckJson(const Catalog &catalog, const RunCheck &r);

// What a config key is to a comparison of a baseline and its FP8 twin.
// Context: a difference that is a prerequisite of FP8 (Transformer Engine's implementation) or the parallel
// layout: said, never a suspect, never to be undone.
enum class KeyClass { Expected, Incidental, Suspect, Other, Context };
KeyClass classifyConfigKey(const QString &key);
// A config key's last part in snake case, as the rules read keys: "MODEL_ARGS.--fp8-recipe" -> "fp8_recipe".
QString joinedKey(const QString &key);
// Why a Context key is context ("a prerequisite of FP8 training", "the parallel layout"); "" for others.
QString contextReason(const QString &key);

} // namespace fp8scope::analysis

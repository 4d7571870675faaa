// What the triage engine's rules read, gathered from the query layer once per pair (or run) into plain data:
// the rules (core/analysis/rules) are pure functions over it, testable without a store. Nothing here decides;
// it only reads.
#pragma once

#include <QJsonObject>

#include "comparetables.h"
#include "core/audit/checkpointaudit.h"
#include "core/query/precisionmap.h"
#include "nonfinite.h"
#include "triage.h"

#include <map>
#include <optional>
#include <vector>

namespace fp8scope::analysis {

struct SeriesPoints {
    Series series;
    StepSeries points;
};

// A run's own series and settings.
struct RunInputs {
    RunRef ref;
    std::optional<Run> info;
    std::optional<StepSeries> loss; // lm loss as read (non-finite points kept)
    std::optional<StepSeries> skipped, nan; // Megatron's skipped and NaN iterations per log interval
    std::optional<StepSeries> rewind; // the restarts of its Megatron log, else of its statistics logs
    std::optional<int64_t> configuredSteps; // train_iters, max_steps, ... of its config
    std::optional<StepSeries> learningRate; // as logged
    std::optional<int64_t> configuredWarmup; // lr_warmup_iters, warmup_steps, ... of its config
    std::optional<StepSeries> gradNorm, lossScale; // as logged (non-finite points kept)
    // A mixture-of-experts router's auxiliary loss as Megatron logs it (load_balancing_loss, else its sequence or
    // global variant): whether an expert that moved was overloaded.
    std::optional<StepSeries> routerLoss;
    std::optional<StepSeries> rewoundBlowUps; // the "rewound blow-up" points of its Megatron log (nonfinite.h)
    // Where its loss stopped being a number for good (nonfinite.h), and the non-finite values of every series it
    // logged from nonFiniteSearchFrom on, in the order they came (orderNonFinite); while it is followed live and
    // has not blown up, those since its last non-finite loss.
    std::optional<BlowUp> blowUp;
    std::vector<NonFinitePoint> nonFinite;
    std::optional<int64_t> nonFiniteFrom; // where they were looked for from
    std::optional<Precursor> precursor; // what came before the first of them in its tensor, or a loss-scale cut
    // Where its learning rate stops rising, up to `until`: as logged, else as its config says.
    std::optional<int64_t> warmupEnd(int64_t until) const;
    QString name() const { return info ? info->name : QString(); }
    // The planned steps: its config's, else `lastStep`.
    int64_t plannedSteps(int64_t lastStep) const { return configuredSteps.value_or(lastStep); }
};

// What a comparison's finishing reads (its suspects' evidence dump and what-if, comparability, next steps):
// for a comparison computed now, part of PairInputs; for one read back from the store, gathered alone.
struct FinishInputs {
    std::optional<Run> run, baseline;
    ConfigTable config; // empty for a run checked alone
    std::vector<Dump> dumps; // the run's tensor dumps
    // The run's layer series of a statistic that carries risk (riskDirection), with their points: every one of
    // at least 8 points for a comparison computed now; for one read back, the first suspect's where it has a
    // dump (the evidence is read from it).
    std::vector<SeriesPoints> risk;
    // The run's series recomputed from dumps of the statistics a what-if shows (mse, underflows%, overflows%,
    // sqnr_db), with their points (read back: of the first suspect's layer and tensor).
    std::vector<SeriesPoints> recomputed;
    std::vector<FindingReview> reviews;
    // The run's stored recipe what-ifs (core/analysis/storedwhatif.h) of dumps as they are now, by dump
    // (whatIfDumpKey): recipe label -> statistic -> value.
    std::map<QString, std::map<QString, std::map<QString, double>>> whatIfs;
    // Of the same what-ifs, each block recipe's block evidence (BlockEvidence::toJson): dump -> recipe label.
    std::map<QString, std::map<QString, QJsonObject>> blockEvidence;
    QString fp8Format; // runFp8Format of the run

    // The deepest layer the run has statistics or dumps of (-1: not gathered; a result read back has it in its
    // layer signals' evidence, "deepest_layer").
    int lastLayerIndex = -1;
    // Which GEMM ran in which precision at which steps (core/query/precisionmap.h): a GEMM in BF16 is no FP8
    // suspect there, and no BF16 fallback is proposed for one already in BF16.
    PrecisionMap precision;
};

struct PairInputs {
    RunInputs baseline, run;
    StatComparison loss, grad;
    std::vector<EvalRow> evals;
    FinishInputs finish;
    // The audit of the inference checkpoint the run's folder holds (core/audit: findInferenceCheckpoint), against
    // the BF16 weights it holds or names (findInferenceReferences), with the run's own activation amax near its
    // end for the static input scales; none when it holds none.
    std::optional<AuditResult> audit;
};

PairInputs gatherPair(const Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options);
// The audit of the inference checkpoint in the run's folder; none when it holds none.
std::optional<AuditResult> auditOfRun(const Catalog &catalog, RunRef run, const AuditThresholds &thresholds);
// What that audit was read from (auditFilesStamp of the run folder's checkpoint and references); empty when the
// folder holds no checkpoint. A stored triage result's stamp carries it: a re-exported checkpoint is audited again.
QString auditStampOfRun(const Catalog &catalog, RunRef run);
RunInputs gatherRun(const Catalog &catalog, RunRef run, bool live = false);
// A suspect layer signal's own series (of the source its evidence names, else the one the views show).
std::optional<SeriesPoints> suspectSeries(const Catalog &catalog, RunRef run, const Finding &suspect);
// For a comparison read back from the store (or a run checked alone): a few reads, the first suspect's series
// only where it has a dump.
FinishInputs gatherFinish(const Catalog &catalog, const Comparison &c);

// The engine over gathered inputs, without a store: compareRuns and checkRun are these after gatherPair and
// gatherRun.
Comparison comparePair(const PairInputs &in, const TriageOptions &options = {});
RunCheck checkRunInputs(const RunInputs &in, const TriageOptions &options = {});

// The direction in which a tensor statistic carries risk, or nullopt for statistics the triage does not read
// (min, max, mean, std, norms of healthy training move for reasons of their own).
std::optional<Direction> riskDirection(const QString &stat);
// What a risk statistic measures, in the order a suspect is looked for: the damage the cast did (underflow,
// saturation, quantization error), the range it had to cover (dynamic range), or only where its scale sat
// (scale_inv, amax: these follow the weights' growth as a model learns, and the TE log's four decimals make them
// step).
enum class StatKind { Damage = 0, Range = 1, Scale = 2 };
StatKind statKind(const QString &stat);
// The layer index in a dotted name ("decoder.layers.11.mlp.linear_fc2" -> 11), -1 when none.
int layerIndex(const QString &layer);
// The point at or before `step` (the first point when all lie after it), as the store's valueAt answers.
std::optional<double> valueAtStep(const StepSeries &s, int64_t step);

} // namespace fp8scope::analysis

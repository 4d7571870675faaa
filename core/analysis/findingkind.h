// What a triage finding is about, as one enum with one table: its name in JSON and the store, its rank among
// the findings, the wizard step that shows its evidence, and how the front ends treat it (a suspect, a change
// in the run that a watcher fails on). Nothing outside core/analysis compares a finding's kind by name.
#pragma once

#include <QString>

#include <optional>

namespace fp8scope::analysis {

enum class FindingKind {
    LossDeparture,
    RunBlowUp,
    ConfigDifference,
    VersionDifference,
    LayerSignal,
    LossSpikes,
    SkippedIterations,
    EvalGap,
    EvalDrop,
    InferencePrecision,
    TruncatedStatistic,
    GradNormDeparture,
    RecipeWhatIf,
    Restart,
    NoCommonLoss,
    CheckpointAudit, // a fault in the inference checkpoint the run folder holds (core/audit)
    FirstNonFinite, // where a blow-up's first non-finite value came from (core/analysis/nonfinite.h)
    Recoveries, // blow-ups the run came back from only by going back to a checkpoint
    LossGap, // the loss's gap at the end against the gap the baseline accepts
    PrecisionSwitch, // the run switched a GEMM to high precision by itself (AutoswitchGemm): it found it fragile
};

// The wizard step (views/triage) whose evidence shows a finding.
enum class FindingStep { Runs, Loss, Class, Next };

struct FindingKindInfo {
    FindingKind kind;
    const char *name; // "loss-departure", as JSON, the store and the CLI print it
    int rank; // lower first, after severity
    FindingStep step;
    // A change in the run while it trains (a departure, a layer signal, a blow-up, spikes, skipped steps): what a
    // watcher may fail on. The others (config and version differences, evals, what-ifs) are known at the start
    // or only at the end, and are said once, as information, by a watcher.
    bool change;
    // Names a suspect the next steps act on (a layer, a config key, a package version).
    bool suspect;
};

const FindingKindInfo &findingKindInfo(FindingKind kind);
QString findingKindName(FindingKind kind);
// The kind of a name findingKindName gives; nullopt for any other (a result stored by a newer engine).
std::optional<FindingKind> findingKindNamed(const QString &name);

} // namespace fp8scope::analysis

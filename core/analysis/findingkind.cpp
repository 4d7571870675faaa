#include "findingkind.h"

#include <array>

namespace fp8scope::analysis {

namespace {

// One row per kind, in the enum's order. The ranks keep the order the findings had before the table: the
// loss, then the suspects, then what only describes.
constexpr std::array<FindingKindInfo, 20> kKinds {{
    {FindingKind::LossDeparture, "loss-departure", 0, FindingStep::Loss, true, false},
    {FindingKind::RunBlowUp, "run-blow-up", 1, FindingStep::Loss, true, false},
    {FindingKind::ConfigDifference, "config-difference", 2, FindingStep::Runs, false, true},
    {FindingKind::VersionDifference, "version-difference", 3, FindingStep::Runs, false, true},
    {FindingKind::LayerSignal, "layer-signal", 4, FindingStep::Class, true, true},
    {FindingKind::LossSpikes, "loss-spikes", 5, FindingStep::Loss, true, false},
    {FindingKind::SkippedIterations, "skipped-iterations", 6, FindingStep::Loss, true, false},
    {FindingKind::EvalGap, "eval-gap", 7, FindingStep::Class, false, false},
    {FindingKind::EvalDrop, "eval-drop", 8, FindingStep::Class, false, false},
    {FindingKind::InferencePrecision, "inference-precision", 9, FindingStep::Class, false, false},
    {FindingKind::TruncatedStatistic, "truncated-statistic", 10, FindingStep::Class, false, false},
    {FindingKind::GradNormDeparture, "grad-norm-departure", 11, FindingStep::Loss, true, false},
    {FindingKind::RecipeWhatIf, "recipe-what-if", 11, FindingStep::Next, false, false},
    {FindingKind::Restart, "restart", 11, FindingStep::Loss, false, false},
    {FindingKind::NoCommonLoss, "no-common-loss", 0, FindingStep::Runs, false, false},
    // Before the evaluations it explains.
    {FindingKind::CheckpointAudit, "checkpoint-audit", 6, FindingStep::Class, false, true},
    // Right after the blow-up it explains, before the layers that only moved.
    {FindingKind::FirstNonFinite, "first-non-finite", 1, FindingStep::Class, true, true},
    {FindingKind::Recoveries, "recoveries", 5, FindingStep::Loss, true, false},
    // What FP8 costs at the end, against the bar: after the departure it would explain.
    {FindingKind::LossGap, "loss-gap", 1, FindingStep::Loss, true, false},
    // An automatic switch to high precision: the run itself found the GEMM fragile at that step.
    {FindingKind::PrecisionSwitch, "precision-switch", 4, FindingStep::Class, true, true},
}};

constexpr bool inOrder()
{
    for (size_t i = 0; i < kKinds.size(); ++i) {
        if (size_t(kKinds[i].kind) != i)
            return false;
    }
    return true;
}
static_assert(inOrder(), "kKinds holds one row per FindingKind, in the enum's order");

} // namespace

const FindingKindInfo &findingKindInfo(FindingKind kind)
{
    return kKinds[size_t(kind)];
}

QString findingKindName(FindingKind kind)
{
    return QString::fromLatin1(findingKindInfo(kind).name);
}

std::optional<FindingKind> findingKindNamed(const QString &name)
{
    for (const FindingKindInfo &k : kKinds) {
        if (name == QLatin1String(k.name))
            return k.kind;
    }
    return std::nullopt;
}

} // namespace fp8scope::analysis

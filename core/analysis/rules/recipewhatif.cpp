#include "core/analysis/rules.h"
#include "core/analysis/storedwhatif.h"
#include "core/analysis/triagerules.h"

#include <QJsonObject>

namespace fp8scope::analysis {

namespace {

// How Megatron-LM selects a recipe of the what-if, for its advice.
QString recipeFlag(const QString &recipe)
{
    const QString family = recipeFamily(recipe);
    const QString flag = family == QLatin1String("delayed") ? QStringLiteral("--fp8-recipe delayed")
        : family == QLatin1String("current")                ? QStringLiteral("--fp8-recipe tensorwise")
        : family == QLatin1String("mxfp8")                  ? QStringLiteral("--fp8-recipe mxfp8")
        : family == QLatin1String("blockwise")              ? QStringLiteral("--fp8-recipe blockwise")
        : family == QLatin1String("nvfp4")                  ? QStringLiteral("--fp4-format e2m1 --fp4-recipe nvfp4")
                                                            : QString();
    return flag.isEmpty() ? QString() : QStringLiteral(" (Megatron %1)").arg(flag);
}

} // namespace

// The recipe what-if on the evidence dump of the first suspect (chooseEvidenceDump: the dump that shows the
// damage): the metrics recomputed from it under each recipe (`fp8scope-cli recompute`, the wizard's what-if
// job), side by side, and the FP8 recipe that quantizes it best (whatif.h's criterion; BF16 is the reference,
// never a candidate); a dump not yet recomputed says how to get the table. None without a dump of that layer
// and tensor.
std::optional<Finding> recipeWhatIfFinding(
    const FinishInputs &in, const EvidenceDump &evidence, const QString &runRecipe)
{
    const Dump &dump = evidence.dump;
    const int64_t step = dump.record.step;
    Finding f;
    f.kind = FindingKind::RecipeWhatIf;
    f.severity = Severity::Info;
    f.layer = dump.record.layer;
    f.tensor = dump.record.tensor;
    f.step = step;
    // recipe -> statistic -> value, of the series recomputed from dumps at exactly that step.
    const WhatIfTable table = storedWhatIf(in, dump);
    const std::vector<WhatIfScore> scores = whatIfScores(table);
    QJsonObject recipes;
    for (const auto &[recipe, stats] : table) {
        QJsonObject o;
        for (const auto &[stat, v] : stats)
            o.insert(stat, v);
        recipes.insert(recipe, o);
    }
    const std::optional<size_t> best = bestWhatIfRecipe(scores);
    f.evidence = {{QStringLiteral("dump"), dump.file}, {QStringLiteral("dataset"), dump.record.dataset},
        {QStringLiteral("step"), double(step)}, {QStringLiteral("onset"), double(evidence.onset)},
        {QStringLiteral("chosen_because"), evidence.why}, {QStringLiteral("recipes"), recipes},
        {QStringLiteral("best"), best ? QJsonValue(scores[*best].recipe) : QJsonValue()},
        {QStringLiteral("criterion"), whatIfCriterion()}};
    if (table.empty()) {
        f.summary = QStringLiteral("%1 %2 was dumped at step %3 (%4); its metrics under other recipes are not "
                                   "computed yet")
                        .arg(f.layer, f.tensor)
                        .arg(step)
                        .arg(evidence.why);
        // The run's format where it is not stats' default (hybrid): the same candidates on both paths.
        const QString format
            = in.fp8Format.isEmpty() || in.fp8Format.compare(QLatin1String("hybrid"), Qt::CaseInsensitive) == 0
            ? QString()
            : QStringLiteral(" --fp8-format %1").arg(in.fp8Format.toLower());
        f.suggestion = QStringLiteral("fp8scope-cli triage FOLDER computes it (or the triage wizard's next step, or "
                                      "fp8scope-cli stats %1 --what-if%2)")
                           .arg(dump.spec(), format);
        return f;
    }
    QStringList parts;
    const auto stat = [](const std::map<QString, double> &stats, const char *name, int precision) {
        const auto it = stats.find(QLatin1String(name));
        return it == stats.end() ? QStringLiteral("-") : QString::number(it->second, 'g', precision);
    };
    for (const auto &[recipe, stats] : table) {
        parts << QStringLiteral("%1: damage %2 %, mean relative error %3 %, mse %4")
                     .arg(recipe, stat(stats, "damage%", 3), stat(stats, "mean_rel_error%", 3), stat(stats, "mse", 3));
    }
    f.summary = QStringLiteral("on the dump of %1 %2 at step %3 (%4): %5")
                    .arg(f.layer, f.tensor)
                    .arg(step)
                    .arg(evidence.why)
                    .arg(parts.join(QStringLiteral("; ")));
    // The block recipes' blocks: the worst ones and where they lie (a few outliers or a band of rows want
    // different remedies), and the same blocks with FP32 scales; the run's own recipe's first.
    const auto blocks = in.blockEvidence.find(whatIfDumpKey(dump));
    if (blocks != in.blockEvidence.end()) {
        QJsonObject all;
        QStringList flagged;
        for (const auto &[recipe, ev] : blocks->second) {
            all.insert(recipe, ev);
            const std::optional<BlockEvidence> e = BlockEvidence::fromJson(ev);
            if (!e || e->flagged == 0)
                continue;
            const QString line = QStringLiteral("%1's blocks: %2").arg(recipe, e->sentence());
            if (sameRecipe(recipe, runRecipe))
                flagged.prepend(line);
            else
                flagged << line;
        }
        f.evidence.insert(QStringLiteral("blocks"), all);
        if (!flagged.isEmpty())
            f.summary += QStringLiteral(". ") + flagged.join(QStringLiteral(". "));
    }
    if (best) {
        const QString name = scores[*best].recipe;
        // What the suggestion proposes, typed (nextsteps.cpp proposalsOf): the best recipe, or BF16 where the run's
        // own recipe is the best.
        f.evidence.insert(QStringLiteral("best_is_runs"), sameRecipe(name, runRecipe));
        f.suggestion = sameRecipe(name, runRecipe)
            ? QStringLiteral("%1, the run's own recipe, already quantizes this tensor best of the recipes it could "
                             "use, by %2: a recipe change does not help it; keep the layer in BF16 instead")
                  .arg(name, whatIfCriterion())
            : QStringLiteral("%1 quantizes this tensor best of the recipes it could use, by %2: try it for this run%3")
                  .arg(name, whatIfCriterion(), recipeFlag(name));
    }
    return f;
}

bool isNonFiniteSuspect(const Finding &f)
{
    return f.kind == FindingKind::FirstNonFinite && f.severity != Severity::Info && !f.layer.isEmpty();
}

bool isSignalSuspect(const Finding &f)
{
    return f.kind == FindingKind::LayerSignal && f.severity != Severity::Info;
}

const Finding *firstSuspect(const std::vector<Finding> &findings)
{
    for (const auto &is : {isNonFiniteSuspect, isSignalSuspect}) {
        for (const Finding &f : findings) {
            if (is(f))
                return &f;
        }
    }
    return nullptr;
}

namespace rules {

// The what-if of the first suspect (firstSuspect: the one whose evidence dump finish() picks) on its evidence dump.
void recipeWhatIf(const PairInputs &in, const TriageOptions &, Comparison &c)
{
    const Finding *f = firstSuspect(c.findings);
    if (!f || !f->step)
        return;
    if (const auto evidence = pickEvidenceDump(in.finish, *f, evidenceWindowEnd(c, *f->step))) {
        if (const auto w = recipeWhatIfFinding(in.finish, *evidence, in.run.info ? in.run.info->recipe : QString()))
            c.findings.push_back(*w);
    }
}

} // namespace rules

} // namespace fp8scope::analysis

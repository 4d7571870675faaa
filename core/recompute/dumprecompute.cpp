#include "dumprecompute.h"

#include "recomputeplan.h"

#include "core/numerics/whatif.h"
#include "core/store/runstore.h"

#include <QDir>

namespace fp8scope {

std::vector<std::pair<QString, double>> storedStatistics(const TensorMetrics &m)
{
    return {{QStringLiteral("underflows%"), m.underflowPct}, {QStringLiteral("overflows%"), m.saturationPct},
        {QStringLiteral("mse"), m.mse}, {QStringLiteral("cur_amax"), m.amax},
        {QStringLiteral("dynamic_range"), m.dynamicRange}, {QStringLiteral("scale_inv_min"), m.scaleInvMin},
        {QStringLiteral("scale_inv_max"), m.scaleInvMax}, {QStringLiteral("mean"), m.mean},
        {QStringLiteral("std"), m.std}, {QStringLiteral("cosine"), m.cosine}, {QStringLiteral("sqnr_db"), m.sqnrDb},
        {QStringLiteral("relative_error"), m.relativeError}, {QStringLiteral("damage%"), m.damagePct},
        {QStringLiteral("mean_rel_error%"), m.meanRelErrorPct}};
}

QString recomputedRecipeLabel(const Recipe &recipe)
{
    return whatIfLabel(recipe);
}

std::optional<std::vector<TensorMetrics>> recomputeDump(RunStore &store, MetricsBackend &backend, const DumpRef &ref,
    const std::vector<Recipe> &recipes, QString *error, const MetricsEngine::Progress &progress)
{
    // The same two steps as a recompute spread over ranks (core/recompute/recomputeplan.h).
    DumpResult r = computeDump(store.folder(), backend, ref, recipes, progress);
    if (!storeDumpResult(store, ref, r, error))
        return std::nullopt;
    return std::move(r.metrics);
}

} // namespace fp8scope

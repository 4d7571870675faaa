#include "dumprecompute.h"

#include <QDir>

namespace fp8scope {

std::vector<std::pair<QString, double>> storedStatistics(const TensorMetrics &m)
{
    return {{QStringLiteral("underflows%"), m.underflowPct}, {QStringLiteral("overflows%"), m.saturationPct},
        {QStringLiteral("mse"), m.mse}, {QStringLiteral("cur_amax"), m.amax},
        {QStringLiteral("dynamic_range"), m.dynamicRange}, {QStringLiteral("scale_inv_min"), m.scaleInvMin},
        {QStringLiteral("scale_inv_max"), m.scaleInvMax}, {QStringLiteral("mean"), m.mean},
        {QStringLiteral("std"), m.std}, {QStringLiteral("cosine"), m.cosine}, {QStringLiteral("sqnr_db"), m.sqnrDb},
        {QStringLiteral("relative_error"), m.relativeError}};
}

QString recomputedRecipeLabel(const Recipe &recipe)
{
    QString error;
    const auto plain = Recipe::parse(recipe.name(), std::nullopt, &error);
    if (plain && plain->format == recipe.format)
        return recipe.name();
    return recipe.name() + QLatin1Char(' ') + formatName(recipe.format);
}

std::optional<std::vector<TensorMetrics>> recomputeDump(RunStore &store, MetricsBackend &backend, const DumpRef &ref,
    const std::vector<Recipe> &recipes, QString *error, const MetricsEngine::Progress &progress)
{
    Problem problem;
    const QString path = QDir(store.folder()).absoluteFilePath(ref.file);
    auto reader = openTensor(ref.dump.dataset.isEmpty() ? path : path + QLatin1Char(':') + ref.dump.dataset, &problem);
    if (!reader) {
        *error = problem.toString();
        return std::nullopt;
    }
    std::vector<Recipe> rs = recipes;
    for (Recipe &r : rs)
        r.amaxHistory = reader->amaxHistory();
    MetricsEngine engine(backend);
    auto results = engine.compute(*reader, rs, &problem, progress);
    if (!results) {
        *error = problem.toString();
        return std::nullopt;
    }
    for (size_t k = 0; k < results->size(); ++k) {
        if (!store.storeRecomputed(
                ref.run, ref.dump, recomputedRecipeLabel(rs[k]), storedStatistics((*results)[k]), error))
            return std::nullopt;
    }
    return results;
}

} // namespace fp8scope

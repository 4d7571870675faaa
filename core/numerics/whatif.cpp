#include "whatif.h"

#include <cmath>

namespace fp8scope {

bool isReferenceRecipe(const QString &recipe)
{
    const QString r = recipe.section(QLatin1Char(':'), 0, 0).trimmed().toLower();
    return r == QLatin1String("bf16") || r == QLatin1String("bfloat16") || r == QLatin1String("fp32")
        || r == QLatin1String("fp16");
}

std::optional<size_t> bestWhatIfRecipe(const std::vector<WhatIfScore> &scores)
{
    std::optional<size_t> best;
    for (size_t i = 0; i < scores.size(); ++i) {
        const WhatIfScore &s = scores[i];
        if (isReferenceRecipe(s.recipe) || !std::isfinite(s.mse))
            continue;
        if (!best) {
            best = i;
            continue;
        }
        const WhatIfScore &b = scores[*best];
        const double u = std::isfinite(s.underflowPct) ? s.underflowPct : INFINITY;
        const double bu = std::isfinite(b.underflowPct) ? b.underflowPct : INFINITY;
        if (s.mse < b.mse || (s.mse == b.mse && u < bu))
            best = i;
    }
    return best;
}

QString whatIfCriterion()
{
    return QStringLiteral("the least MSE against the high-precision tensor, ties to the least underflow; BF16 is "
                          "the reference, not a candidate");
}

std::optional<WhatIfResult> computeWhatIf(TensorReader &reader, std::vector<Recipe> recipes, MetricsBackend &backend,
    Problem *problem, const MetricsEngine::Progress &progress)
{
    for (Recipe &r : recipes) {
        if (r.amaxHistory.empty())
            r.amaxHistory = reader.amaxHistory();
    }
    // The census passes are counted in the progress after the metrics' one.
    int64_t censuses = 0;
    for (const Recipe &r : recipes)
        censuses += hasBlockScales(r) ? 1 : 0;
    const int64_t elements = std::max<int64_t>(1, reader.info().numel);
    int64_t metricsTotal = 0;
    MetricsEngine engine(backend);
    const auto metrics = engine.compute(reader, recipes, problem, [&](int64_t done, int64_t total) {
        metricsTotal = total;
        return !progress || progress(done, total + censuses * elements);
    });
    if (!metrics)
        return std::nullopt;
    WhatIfResult out;
    int64_t censusDone = 0;
    for (size_t i = 0; i < recipes.size() && i < metrics->size(); ++i) {
        WhatIfRow row {recipes[i], (*metrics)[i], std::nullopt, {}};
        if (hasBlockScales(recipes[i])) {
            Problem censusProblem;
            row.census = blockCensus(reader, recipes[i], &censusProblem, [&](int64_t done, int64_t) {
                return !progress || progress(metricsTotal + censusDone + done, metricsTotal + censuses * elements);
            });
            censusDone += elements;
            if (!row.census)
                row.censusError = censusProblem.toString();
            if (progress && !progress(metricsTotal + censusDone, metricsTotal + censuses * elements)) {
                problem->message = QStringLiteral("cancelled");
                return std::nullopt;
            }
        }
        out.rows.push_back(std::move(row));
    }
    std::vector<WhatIfScore> scores;
    for (const WhatIfRow &r : out.rows)
        scores.push_back({r.recipe.name(), r.metrics.mse, r.metrics.underflowPct});
    out.best = bestWhatIfRecipe(scores);
    return out;
}

} // namespace fp8scope

#include "whatif.h"

#include "core/formats/formatnames.h"

#include <QJsonArray>

#include <algorithm>
#include <cmath>

namespace fp8scope {

bool isReferenceRecipe(const QString &recipe)
{
    const QString r = recipe.section(QLatin1Char(':'), 0, 0).trimmed().toLower();
    return r == QLatin1String("bf16") || r == QLatin1String("bfloat16") || r == QLatin1String("fp32")
        || r == QLatin1String("fp16");
}

namespace {

// What a score is ranked by: its damage (the TE underflow where the damage was not stored), its mean relative
// error, its MSE; NaN where unknown.
double damageOf(const WhatIfScore &s)
{
    return std::isfinite(s.damagePct) ? s.damagePct : s.underflowPct;
}

bool isCandidate(const WhatIfScore &s)
{
    return !isReferenceRecipe(s.recipe)
        && (std::isfinite(damageOf(s)) || std::isfinite(s.meanRelErrorPct) || std::isfinite(s.mse));
}

// a before b: the lesser finite value first, an unknown one last; equal when both are unknown.
int order(double a, double b)
{
    const double x = std::isfinite(a) ? a : INFINITY, y = std::isfinite(b) ? b : INFINITY;
    return x < y ? -1 : (y < x ? 1 : 0);
}

double real(const QJsonObject &o, const char *key)
{
    const QJsonValue v = o.value(QLatin1String(key));
    return v.isDouble() ? v.toDouble() : std::nan("");
}

int64_t count(const QJsonObject &o, const char *key)
{
    return int64_t(o.value(QLatin1String(key)).toDouble());
}

} // namespace

std::optional<size_t> bestWhatIfRecipe(const std::vector<WhatIfScore> &scores)
{
    // The least damage known; the scores within its tie band go on to the bulk's error.
    double least = INFINITY;
    for (const WhatIfScore &s : scores) {
        if (isCandidate(s) && std::isfinite(damageOf(s)))
            least = std::min(least, damageOf(s));
    }
    const double band = std::isfinite(least)
        ? least + std::max(kWhatIfDamageTieAbsolute, kWhatIfDamageTieRelative * least)
        : INFINITY;
    std::optional<size_t> best;
    for (size_t i = 0; i < scores.size(); ++i) {
        const WhatIfScore &s = scores[i];
        if (!isCandidate(s) || (std::isfinite(least) && !(damageOf(s) <= band)))
            continue;
        if (!best) {
            best = i;
            continue;
        }
        const WhatIfScore &b = scores[*best];
        int o = order(s.meanRelErrorPct, b.meanRelErrorPct);
        if (o == 0)
            o = order(s.mse, b.mse);
        if (o == 0)
            o = order(damageOf(s), damageOf(b));
        if (o < 0)
            best = i;
    }
    return best;
}

QString whatIfCriterion()
{
    return QStringLiteral("the least damage (non-zero values flushed to zero or saturated; within a tenth, or 0.01 "
                          "points, of the least is a tie), then the least mean relative error over the non-zero "
                          "values, then the least MSE; BF16 is the reference, not a candidate");
}

QString whatIfLabel(const Recipe &recipe)
{
    QString error;
    const auto plain = Recipe::parse(recipe.name(), std::nullopt, &error);
    if (plain && plain->format == recipe.format)
        return recipe.name();
    return recipe.name() + QLatin1Char(' ') + formatName(recipe.format);
}

bool isGradientTensor(const QString &tensor)
{
    const QString t = tensor.toLower();
    return t.contains(QLatin1String("grad"));
}

std::vector<Recipe> whatIfCandidates(const QString &tensor, const QString &fp8Format)
{
    const QString f = fp8Format.trimmed().toLower();
    const bool gradient = isGradientTensor(tensor);
    // Transformer Engine's formats: E4M3 everywhere, E5M2 everywhere, or hybrid (E4M3 forward, E5M2 backward).
    const Format element = f == QLatin1String("e4m3") ? Format::E4M3
        : f == QLatin1String("e5m2")                  ? Format::E5M2
                                                      : (gradient ? Format::E5M2 : Format::E4M3);
    const bool weight = tensor.toLower().contains(QLatin1String("weight"));
    std::vector<Recipe> out;
    QString error;
    // The recipes a run chooses (Megatron's --fp8-recipe delayed, tensorwise, mxfp8, blockwise; NVFP4), not the
    // variants the what-if of `stats --recipe` can also show (a power-of-two current scale, the OCP MX scale rule,
    // MXFP8's column-wise blocks, which the backward pass takes by itself).
    for (const char *n : {"delayed", "current", "mxfp8"})
        out.push_back(*Recipe::parse(QString::fromLatin1(n), element, &error));
    out.push_back(
        *Recipe::parse(weight ? QStringLiteral("block128x128") : QStringLiteral("block1x128"), element, &error));
    out.push_back(*Recipe::parse(QStringLiteral("nvfp4"), std::nullopt, &error));
    out.push_back(*Recipe::parse(QStringLiteral("bf16"), std::nullopt, &error));
    return out;
}

QString whatIfRecipesKey(const std::vector<Recipe> &recipes)
{
    QStringList labels;
    for (const Recipe &r : recipes)
        labels << whatIfLabel(r);
    return labels.join(QLatin1Char(','));
}

std::vector<WhatIfScore> whatIfScoresOf(const WhatIfResult &result)
{
    std::vector<WhatIfScore> scores;
    for (const WhatIfRow &r : result.rows)
        scores.push_back({whatIfLabel(r.recipe), r.metrics.mse, r.metrics.underflowPct, r.metrics.damagePct,
            r.metrics.meanRelErrorPct});
    return scores;
}

QJsonObject whatIfToJson(const WhatIfResult &result)
{
    QJsonArray rows;
    for (const WhatIfRow &r : result.rows) {
        QJsonObject metrics = r.metrics.toJson();
        metrics.remove(QStringLiteral("hist_log2_abs"));
        metrics.remove(QStringLiteral("hist_log2_abs_scaled"));
        QJsonObject row {{QStringLiteral("recipe"), r.recipe.name()}, {QStringLiteral("label"), whatIfLabel(r.recipe)},
            {QStringLiteral("metrics"), metrics}};
        if (r.census)
            row.insert(QStringLiteral("block_census"), r.census->toJson());
        if (!r.censusError.isEmpty())
            row.insert(QStringLiteral("census_error"), r.censusError);
        if (r.blocks)
            row.insert(QStringLiteral("block_evidence"), r.blocks->toJson());
        rows.append(row);
    }
    return {{QStringLiteral("rows"), rows},
        {QStringLiteral("best"),
            result.best ? QJsonValue(whatIfLabel(result.rows[*result.best].recipe)) : QJsonValue()},
        {QStringLiteral("criterion"), whatIfCriterion()}};
}

std::optional<WhatIfResult> whatIfFromJson(const QJsonObject &json, QString *error)
{
    WhatIfResult out;
    for (const QJsonValue &v : json.value(QStringLiteral("rows")).toArray()) {
        const QJsonObject row = v.toObject();
        const QJsonObject m = row.value(QStringLiteral("metrics")).toObject();
        const auto format = formatFromName(m.value(QStringLiteral("format")).toString());
        const auto recipe = Recipe::parse(row.value(QStringLiteral("recipe")).toString(), format, error);
        if (!recipe)
            return std::nullopt;
        WhatIfRow r {*recipe, {}, std::nullopt, row.value(QStringLiteral("census_error")).toString()};
        TensorMetrics &t = r.metrics;
        t.recipe = recipe->name();
        t.format = recipe->format;
        t.backend = m.value(QStringLiteral("backend")).toString();
        t.numel = count(m, "numel");
        t.zeros = count(m, "zeros");
        t.nans = count(m, "nan");
        t.infs = count(m, "inf");
        t.nonzeroQ = count(m, "nonzero_quantized");
        t.saturated = count(m, "saturated");
        t.amax = real(m, "amax");
        t.aminNonzero = real(m, "amin_nonzero");
        t.dynamicRange = real(m, "dynamic_range_log2");
        t.mean = real(m, "mean");
        t.std = real(m, "std");
        t.excessKurtosis = real(m, "excess_kurtosis");
        t.underflowPct = real(m, "underflow_pct");
        t.damagePct = real(m, "damage_pct");
        t.meanRelErrorPct = real(m, "mean_rel_error_pct");
        t.saturationPct = real(m, "saturation_pct");
        t.mse = real(m, "mse");
        t.cosine = real(m, "cosine");
        t.sqnrDb = real(m, "sqnr_db");
        t.relativeError = real(m, "relative_error");
        t.scale = real(m, "scale");
        t.scaleInvMin = real(m, "scale_inv_min");
        t.scaleInvMax = real(m, "scale_inv_max");
        t.blocks = count(m, "blocks");
        t.zeroAmaxBlocks = count(m, "zero_amax_blocks");
        t.meanLog2ScaleInv = real(m, "mean_log2_scale_inv");
        if (row.contains(QStringLiteral("block_census"))) {
            const QJsonObject c = row.value(QStringLiteral("block_census")).toObject();
            BlockCensus census;
            census.blocks = count(c, "blocks");
            census.zeroBlocks = count(c, "zero_blocks");
            census.clippingBlocks = count(c, "clipping_blocks");
            census.underflowingBlocks = count(c, "underflowing_blocks");
            census.flushedBlocks = count(c, "flushed_blocks");
            census.saturatedElements = count(c, "saturated_elements");
            census.underflowedElements = count(c, "underflowed_elements");
            census.zeroScaleBlocks = count(c, "zero_scale_blocks");
            for (const QJsonValue &b : c.value(QStringLiteral("scale_inv_binades")).toArray()) {
                const QJsonObject o = b.toObject();
                census.scaleLog2[o.value(QStringLiteral("log2_scale_inv")).toInt()] = count(o, "blocks");
            }
            r.census = census;
        }
        if (row.contains(QStringLiteral("block_evidence"))) {
            r.blocks = BlockEvidence::fromJson(row.value(QStringLiteral("block_evidence")).toObject());
        }
        out.rows.push_back(std::move(r));
    }
    if (out.rows.empty()) {
        *error = QStringLiteral("the stored what-if has no rows");
        return std::nullopt;
    }
    out.best = bestWhatIfRecipe(whatIfScoresOf(out));
    return out;
}

bool whatIfIsCurrent(const WhatIfResult &result)
{
    return std::none_of(
        result.rows.begin(), result.rows.end(), [](const WhatIfRow &r) { return r.census && !r.blocks; });
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
            // The block map gives the census and the evidence; where blocks are flagged, the same blocks with
            // FP32 scales (a map more, in the same share of the progress).
            Problem censusProblem;
            const auto mapProgress = [&](int64_t done, int64_t) {
                return !progress || progress(metricsTotal + censusDone + done, metricsTotal + censuses * elements);
            };
            const std::optional<BlockMap> map = computeBlockMap(reader, recipes[i], &censusProblem, 0, mapProgress);
            if (map) {
                row.census = map->census();
                std::optional<BlockMap> fp32;
                const std::optional<Recipe> counterpart = fp32ScaledCounterpart(recipes[i]);
                if (counterpart && map->flaggedCount() > 0)
                    fp32 = computeBlockMap(reader, *counterpart, &censusProblem, 0, mapProgress);
                row.blocks = blockEvidence(*map, fp32 ? &*fp32 : nullptr);
            }
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
    out.best = bestWhatIfRecipe(whatIfScoresOf(out));
    return out;
}

} // namespace fp8scope

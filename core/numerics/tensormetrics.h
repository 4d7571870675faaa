// The metrics of one tensor under one recipe, in the units users read (percentages, dB, log2), derived
// from the additive MetricSums of the fused pass.
#pragma once

#include "metricsums.h"
#include "recipe.h"

#include <QJsonObject>
#include <QString>

#include <array>

namespace fp8scope {

struct TensorMetrics {
    QString recipe;
    Format format = Format::E4M3;
    QString backend;
    qint64 numel = 0;
    qint64 zeros = 0;
    qint64 nans = 0;
    qint64 infs = 0;
    qint64 nonzeroQ = 0;
    qint64 saturated = 0;
    double amax = 0;
    double aminNonzero = 0; // NaN when there is no finite non-zero element
    double dynamicRange = 0; // log2(amax) - log2(amin non-zero)
    double mean = 0;
    double std = 0;
    double excessKurtosis = 0;
    double underflowPct = 0; // (nonzero(x) - nonzero(q)) / numel * 100, Transformer Engine's definition
    double saturationPct = 0;
    double mse = 0; // over finite elements
    double cosine = 0;
    double sqnrDb = 0;
    double relativeError = 0; // ||x - q|| / ||x||
    // What the bulk of the values suffers, each value weighing alike (docs/NUMERICS.md "Recipe what-if"): the
    // share of the non-zero values flushed to zero or saturated, and the mean of |x - q| / |x| over the finite
    // non-zero values, in percent (a flushed value counts 100 %).
    double damagePct = 0;
    double meanRelErrorPct = 0;
    double scale = 0; // per-tensor recipes: the scale used; NaN for block recipes
    double scaleInvMin = 0;
    double scaleInvMax = 0;
    double delayedOverCurrentLog2 = 0; // delayed recipe: log2(scale used / fmax/amax(x)); NaN otherwise
    QString delayedScaleSource; // delayed recipe: how its scale was formed (Recipe::delayedScaleSource)
    QString decoding; // FP8 or float64 input: how it became values (TensorInfo::decoding); empty otherwise
    qint64 blocks = 0;
    qint64 zeroAmaxBlocks = 0;
    double meanLog2ScaleInv = 0;
    std::array<qint64, fp8math::kHistBins> histIn {};
    std::array<qint64, fp8math::kHistBins> histScaled {};

    static TensorMetrics fromSums(const fp8math::MetricSums &s, const Recipe &recipe, double tensorScale,
        double tensorScaleInv, const QString &backend);
    QJsonObject toJson() const;
};

} // namespace fp8scope

#include "tensormetrics.h"

#include <QJsonArray>

#include <cmath>

namespace fp8scope {

TensorMetrics TensorMetrics::fromSums(const fp8math::MetricSums &s, const Recipe &recipe, double tensorScale,
    double tensorScaleInv, const QString &backend)
{
    const double nan = std::nan("");
    TensorMetrics m;
    m.recipe = recipe.name();
    m.format = recipe.format;
    m.backend = backend;
    m.numel = s.numel;
    m.zeros = s.zeros;
    m.nans = s.nans;
    m.infs = s.infs;
    m.nonzeroQ = s.nonzeroQ;
    m.saturated = s.saturated;
    m.amax = s.amax;
    m.aminNonzero = std::isfinite(s.aminNonzero) ? s.aminNonzero : nan;
    m.dynamicRange = (s.amax > 0 && std::isfinite(s.aminNonzero)) ? std::log2(s.amax) - std::log2(s.aminNonzero) : nan;
    const double n = double(s.numel - s.nans - s.infs);
    if (n > 0) {
        const double mean = s.sum / n;
        const double e2 = s.sumSq / n;
        const double e3 = s.sumCube / n;
        const double e4 = s.sumQuad / n;
        const double m2 = std::max(e2 - mean * mean, 0.0);
        const double m4 = e4 - 4 * mean * e3 + 6 * mean * mean * e2 - 3 * mean * mean * mean * mean;
        m.mean = mean;
        m.std = std::sqrt(m2);
        m.excessKurtosis = m2 > 0 ? m4 / (m2 * m2) - 3.0 : nan;
        m.mse = s.errSq / n;
        m.cosine = (s.sumSq > 0 && s.sumQSq > 0) ? s.dotXQ / std::sqrt(s.sumSq * s.sumQSq) : nan;
        m.sqnrDb = s.sumSq > 0 ? 10.0 * std::log10(s.sumSq / s.errSq) : nan;
        m.relativeError = s.sumSq > 0 ? std::sqrt(s.errSq / s.sumSq) : nan;
    } else {
        m.mean = m.std = m.excessKurtosis = m.mse = m.cosine = m.sqnrDb = m.relativeError = nan;
    }
    if (s.numel > 0) {
        m.underflowPct = double((s.numel - s.zeros) - s.nonzeroQ) / double(s.numel) * 100.0;
        m.saturationPct = double(s.saturated) / double(s.numel) * 100.0;
    } else {
        m.underflowPct = m.saturationPct = nan;
    }
    const int64_t nonzero = s.numel - s.zeros;
    m.damagePct = nonzero > 0 ? double(nonzero - s.nonzeroQ + s.saturated) / double(nonzero) * 100.0 : nan;
    const int64_t nonzeroFinite = nonzero - s.nans - s.infs;
    m.meanRelErrorPct = nonzeroFinite > 0 ? s.relErr / double(nonzeroFinite) * 100.0 : nan;
    m.blocks = s.blocks;
    m.zeroAmaxBlocks = s.zeroAmaxBlocks;
    if (s.blocks > 0) {
        m.scale = nan;
        m.scaleInvMin = s.scaleInvMin;
        m.scaleInvMax = s.scaleInvMax;
        m.meanLog2ScaleInv = s.log2ScaleInvSum / double(s.blocks);
    } else {
        m.scale = tensorScale;
        m.scaleInvMin = m.scaleInvMax = tensorScaleInv;
        m.meanLog2ScaleInv = tensorScaleInv > 0 ? std::log2(tensorScaleInv) : nan;
    }
    m.delayedOverCurrentLog2 = nan;
    if (recipe.kind == RecipeKind::Delayed)
        m.delayedScaleSource = recipe.delayedScaleSource();
    if (recipe.kind == RecipeKind::Delayed && s.amax > 0) {
        const float current = fp8math::amaxScale(fp8math::formatSpec(recipe.format).maxFinite, float(s.amax), false);
        m.delayedOverCurrentLog2 = std::log2(tensorScale) - std::log2(double(current));
    }
    for (int i = 0; i < fp8math::kHistBins; ++i) {
        m.histIn[size_t(i)] = s.histIn[i];
        m.histScaled[size_t(i)] = s.histScaled[i];
    }
    return m;
}

namespace {

// JSON has no NaN or infinity: those become null.
QJsonValue number(double v)
{
    return std::isfinite(v) ? QJsonValue(v) : QJsonValue(QJsonValue::Null);
}

QJsonObject histogram(const std::array<qint64, fp8math::kHistBins> &h)
{
    // Sparse: {"log2": [...], "count": [...]} for the non-empty bins; bin 0 (float subnormals) is log2 -127
    // and bin 255 (inf) is log2 128.
    QJsonArray log2;
    QJsonArray count;
    for (int i = 0; i < fp8math::kHistBins; ++i) {
        if (h[size_t(i)] != 0) {
            log2.append(fp8math::histBinLog2(i));
            count.append(double(h[size_t(i)]));
        }
    }
    return {{QStringLiteral("log2"), log2}, {QStringLiteral("count"), count}};
}

} // namespace

QJsonObject TensorMetrics::toJson() const
{
    const fp8math::FormatSpec spec = fp8math::formatSpec(format);
    QJsonObject o {
        {QStringLiteral("recipe"), recipe},
        {QStringLiteral("format"), formatName(format)},
        {QStringLiteral("backend"), backend},
        {QStringLiteral("numel"), double(numel)},
        {QStringLiteral("zeros"), double(zeros)},
        {QStringLiteral("nan"), double(nans)},
        {QStringLiteral("inf"), double(infs)},
        {QStringLiteral("nonzero_quantized"), double(nonzeroQ)},
        {QStringLiteral("saturated"), double(saturated)},
        {QStringLiteral("amax"), number(amax)},
        {QStringLiteral("amin_nonzero"), number(aminNonzero)},
        {QStringLiteral("dynamic_range_log2"), number(dynamicRange)},
        {QStringLiteral("mean"), number(mean)},
        {QStringLiteral("std"), number(std)},
        {QStringLiteral("excess_kurtosis"), number(excessKurtosis)},
        {QStringLiteral("underflow_pct"), number(underflowPct)},
        {QStringLiteral("damage_pct"), number(damagePct)},
        {QStringLiteral("mean_rel_error_pct"), number(meanRelErrorPct)},
        {QStringLiteral("saturation_pct"), number(saturationPct)},
        {QStringLiteral("mse"), number(mse)},
        {QStringLiteral("cosine"), number(cosine)},
        {QStringLiteral("sqnr_db"), number(sqnrDb)},
        {QStringLiteral("relative_error"), number(relativeError)},
        {QStringLiteral("scale"), number(scale)},
        {QStringLiteral("scale_inv_min"), number(scaleInvMin)},
        {QStringLiteral("scale_inv_max"), number(scaleInvMax)},
        {QStringLiteral("delayed_over_current_log2"), number(delayedOverCurrentLog2)},
        {QStringLiteral("blocks"), double(blocks)},
        {QStringLiteral("zero_amax_blocks"), double(zeroAmaxBlocks)},
        {QStringLiteral("mean_log2_scale_inv"), number(meanLog2ScaleInv)},
        {QStringLiteral("format_max"), double(spec.maxFinite)},
        {QStringLiteral("format_min_normal"), double(spec.minNormal)},
        {QStringLiteral("format_min_subnormal"), double(spec.minSubnormal)},
        {QStringLiteral("hist_log2_abs"), histogram(histIn)},
        {QStringLiteral("hist_log2_abs_scaled"), histogram(histScaled)},
    };
    if (!delayedScaleSource.isEmpty())
        o.insert(QStringLiteral("delayed_scale_source"), delayedScaleSource);
    return o;
}

} // namespace fp8scope

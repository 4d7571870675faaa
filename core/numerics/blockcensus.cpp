#include "blockcensus.h"

#include "core/numerics/blockmap.h"

#include <QJsonArray>

#include <cmath>
#include <cstring>
#include <vector>

namespace fp8scope {

using fp8math::BlockScale;
using fp8math::MetricSums;
using fp8math::QuantPlan;
using fp8math::ScaleMode;

namespace {

double pct(int64_t part, int64_t whole)
{
    return whole > 0 ? double(part) / double(whole) * 100.0 : 0.0;
}

} // namespace

double BlockCensus::clippingPct() const
{
    return pct(clippingBlocks, blocks);
}

double BlockCensus::underflowingPct() const
{
    return pct(underflowingBlocks, blocks);
}

double BlockCensus::flushedPct() const
{
    return pct(flushedBlocks, blocks);
}

QJsonObject BlockCensus::toJson() const
{
    QJsonArray scales;
    for (const auto &[log2, n] : scaleLog2)
        scales.append(QJsonObject {{QStringLiteral("log2_scale_inv"), log2}, {QStringLiteral("blocks"), double(n)}});
    return {{QStringLiteral("blocks"), double(blocks)}, {QStringLiteral("zero_blocks"), double(zeroBlocks)},
        {QStringLiteral("clipping_blocks"), double(clippingBlocks)},
        {QStringLiteral("underflowing_blocks"), double(underflowingBlocks)},
        {QStringLiteral("flushed_blocks"), double(flushedBlocks)},
        {QStringLiteral("saturated_elements"), double(saturatedElements)},
        {QStringLiteral("underflowed_elements"), double(underflowedElements)},
        {QStringLiteral("zero_scale_blocks"), double(zeroScaleBlocks)}, {QStringLiteral("scale_inv_binades"), scales}};
}

bool hasBlockScales(const Recipe &recipe)
{
    return MetricsEngine::planFor(recipe, 1.0f).mode != ScaleMode::Tensor;
}

std::optional<BlockCensus> blockCensus(
    TensorReader &reader, const Recipe &recipe, Problem *problem, const MetricsEngine::Progress &progress)
{
    if (!hasBlockScales(recipe)) {
        *problem = {
            reader.info().file, -1, QStringLiteral("%1 scales the whole tensor: it has no blocks").arg(recipe.name())};
        return std::nullopt;
    }
    // Counted from the block map (every block judged on its own by the kernels the scalar definition checks).
    const std::optional<BlockMap> map = computeBlockMap(reader, recipe, problem, 0, progress);
    if (!map)
        return std::nullopt;
    return map->census();
}

} // namespace fp8scope

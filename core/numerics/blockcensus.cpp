#include "blockcensus.h"

#include "core/numerics/scalarkernels.h"

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

// A metrics backend that judges each block on its own with the scalar kernel and counts it in the census.
// The engine streams the tensor through it as through any backend (chunks of whole blocks and tiles, the
// amax pass for NVFP4's global scale), so the census sees the plan the metrics were computed under.
class CensusBackend : public MetricsBackend
{
public:
    explicit CensusBackend(BlockCensus &census)
        : m_census(census)
    {
    }

    QString name() const override { return QStringLiteral("CPU (scalar block census)"); }

    float amax(const ChunkView &chunk) override
    {
        const std::vector<float> &x = widen(chunk);
        return fp8math::scalarAmax(x.data(), x.size());
    }

    void accumulate(const ChunkView &chunk, const QuantPlan &plan, MetricSums &sums) override
    {
        const std::vector<float> &x = widen(chunk);
        if (plan.mode == ScaleMode::Tensor)
            return; // no blocks: blockCensus refuses such recipes before it gets here
        const size_t rowLen = size_t(chunk.cols);
        // A 1-D chunk is one row; tiles of a 1-D tensor degenerate to runs of blockCols.
        const size_t rows = size_t(chunk.rows);
        const size_t br = plan.mode == ScaleMode::TileBlocks && rows > 1 ? size_t(plan.blockRows) : 1;
        const size_t bc = size_t(plan.blockCols);
        for (size_t r0 = 0; r0 < rows; r0 += br) {
            const size_t nr = std::min(br, rows - r0);
            for (size_t c0 = 0; c0 < rowLen; c0 += bc) {
                const size_t nc = std::min(bc, rowLen - c0);
                float amax = 0.0f;
                for (size_t r = r0; r < r0 + nr; ++r)
                    amax = std::max(amax, fp8math::scalarAmax(x.data() + r * rowLen + c0, nc));
                const BlockScale s = fp8math::blockScaleFor(amax, plan);
                MetricSums block;
                block.addBlock(amax, s.decode);
                for (size_t r = r0; r < r0 + nr; ++r)
                    fp8math::scalarAccumulateUniform(
                        x.data() + r * rowLen + c0, nc, s.encode, s.decode, plan.format, block);
                count(block, amax, s.decode);
                sums.merge(block);
            }
        }
    }

private:
    void count(const MetricSums &block, float amax, float decode)
    {
        ++m_census.blocks;
        const int64_t nonzero = block.numel - block.zeros;
        const int64_t lost = nonzero - block.nonzeroQ;
        m_census.saturatedElements += block.saturated;
        m_census.underflowedElements += lost;
        if (decode > 0.0f && std::isfinite(decode))
            ++m_census.scaleLog2[int(std::floor(MetricSums::exactLog2(decode)))];
        else
            ++m_census.zeroScaleBlocks;
        if (!(amax > 0.0f))
            ++m_census.zeroBlocks;
        if (block.saturated > 0)
            ++m_census.clippingBlocks;
        if (lost > 0)
            ++m_census.underflowingBlocks;
        if (nonzero > 0 && lost == nonzero)
            ++m_census.flushedBlocks;
    }

    // The chunk as float32, as the CPU backend widens it (bfloat16 and float16 exactly, FP8 by its codes).
    const std::vector<float> &widen(const ChunkView &c)
    {
        const size_t n = size_t(c.numel());
        m_buffer.resize(n);
        switch (c.dtype) {
        case DType::F32: std::memcpy(m_buffer.data(), c.data, n * sizeof(float)); break;
        case DType::BF16: {
            const auto *src = static_cast<const uint16_t *>(c.data);
            for (size_t i = 0; i < n; ++i)
                m_buffer[i] = fp8math::bitsFloat(uint32_t(src[i]) << 16);
            break;
        }
        case DType::F16: {
            const auto *src = static_cast<const uint16_t *>(c.data);
            for (size_t i = 0; i < n; ++i)
                m_buffer[i] = fp8math::halfToFloat(src[i]);
            break;
        }
        case DType::F8E4M3:
        case DType::F8E5M2: {
            const fp8math::Format f = c.dtype == DType::F8E4M3 ? fp8math::Format::E4M3 : fp8math::Format::E5M2;
            const auto *src = static_cast<const uint8_t *>(c.data);
            for (size_t i = 0; i < n; ++i)
                m_buffer[i] = fp8math::decodeCode(src[i], f);
            break;
        }
        case DType::F64:
        case DType::F4E2M1: break; // readers hand these out as float32
        }
        return m_buffer;
    }

    BlockCensus &m_census;
    std::vector<float> m_buffer;
};

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
    BlockCensus census;
    CensusBackend backend(census);
    MetricsEngine engine(backend);
    if (!engine.compute(reader, {recipe}, problem, progress))
        return std::nullopt;
    return census;
}

} // namespace fp8scope

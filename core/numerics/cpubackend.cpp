#include "cpubackend.h"

#include "cpukernels.h"

#include <algorithm>
#include <functional>
#include <thread>
#include <vector>

namespace fp8scope {

using fp8math::MetricSums;
using fp8math::QuantPlan;
using fp8math::ScaleMode;

namespace {

// Elements converted to float32 at a time: small enough to stay in L2.
constexpr int64_t kTile = 1 << 15;

// Work is split into units that never cut a block: `unit` elements, with rowLen the length the kernels
// treat as a row inside each piece.
struct Partition {
    int64_t unit; // elements per indivisible unit
    int64_t units; // how many units in the chunk
    int64_t rowLen; // row length handed to the kernels (0: the piece itself is one row)
};

Partition partitionFor(const ChunkView &c, const QuantPlan &plan)
{
    const int64_t n = c.numel();
    switch (plan.mode) {
    case ScaleMode::Tensor: return {1, n, 0};
    case ScaleMode::RowBlocks:
        if (c.rows == 1 || c.cols % plan.blockCols == 0)
            return {plan.blockCols, (n + plan.blockCols - 1) / plan.blockCols, 0};
        return {c.cols, c.rows, c.cols};
    case ScaleMode::TileBlocks:
        if (c.rows == 1)
            return {plan.blockCols, (n + plan.blockCols - 1) / plan.blockCols, 0};
        return {c.cols * plan.blockRows, (c.rows + plan.blockRows - 1) / plan.blockRows, c.cols};
    }
    return {1, n, 0};
}

const float *asFloat(const ChunkView &c, int64_t first, int64_t count, std::vector<float> &buffer)
{
    if (c.dtype == DType::F32)
        return static_cast<const float *>(c.data) + first;
    buffer.resize(size_t(count));
    const size_t n = size_t(count);
    switch (c.dtype) {
    case DType::BF16: cpukernels::bf16ToFloat(static_cast<const uint16_t *>(c.data) + first, n, buffer.data()); break;
    case DType::F16: cpukernels::f16ToFloat(static_cast<const uint16_t *>(c.data) + first, n, buffer.data()); break;
    case DType::F8E4M3:
    case DType::F8E5M2: {
        const fp8math::Format f = c.dtype == DType::F8E4M3 ? fp8math::Format::E4M3 : fp8math::Format::E5M2;
        const uint8_t *src = static_cast<const uint8_t *>(c.data) + first;
        float lut[256];
        for (int i = 0; i < 256; ++i)
            lut[i] = fp8math::decodeCode(uint32_t(i), f);
        for (size_t i = 0; i < n; ++i)
            buffer[i] = lut[src[i]];
        break;
    }
    case DType::F32: break;
    }
    return buffer.data();
}

// Runs body(firstUnit, endUnit, threadIndex) over `units` split evenly across up to `threads` threads.
void parallelFor(int threads, int64_t units, const std::function<void(int64_t, int64_t, int)> &body)
{
    const int t = int(std::max<int64_t>(1, std::min<int64_t>(threads, units)));
    if (t == 1) {
        body(0, units, 0);
        return;
    }
    std::vector<std::thread> pool;
    pool.reserve(size_t(t - 1));
    const int64_t per = units / t;
    const int64_t extra = units % t;
    int64_t begin = 0;
    std::vector<std::pair<int64_t, int64_t>> ranges;
    for (int i = 0; i < t; ++i) {
        const int64_t len = per + (i < extra ? 1 : 0);
        ranges.emplace_back(begin, begin + len);
        begin += len;
    }
    for (int i = 1; i < t; ++i)
        pool.emplace_back(body, ranges[size_t(i)].first, ranges[size_t(i)].second, i);
    body(ranges[0].first, ranges[0].second, 0);
    for (auto &th : pool)
        th.join();
}

} // namespace

CpuBackend::CpuBackend(int threads)
    : m_threads(threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency())))
{
}

QString CpuBackend::name() const
{
    const QString base = QStringLiteral("CPU (%1, %2 thread%3)")
                             .arg(QString::fromLatin1(cpukernels::simdTarget()))
                             .arg(m_threads)
                             .arg(m_threads == 1 ? QString() : QStringLiteral("s"));
    return m_note.isEmpty() ? base : base + QStringLiteral(": ") + m_note;
}

float CpuBackend::amax(const ChunkView &chunk)
{
    const int64_t n = chunk.numel();
    const int64_t tiles = (n + kTile - 1) / kTile;
    std::vector<float> partial(static_cast<size_t>(m_threads), 0.0f);
    parallelFor(m_threads, tiles, [&](int64_t t0, int64_t t1, int thread) {
        std::vector<float> buffer;
        float a = 0.0f;
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t first = t * kTile;
            const int64_t count = std::min(kTile, n - first);
            a = std::max(a, cpukernels::amaxAbs(asFloat(chunk, first, count, buffer), size_t(count)));
        }
        partial[size_t(thread)] = a;
    });
    return *std::max_element(partial.begin(), partial.end());
}

void CpuBackend::accumulate(const ChunkView &chunk, const QuantPlan &plan, MetricSums &sums)
{
    const int64_t n = chunk.numel();
    std::vector<MetricSums> partial(static_cast<size_t>(m_threads));
    if (plan.mode == ScaleMode::Tensor && (chunk.dtype == DType::BF16 || chunk.dtype == DType::F16)) {
        // 16-bit inputs under one scale: count patterns, then evaluate each pattern that occurred once.
        const int64_t tiles = (n + kTile - 1) / kTile;
        parallelFor(m_threads, tiles, [&](int64_t t0, int64_t t1, int thread) {
            std::vector<uint32_t> counts(size_t(65536) * 4, 0u);
            const auto *src = static_cast<const uint16_t *>(chunk.data);
            int64_t pending = 0;
            MetricSums &m = partial[size_t(thread)];
            for (int64_t t = t0; t < t1; ++t) {
                const int64_t first = t * kTile;
                const int64_t count = std::min(kTile, n - first);
                if (pending + count >= (int64_t(1) << 31)) {
                    cpukernels::foldPatternCounts(counts.data(), chunk.dtype == DType::BF16, plan.tensorScale,
                        plan.tensorScaleInv, plan.format, m);
                    pending = 0;
                }
                cpukernels::countPatterns16(src + first, size_t(count), counts.data());
                pending += count;
            }
            cpukernels::foldPatternCounts(
                counts.data(), chunk.dtype == DType::BF16, plan.tensorScale, plan.tensorScaleInv, plan.format, m);
        });
        for (const MetricSums &m : partial)
            sums.merge(m);
        return;
    }
    const Partition p = partitionFor(chunk, plan);
    parallelFor(m_threads, p.units, [&](int64_t u0, int64_t u1, int thread) {
        MetricSums &m = partial[size_t(thread)];
        std::vector<float> buffer;
        cpukernels::KernelScratch scratch;
        // Units per tile: as many as fit the tile budget, at least one.
        const int64_t step = std::max<int64_t>(1, kTile / p.unit);
        for (int64_t u = u0; u < u1; u += step) {
            const int64_t first = u * p.unit;
            const int64_t count = std::min(std::min(u1, u + step) * p.unit, n) - first;
            const float *x = asFloat(chunk, first, count, buffer);
            const size_t rowLen = size_t(p.rowLen ? p.rowLen : count);
            const size_t rows = size_t(count) / rowLen;
            switch (plan.mode) {
            case ScaleMode::Tensor:
                cpukernels::accumulateUniform(
                    x, size_t(count), plan.tensorScale, plan.tensorScaleInv, plan.format, m, scratch);
                break;
            case ScaleMode::RowBlocks: cpukernels::accumulateRowBlocks(x, rowLen, rows, plan, m, scratch); break;
            case ScaleMode::TileBlocks:
                if (p.rowLen == 0) {
                    // 1-D: one row, tiles degenerate to blockCols-long runs.
                    QuantPlan flat = plan;
                    flat.blockRows = 1;
                    cpukernels::accumulateTiles(x, rowLen, 1, flat, m, scratch);
                } else {
                    cpukernels::accumulateTiles(x, rowLen, rows, plan, m, scratch);
                }
                break;
            }
        }
        scratch.flushInto(m);
    });
    for (const MetricSums &m : partial)
        sums.merge(m);
}

} // namespace fp8scope

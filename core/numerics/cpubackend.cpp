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

// float32, bfloat16 and float16 are read by the kernels as they are.
bool readDirectly(DType t)
{
    return t == DType::F32 || t == DType::BF16 || t == DType::F16;
}

cpukernels::Input inputOf(DType t)
{
    return t == DType::BF16 ? cpukernels::Input::BF16
                            : (t == DType::F16 ? cpukernels::Input::F16 : cpukernels::Input::F32);
}

// `count` elements from `first` as the kernels take them: the chunk's own memory where they read its dtype,
// else widened to float32 into `buffer` (FP8 dumps, through a table of the 256 codes).
const void *kernelInput(const ChunkView &c, int64_t first, int64_t count, std::vector<float> &buffer)
{
    if (readDirectly(c.dtype))
        return static_cast<const char *>(c.data) + size_t(first) * size_t(dtypeSize(c.dtype));
    const fp8math::Format f = c.dtype == DType::F8E4M3 ? fp8math::Format::E4M3 : fp8math::Format::E5M2;
    const uint8_t *src = static_cast<const uint8_t *>(c.data) + first;
    float lut[256];
    for (int i = 0; i < 256; ++i)
        lut[i] = fp8math::decodeCode(uint32_t(i), f);
    buffer.resize(size_t(count));
    for (size_t i = 0; i < size_t(count); ++i)
        buffer[i] = lut[src[i]];
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
    const cpukernels::Input in = inputOf(chunk.dtype);
    std::vector<float> partial(static_cast<size_t>(m_threads), 0.0f);
    parallelFor(m_threads, tiles, [&](int64_t t0, int64_t t1, int thread) {
        std::vector<float> buffer;
        float a = 0.0f;
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t first = t * kTile;
            const int64_t count = std::min(kTile, n - first);
            a = std::max(a, cpukernels::amaxAbs(kernelInput(chunk, first, count, buffer), in, size_t(count)));
        }
        partial[size_t(thread)] = a;
    });
    return *std::max_element(partial.begin(), partial.end());
}

void CpuBackend::accumulate(const ChunkView &chunk, const QuantPlan &plan, MetricSums &sums)
{
    const int64_t n = chunk.numel();
    std::vector<MetricSums> partial(static_cast<size_t>(m_threads));
    if (plan.mode == ScaleMode::Tensor && countsPatterns(chunk.dtype)) {
        PatternCounts counts(chunk.dtype);
        countPatterns(chunk, counts);
        counts.fold(plan, sums);
        return;
    }
    const Partition p = partitionFor(chunk, plan);
    const cpukernels::Input in = inputOf(chunk.dtype);
    parallelFor(m_threads, p.units, [&](int64_t u0, int64_t u1, int thread) {
        MetricSums &m = partial[size_t(thread)];
        std::vector<float> buffer;
        cpukernels::KernelScratch scratch;
        // Inputs read directly go to the kernels in one piece; widened ones a tile's worth of units at a
        // time (at least one unit).
        const int64_t step = readDirectly(chunk.dtype) ? u1 - u0 : std::max<int64_t>(1, kTile / p.unit);
        for (int64_t u = u0; u < u1; u += step) {
            const int64_t first = u * p.unit;
            const int64_t count = std::min(std::min(u1, u + step) * p.unit, n) - first;
            const void *x = kernelInput(chunk, first, count, buffer);
            const size_t rowLen = size_t(p.rowLen ? p.rowLen : count);
            const size_t rows = size_t(count) / rowLen;
            switch (plan.mode) {
            case ScaleMode::Tensor:
                cpukernels::accumulateUniform(
                    x, in, size_t(count), plan.tensorScale, plan.tensorScaleInv, plan.format, m, scratch);
                break;
            case ScaleMode::RowBlocks: cpukernels::accumulateRowBlocks(x, in, rowLen, rows, plan, m, scratch); break;
            case ScaleMode::TileBlocks:
                if (p.rowLen == 0) {
                    // 1-D: one row, tiles degenerate to blockCols-long runs.
                    QuantPlan flat = plan;
                    flat.blockRows = 1;
                    cpukernels::accumulateTiles(x, in, rowLen, 1, flat, m, scratch);
                } else {
                    cpukernels::accumulateTiles(x, in, rowLen, rows, plan, m, scratch);
                }
                break;
            }
        }
        scratch.flushInto(m);
    });
    for (const MetricSums &m : partial)
        sums.merge(m);
}

bool CpuBackend::countsPatterns(DType dtype) const
{
    return dtype == DType::BF16 || dtype == DType::F16;
}

void CpuBackend::countPatterns(const ChunkView &chunk, PatternCounts &counts)
{
    const int64_t n = chunk.numel();
    const int64_t tiles = (n + kTile - 1) / kTile;
    std::vector<PatternCounts> partial(static_cast<size_t>(m_threads), PatternCounts(chunk.dtype));
    parallelFor(m_threads, tiles, [&](int64_t t0, int64_t t1, int thread) {
        std::vector<uint32_t> counters(PatternCounts::kPatterns * cpukernels::kPatternCopies, 0u);
        const auto *src = static_cast<const uint16_t *>(chunk.data);
        PatternCounts &mine = partial[size_t(thread)];
        int64_t pending = 0;
        for (int64_t t = t0; t < t1; ++t) {
            const int64_t first = t * kTile;
            const int64_t count = std::min(kTile, n - first);
            // 32-bit counters: hand them over before any could overflow.
            if (pending + count >= (int64_t(1) << 31)) {
                mine.take(counters.data(), cpukernels::kPatternCopies);
                pending = 0;
            }
            cpukernels::countPatterns16(src + first, size_t(count), counters.data());
            pending += count;
        }
        mine.take(counters.data(), cpukernels::kPatternCopies);
    });
    for (const PatternCounts &c : partial)
        counts.merge(c);
}

} // namespace fp8scope

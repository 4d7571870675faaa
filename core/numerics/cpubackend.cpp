#include "cpubackend.h"

#include "cpukernels.h"

#include <algorithm>
#include <atomic>
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

// Work is cut into pieces of whole units, about kPieceElements elements each. The cut depends on the
// chunk and the unit only, never on the thread count, and every piece keeps its own sums, merged in piece
// order: results are the same bits with any number of threads.
constexpr int64_t kPieceElements = int64_t(1) << 20;

struct Pieces {
    int64_t units = 0;
    int64_t unitsPerPiece = 1;
    int64_t count = 0;

    Pieces(int64_t unitCount, int64_t unitElements)
        : units(unitCount)
        , unitsPerPiece(std::max<int64_t>(1, kPieceElements / std::max<int64_t>(1, unitElements)))
        , count((unitCount + unitsPerPiece - 1) / unitsPerPiece)
    {
    }
};

// Runs body(firstUnit, endUnit, worker, piece) for every piece. Up to `threads` workers take the pieces in
// turn, so a worker slowed by other load on the machine takes fewer of them (a split fixed in advance
// waits for its slowest part). Returns how many workers ran (per-worker state needs that many slots).
int parallelFor(int threads, const Pieces &pieces, const std::function<void(int64_t, int64_t, int, int64_t)> &body)
{
    const int workers = int(std::max<int64_t>(1, std::min<int64_t>(threads, pieces.count)));
    std::atomic<int64_t> next {0};
    const auto work = [&](int worker) {
        for (int64_t p = next.fetch_add(1, std::memory_order_relaxed); p < pieces.count;
             p = next.fetch_add(1, std::memory_order_relaxed))
            body(p * pieces.unitsPerPiece, std::min(pieces.units, (p + 1) * pieces.unitsPerPiece), worker, p);
    };
    std::vector<std::thread> pool;
    pool.reserve(size_t(workers - 1));
    for (int i = 1; i < workers; ++i)
        pool.emplace_back(work, i);
    work(0);
    for (auto &th : pool)
        th.join();
    return workers;
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
    const cpukernels::Input in = inputOf(chunk.dtype);
    std::vector<float> partial(static_cast<size_t>(m_threads), 0.0f);
    std::vector<std::vector<float>> buffers(static_cast<size_t>(m_threads));
    parallelFor(m_threads, Pieces(n, 1), [&](int64_t first, int64_t end, int worker, int64_t) {
        float &a = partial[size_t(worker)];
        for (int64_t t = first; t < end; t += kTile) {
            const int64_t count = std::min(kTile, end - t);
            const void *x = kernelInput(chunk, t, count, buffers[size_t(worker)]);
            a = std::max(a, cpukernels::amaxAbs(x, in, size_t(count)));
        }
    });
    return *std::max_element(partial.begin(), partial.end());
}

void CpuBackend::accumulate(const ChunkView &chunk, const QuantPlan &plan, MetricSums &sums)
{
    const int64_t n = chunk.numel();
    if (plan.mode == ScaleMode::Tensor && countsPatterns(chunk.dtype)) {
        PatternCounts counts(chunk.dtype);
        countPatterns(chunk, counts);
        counts.fold(plan, sums);
        return;
    }
    const Partition p = partitionFor(chunk, plan);
    const Pieces pieces(p.units, p.unit);
    const cpukernels::Input in = inputOf(chunk.dtype);
    std::vector<MetricSums> partial(static_cast<size_t>(pieces.count));
    // Per worker: the histogram table (integer counts, so whichever pieces a worker took, their sum is the
    // same) and the widening buffer.
    std::vector<cpukernels::KernelScratch> scratches(static_cast<size_t>(m_threads));
    std::vector<std::vector<float>> buffers(static_cast<size_t>(m_threads));
    const int workers = parallelFor(m_threads, pieces, [&](int64_t u0, int64_t u1, int worker, int64_t piece) {
        MetricSums &m = partial[size_t(piece)];
        cpukernels::KernelScratch &scratch = scratches[size_t(worker)];
        // Inputs read directly go to the kernels in one piece; widened ones a tile's worth of units at a
        // time (at least one unit).
        const int64_t step = readDirectly(chunk.dtype) ? u1 - u0 : std::max<int64_t>(1, kTile / p.unit);
        for (int64_t u = u0; u < u1; u += step) {
            const int64_t first = u * p.unit;
            const int64_t count = std::min(std::min(u1, u + step) * p.unit, n) - first;
            const void *x = kernelInput(chunk, first, count, buffers[size_t(worker)]);
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
    });
    for (const MetricSums &m : partial)
        sums.merge(m);
    for (int w = 0; w < workers; ++w)
        scratches[size_t(w)].flushInto(sums);
}

bool CpuBackend::countsPatterns(DType dtype) const
{
    return dtype == DType::BF16 || dtype == DType::F16;
}

void CpuBackend::countPatterns(const ChunkView &chunk, PatternCounts &counts)
{
    const int64_t n = chunk.numel();
    const auto *src = static_cast<const uint16_t *>(chunk.data);
    // Per worker: its counters (32 bits, handed over before any could overflow) and their patterns so far.
    struct Worker {
        std::vector<uint32_t> counters;
        int64_t pending = 0;
    };
    std::vector<Worker> state(static_cast<size_t>(m_threads));
    std::vector<PatternCounts> partial(static_cast<size_t>(m_threads), PatternCounts(chunk.dtype));
    const int workers = parallelFor(m_threads, Pieces(n, 1), [&](int64_t first, int64_t end, int worker, int64_t) {
        Worker &w = state[size_t(worker)];
        if (w.counters.empty())
            w.counters.assign(PatternCounts::kPatterns * cpukernels::kPatternCopies, 0u);
        if (w.pending + (end - first) >= (int64_t(1) << 31)) {
            partial[size_t(worker)].take(w.counters.data(), cpukernels::kPatternCopies);
            w.pending = 0;
        }
        cpukernels::countPatterns16(src + first, size_t(end - first), w.counters.data());
        w.pending += end - first;
    });
    for (int w = 0; w < workers; ++w) {
        if (!state[size_t(w)].counters.empty())
            partial[size_t(w)].take(state[size_t(w)].counters.data(), cpukernels::kPatternCopies);
        counts.merge(partial[size_t(w)]);
    }
}

} // namespace fp8scope

#include "blockmap.h"

#include "core/numerics/cpukernels.h"
#include "core/numerics/scalarkernels.h"

#include <QJsonArray>
#include <QLocale>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <thread>

namespace fp8scope {

using fp8math::BlockScale;
using fp8math::BlockStatsOut;
using fp8math::MetricSums;
using fp8math::QuantPlan;
using fp8math::ScaleMode;

namespace {

// Runs body(first, end) over [0, n) cut into `threads` contiguous ranges, one thread each.
void parallelRanges(int threads, int64_t n, const std::function<void(int64_t, int64_t)> &body)
{
    const int64_t workers = std::max<int64_t>(1, std::min<int64_t>(threads, n));
    if (workers == 1) {
        body(0, n);
        return;
    }
    std::vector<std::thread> pool;
    for (int64_t w = 0; w < workers; ++w) {
        const int64_t first = n * w / workers;
        const int64_t end = n * (w + 1) / workers;
        pool.emplace_back([&body, first, end] { body(first, end); });
    }
    for (std::thread &t : pool)
        t.join();
}

// A metrics backend that keeps the statistics of every block of the plan, in the order the engine streams
// the tensor (chunks of whole blocks and tiles, first to last).
class BlockMapBackend : public MetricsBackend
{
public:
    BlockMapBackend(BlockMap &map, int threads)
        : m_map(map)
        , m_threads(threads)
    {
    }

    QString name() const override { return QStringLiteral("CPU (block map)"); }

    float amax(const ChunkView &chunk) override
    {
        cpukernels::Input in;
        const void *x = input(chunk, &in);
        return cpukernels::amaxAbs(x, in, size_t(chunk.numel()));
    }

    void accumulate(const ChunkView &chunk, const QuantPlan &plan, MetricSums &sums) override
    {
        (void)sums; // the map keeps its own statistics
        cpukernels::Input in;
        const void *x = input(chunk, &in);
        const int64_t n = chunk.numel();
        if (plan.mode == ScaleMode::Tensor) {
            cpukernels::accumulateUniform(
                x, in, size_t(n), plan.tensorScale, plan.tensorScaleInv, plan.format, m_tensorSums, scratch());
            m_tensorScaleInv = plan.tensorScaleInv;
            m_elementsDone += n;
            return;
        }
        if (plan.rule == fp8math::BlockRule::Nvfp4)
            m_map.globalDecode = 1.0f / plan.globalEncode;
        const int64_t rowLen = chunk.cols;
        const int64_t rows = chunk.rows;
        // The chunk's first block: chunks start on a block row (2-D) or a multiple of 128 elements (1-D).
        const int64_t first = m_map.rows > 1 ? (m_elementsDone / m_map.cols) / m_map.blockRows * m_map.gridCols
                                             : m_elementsDone / m_map.blockCols;
        const int64_t br = plan.mode == ScaleMode::TileBlocks && rows > 1 ? plan.blockRows : 1;
        const int64_t bc = plan.blockCols;
        const int64_t perRow = (rowLen + bc - 1) / bc;
        const int64_t bands = (rows + br - 1) / br;
        const int64_t chunkBlocks = bands * perRow;
        m_lost.resize(size_t(chunkBlocks));
        m_nonzero.resize(size_t(chunkBlocks));
        m_saturated.resize(size_t(chunkBlocks));
        BlockStatsOut out {m_map.scale.data() + first, m_map.amax.data() + first, m_nonzero.data(), m_lost.data(),
            m_saturated.data(), m_map.relErrSum.data() + first};
        if (plan.mode == ScaleMode::RowBlocks) {
            parallelRanges(m_threads, rows, [&](int64_t r0, int64_t r1) {
                BlockStatsOut part = out;
                const int64_t skip = r0 * perRow;
                part.decode += skip;
                part.amax += skip;
                part.nonzero += skip;
                part.lost += skip;
                part.saturated += skip;
                part.relErr += skip;
                const size_t size = in == cpukernels::Input::F32 ? 4 : 2;
                cpukernels::rowBlockStats(static_cast<const char *>(x) + size_t(r0 * rowLen) * size, in, size_t(rowLen),
                    size_t(r1 - r0), plan, part);
            });
        } else {
            const std::vector<float> &v = widened(chunk, x, in);
            parallelRanges(m_threads, bands, [&](int64_t b0, int64_t b1) {
                for (int64_t band = b0; band < b1; ++band) {
                    const int64_t r0 = band * br;
                    const int64_t nr = std::min(br, rows - r0);
                    for (int64_t c0 = 0; c0 < rowLen; c0 += bc) {
                        const int64_t nc = std::min(bc, rowLen - c0);
                        const float *p = v.data() + r0 * rowLen + c0;
                        float a = 0.0f;
                        for (int64_t r = 0; r < nr; ++r)
                            a = std::max(a, fp8math::scalarAmax(p + r * rowLen, size_t(nc)));
                        fp8math::scalarBlockStats(p, size_t(rowLen), size_t(nr), size_t(nc), a,
                            fp8math::blockScaleFor(a, plan), plan.format, out, size_t(band * perRow + c0 / bc));
                    }
                }
            });
        }
        std::copy(m_nonzero.begin(), m_nonzero.end(), m_map.nonzero.begin() + first);
        std::copy(m_lost.begin(), m_lost.end(), m_map.lost.begin() + first);
        std::copy(m_saturated.begin(), m_saturated.end(), m_map.saturated.begin() + first);
        m_elementsDone += n;
    }

    // A per-tensor recipe's one block, from the sums of every chunk.
    void finishTensor()
    {
        const MetricSums &s = m_tensorSums;
        const int64_t nonzero = s.numel - s.zeros - s.nans - s.infs;
        m_map.scale[0] = m_tensorScaleInv;
        m_map.amax[0] = float(s.amax);
        m_map.nonzero[0] = uint64_t(nonzero);
        m_map.lost[0] = uint64_t(nonzero - (s.nonzeroQ - s.nans - s.infs));
        m_map.saturated[0] = uint64_t(s.saturated);
        m_map.relErrSum[0] = float(s.relErr);
    }

private:
    cpukernels::KernelScratch &scratch()
    {
        if (!m_scratch)
            m_scratch = std::make_unique<cpukernels::KernelScratch>();
        return *m_scratch;
    }

    // The chunk as the kernels read it: float32, bfloat16 and float16 as they are, FP8 widened.
    const void *input(const ChunkView &c, cpukernels::Input *in)
    {
        switch (c.dtype) {
        case DType::F32: *in = cpukernels::Input::F32; return c.data;
        case DType::BF16: *in = cpukernels::Input::BF16; return c.data;
        case DType::F16: *in = cpukernels::Input::F16; return c.data;
        case DType::F8E4M3:
        case DType::F8E5M2: {
            const fp8math::Format f = c.dtype == DType::F8E4M3 ? fp8math::Format::E4M3 : fp8math::Format::E5M2;
            m_fp8.resize(size_t(c.numel()));
            const auto *src = static_cast<const uint8_t *>(c.data);
            for (size_t i = 0; i < m_fp8.size(); ++i)
                m_fp8[i] = fp8math::decodeCode(src[i], f);
            *in = cpukernels::Input::F32;
            return m_fp8.data();
        }
        case DType::F64:
        case DType::F4E2M1: break; // readers hand these out as float32
        }
        *in = cpukernels::Input::F32;
        return c.data;
    }

    const std::vector<float> &widened(const ChunkView &c, const void *x, cpukernels::Input in)
    {
        const size_t n = size_t(c.numel());
        m_widened.resize(n);
        if (in == cpukernels::Input::F32) {
            std::memcpy(m_widened.data(), x, n * sizeof(float));
        } else {
            const auto *src = static_cast<const uint16_t *>(x);
            for (size_t i = 0; i < n; ++i)
                m_widened[i] = in == cpukernels::Input::BF16 ? fp8math::bitsFloat(uint32_t(src[i]) << 16)
                                                             : fp8math::halfToFloat(src[i]);
        }
        return m_widened;
    }

    BlockMap &m_map;
    int m_threads;
    int64_t m_elementsDone = 0;
    MetricSums m_tensorSums;
    float m_tensorScaleInv = 1.0f;
    std::unique_ptr<cpukernels::KernelScratch> m_scratch;
    std::vector<float> m_fp8;
    std::vector<float> m_widened;
    std::vector<uint32_t> m_nonzero, m_lost, m_saturated;
};

QString number(double v)
{
    return QString::number(v, 'g', 4);
}

// "3-7, 12, 40-41" (at most `max` ranges, then "...").
QString rangesText(const std::vector<int64_t> &sorted, int max = 3)
{
    QStringList parts;
    for (size_t i = 0; i < sorted.size();) {
        size_t j = i;
        while (j + 1 < sorted.size() && sorted[j + 1] == sorted[j] + 1)
            ++j;
        if (int(parts.size()) == max) {
            parts << QStringLiteral("...");
            break;
        }
        parts << (i == j ? QString::number(sorted[i]) : QStringLiteral("%1-%2").arg(sorted[i]).arg(sorted[j]));
        i = j + 1;
    }
    return parts.join(QStringLiteral(", "));
}

} // namespace

QString blockFieldName(BlockField field)
{
    switch (field) {
    case BlockField::Scale: return QStringLiteral("scale");
    case BlockField::Amax: return QStringLiteral("amax");
    case BlockField::Underflow: return QStringLiteral("underflow_pct");
    case BlockField::Saturated: return QStringLiteral("saturated_pct");
    case BlockField::RelError: return QStringLiteral("rel_error");
    }
    return {};
}

std::optional<BlockField> blockFieldFromName(const QString &name)
{
    for (BlockField f :
        {BlockField::Scale, BlockField::Amax, BlockField::Underflow, BlockField::Saturated, BlockField::RelError}) {
        if (blockFieldName(f) == name)
            return f;
    }
    return std::nullopt;
}

QString blockFieldTitle(BlockField field)
{
    switch (field) {
    case BlockField::Scale: return QStringLiteral("Block scale (scale_inv)");
    case BlockField::Amax: return QStringLiteral("Block amax");
    case BlockField::Underflow: return QStringLiteral("Flushed to zero (% of non-zero)");
    case BlockField::Saturated: return QStringLiteral("Saturated (% of elements)");
    case BlockField::RelError: return QStringLiteral("Mean relative error");
    }
    return {};
}

QString blockPatternName(BlockPattern pattern)
{
    switch (pattern) {
    case BlockPattern::None: return QStringLiteral("none");
    case BlockPattern::Isolated: return QStringLiteral("isolated");
    case BlockPattern::RowBand: return QStringLiteral("row-band");
    case BlockPattern::ColumnBand: return QStringLiteral("column-band");
    case BlockPattern::Scattered: return QStringLiteral("scattered");
    case BlockPattern::Everywhere: return QStringLiteral("everywhere");
    }
    return {};
}

void BlockMap::setGrid(int64_t viewRows, int64_t viewCols, int64_t rowsPerBlock, int64_t colsPerBlock)
{
    rows = viewRows;
    cols = viewCols;
    blockRows = rowsPerBlock;
    blockCols = colsPerBlock;
    gridRows = (rows + blockRows - 1) / blockRows;
    gridCols = (cols + blockCols - 1) / blockCols;
    const size_t n = size_t(blocks());
    scale.assign(n, 0.0f);
    amax.assign(n, 0.0f);
    nonzero.assign(n, 0);
    lost.assign(n, 0);
    saturated.assign(n, 0);
    relErrSum.assign(n, 0.0f);
}

int64_t BlockMap::elements(int64_t index) const
{
    const int64_t r = firstRow(index);
    const int64_t c = firstCol(index);
    return std::min(blockRows, rows - r) * std::min(blockCols, cols - c);
}

double BlockMap::underflowPct(int64_t index) const
{
    const uint64_t n = nonzero[size_t(index)];
    return n ? double(lost[size_t(index)]) / double(n) * 100.0 : 0.0;
}

double BlockMap::saturatedPct(int64_t index) const
{
    const int64_t n = elements(index);
    return n > 0 ? double(saturated[size_t(index)]) / double(n) * 100.0 : 0.0;
}

double BlockMap::relError(int64_t index) const
{
    const uint64_t n = nonzero[size_t(index)];
    return n ? double(relErrSum[size_t(index)]) / double(n) : 0.0;
}

double BlockMap::value(BlockField field, int64_t index) const
{
    switch (field) {
    case BlockField::Scale: return scale[size_t(index)];
    case BlockField::Amax: return amax[size_t(index)];
    case BlockField::Underflow: return underflowPct(index);
    case BlockField::Saturated: return saturatedPct(index);
    case BlockField::RelError: return relError(index);
    }
    return 0.0;
}

std::optional<int> BlockMap::scaleExponent(int64_t index) const
{
    if (recipe.kind != RecipeKind::MxFp8)
        return std::nullopt;
    const float s = scale[size_t(index)];
    if (!(s > 0.0f) || !std::isfinite(s))
        return std::nullopt;
    return int(std::lround(MetricSums::exactLog2(s)));
}

double BlockMap::roundingBound() const
{
    return std::ldexp(1.0, -(fp8math::formatSpec(recipe.format).manBits + 1));
}

bool BlockMap::flagged(int64_t index) const
{
    return underflowPct(index) >= kBlockFlagPct || saturatedPct(index) >= kBlockFlagPct
        || relError(index) >= kBlockFlagRelError;
}

int64_t BlockMap::flaggedCount() const
{
    int64_t n = 0;
    for (int64_t i = 0; i < blocks(); ++i)
        n += flagged(i) ? 1 : 0;
    return n;
}

std::vector<int64_t> BlockMap::ranked(int64_t limit) const
{
    const int64_t n = blocks();
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::vector<double> key(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i)
        key[size_t(i)] = relError(i);
    const auto worse = [&](int64_t a, int64_t b) {
        if (key[size_t(a)] != key[size_t(b)])
            return key[size_t(a)] > key[size_t(b)];
        const double ua = underflowPct(a), ub = underflowPct(b);
        if (ua != ub)
            return ua > ub;
        const double sa = saturatedPct(a), sb = saturatedPct(b);
        if (sa != sb)
            return sa > sb;
        if (amax[size_t(a)] != amax[size_t(b)])
            return amax[size_t(a)] > amax[size_t(b)];
        return a < b;
    };
    const int64_t k = limit <= 0 ? n : std::min(limit, n);
    std::partial_sort(order.begin(), order.begin() + k, order.end(), worse);
    order.resize(size_t(k));
    return order;
}

BlockPattern BlockMap::pattern(std::vector<int64_t> *bandIndices) const
{
    if (bandIndices)
        bandIndices->clear();
    const int64_t n = blocks();
    std::vector<int64_t> perRow(size_t(gridRows), 0), perCol(size_t(gridCols), 0);
    int64_t k = 0;
    for (int64_t i = 0; i < n; ++i) {
        if (!flagged(i))
            continue;
        ++k;
        ++perRow[size_t(i / gridCols)];
        ++perCol[size_t(i % gridCols)];
    }
    if (k == 0)
        return BlockPattern::None;
    if (k * 2 > n)
        return BlockPattern::Everywhere;
    // A band: rows (columns) of blocks at least half flagged, holding at least 80 % of the flagged blocks.
    const auto band = [&](const std::vector<int64_t> &count, int64_t across, std::vector<int64_t> *which) {
        if (across < 2)
            return false;
        int64_t inBand = 0;
        std::vector<int64_t> lines;
        for (size_t i = 0; i < count.size(); ++i) {
            if (count[i] * 2 >= across) {
                inBand += count[i];
                lines.push_back(int64_t(i));
            }
        }
        if (lines.empty() || inBand * 5 < k * 4)
            return false;
        if (which)
            *which = std::move(lines);
        return true;
    };
    if (band(perRow, gridCols, bandIndices))
        return BlockPattern::RowBand;
    if (band(perCol, gridRows, bandIndices))
        return BlockPattern::ColumnBand;
    if (k <= std::max<int64_t>(3, n / 100))
        return BlockPattern::Isolated;
    return BlockPattern::Scattered;
}

std::map<int, int64_t> BlockMap::scaleHistogram(int64_t *zeroScale) const
{
    std::map<int, int64_t> out;
    int64_t zero = 0;
    for (float s : scale) {
        if (s > 0.0f && std::isfinite(s))
            ++out[int(std::floor(MetricSums::exactLog2(s)))];
        else
            ++zero;
    }
    if (zeroScale)
        *zeroScale = zero;
    return out;
}

QString BlockMap::blockShape() const
{
    return QStringLiteral("%1x%2").arg(blockRows).arg(blockCols);
}

QString BlockMap::patternText() const
{
    std::vector<int64_t> lines;
    const BlockPattern p = pattern(&lines);
    const int64_t k = flaggedCount();
    const QLocale c = QLocale::c();
    const QString head
        = QStringLiteral("%1 of %2 %3 blocks flagged under %4")
              .arg(c.toString(qlonglong(k)), c.toString(qlonglong(blocks())), blockShape(), recipe.name());
    const std::vector<int64_t> worst = ranked(1);
    const QString at = worst.empty()
        ? QString()
        : QStringLiteral("the worst at block (%1, %2): %3, columns %4-%5, mean relative error %6")
              .arg(worst[0] / gridCols)
              .arg(worst[0] % gridCols)
              .arg(std::min(rows, firstRow(worst[0]) + blockRows) - 1 == firstRow(worst[0])
                      ? QStringLiteral("row %1").arg(firstRow(worst[0]))
                      : QStringLiteral("rows %1-%2")
                            .arg(firstRow(worst[0]))
                            .arg(std::min(rows, firstRow(worst[0]) + blockRows) - 1))
              .arg(firstCol(worst[0]))
              .arg(std::min(cols, firstCol(worst[0]) + blockCols) - 1)
              .arg(number(relError(worst[0])));
    switch (p) {
    case BlockPattern::None: return QStringLiteral("%1: no block lost half of its values").arg(head);
    case BlockPattern::Isolated:
        return QStringLiteral(
            "%1, isolated (%2): a few outlier blocks, each losing its small values to its own largest "
            "one or saturating; the rest of the tensor is served, and smaller blocks or FP32 block "
            "scales confine such an outlier where a per-tensor scale would spread it")
            .arg(head, at);
    case BlockPattern::RowBand:
    case BlockPattern::ColumnBand: {
        const bool rowsBand = p == BlockPattern::RowBand;
        const QString what = rowsBand ? QStringLiteral("a band of rows (block rows %1): whole rows")
                                      : QStringLiteral("a band of columns (block columns %1): whole columns");
        // The remedy by what shares a scale with the band: NVFP4's FP32 tensor scale, a tile, or the tensor.
        QString why;
        if (recipe.kind == RecipeKind::NvFp4)
            why = QStringLiteral("their E4M3 block scales fall below E4M3's range under the FP32 tensor scale the "
                                 "tensor's largest values set; a scale per row (row-scaled NVFP4) or BF16 for this "
                                 "layer keeps them");
        else if (blockRows > 1 && blockCols > 1)
            why = QStringLiteral("they share %1 tiles with larger values; 1x%2 blocks keep them")
                      .arg(blockShape())
                      .arg(blockCols);
        else if (blocks() == 1)
            why = QStringLiteral("one scale for the tensor cannot reach them; per-block scales keep them");
        else
            why = QStringLiteral("even their own block scales cannot reach them (the format's range is too narrow "
                                 "for these values)");
        return QStringLiteral("%1, %2 of small values, not a few outliers: %3")
            .arg(head, what.arg(rangesText(lines)), why);
    }
    case BlockPattern::Scattered:
        return QStringLiteral("%1, scattered through the tensor (%2): the recipe fits the values badly in general "
                              "(its format or block size), not a few blocks")
            .arg(head, at);
    case BlockPattern::Everywhere:
        return QStringLiteral("%1, most of the tensor: the recipe does not fit these values (%2)").arg(head, at);
    }
    return head;
}

QJsonObject BlockMap::blockJson(int64_t index) const
{
    QJsonObject o {{QStringLiteral("row"), double(index / gridCols)}, {QStringLiteral("col"), double(index % gridCols)},
        {QStringLiteral("first_row"), double(firstRow(index))}, {QStringLiteral("first_col"), double(firstCol(index))},
        {QStringLiteral("scale"), double(scale[size_t(index)])}, {QStringLiteral("amax"), double(amax[size_t(index)])},
        {QStringLiteral("underflow_pct"), underflowPct(index)}, {QStringLiteral("saturated_pct"), saturatedPct(index)},
        {QStringLiteral("rel_error"), relError(index)}, {QStringLiteral("flagged"), flagged(index)}};
    if (const std::optional<int> e = scaleExponent(index))
        o.insert(QStringLiteral("scale_exponent"), *e);
    return o;
}

QJsonObject BlockMap::toJson(int64_t top) const
{
    int64_t zeroScale = 0;
    QJsonArray histogram;
    for (const auto &[log2, n] : scaleHistogram(&zeroScale))
        histogram.append(QJsonObject {{QStringLiteral("log2_scale"), log2}, {QStringLiteral("blocks"), double(n)}});
    int64_t clipping = 0, underflowing = 0, flushed = 0;
    for (int64_t i = 0; i < blocks(); ++i) {
        clipping += saturated[size_t(i)] > 0 ? 1 : 0;
        underflowing += lost[size_t(i)] > 0 ? 1 : 0;
        flushed += nonzero[size_t(i)] > 0 && lost[size_t(i)] == nonzero[size_t(i)] ? 1 : 0;
    }
    std::vector<int64_t> lines;
    const BlockPattern p = pattern(&lines);
    QJsonArray band;
    for (int64_t l : lines)
        band.append(double(l));
    QJsonArray worst;
    for (int64_t i : ranked(top))
        worst.append(blockJson(i));
    QJsonObject o {{QStringLiteral("tensor"), tensor}, {QStringLiteral("recipe"), recipe.name()},
        {QStringLiteral("format"), formatName(recipe.format)},
        {QStringLiteral("shape"), QJsonArray {double(rows), double(cols)}}, {QStringLiteral("block"), blockShape()},
        {QStringLiteral("grid"), QJsonArray {double(gridRows), double(gridCols)}},
        {QStringLiteral("blocks"), double(blocks())}, {QStringLiteral("flagged_blocks"), double(flaggedCount())},
        {QStringLiteral("clipping_blocks"), double(clipping)},
        {QStringLiteral("underflowing_blocks"), double(underflowing)},
        {QStringLiteral("flushed_blocks"), double(flushed)}, {QStringLiteral("zero_scale_blocks"), double(zeroScale)},
        {QStringLiteral("rounding_bound"), roundingBound()}, {QStringLiteral("scale_histogram"), histogram},
        {QStringLiteral("pattern"), blockPatternName(p)}, {QStringLiteral("band"), band},
        {QStringLiteral("summary"), patternText()}, {QStringLiteral("worst"), worst}};
    if (globalDecode > 0.0f)
        o.insert(QStringLiteral("tensor_scale_inv"), double(globalDecode));
    return o;
}

std::optional<BlockMap> computeBlockMap(
    TensorReader &reader, const Recipe &recipe, Problem *problem, int threads, const MetricsEngine::Progress &progress)
{
    const TensorInfo &info = reader.info();
    BlockMap map;
    map.tensor = info.name;
    map.recipe = recipe;
    const int64_t rows = std::max<int64_t>(info.rows, 1);
    const int64_t cols = info.rows > 1 ? info.cols : info.numel;
    if (info.numel == 0) {
        *problem = {info.file, -1, QStringLiteral("%1 is empty: it has no blocks").arg(info.name)};
        return std::nullopt;
    }
    const QuantPlan plan = MetricsEngine::planFor(recipe, 1.0f);
    const bool perTensor = plan.mode == ScaleMode::Tensor;
    try {
        map.setGrid(rows, cols,
            perTensor ? rows : (plan.mode == ScaleMode::TileBlocks && rows > 1 ? plan.blockRows : 1),
            perTensor ? cols : plan.blockCols);
    } catch (const std::bad_alloc &) {
        *problem
            = {info.file, -1, QStringLiteral("the block map of %1 blocks does not fit in memory").arg(map.blocks())};
        return std::nullopt;
    }
    const int workers = threads > 0 ? threads : int(std::max(1u, std::thread::hardware_concurrency()));
    BlockMapBackend backend(map, workers);
    MetricsEngine engine(backend);
    if (!engine.compute(reader, {recipe}, problem, progress))
        return std::nullopt;
    if (plan.mode == ScaleMode::Tensor)
        backend.finishTensor();
    return map;
}

std::optional<std::vector<float>> blockValues(
    TensorReader &reader, const BlockMap &map, int64_t index, Problem *problem, bool transposed)
{
    if (index < 0 || index >= map.blocks()) {
        *problem = {reader.info().file, -1, QStringLiteral("block %1 is not in the map").arg(index)};
        return std::nullopt;
    }
    const int64_t r0 = map.firstRow(index);
    const int64_t c0 = map.firstCol(index);
    const int64_t nr = std::min(map.blockRows, map.rows - r0);
    const int64_t nc = std::min(map.blockCols, map.cols - c0);
    // In the tensor: the block's rows and columns (swapped for a transposed view).
    const int64_t tr0 = transposed ? c0 : r0, tc0 = transposed ? r0 : c0;
    const int64_t tnr = transposed ? nc : nr, tnc = transposed ? nr : nc;
    const int64_t tensorCols = transposed ? map.rows : map.cols;
    const int64_t numel = reader.info().numel;
    if (map.rows * map.cols != numel || (tr0 + tnr - 1) * tensorCols + tc0 + tnc > numel) {
        *problem = {reader.info().file, -1,
            QStringLiteral("the map (%1x%2) is not of this tensor (%3 elements)")
                .arg(map.rows)
                .arg(map.cols)
                .arg(numel)};
        return std::nullopt;
    }
    const DType dtype = reader.info().dtype;
    const int size = dtypeSize(dtype);
    // Readers read whole units of their alignment (an HDF5 dataset's rows): the span around each row's part.
    const int64_t unit = std::max<int64_t>(reader.alignment(), 1);
    std::vector<float> block(static_cast<size_t>(tnr * tnc));
    std::vector<char> raw;
    for (int64_t r = 0; r < tnr; ++r) {
        const int64_t first = (tr0 + r) * tensorCols + tc0;
        const int64_t a0 = first / unit * unit;
        const int64_t a1 = std::min(numel, (first + tnc + unit - 1) / unit * unit);
        raw.resize(size_t((a1 - a0) * size));
        if (!reader.read(a0, a1 - a0, raw.data(), problem))
            return std::nullopt;
        widenToFloat(raw.data() + (first - a0) * size, dtype, size_t(tnc), block.data() + r * tnc);
    }
    if (!transposed)
        return block;
    std::vector<float> out(block.size());
    for (int64_t r = 0; r < tnr; ++r)
        for (int64_t c = 0; c < tnc; ++c)
            out[size_t(c * tnr + r)] = block[size_t(r * tnc + c)];
    return out;
}

std::optional<Recipe> fp32ScaledCounterpart(const Recipe &recipe)
{
    Recipe r;
    r.kind = RecipeKind::Block;
    r.format = recipe.format;
    r.pow2 = false;
    switch (recipe.kind) {
    case RecipeKind::MxFp8:
        r.blockRows = recipe.blockRows;
        r.blockCols = recipe.blockCols;
        return r;
    case RecipeKind::NvFp4: r.blockCols = 16; return r;
    case RecipeKind::Block:
        if (!recipe.pow2)
            return std::nullopt;
        r.blockRows = recipe.blockRows;
        r.blockCols = recipe.blockCols;
        return r;
    case RecipeKind::Delayed:
    case RecipeKind::Current:
    case RecipeKind::Bf16: break;
    }
    return std::nullopt;
}

BlockScaleWhatIf compareBlockScales(const BlockMap &recipe, const BlockMap &fp32)
{
    BlockScaleWhatIf w;
    double rel = 0.0, rel32 = 0.0;
    double nonzero = 0.0;
    const int64_t n = std::min(recipe.blocks(), fp32.blocks());
    for (int64_t i = 0; i < n; ++i) {
        const bool a = recipe.flagged(i);
        const bool b = fp32.flagged(i);
        w.flagged += a ? 1 : 0;
        w.flaggedWithFp32 += b ? 1 : 0;
        w.repaired += a && !b ? 1 : 0;
        rel += recipe.relErrSum[size_t(i)];
        rel32 += fp32.relErrSum[size_t(i)];
        nonzero += double(recipe.nonzero[size_t(i)]);
    }
    w.meanRelError = nonzero > 0 ? rel / nonzero : 0.0;
    w.meanRelErrorWithFp32 = nonzero > 0 ? rel32 / nonzero : 0.0;
    return w;
}

QString BlockScaleWhatIf::text() const
{
    const QLocale c = QLocale::c();
    return QStringLiteral("with FP32 scales on the same blocks: %1 of the %2 flagged repaired, %3 flagged in all; mean "
                          "relative error %4 instead of %5")
        .arg(c.toString(qlonglong(repaired)), c.toString(qlonglong(flagged)), c.toString(qlonglong(flaggedWithFp32)),
            number(meanRelErrorWithFp32), number(meanRelError));
}

QJsonObject BlockScaleWhatIf::toJson() const
{
    return {{QStringLiteral("flagged"), double(flagged)},
        {QStringLiteral("flagged_with_fp32"), double(flaggedWithFp32)}, {QStringLiteral("repaired"), double(repaired)},
        {QStringLiteral("mean_rel_error"), meanRelError},
        {QStringLiteral("mean_rel_error_with_fp32"), meanRelErrorWithFp32}, {QStringLiteral("text"), text()}};
}

} // namespace fp8scope

namespace fp8scope {

BlockCensus BlockMap::census() const
{
    BlockCensus c;
    c.blocks = blocks();
    for (int64_t i = 0; i < blocks(); ++i) {
        const size_t k = size_t(i);
        c.zeroBlocks += amax[k] > 0.0f ? 0 : 1;
        c.clippingBlocks += saturated[k] > 0 ? 1 : 0;
        c.underflowingBlocks += lost[k] > 0 ? 1 : 0;
        c.flushedBlocks += nonzero[k] > 0 && lost[k] == nonzero[k] ? 1 : 0;
        c.saturatedElements += int64_t(saturated[k]);
        c.underflowedElements += int64_t(lost[k]);
    }
    c.scaleLog2 = scaleHistogram(&c.zeroScaleBlocks);
    return c;
}

BlockEvidence blockEvidence(const BlockMap &map, const BlockMap *fp32)
{
    BlockEvidence e;
    e.pattern = blockPatternName(map.pattern());
    e.text = map.patternText();
    e.blocks = map.blocks();
    e.flagged = map.flaggedCount();
    for (int64_t i : map.ranked(3))
        e.worst.append(map.blockJson(i));
    if (fp32) {
        e.fp32Recipe = fp32->recipe.name();
        e.fp32 = compareBlockScales(map, *fp32);
    }
    return e;
}

QString BlockEvidence::sentence() const
{
    return fp32 ? QStringLiteral("%1; %2 (%3)").arg(text, fp32->text(), fp32Recipe) : text;
}

QJsonObject BlockEvidence::toJson() const
{
    QJsonObject o {{QStringLiteral("pattern"), pattern}, {QStringLiteral("text"), text},
        {QStringLiteral("blocks"), double(blocks)}, {QStringLiteral("flagged"), double(flagged)},
        {QStringLiteral("worst"), worst}};
    if (fp32) {
        QJsonObject w = fp32->toJson();
        w.insert(QStringLiteral("recipe"), fp32Recipe);
        o.insert(QStringLiteral("fp32_scales"), w);
    }
    return o;
}

std::optional<BlockEvidence> BlockEvidence::fromJson(const QJsonObject &o)
{
    if (!o.contains(QStringLiteral("pattern")))
        return std::nullopt;
    BlockEvidence e;
    e.pattern = o.value(QStringLiteral("pattern")).toString();
    e.text = o.value(QStringLiteral("text")).toString();
    e.blocks = int64_t(o.value(QStringLiteral("blocks")).toDouble());
    e.flagged = int64_t(o.value(QStringLiteral("flagged")).toDouble());
    e.worst = o.value(QStringLiteral("worst")).toArray();
    if (o.contains(QStringLiteral("fp32_scales"))) {
        const QJsonObject w = o.value(QStringLiteral("fp32_scales")).toObject();
        BlockScaleWhatIf f;
        f.flagged = int64_t(w.value(QStringLiteral("flagged")).toDouble());
        f.flaggedWithFp32 = int64_t(w.value(QStringLiteral("flagged_with_fp32")).toDouble());
        f.repaired = int64_t(w.value(QStringLiteral("repaired")).toDouble());
        f.meanRelError = w.value(QStringLiteral("mean_rel_error")).toDouble();
        f.meanRelErrorWithFp32 = w.value(QStringLiteral("mean_rel_error_with_fp32")).toDouble();
        e.fp32 = f;
        e.fp32Recipe = w.value(QStringLiteral("recipe")).toString();
    }
    return e;
}

} // namespace fp8scope

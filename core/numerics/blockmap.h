// The block map of one tensor under one recipe: every block's scale, amax and damage, where it sits in the
// tensor (rows of blocks by block columns of the 2-D view), the worst blocks, and where the damaged ones lie
// (a few outlier blocks, a band of rows or columns, everywhere: different remedies). A per-tensor recipe is one
// block, for comparison. The census (blockcensus.h) counts blocks; the map says which. Computed by the metrics
// engine's streaming (the amax pass NVFP4's global scale needs included) through a backend that keeps each
// block's statistics: vector kernels for 1 x N blocks (cpukernels.h), the scalar definition for tiles.
#pragma once

#include "core/numerics/blockcensus.h"
#include "core/numerics/metricsengine.h"
#include "core/numerics/recipe.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QStringList>

#include <map>
#include <optional>
#include <vector>

namespace fp8scope {

// What a map colours by and the CLI ranks by.
enum class BlockField : uint8_t { Scale, Amax, Underflow, Saturated, RelError };
QString blockFieldName(BlockField field); // "scale", "amax", "underflow_pct", "saturated_pct", "rel_error"
std::optional<BlockField> blockFieldFromName(const QString &name);
QString blockFieldTitle(BlockField field); // "Block scale (scale_inv)", ...

// Where the damaged (flagged) blocks of a map lie.
enum class BlockPattern : uint8_t {
    None, // no block flagged
    Isolated, // a few blocks (at most 1 % of them, or 3), not in a band
    RowBand, // most of the flagged blocks fill rows of blocks (at least half of each such row)
    ColumnBand, // the same along block columns
    Scattered, // more than a few, in no band
    Everywhere, // more than half of the blocks
};
QString blockPatternName(BlockPattern pattern); // "none", "isolated", "row-band", ...

constexpr double kBlockFlagPct = 50.0;
constexpr double kBlockFlagRelError = 0.75;

struct BlockMap {
    QString tensor;
    Recipe recipe;
    int64_t rows = 0; // the tensor's 2-D view (a 1-D tensor is one row)
    int64_t cols = 0;
    int64_t blockRows = 1; // the block shape (a per-tensor recipe: the whole tensor)
    int64_t blockCols = 1;
    int64_t gridRows = 0;
    int64_t gridCols = 0;
    float globalDecode = 0.0f; // NVFP4: the FP32 tensor scale's decode factor; 0 otherwise
    std::vector<float> scale; // per block, row-major: the decode scale (scale_inv) the kernel would store
    std::vector<float> amax;
    std::vector<uint64_t> nonzero; // finite non-zero elements
    std::vector<uint64_t> lost; // of those, quantized to zero
    std::vector<uint64_t> saturated; // elements beyond the format's range (inf inputs included)
    std::vector<float> relErrSum; // sum of |x - q| / |x| over the finite non-zero elements

    int64_t blocks() const { return gridRows * gridCols; }
    // Sets the view and block shape, the grid they make, and every block's statistics to zero (std::bad_alloc
    // where they do not fit).
    void setGrid(int64_t viewRows, int64_t viewCols, int64_t rowsPerBlock, int64_t colsPerBlock);
    int64_t elements(int64_t index) const; // the block's element count (edge blocks are cut short)
    double underflowPct(int64_t index) const; // share of the non-zero elements flushed to zero
    double saturatedPct(int64_t index) const; // share of the elements saturated
    double relError(int64_t index) const; // mean |x - q| / |x| over the non-zero elements
    double value(BlockField field, int64_t index) const;
    // E8M0 (MXFP8): the scale's exponent; otherwise nothing.
    std::optional<int> scaleExponent(int64_t index) const;
    // The relative error no element in the format's normal range can exceed (2^-(mantissa bits + 1)), for
    // reading a block's mean error: above it, values fell below the normal range or saturated.
    double roundingBound() const;
    // At least kBlockFlagPct of the block's non-zero values flushed to zero, or of its elements saturated, or a
    // mean relative error of at least kBlockFlagRelError (a scale off by 2x gives 1): the block's codes no
    // longer stand for its values. Rounding, subnormal steps (NVFP4 keeps a quarter of a bell-shaped block
    // there: its mean error stays under 0.5) and the OCP rule's clipping of a binade's top (504 to 448 for
    // E4M3) do not reach it; an outlier that sets its block's scale, or a scale the format cannot hold, does.
    bool flagged(int64_t index) const;
    int64_t flaggedCount() const;
    // Blocks by damage, the worst first: mean relative error, then underflow, saturation, amax; `limit` <= 0
    // for all of them.
    std::vector<int64_t> ranked(int64_t limit) const;
    // The flagged blocks' pattern, and the rows or columns of blocks of a band (empty otherwise).
    BlockPattern pattern(std::vector<int64_t> *bandIndices = nullptr) const;
    // Blocks by floor(log2 scale); blocks whose scale is 0 or not finite under `zeroScale`.
    std::map<int, int64_t> scaleHistogram(int64_t *zeroScale = nullptr) const;
    // Where a block starts in the 2-D view, and the block shape as "1x32".
    int64_t firstRow(int64_t index) const { return (index / gridCols) * blockRows; }
    int64_t firstCol(int64_t index) const { return (index % gridCols) * blockCols; }
    QString blockShape() const;
    // One sentence on the pattern for users (the triage's evidence, the CLI).
    QString patternText() const;
    // The summary (shape, counts, scale histogram, pattern) and the `top` worst blocks (<= 0: all).
    QJsonObject toJson(int64_t top) const;
    QJsonObject blockJson(int64_t index) const;
    // The census of the same blocks (blockcensus.h), counted from the map.
    BlockCensus census() const;
};

// The block map of `recipe` over the tensor; threads <= 0: one per hardware thread. nullopt with *problem set
// when the tensor cannot be read or progress returned false.
std::optional<BlockMap> computeBlockMap(TensorReader &reader, const Recipe &recipe, Problem *problem, int threads = 0,
    const MetricsEngine::Progress &progress = {});

// The values of one block of a map (row-major within the block), read from the tensor; `transposed`: the map's
// view is the tensor's transpose (a column-wise copy of Transformer Engine's).
std::optional<std::vector<float>> blockValues(
    TensorReader &reader, const BlockMap &map, int64_t index, Problem *problem, bool transposed = false);

// A block recipe's E8M0 (or E4M3) scales against FP32 scales on the same blocks (the what-if per block): the
// recipe with exact float32 block scales; nothing for a recipe whose scales are FP32 already or per tensor.
std::optional<Recipe> fp32ScaledCounterpart(const Recipe &recipe);

// The two maps of one what-if compared block by block.
struct BlockScaleWhatIf {
    int64_t flagged = 0; // under the recipe
    int64_t flaggedWithFp32 = 0; // the same blocks with FP32 scales
    int64_t repaired = 0; // flagged under the recipe, not with FP32 scales
    double meanRelError = 0.0; // over all non-zero elements
    double meanRelErrorWithFp32 = 0.0;
    QString text() const;
    QJsonObject toJson() const;
};
BlockScaleWhatIf compareBlockScales(const BlockMap &recipe, const BlockMap &fp32);

// What the triage and the what-if say of a block recipe's blocks: where the flagged ones lie, the worst ones,
// and (where blocks are flagged and the recipe's scales are not FP32) the same blocks with FP32 scales.
struct BlockEvidence {
    QString pattern; // blockPatternName
    QString text; // BlockMap::patternText
    int64_t blocks = 0;
    int64_t flagged = 0;
    QJsonArray worst; // the three worst blocks, BlockMap::blockJson
    QString fp32Recipe;
    std::optional<BlockScaleWhatIf> fp32;
    // The text, then the FP32 what-if's.
    QString sentence() const;
    QJsonObject toJson() const;
    static std::optional<BlockEvidence> fromJson(const QJsonObject &o);
};
BlockEvidence blockEvidence(const BlockMap &map, const BlockMap *fp32);

} // namespace fp8scope

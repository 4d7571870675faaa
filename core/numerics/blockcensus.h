// The census of a block recipe's scales over one tensor: how many blocks there are, how many of them clip
// (an element saturates: the block's scale could not bring its amax within the format, as the OCP MX rule
// does for the top of a binade), how many underflow (a non-zero element becomes zero) or are flushed whole
// (every non-zero element does: a block scale too small for its format, NVFP4's E4M3), and the distribution
// of the decode scales (scale_inv) by binade. Counted from the block map (blockmap.h), whose kernels judge
// every block on its own as the scalar definition does (scalarkernels.h); the totals equal the fused pass's
// counts exactly.
// A what-if of block recipes (the triage wizard's, `fp8scope-cli stats --what-if`) shows it beside the
// tensor's metrics: two recipes of equal MSE may differ in how many blocks they lose.
#pragma once

#include "core/numerics/metricsengine.h"
#include "core/numerics/recipe.h"

#include <QJsonObject>

#include <map>
#include <optional>

namespace fp8scope {

struct BlockCensus {
    int64_t blocks = 0;
    int64_t zeroBlocks = 0; // finite amax 0: nothing finite to scale (an inf in it still clips)
    int64_t clippingBlocks = 0; // at least one element saturates (inf inputs included)
    int64_t underflowingBlocks = 0; // at least one non-zero element becomes zero
    int64_t flushedBlocks = 0; // every non-zero element becomes zero (a subset of the underflowing)
    int64_t saturatedElements = 0; // over all blocks: the fused pass's `saturated`
    int64_t underflowedElements = 0; // over all blocks: non-zero inputs whose quantized value is 0
    // floor(log2 scale_inv) -> blocks (zero-amax blocks included: their scale is the rule's for amax 0);
    // blocks whose scale_inv is 0 or not finite (a block scale below its format's range) are counted apart.
    std::map<int, int64_t> scaleLog2;
    int64_t zeroScaleBlocks = 0;

    // Percentages of the blocks (0 without blocks).
    double clippingPct() const;
    double underflowingPct() const;
    double flushedPct() const;
    QJsonObject toJson() const;
};

// Whether a recipe scales by blocks (the census of a per-tensor recipe says nothing its metrics do not).
bool hasBlockScales(const Recipe &recipe);

// The census of `recipe` (a block recipe) over the tensor; nullopt with *problem set when it cannot be read
// or the recipe has no block scales. Progress may return false to cancel.
std::optional<BlockCensus> blockCensus(
    TensorReader &reader, const Recipe &recipe, Problem *problem, const MetricsEngine::Progress &progress = {});

} // namespace fp8scope

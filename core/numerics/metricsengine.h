// Computes the metrics of one tensor under one or more recipes by streaming it chunk by chunk through a
// backend (a tensor that fits the resident budget is read once for all passes): an amax pass first when a
// recipe needs the tensor amax (current scaling, NVFP4), then one fused pass whose every chunk serves all
// the recipes. On bfloat16 and float16 tensors (where the backend counts patterns) the per-tensor recipes
// and the amax come from one pass that counts bit patterns instead, and the fused pass runs only for block
// recipes.
#pragma once

#include "core/tensors/tensorreader.h"
#include "metricsbackend.h"
#include "tensormetrics.h"

#include <functional>
#include <optional>
#include <vector>

namespace fp8scope {

class MetricsEngine
{
public:
    // Progress: (elements done, elements total over all passes); returning false cancels.
    using Progress = std::function<bool(int64_t done, int64_t total)>;

    // A tensor of at most residentBytes that needs more than one pass is read from its file once and kept
    // in memory for the other passes (no second read or decompression); a larger one streams through a
    // buffer of one chunk in every pass.
    explicit MetricsEngine(
        MetricsBackend &backend, int64_t chunkBytes = int64_t(64) << 20, int64_t residentBytes = int64_t(256) << 20);

    std::optional<std::vector<TensorMetrics>> compute(
        TensorReader &reader, const std::vector<Recipe> &recipes, Problem *problem, const Progress &progress = {});

    // Elements per chunk for a tensor: whole 128-row bands (2-D) or 128-element runs (1-D), aligned to the
    // reader, within the byte budget where possible.
    static int64_t chunkElements(const TensorInfo &info, int64_t alignment, int64_t chunkBytes);

    // The plan a recipe resolves to, given the tensor amax (only read for recipes that need it).
    static fp8math::QuantPlan planFor(const Recipe &recipe, float tensorAmax);

private:
    MetricsBackend &m_backend;
    int64_t m_chunkBytes;
    int64_t m_residentBytes;
};

} // namespace fp8scope

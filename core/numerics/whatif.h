// The recipe what-if of one tensor: its metrics under every recipe asked for, computed in one pass of the
// metrics engine (every recipe served by each chunk), the census of each block recipe's scales, and the best
// FP8 (or FP4) recipe by one stated criterion. The triage engine (from metrics already stored), the wizard,
// the report and `fp8scope-cli stats --what-if` all pick "best" with bestWhatIfRecipe(); BF16 is the
// reference the others are measured against, never a candidate.
#pragma once

#include "core/numerics/blockcensus.h"
#include "core/numerics/metricsengine.h"
#include "core/numerics/recipe.h"

#include <QMetaType>
#include <QString>

#include <optional>
#include <vector>

namespace fp8scope {

// One recipe's line of a what-if: its name, and what is known of it (a what-if read from stored series may
// lack a statistic: NaN).
struct WhatIfScore {
    QString recipe; // Recipe::name() or a stored series' recipe ("current", "mxfp8", "bf16", ...)
    double mse = std::numeric_limits<double>::quiet_NaN();
    double underflowPct = std::numeric_limits<double>::quiet_NaN();
};

// Whether a recipe name is the reference (BF16: no 8- or 4-bit cast) rather than a candidate.
bool isReferenceRecipe(const QString &recipe);
// The best candidate: the least MSE against the high-precision tensor, ties to the least underflow; the
// reference and recipes without an MSE are not candidates. nullopt with fewer than one candidate.
std::optional<size_t> bestWhatIfRecipe(const std::vector<WhatIfScore> &scores);
// The criterion in words, for every text that names the best recipe.
QString whatIfCriterion();

struct WhatIfRow {
    Recipe recipe;
    TensorMetrics metrics;
    std::optional<BlockCensus> census; // block recipes only
    QString censusError; // a block recipe whose census could not be made
};

struct WhatIfResult {
    std::vector<WhatIfRow> rows; // in the order of the recipes asked for
    std::optional<size_t> best; // bestWhatIfRecipe() over the rows
};

// The what-if of `reader` under `recipes` (each without an amax history of its own given the dump's): one engine
// pass for all the metrics, then each block recipe's census. nullopt with *problem set when the tensor cannot
// be read or the work was cancelled (progress returned false).
std::optional<WhatIfResult> computeWhatIf(TensorReader &reader, std::vector<Recipe> recipes, MetricsBackend &backend,
    Problem *problem, const MetricsEngine::Progress &progress = {});

} // namespace fp8scope

Q_DECLARE_METATYPE(fp8scope::WhatIfResult)

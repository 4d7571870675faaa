// The recipe what-if of one tensor: its metrics under every recipe asked for, computed in one pass of the
// metrics engine (every recipe served by each chunk), the census of each block recipe's scales, and the best
// FP8 (or FP4) recipe by one stated criterion. The triage engine (from metrics already stored), the wizard,
// the report and `fp8scope-cli stats --what-if` all pick "best" with bestWhatIfRecipe(); BF16 is the
// reference the others are measured against, never a candidate.
#pragma once

#include "core/numerics/blockcensus.h"
#include "core/numerics/blockmap.h"
#include "core/numerics/metricsengine.h"
#include "core/numerics/recipe.h"

#include <QJsonObject>
#include <QMetaType>
#include <QString>

#include <optional>
#include <vector>

namespace fp8scope {

// One recipe's line of a what-if: its name, and what is known of it (a what-if read from stored series may
// lack a statistic: NaN).
struct WhatIfScore {
    QString recipe; // whatIfLabel() or a stored series' recipe ("current", "mxfp8 e5m2", "bf16", ...)
    double mse = std::numeric_limits<double>::quiet_NaN();
    double underflowPct = std::numeric_limits<double>::quiet_NaN();
    double damagePct = std::numeric_limits<double>::quiet_NaN(); // TensorMetrics::damagePct
    double meanRelErrorPct = std::numeric_limits<double>::quiet_NaN(); // TensorMetrics::meanRelErrorPct
};

// Whether a recipe name is the reference (BF16: no 8- or 4-bit cast) rather than a candidate.
bool isReferenceRecipe(const QString &recipe);
// The best candidate by whatIfCriterion(): the least damage (the share of non-zero values flushed to zero or
// saturated), damages within kWhatIfDamageTie of the least one tying; among those the least mean relative error
// over the non-zero values; then the least MSE. The reference and recipes with nothing to rank by are not
// candidates. nullopt without a candidate.
std::optional<size_t> bestWhatIfRecipe(const std::vector<WhatIfScore> &scores);
// Damages that tie: within a tenth of the least damage, and never less than 0.01 percentage points apart.
constexpr double kWhatIfDamageTieRelative = 0.1;
constexpr double kWhatIfDamageTieAbsolute = 0.01;
// The criterion in words, for every text and table header that names the best recipe.
QString whatIfCriterion();

// The label a recipe has in a what-if and in the store's recomputed series: its name, with its element format
// where that is not the recipe's own ("current e5m2").
QString whatIfLabel(const Recipe &recipe);
// Whether a dumped tensor is a gradient (Transformer Engine's "gradient", "wgrad", "dgrad", "output_grad"), which
// the backward pass quantizes; activations and weights are the forward pass's.
bool isGradientTensor(const QString &tensor);
// The recipes a what-if weighs for a tensor of a run whose FP8 format is `fp8Format` (Transformer Engine's and
// Megatron's "hybrid", "e4m3" or "e5m2"; empty: hybrid, the default): each recipe in the element format the run
// would use for that tensor (hybrid: E4M3 forward, E5M2 for gradients): delayed and current scaling, MXFP8, blockwise
// scaling by its tensor's block
// shape (128x128 for weights, 1x128 for the rest), NVFP4, and BF16 as the reference. Never a format the run could
// not use for that tensor.
std::vector<Recipe> whatIfCandidates(const QString &tensor, const QString &fp8Format);
// The candidates' labels joined by commas: the key of a stored what-if.
QString whatIfRecipesKey(const std::vector<Recipe> &recipes);

struct WhatIfRow {
    Recipe recipe;
    TensorMetrics metrics;
    std::optional<BlockCensus> census; // block recipes only
    QString censusError; // a block recipe whose census could not be made
    std::optional<BlockEvidence> blocks; // block recipes: where the flagged blocks lie, FP32 scales on them
};

struct WhatIfResult {
    std::vector<WhatIfRow> rows; // in the order of the recipes asked for
    std::optional<size_t> best; // bestWhatIfRecipe() over the rows
};

// The what-if as JSON (each row: the metrics' toJson without histograms, the census's toJson), and back; the
// rows read back carry what the what-if shows (counts, percentages, errors, the census), not histograms.
QJsonObject whatIfToJson(const WhatIfResult &result);
std::optional<WhatIfResult> whatIfFromJson(const QJsonObject &json, QString *error);
std::vector<WhatIfScore> whatIfScoresOf(const WhatIfResult &result);
// Whether a what-if read back says all a fresh one does: one stored before block recipes carried their block
// evidence (a census without it) is not, and is computed again rather than shown with less.
bool whatIfIsCurrent(const WhatIfResult &result);

// The what-if of `reader` under `recipes` (each without an amax history of its own given the dump's): one engine
// pass for all the metrics, then each block recipe's census. nullopt with *problem set when the tensor cannot
// be read or the work was cancelled (progress returned false).
std::optional<WhatIfResult> computeWhatIf(TensorReader &reader, std::vector<Recipe> recipes, MetricsBackend &backend,
    Problem *problem, const MetricsEngine::Progress &progress = {});

} // namespace fp8scope

Q_DECLARE_METATYPE(fp8scope::WhatIfResult)

// Which GEMM ran in which precision and recipe, at which steps, and what says so (issue 57): the run's own precision
// and recipe, Megatron's --first-last-layers-bf16 with --num-layers-at-start-in-bf16 / --num-layers-at-end-in-bf16
// (megatron/core/fp8_utils.py is_first_last_bf16_layer: layer numbers from 0, the first N and the last M of
// num_layers), its --te-precision-config-file (matchers in order, the first enabled one whose glob matches the module
// chooses a config; a config whose training recipe names no quantization recipe is high precision), a Transformer
// Engine debug config (a section's layers by layer_name_regex_pattern, matched from the start of the name as
// Python's re.match does, or by layer_types, any of which is part of the name; DisableQuantizationLayer and
// DisableQuantizationGEMM, and their older names DisableFP8Layer and DisableFP8GEMM, with their gemms), and
// AutoswitchGemm's statistics (nvdlfw_inspect_autoswitchgemm_logs: <gemm>_underflow_pct and <gemm>_mse, the GEMM
// switched to high precision at the steps they pass the thresholds of its config). Read from what the store holds
// (the run's configs, flattened as the ingest read them, and its series); nothing is read from the files here.
#pragma once

#include "core/query/querytypes.h"

#include <QHash>
#include <QMetaType>
#include <QStringList>

#include <limits>
#include <vector>

namespace fp8scope {

class Catalog;

struct PrecisionSpan {
    int64_t from = std::numeric_limits<int64_t>::min(); // the steps it holds, both included (min/max: all)
    int64_t to = std::numeric_limits<int64_t>::max();
    QString precision; // "bf16" (high precision), else the run's quantized format ("fp8", "mxfp8", "nvfp4")
    QString recipe; // the recipe it ran under ("" in high precision)
    QStringList gemms; // fprop, dgrad, wgrad: the GEMMs it holds (all three unless a source names some)
    QString source; // what says so, in words
    bool automatic = false; // an automatic switch (AutoswitchGemm), not a setting
    bool wholeRun() const
    {
        return from == std::numeric_limits<int64_t>::min() && to == std::numeric_limits<int64_t>::max();
    }
    bool holds(int64_t step) const { return step >= from && step <= to; }
};

struct LayerPrecision {
    QString layer;
    std::vector<PrecisionSpan> spans; // the run's own first (whole run), then what overrides it, in order
};

struct PrecisionMap {
    QString precision; // the run's ("" when nothing says)
    QString recipe;
    std::vector<LayerPrecision> layers; // depth order
    QHash<QString, qsizetype> index; // a layer's place in `layers` (find() looks it up: a heatmap asks per row)
    QStringList notes; // what could not be read ("AutoswitchGemm statistics without the thresholds of its config")
    // The span that decides a layer's precision at a step: the last that holds it and covers all three GEMMs (the
    // run's own when none overrides it); nullptr for a layer the map does not have.
    const PrecisionSpan *at(const QString &layer, int64_t step) const;
    // Whether every GEMM of the layer ran in high precision at that step (while the run itself is quantized).
    bool highPrecision(const QString &layer, int64_t step) const;
    // ... at every step of the run.
    bool highPrecisionThroughout(const QString &layer) const;
    const LayerPrecision *find(const QString &layer) const;
};

PrecisionMap precisionMap(const Catalog &catalog, RunRef run);

} // namespace fp8scope

Q_DECLARE_METATYPE(fp8scope::PrecisionMap)

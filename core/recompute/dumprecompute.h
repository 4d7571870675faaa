// Recomputation of one indexed tensor dump: read it, compute its metrics under some recipes (the amax
// history the dump carries feeds delayed scaling) and keep the results in the store as "recomputed" series.
// The CLI's recompute command and the GUI's histogram both go through here.
#pragma once

#include "core/importers/importer.h"
#include "core/numerics/metricsengine.h"

#include <optional>
#include <vector>

namespace fp8scope {

class RunStore;

struct DumpRef {
    int64_t run = 0;
    QString file; // relative to the store's folder
    DumpRecord dump;
};

// The statistics a recomputation stores, named as the Transformer Engine logs name them where they overlap.
std::vector<std::pair<QString, double>> storedStatistics(const TensorMetrics &m);

// The recipe column of a recomputed series: the recipe name, plus the element format when it is not the
// recipe's default ("current" is E4M3 current scaling, "current e5m2" its E5M2 twin).
QString recomputedRecipeLabel(const Recipe &recipe);

// nullopt with *error set when the dump cannot be read or stored; progress may return false to cancel.
std::optional<std::vector<TensorMetrics>> recomputeDump(RunStore &store, MetricsBackend &backend, const DumpRef &ref,
    const std::vector<Recipe> &recipes, QString *error, const MetricsEngine::Progress &progress = {});

} // namespace fp8scope

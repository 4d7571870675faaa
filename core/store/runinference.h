// What a run's configs say about it when no manifest does: its training precision and scaling recipe, read
// from the flags Megatron, NeMo and Transformer Engine record (docs/STORE.md lists them).
#pragma once

// Only core/query, core/session and core/recompute read or write a store (their targets link
// fp8scope_store, which defines this); everything above them goes through Catalog and FolderSession.
#ifndef FP8SCOPE_STORE_ACCESS
#error                                                                                                                 \
    "core/store is private to core: read runs through core/query's Catalog, write through core/session's FolderSession (docs/ARCHITECTURE.md)"
#endif

#include "database.h"

#include <QString>

namespace fp8scope {

// The scaling recipe a config value names, in fp8scope's recipe names where one fits: Transformer Engine's
// recipe classes (`transformer_engine.common.recipe.MXFP8BlockScaling`), Megatron's `--fp8-recipe` and
// NeMo's `fp8_recipe` (delayed, tensorwise, mxfp8, blockwise). Another value is kept as it is written.
QString recipeNamed(const QString &value);

// Fills the precision and recipe of every run that has none from its configs; false with *error when the
// store could not be read or written.
[[nodiscard]] bool inferRunsFromConfigs(Database &db, QString *error);

} // namespace fp8scope

// What a run's configs say about it when no manifest does: its training precision and scaling recipe, read
// from the flags Megatron, NeMo and Transformer Engine record (docs/STORE.md lists them).
#pragma once

#include "database.h"

#include <QString>

namespace fp8scope {

// The scaling recipe a config value names, in fp8scope's recipe names where one fits: Transformer Engine's
// recipe classes (`transformer_engine.common.recipe.MXFP8BlockScaling`), Megatron's `--fp8-recipe` and
// NeMo's `fp8_recipe` (delayed, tensorwise, mxfp8, blockwise). Another value is kept as it is written.
QString recipeNamed(const QString &value);

// The recipe a run's tensor was quantized under, in fp8scope's recipe names: the run's recipe, except
// that blockwise scaling (Transformer Engine's Float8BlockScaling) is 128x128 tiles for weights and 1x128
// blocks for activations and gradients.
QString tensorRecipe(const QString &runRecipe, const QString &tensor);

// Fills the precision and recipe of every run that has none from its configs; false with *error when the
// store could not be read or written.
[[nodiscard]] bool inferRunsFromConfigs(Database &db, QString *error);

} // namespace fp8scope

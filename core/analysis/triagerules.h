// What the triage engine's rules share inside core/analysis (not part of its interface): the recipe family of
// a recipe's name, the what-if read from metrics already recomputed, and the evidence dump's choice.
#pragma once

#include "triage.h"

namespace fp8scope::analysis {

// The family a recipe name belongs to, as a run's recipe is named (core/store/runinference): "delayed",
// "current", "mxfp8", "blockwise", "nvfp4", "bf16"; "" for an empty name.
QString recipeFamily(const QString &recipe);
bool sameRecipe(const QString &a, const QString &b);

// The metrics recomputed from the evidence dump and stored, per recipe (one score a recipe).
std::vector<WhatIfScore> storedWhatIf(const Catalog &catalog, const EvidenceDump &evidence);

} // namespace fp8scope::analysis

// What the triage engine's rules share inside core/analysis (not part of its interface): the recipe family of
// a recipe's name, and the pure forms of the evidence dump's choice, the what-if read from metrics already
// recomputed and a comparison's finishing, over what triageinputs.h gathered.
#pragma once

#include "triageinputs.h"

#include <map>

namespace fp8scope::analysis {

// The family a recipe name belongs to, as a run's recipe is named (core/store/runinference): "delayed",
// "current", "mxfp8", "blockwise", "nvfp4", "bf16"; "" for an empty name.
QString recipeFamily(const QString &recipe);
bool sameRecipe(const QString &a, const QString &b);
// A config key's last part in snake case, lower case (Megatron's arguments, NeMo's and Hugging Face's names).
QString normalizedKey(const QString &key);

// chooseEvidenceDump over gathered inputs: the suspect's series is the one of `in.risk` it was found on (its
// evidence names the source), else any of its layer, tensor and statistic.
std::optional<EvidenceDump> pickEvidenceDump(
    const FinishInputs &in, const Finding &suspect, std::optional<int64_t> windowEnd);

// The metrics recomputed from a dump and stored, at exactly its step: recipe -> statistic -> value.
using WhatIfTable = std::map<QString, std::map<QString, double>>;
WhatIfTable storedWhatIf(const FinishInputs &in, const Dump &dump);
std::vector<WhatIfScore> whatIfScores(const WhatIfTable &table);

// Whether a finding is a suspect the next steps act on (finish() lists them in c.suspects): a layer's first
// non-finite value that is not information, then the layer signals weighed as causes. The first of them in that
// order has the evidence dump the recipe what-if is of.
bool isNonFiniteSuspect(const Finding &f);
bool isSignalSuspect(const Finding &f);
const Finding *firstSuspect(const std::vector<Finding> &findings);

// The recipe what-if finding on an evidence dump (its stored what-if, else the metrics recomputed from it).
std::optional<Finding> recipeWhatIfFinding(
    const FinishInputs &in, const EvidenceDump &evidence, const QString &runRecipe);

// finishComparison over gathered inputs.
void finish(const FinishInputs &in, Comparison *c);

} // namespace fp8scope::analysis

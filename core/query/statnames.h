// One canonical name for the same run-level quantity across formats ("lm loss" for Megatron's `lm loss`,
// TensorBoard's `train/lm_loss`, a W&B export's `train/loss`, a JSONL's `loss`), the source's own name kept
// beside it, and TensorBoard's "... vs samples" series recognised as the samples axis of the same series.
// docs/ARCHITECTURE.md lists the vocabulary.
#pragma once

#include "querytypes.h"

#include <QString>

namespace fp8scope {

struct CanonicalStat {
    QString name;
    SeriesAxis axis = SeriesAxis::Step;
};

// The rank a statistics log's source names ("te-debug rank 3" -> 3), or -1.
int rankOfSource(const QString &source);

// The canonical name of a run-level statistic as a source wrote it. Names outside the vocabulary are kept
// as they were written (a " vs samples" suffix still moves them to the samples axis).
CanonicalStat canonicalStat(const QString &sourceName);

// What a Transformer Engine debug statistic meant under the run's TE version where that differs from what it
// means now (docs/FIELD.md): before 2.7 underflows% counted the elements equal to zero; before 2.8 it could be
// negative (-0 was not counted); before 2.17 scale_inv_min of MXFP8/NVFP4 was 0 from padded scales; std
// combined across ranks had a sign error on some versions. Empty when nothing applies or the version is not
// known. `recipe` is the statistic's or the run's; `severalRanks` whether its values were reduced across ranks.
QString teStatisticCaveat(const QString &stat, const QString &recipe, const QString &teVersion, bool severalRanks);

// The recipe a run's tensor was quantized under, in fp8scope's recipe names: the run's recipe, except
// that blockwise scaling (Transformer Engine's Float8BlockScaling) is 128x128 tiles for weights and 1x128
// blocks for activations and gradients.
QString tensorRecipe(const QString &runRecipe, const QString &tensor);

} // namespace fp8scope

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

// The canonical name of a run-level statistic as a source wrote it. Names outside the vocabulary are kept
// as they were written (a " vs samples" suffix still moves them to the samples axis).
CanonicalStat canonicalStat(const QString &sourceName);

} // namespace fp8scope

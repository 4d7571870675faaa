// Transformer Engine's FP8 state as a training checkpoint keeps it: each TE module's `_extra_state` entry, a
// uint8 tensor holding `pickle.dumps` of a dict (TE's get_extra_state: "recipe", the recipe object;
// "scale_fwd" and "amax_history_fwd", the delayed-scaling scales and amax history of the forward pass, one
// column per FP8 tensor: input, weight, output for each GEMM; the same for backward; "extra_fp8_variables"),
// or an empty tensor when the module kept no FP8 state (it ran without FP8, or its recipe is stateless:
// current scaling, MXFP8, blocks). Read by torchpickle's interpreter, nothing executed; the recipe object is
// named, not built.
#pragma once

#include "tensorreader.h"

#include <QByteArray>
#include <QHash>
#include <QString>

#include <vector>

namespace fp8scope {

struct TeExtraState {
    bool empty = true; // no FP8 state kept
    QString recipe; // the recipe's class as the pickle names it ("transformer_engine.common.recipe.DelayedScaling")
    std::vector<float> scaleFwd; // a scale per forward FP8 tensor
    int64_t historyLength = 0; // rows of amaxHistoryFwd
    int64_t fwdTensors = 0; // its columns
    std::vector<float> amaxHistoryFwd; // row-major [historyLength][fwdTensors]
    // The largest amax in the forward history of FP8 tensor `column` (0: the first GEMM's input); NaN when
    // there is none.
    double historyAmax(int64_t column) const;
};

// Parses one `_extra_state`'s bytes; an empty buffer is an empty state. False with *problem (offset into the
// bytes) when they are not a pickle the interpreter reads or not the dict TE writes.
bool parseTeExtraState(const QByteArray &bytes, TeExtraState *state, Problem *problem);

// Every `_extra_state` of a torch.save checkpoint, by module (the entry's name without "._extra_state"). False
// with *problem when the file cannot be read; an entry that does not parse is left out and said in *skipped.
bool readTeExtraStates(
    const QString &path, QHash<QString, TeExtraState> *states, std::vector<Problem> *skipped, Problem *problem);

} // namespace fp8scope

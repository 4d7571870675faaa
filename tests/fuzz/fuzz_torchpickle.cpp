// libFuzzer target: the torch.save pickle interpreter and the tensor list built from it, on arbitrary bytes.
// Every tensor listed must lie inside its storage's declared size. The same bytes as a Transformer Engine
// _extra_state (pickle.dumps of a dict, its tensors by value in torch's legacy format): read or refused with
// a reason, its amax history the size it says.
#include "core/tensors/teextrastate.h"
#include "core/tensors/torchfile.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray pickle(reinterpret_cast<const char *>(data), qsizetype(size));
    fp8scope::TeExtraState state;
    fp8scope::Problem problem;
    if (!fp8scope::parseTeExtraState(pickle, &state, &problem)) {
        if (problem.message.isEmpty())
            __builtin_trap();
    } else if (state.amaxHistoryFwd.size() != size_t(state.historyLength * state.fwdTensors)) {
        __builtin_trap();
    } else {
        (void)state.historyAmax(0);
    }
    fp8scope::TorchContents contents;
    QString error;
    int64_t offset = -1;
    if (!fp8scope::parseTorchPickle(pickle, &contents, &error, &offset)) {
        if (error.isEmpty() || offset < 0 || offset > int64_t(size))
            __builtin_trap(); // a refusal always says why and where
        return 0;
    }
    for (const fp8scope::TorchEntry &e : contents.tensors) {
        int64_t last = e.storageOffset;
        bool empty = false;
        for (size_t i = 0; i < e.shape.size(); ++i) {
            empty = empty || e.shape[i] == 0;
            last += (e.shape[i] - 1) * e.stride[i];
        }
        if (!empty && last >= e.storageNumel)
            __builtin_trap();
    }
    return 0;
}

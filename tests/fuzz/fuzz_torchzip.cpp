// libFuzzer target: a torch.save zip in memory (libzip's container, the archive layout, the pickle, the
// storage checks), and a read of every tensor it lists and of every buffer of a Transformer Engine quantized
// tensor (what the check of TE's quantization reads).
#include "core/tensors/torchfile.h"

#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray bytes(reinterpret_cast<const char *>(data), qsizetype(size));
    fp8scope::Problem problem;
    auto archive = fp8scope::TorchArchive::openBuffer(bytes, &problem);
    if (!archive)
        return 0;
    std::vector<char> buffer;
    for (const fp8scope::TorchEntry &e : archive->contents().tensors) {
        // The whole span the view covers, which the open checked against the entry's size.
        const int64_t bytesCount = std::min<int64_t>(e.storageNumel * e.elementSize, 1 << 20);
        buffer.resize(size_t(bytesCount));
        archive->readStorage(e.storageKey, 0, bytesCount, buffer.data(), &problem);
    }
    for (const fp8scope::TeQuantized &q : archive->contents().quantized) {
        for (int i :
            {q.rowwiseData, q.rowwiseScale, q.columnwiseData, q.columnwiseScale, q.amaxRowwise, q.amaxColumnwise}) {
            if (i < 0)
                continue;
            const fp8scope::TorchEntry &e = archive->contents().buffers.at(size_t(i));
            const int64_t bytesCount = std::min<int64_t>(e.storageNumel * e.elementSize, 1 << 20);
            buffer.resize(size_t(bytesCount));
            archive->readStorage(e.storageKey, 0, bytesCount, buffer.data(), &problem);
        }
    }
    return 0;
}

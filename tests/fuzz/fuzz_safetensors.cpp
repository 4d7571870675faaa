// libFuzzer target: the safetensors JSON header parser on arbitrary bytes, and the FP4 layouts found in it.
#include "core/tensors/safetensorsreader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray json(reinterpret_cast<const char *>(data), qsizetype(size));
    std::vector<fp8scope::SafetensorsEntry> entries;
    QString error;
    for (qint64 dataSize : {qint64(0), qint64(64), qint64(1) << 40}) {
        if (!fp8scope::parseSafetensorsHeader(json, dataSize, &entries, &error))
            continue;
        // The FP4 layouts are found from the parsed entries: their shapes come from the header too.
        for (const fp8scope::SafetensorsEntry &e : entries) {
            if (const auto layout = fp8scope::fp4LayoutOf(e, entries)) {
                int64_t n = 1;
                for (int64_t d : layout->shape)
                    n *= d;
                if (n != 2 * (e.end - e.begin))
                    __builtin_trap(); // the codes' bytes hold exactly the layout's elements
            }
        }
    }
    return 0;
}

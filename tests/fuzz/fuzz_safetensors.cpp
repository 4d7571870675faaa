// libFuzzer target: the safetensors JSON header parser on arbitrary bytes.
#include "core/tensors/safetensorsreader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray json(reinterpret_cast<const char *>(data), qsizetype(size));
    std::vector<fp8scope::SafetensorsEntry> entries;
    QString error;
    for (qint64 dataSize : {qint64(0), qint64(64), qint64(1) << 40})
        fp8scope::parseSafetensorsHeader(json, dataSize, &entries, &error);
    return 0;
}

// libFuzzer target: the .npy header parser on arbitrary bytes.
#include "core/tensors/npyreader.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const QByteArray bytes(reinterpret_cast<const char *>(data), qsizetype(size));
    fp8scope::NpyHeader header;
    QString error;
    qint64 offset = -1;
    // Pretend the file is exactly these bytes, and also that it is much larger (lying sizes).
    fp8scope::parseNpyHeader(bytes, qint64(size), &header, &error, &offset);
    fp8scope::parseNpyHeader(bytes, qint64(1) << 40, &header, &error, &offset);
    return 0;
}

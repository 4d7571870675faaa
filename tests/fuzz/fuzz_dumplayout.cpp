// libFuzzer target: the fp8scope-dump HDF5 layout reader (dataset paths and the stored-type / attribute
// interpretation) on arbitrary text. The HDF5 library's own file parser is not fuzzed here.
#include "core/tensors/dumplayout.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 2)
        return 0;
    const QString text = QString::fromUtf8(reinterpret_cast<const char *>(data) + 2, qsizetype(size - 2));
    QString error;
    fp8scope::parseDumpPath(text, &error);
    const auto cls = fp8scope::StoredClass(data[0] % 4);
    fp8scope::dumpElementType(cls, data[1] % 9, text, text, text, &error);
    return 0;
}

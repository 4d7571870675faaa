// Transformer Engine JAX's inspect_array dumps: the raw bytes of an array in `<name>.bin` beside
// `<name>_meta.json`, {"name": ..., "shape": [...], "dtype": <XLA FFI data type code>, "min": ..., ...}
// (`my_tensor_gpu<device>_<probe>.bin`). The metadata is read by its fields rather than as strict JSON: the
// writer prints the probe name unescaped and non-finite statistics as nan/inf.
#pragma once

#include "tensorreader.h"

#include <QFile>

#include <optional>

namespace fp8scope {

struct JaxDumpMeta {
    QString name; // the probe's name (unsanitized); empty when the file has none
    std::vector<int64_t> shape;
    int dtypeCode = -1;
    std::optional<DType> dtype; // nothing for codes fp8scope does not read
};

// The metadata file of a dump file (FILE.bin -> FILE_meta.json).
QString jaxMetaPath(const QString &binPath);
// Parses the metadata text; false with *error for anything without a shape and a dtype code.
bool parseJaxMeta(const QByteArray &text, JaxDumpMeta *meta, QString *error);

class JaxDumpReader : public TensorReader
{
public:
    static std::unique_ptr<TensorReader> open(const QString &path, Problem *problem);
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override;

private:
    QFile m_file;
};

} // namespace fp8scope

// Reader of NumPy .npy files (format versions 1.0, 2.0 and 3.0), little-endian C-order float32/float16.
#pragma once

#include "tensorreader.h"

#include <QByteArray>
#include <QFile>

namespace fp8scope {

struct NpyHeader {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    int64_t dataOffset = 0;
};

// Parses the magic, version and header dictionary at the start of `head` (the first bytes of a file of
// `fileSize` bytes) and checks the declared data fits in the file. Used by NpyReader and the fuzz target.
bool parseNpyHeader(const QByteArray &head, qint64 fileSize, NpyHeader *header, QString *error, qint64 *errorOffset);

class NpyReader : public TensorReader
{
public:
    static std::unique_ptr<NpyReader> open(const QString &path, Problem *problem);
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override;

private:
    QFile m_file;
    int64_t m_dataOffset = 0;
};

} // namespace fp8scope

// Reader of NumPy .npy files (format versions 1.0, 2.0 and 3.0): float32, float16 and float64, either byte
// order, C order or (up to two dimensions) Fortran order, as np.save writes a transposed matrix.
#pragma once

#include "tensorreader.h"

#include <QByteArray>
#include <QFile>

namespace fp8scope {

struct NpyHeader {
    DType dtype = DType::F32;
    std::vector<int64_t> shape;
    int64_t dataOffset = 0;
    bool bigEndian = false;
    // Column-major data of a 2-D array with more than one row and column (for fewer dimensions, or a
    // single row or column, Fortran order is the same as C order and this stays false).
    bool columnMajor = false;
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
    bool readBytes(qint64 offset, qint64 bytes, char *dst, Problem *problem);
    bool readColumnMajor(int64_t first, int64_t count, char *dst, Problem *problem);

    QFile m_file;
    int64_t m_dataOffset = 0;
    bool m_bigEndian = false;
    bool m_columnMajor = false;
    std::vector<char> m_column;
};

} // namespace fp8scope

#include "npyreader.h"

#include <QRegularExpression>

#include <algorithm>
#include <cstring>

namespace fp8scope {

namespace {

constexpr qint64 kMaxHeader = 1 << 20;

bool fail(QString *error, qint64 *errorOffset, qint64 offset, const QString &message)
{
    *error = message;
    *errorOffset = offset;
    return false;
}

} // namespace

bool parseNpyHeader(const QByteArray &head, qint64 fileSize, NpyHeader *header, QString *error, qint64 *errorOffset)
{
    if (head.size() < 10 || !head.startsWith("\x93NUMPY"))
        return fail(error, errorOffset, 0, QStringLiteral("not a .npy file (magic \\x93NUMPY missing)"));
    const int major = uchar(head[6]);
    qint64 len = 0;
    qint64 start = 0;
    if (major == 1) {
        len = uchar(head[8]) | (uchar(head[9]) << 8);
        start = 10;
    } else if (major == 2 || major == 3) {
        if (head.size() < 12)
            return fail(error, errorOffset, 8, QStringLiteral("truncated .npy header length"));
        len = qint64(uchar(head[8])) | (qint64(uchar(head[9])) << 8) | (qint64(uchar(head[10])) << 16)
            | (qint64(uchar(head[11])) << 24);
        start = 12;
    } else {
        return fail(error, errorOffset, 6, QStringLiteral("unsupported .npy version %1").arg(major));
    }
    if (len > kMaxHeader || start + len > fileSize)
        return fail(error, errorOffset, 8, QStringLiteral("header length %1 exceeds the file").arg(len));
    if (start + len > head.size())
        return fail(error, errorOffset, start, QStringLiteral("truncated .npy header"));
    const QString dict = QString::fromLatin1(head.mid(start, len));

    static const QRegularExpression descrRe(QStringLiteral("'descr'\\s*:\\s*'([^']*)'"));
    static const QRegularExpression fortranRe(QStringLiteral("'fortran_order'\\s*:\\s*(True|False)"));
    static const QRegularExpression shapeRe(QStringLiteral("'shape'\\s*:\\s*\\(([^)]*)\\)"));
    const auto descr = descrRe.match(dict);
    const auto fortran = fortranRe.match(dict);
    const auto shape = shapeRe.match(dict);
    // A structured dtype's descr is a list of fields, not a string: say so, not that descr is missing.
    static const QRegularExpression structured(QStringLiteral("'descr'\\s*:\\s*\\["));
    if (!descr.hasMatch() && structured.match(dict).hasMatch())
        return fail(error, errorOffset, start,
            QStringLiteral("structured dtype (a record of named fields): only plain float arrays are read"));
    if (!descr.hasMatch() || !fortran.hasMatch() || !shape.hasMatch())
        return fail(
            error, errorOffset, start, QStringLiteral("header dictionary lacks 'descr', 'fortran_order' or 'shape'"));
    const QString d = descr.captured(1);
    const QStringView kind = d.size() == 3 ? QStringView(d).mid(1) : QStringView();
    const bool byteOrderKnown = d.startsWith(QLatin1Char('<')) || d.startsWith(QLatin1Char('>'));
    header->bigEndian = d.startsWith(QLatin1Char('>'));
    if (byteOrderKnown && kind == QLatin1String("f4"))
        header->dtype = DType::F32;
    else if (byteOrderKnown && kind == QLatin1String("f2"))
        header->dtype = DType::F16;
    else if (byteOrderKnown && kind == QLatin1String("f8"))
        header->dtype = DType::F64;
    else
        return fail(error, errorOffset, start,
            QStringLiteral("unsupported dtype '%1' (float32 'f4', float16 'f2' and float64 'f8', either byte order, "
                           "are read)")
                .arg(d));
    header->shape.clear();
    for (const QString &part : shape.captured(1).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const qint64 v = part.trimmed().toLongLong(&ok);
        if (!ok || v < 0)
            return fail(error, errorOffset, start, QStringLiteral("bad shape entry '%1'").arg(part.trimmed()));
        header->shape.push_back(v);
    }
    header->columnMajor = false;
    if (fortran.captured(1) == QLatin1String("True")) {
        int wide = 0;
        for (const int64_t v : header->shape)
            wide += v > 1 ? 1 : 0;
        if (header->shape.size() > 2 && wide > 1)
            return fail(error, errorOffset, start,
                QStringLiteral("Fortran-order arrays of more than two dimensions are not supported (save the "
                               "array with np.ascontiguousarray)"));
        header->columnMajor = wide > 1;
    }
    TensorInfo probe;
    probe.shape = header->shape;
    probe.dtype = header->dtype;
    if (!finishTensorInfo(probe))
        return fail(error, errorOffset, start, QStringLiteral("shape overflows"));
    header->dataOffset = start + len;
    const qint64 bytes = probe.numel * dtypeSize(header->dtype);
    if (bytes > fileSize - header->dataOffset)
        return fail(error, errorOffset, header->dataOffset,
            QStringLiteral("header declares %1 bytes of data but the file holds %2")
                .arg(bytes)
                .arg(fileSize - header->dataOffset));
    return true;
}

std::unique_ptr<NpyReader> NpyReader::open(const QString &path, Problem *problem)
{
    auto r = std::unique_ptr<NpyReader>(new NpyReader);
    r->m_file.setFileName(path);
    if (!r->m_file.open(QIODevice::ReadOnly)) {
        *problem = {path, -1, r->m_file.errorString()};
        return nullptr;
    }
    const QByteArray head = r->m_file.read(kMaxHeader + 12);
    NpyHeader h;
    QString error;
    qint64 offset = -1;
    if (!parseNpyHeader(head, r->m_file.size(), &h, &error, &offset)) {
        *problem = {path, offset, error};
        return nullptr;
    }
    r->m_info.file = path;
    r->m_info.dtype = h.dtype;
    r->m_info.shape = h.shape;
    finishTensorInfo(r->m_info);
    r->m_dataOffset = h.dataOffset;
    r->m_bigEndian = h.bigEndian;
    r->m_columnMajor = h.columnMajor;
    return r;
}

bool NpyReader::readBytes(qint64 offset, qint64 bytes, char *dst, Problem *problem)
{
    if (!m_file.seek(offset) || m_file.read(dst, bytes) != bytes) {
        *problem = {m_info.file, offset, QStringLiteral("short read of %1 bytes").arg(bytes)};
        return false;
    }
    return true;
}

namespace {

// Rows [rowA, rowB] of `group` columns from c0 (column-major in `buf`, runRows per column) into row-major
// dst, which starts at element `first` of a rows x cols array and holds `count` elements.
template <int kSize>
void placeColumns(const char *buf, int64_t runRows, int64_t group, int64_t c0, int64_t rowA, int64_t rowB, int64_t cols,
    int64_t first, int64_t count, char *dst)
{
    for (int64_t r = rowA; r <= rowB; ++r) {
        const int64_t cFrom = std::max(c0, first - r * cols);
        const int64_t cTo = std::min(c0 + group, first + count - r * cols);
        for (int64_t c = cFrom; c < cTo; ++c)
            std::memcpy(dst + (r * cols + c - first) * kSize, buf + ((c - c0) * runRows + (r - rowA)) * kSize, kSize);
    }
}

} // namespace

// Elements [first, first + count) in row-major order of a column-major rows x cols array: for each column,
// the rows the range touches are one contiguous run of the file. Columns are read a group at a time and
// transposed into place, so that each row of the group is written as one run (element by element from
// each column run, the writes strided by a whole row, was ten times slower than a C-order read).
bool NpyReader::readColumnMajor(int64_t first, int64_t count, char *dst, Problem *problem)
{
    constexpr int64_t kGroup = 64;
    const int64_t rows = m_info.shape[0];
    const int64_t cols = m_info.shape[1];
    const int size = dtypeSize(m_info.dtype);
    const int64_t rowA = first / cols;
    const int64_t rowB = (first + count - 1) / cols;
    const int64_t runRows = rowB - rowA + 1;
    const int64_t group = std::min(kGroup, cols);
    m_column.resize(size_t(group * runRows * size));
    for (int64_t c0 = 0; c0 < cols; c0 += group) {
        const int64_t g = std::min(group, cols - c0);
        for (int64_t c = c0; c < c0 + g; ++c) {
            // The first and last rows may be partial: the column's element there may lie outside the range.
            const int64_t rowFrom = rowA * cols + c < first ? rowA + 1 : rowA;
            const int64_t rowTo = rowB * cols + c >= first + count ? rowB - 1 : rowB;
            if (rowFrom > rowTo)
                continue;
            char *at = m_column.data() + ((c - c0) * runRows + (rowFrom - rowA)) * size;
            if (!readBytes(m_dataOffset + (c * rows + rowFrom) * size, (rowTo - rowFrom + 1) * size, at, problem))
                return false;
        }
        const char *buf = m_column.data();
        switch (size) {
        case 2: placeColumns<2>(buf, runRows, g, c0, rowA, rowB, cols, first, count, dst); break;
        case 4: placeColumns<4>(buf, runRows, g, c0, rowA, rowB, cols, first, count, dst); break;
        default: placeColumns<8>(buf, runRows, g, c0, rowA, rowB, cols, first, count, dst); break;
        }
    }
    return true;
}

bool NpyReader::read(int64_t first, int64_t count, void *dst, Problem *problem)
{
    if (count <= 0)
        return true;
    const int size = dtypeSize(m_info.dtype);
    char *out = static_cast<char *>(dst);
    if (m_columnMajor ? !readColumnMajor(first, count, out, problem)
                      : !readBytes(m_dataOffset + first * size, count * size, out, problem))
        return false;
    if (m_bigEndian) {
        for (int64_t i = 0; i < count; ++i)
            std::reverse(out + i * size, out + (i + 1) * size);
    }
    return true;
}

} // namespace fp8scope

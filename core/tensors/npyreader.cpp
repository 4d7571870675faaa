#include "npyreader.h"

#include <QRegularExpression>

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
    if (!descr.hasMatch() || !fortran.hasMatch() || !shape.hasMatch())
        return fail(
            error, errorOffset, start, QStringLiteral("header dictionary lacks 'descr', 'fortran_order' or 'shape'"));
    const QString d = descr.captured(1);
    if (d == QLatin1String("<f4"))
        header->dtype = DType::F32;
    else if (d == QLatin1String("<f2"))
        header->dtype = DType::F16;
    else if (d == QLatin1String("<f8"))
        header->dtype = DType::F64;
    else
        return fail(error, errorOffset, start,
            QStringLiteral("unsupported dtype '%1' (float32 '<f4', float16 '<f2' and float64 '<f8' are read)").arg(d));
    if (fortran.captured(1) == QLatin1String("True"))
        return fail(error, errorOffset, start, QStringLiteral("Fortran-order arrays are not supported"));
    header->shape.clear();
    for (const QString &part : shape.captured(1).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
        bool ok = false;
        const qint64 v = part.trimmed().toLongLong(&ok);
        if (!ok || v < 0)
            return fail(error, errorOffset, start, QStringLiteral("bad shape entry '%1'").arg(part.trimmed()));
        header->shape.push_back(v);
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
    return r;
}

bool NpyReader::read(int64_t first, int64_t count, void *dst, Problem *problem)
{
    const int size = dtypeSize(m_info.dtype);
    const qint64 offset = m_dataOffset + first * size;
    const qint64 bytes = count * size;
    if (!m_file.seek(offset) || m_file.read(static_cast<char *>(dst), bytes) != bytes) {
        *problem = {m_info.file, offset, QStringLiteral("short read of %1 bytes").arg(bytes)};
        return false;
    }
    return true;
}

} // namespace fp8scope

#include "jaxdump.h"

#include <QFileInfo>
#include <QRegularExpression>

namespace fp8scope {

namespace {

// XLA's FFI data type codes (xla/ffi/api/c_api.h), the ones fp8scope reads.
std::optional<DType> xlaType(int code)
{
    switch (code) {
    case 10: return DType::F16;
    case 11: return DType::F32;
    case 12: return DType::F64;
    case 16: return DType::BF16;
    case 19: return DType::F8E5M2;
    case 20: return DType::F8E4M3; // F8E4M3FN
    default: return std::nullopt;
    }
}

QString xlaTypeName(int code)
{
    switch (code) {
    case 1: return QStringLiteral("PRED");
    case 2: return QStringLiteral("S8");
    case 3: return QStringLiteral("S16");
    case 4: return QStringLiteral("S32");
    case 5: return QStringLiteral("S64");
    case 6: return QStringLiteral("U8");
    case 7: return QStringLiteral("U16");
    case 8: return QStringLiteral("U32");
    case 9: return QStringLiteral("U64");
    case 15: return QStringLiteral("C64");
    case 18: return QStringLiteral("C128");
    case 23: return QStringLiteral("F8E4M3B11FNUZ");
    case 24: return QStringLiteral("F8E5M2FNUZ");
    case 25: return QStringLiteral("F8E4M3FNUZ");
    case 28: return QStringLiteral("F8E4M3 (IEEE-like, with infinities)");
    case 29: return QStringLiteral("F8E3M4");
    case 32: return QStringLiteral("F4E2M1FN");
    case 33: return QStringLiteral("F8E8M0FNU");
    default: return QStringLiteral("unknown");
    }
}

} // namespace

QString jaxMetaPath(const QString &binPath)
{
    return binPath.chopped(4) + QStringLiteral("_meta.json");
}

bool parseJaxMeta(const QByteArray &bytes, JaxDumpMeta *meta, QString *error)
{
    static const QRegularExpression shapeRe(QStringLiteral("\"shape\"\\s*:\\s*\\[([^\\]]*)\\]"));
    static const QRegularExpression dtypeRe(QStringLiteral("\"dtype\"\\s*:\\s*(-?\\d+)"));
    // The name runs to the quote before the next field (it is written unescaped).
    static const QRegularExpression nameRe(QStringLiteral("\"name\"\\s*:\\s*\"(.*)\"\\s*,\\s*\"shape\""));
    const QString text = QString::fromUtf8(bytes.left(1 << 16));
    const auto shape = shapeRe.match(text);
    const auto dtype = dtypeRe.match(text);
    if (!shape.hasMatch() || !dtype.hasMatch()) {
        *error = QStringLiteral("no \"shape\" and \"dtype\" in it");
        return false;
    }
    meta->shape.clear();
    const QString dims = shape.captured(1).trimmed();
    if (!dims.isEmpty()) {
        for (const QString &d : dims.split(QLatin1Char(','))) {
            bool ok = false;
            const qlonglong v = d.trimmed().toLongLong(&ok);
            if (!ok || v < 0) {
                *error = QStringLiteral("shape entry '%1' is not a size").arg(d.trimmed());
                return false;
            }
            meta->shape.push_back(v);
        }
    }
    meta->dtypeCode = dtype.captured(1).toInt();
    meta->dtype = xlaType(meta->dtypeCode);
    const auto name = nameRe.match(text);
    meta->name = name.hasMatch() ? name.captured(1) : QString();
    return true;
}

std::unique_ptr<TensorReader> JaxDumpReader::open(const QString &path, Problem *problem)
{
    const QString metaPath = jaxMetaPath(path);
    QFile metaFile(metaPath);
    if (!metaFile.open(QIODevice::ReadOnly)) {
        *problem = {
            path, -1, QStringLiteral("no %1 beside it (inspect_array writes one)").arg(QFileInfo(metaPath).fileName())};
        return nullptr;
    }
    JaxDumpMeta meta;
    QString why;
    if (!parseJaxMeta(metaFile.read(1 << 16), &meta, &why)) {
        *problem = {metaPath, 0, why};
        return nullptr;
    }
    if (!meta.dtype) {
        *problem = {metaPath, -1,
            QStringLiteral("dtype %1 (XLA %2) is not one fp8scope reads")
                .arg(meta.dtypeCode)
                .arg(xlaTypeName(meta.dtypeCode))};
        return nullptr;
    }
    std::unique_ptr<JaxDumpReader> reader(new JaxDumpReader);
    reader->m_info.file = path;
    reader->m_info.name = meta.name;
    reader->m_info.dtype = *meta.dtype;
    reader->m_info.shape = meta.shape;
    if (!finishTensorInfo(reader->m_info)) {
        *problem = {metaPath, -1, QStringLiteral("a shape whose element count overflows")};
        return nullptr;
    }
    reader->m_file.setFileName(path);
    if (!reader->m_file.open(QIODevice::ReadOnly)) {
        *problem = {path, -1, QStringLiteral("cannot be read (%1)").arg(reader->m_file.errorString())};
        return nullptr;
    }
    const qint64 want = reader->m_info.numel * dtypeSize(*meta.dtype);
    if (reader->m_file.size() != want) {
        *problem = {path, -1,
            QStringLiteral("holds %1 bytes; its metadata (%2 elements of %3) says %4")
                .arg(reader->m_file.size())
                .arg(reader->m_info.numel)
                .arg(dtypeName(*meta.dtype))
                .arg(want)};
        return nullptr;
    }
    return reader;
}

bool JaxDumpReader::read(int64_t first, int64_t count, void *dst, Problem *problem)
{
    const int size = dtypeSize(m_info.dtype);
    if (first < 0 || count < 0 || first + count > m_info.numel || !m_file.seek(first * size)
        || m_file.read(static_cast<char *>(dst), count * size) != count * size) {
        *problem = {m_info.file, first * size, QStringLiteral("short read of %1 bytes").arg(count * size)};
        return false;
    }
    return true;
}

} // namespace fp8scope

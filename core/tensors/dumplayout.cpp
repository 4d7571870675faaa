#include "dumplayout.h"

#include <QRegularExpression>

namespace fp8scope {

std::optional<DumpPath> parseDumpPath(const QString &path, QString *error)
{
    static const QRegularExpression re(QStringLiteral("^/?iter_(\\d{6,12})/(.+)/([^/]+)$"));
    const auto m = re.match(path);
    if (!m.hasMatch()) {
        *error = QStringLiteral("'%1' is not /iter_<NNNNNN>/<layer>/<tensor kind>").arg(path);
        return std::nullopt;
    }
    DumpPath p;
    bool ok = false;
    p.iteration = m.captured(1).toLongLong(&ok);
    if (!ok) {
        *error = QStringLiteral("iteration number out of range in '%1'").arg(path);
        return std::nullopt;
    }
    p.layer = m.captured(2);
    p.tensorKind = m.captured(3);
    if (p.layer.contains(QLatin1String("//")) || p.layer.startsWith(QLatin1Char('/'))) {
        *error = QStringLiteral("empty path component in '%1'").arg(path);
        return std::nullopt;
    }
    if (p.tensorKind.endsWith(QLatin1String("_fp8"))) {
        p.quantized = true;
        p.tensorKind.chop(4);
        if (p.tensorKind.isEmpty()) {
            *error = QStringLiteral("empty tensor kind in '%1'").arg(path);
            return std::nullopt;
        }
    }
    return p;
}

std::optional<DType> dumpElementType(StoredClass cls, int bytes, const QString &dtypeAttr, const QString &fp8FormatAttr,
    const QString &datasetName, QString *error)
{
    if (cls == StoredClass::Float && bytes == 4)
        return DType::F32;
    if (cls == StoredClass::Float && bytes == 2)
        return DType::F16;
    if (cls == StoredClass::Float && bytes == 8)
        return DType::F64;
    if (cls == StoredClass::UnsignedInteger && bytes == 2) {
        if (dtypeAttr.compare(QLatin1String("bfloat16"), Qt::CaseInsensitive) == 0)
            return DType::BF16;
        *error = QStringLiteral("uint16 dataset without dtype=\"bfloat16\"");
        return std::nullopt;
    }
    if (cls == StoredClass::UnsignedInteger && bytes == 1) {
        const QString f = fp8FormatAttr.toUpper();
        if (f.contains(QLatin1String("E4M3")))
            return DType::F8E4M3;
        if (f.contains(QLatin1String("E5M2")))
            return DType::F8E5M2;
        if (f == QLatin1String("HYBRID")) {
            // Transformer Engine's hybrid format: E4M3 for the forward pass, E5M2 for gradients.
            const QString kind = datasetName.section(QLatin1Char('/'), -1).toLower();
            return kind.startsWith(QLatin1String("grad")) ? DType::F8E5M2 : DType::F8E4M3;
        }
        *error = fp8FormatAttr.isEmpty()
            ? QStringLiteral("uint8 dataset without an fp8_format attribute (E4M3, E5M2 or HYBRID)")
            : QStringLiteral("uint8 dataset with fp8_format '%1', which is none of E4M3, E5M2 or HYBRID")
                  .arg(fp8FormatAttr);
        return std::nullopt;
    }
    *error = QStringLiteral("unsupported element type (%1-byte %2)")
                 .arg(bytes)
                 .arg(cls == StoredClass::Float                ? QStringLiteral("float")
                         : cls == StoredClass::UnsignedInteger ? QStringLiteral("unsigned integer")
                         : cls == StoredClass::SignedInteger   ? QStringLiteral("signed integer")
                                                               : QStringLiteral("non-numeric"));
    return std::nullopt;
}

} // namespace fp8scope

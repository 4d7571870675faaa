#include "formatnames.h"

namespace fp8scope {

QString formatName(Format f)
{
    switch (f) {
    case Format::E4M3: return QStringLiteral("e4m3");
    case Format::E5M2: return QStringLiteral("e5m2");
    case Format::E4M3FNUZ: return QStringLiteral("e4m3fnuz");
    case Format::E5M2FNUZ: return QStringLiteral("e5m2fnuz");
    case Format::E2M1: return QStringLiteral("e2m1");
    case Format::E8M0: return QStringLiteral("e8m0");
    case Format::BF16: return QStringLiteral("bf16");
    }
    return {};
}

std::optional<Format> formatFromName(const QString &name)
{
    const QString n = name.toLower();
    for (Format f :
        {Format::E4M3, Format::E5M2, Format::E4M3FNUZ, Format::E5M2FNUZ, Format::E2M1, Format::E8M0, Format::BF16}) {
        if (formatName(f) == n)
            return f;
    }
    if (n == QLatin1String("fp4") || n == QLatin1String("nvfp4"))
        return Format::E2M1;
    return std::nullopt;
}

} // namespace fp8scope

#include "dtype.h"

namespace fp8scope {

int dtypeSize(DType t)
{
    switch (t) {
    case DType::F64: return 8;
    case DType::F32: return 4;
    case DType::F16:
    case DType::BF16: return 2;
    case DType::F8E4M3:
    case DType::F8E5M2:
    case DType::F4E2M1: return 1; // a byte holds two FP4 codes; no reader hands them out
    }
    return 0;
}

QString dtypeName(DType t)
{
    switch (t) {
    case DType::F32: return QStringLiteral("float32");
    case DType::F16: return QStringLiteral("float16");
    case DType::BF16: return QStringLiteral("bfloat16");
    case DType::F8E4M3: return QStringLiteral("float8_e4m3");
    case DType::F8E5M2: return QStringLiteral("float8_e5m2");
    case DType::F64: return QStringLiteral("float64");
    case DType::F4E2M1: return QStringLiteral("float4_e2m1");
    }
    return {};
}

std::optional<DType> dtypeFromName(const QString &name)
{
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F8E4M3, DType::F8E5M2, DType::F64, DType::F4E2M1}) {
        if (dtypeName(t) == name)
            return t;
    }
    return std::nullopt;
}

} // namespace fp8scope

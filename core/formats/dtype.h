// Element types of tensor dumps and their sizes.
#pragma once

#include <QString>

#include <cstdint>
#include <optional>

namespace fp8scope {

// F64 and F4E2M1 (two codes to a byte) are only ever stored: openTensor() hands them out as float32.
enum class DType : uint8_t { F32, F16, BF16, F8E4M3, F8E5M2, F64, F4E2M1 };

int dtypeSize(DType t);
QString dtypeName(DType t);
std::optional<DType> dtypeFromName(const QString &name);

} // namespace fp8scope

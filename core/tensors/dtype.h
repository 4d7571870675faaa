// Element types of tensor dumps and their sizes.
#pragma once

#include <QString>

#include <cstdint>
#include <optional>

namespace fp8scope {

// F64 is only ever stored: openTensor() hands float64 tensors out as float32.
enum class DType : uint8_t { F32, F16, BF16, F8E4M3, F8E5M2, F64 };

int dtypeSize(DType t);
QString dtypeName(DType t);
std::optional<DType> dtypeFromName(const QString &name);

} // namespace fp8scope

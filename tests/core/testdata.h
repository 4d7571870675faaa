// Test data shared by the metrics tests: random tensors with zeros, float32 subnormals, NaN, inf and
// outliers; their encodings in the dump dtypes; a relative comparison.
#pragma once

#include "core/formats/dtype.h"
#include "core/formats/fp8math.h"

#include <QByteArray>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

namespace fp8scope::testdata {

inline std::vector<float> makeData(size_t n, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<float> normal(0.0f, 1.0f);
    std::uniform_real_distribution<float> u(0.0f, 1.0f);
    std::vector<float> x(n);
    for (float &v : x) {
        const float k = u(rng);
        if (k < 0.05f)
            v = 0.0f;
        else if (k < 0.06f)
            v = normal(rng) * 1e-40f; // float32 subnormal
        else if (k < 0.065f)
            v = NAN;
        else if (k < 0.07f)
            v = u(rng) < 0.5f ? INFINITY : -INFINITY;
        else if (k < 0.075f)
            v = normal(rng) * 3e4f; // outlier
        else
            v = normal(rng) * std::exp2(-24.0f + 30.0f * u(rng));
    }
    return x;
}

inline QByteArray encode(const std::vector<float> &x, DType dtype, std::vector<float> *widened)
{
    QByteArray out;
    widened->resize(x.size());
    for (size_t i = 0; i < x.size(); ++i) {
        if (dtype == DType::F32) {
            out.append(reinterpret_cast<const char *>(&x[i]), 4);
            (*widened)[i] = x[i];
        } else if (dtype == DType::BF16) {
            const uint16_t b = uint16_t(fp8math::castToCode(x[i], fp8math::Format::BF16));
            out.append(reinterpret_cast<const char *>(&b), 2);
            (*widened)[i] = fp8math::decodeCode(b, fp8math::Format::BF16);
        } else if (dtype == DType::F8E4M3 || dtype == DType::F8E5M2) {
            const auto f = dtype == DType::F8E4M3 ? fp8math::Format::E4M3 : fp8math::Format::E5M2;
            const uint8_t c = uint8_t(fp8math::castToCode(x[i], f));
            out.append(static_cast<char>(c));
            (*widened)[i] = fp8math::decodeCode(c, f);
        } else {
            // float16 by way of the compiler's conversion (round to nearest even)
            const _Float16 h = static_cast<_Float16>(x[i]);
            uint16_t bits;
            std::memcpy(&bits, &h, 2);
            out.append(reinterpret_cast<const char *>(&bits), 2);
            (*widened)[i] = fp8math::halfToFloat(bits);
        }
    }
    return out;
}

inline bool close(double a, double b, double rel)
{
    if (std::isnan(a) || std::isnan(b))
        return std::isnan(a) && std::isnan(b);
    if (std::isinf(a) || std::isinf(b))
        return a == b;
    return std::fabs(a - b) <= rel * std::max(std::fabs(a), std::fabs(b)) + 1e-300;
}

} // namespace fp8scope::testdata

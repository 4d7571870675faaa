// A plain double-precision reference of the fused metrics, written for the tests and independent of the
// kernels: quantization by searching the decoded code table for the nearest value (ties to the even code),
// scales from the recipe formulas with std::log2/std::exp2, two-pass moments.
#pragma once

#include "core/formats/fp8math.h"
#include "core/numerics/recipe.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <vector>

namespace fp8scope::reference {

using fp8math::Format;

struct Result {
    int64_t numel = 0, zeros = 0, nans = 0, infs = 0, nonzeroQ = 0, saturated = 0, blocks = 0;
    double amax = 0, aminNonzero = INFINITY, mean = NAN, std = NAN, kurtosis = NAN, underflowPct = NAN,
           saturationPct = NAN, mse = NAN, cosine = NAN, sqnrDb = NAN, relativeError = NAN;
    double scaleInvMin = INFINITY, scaleInvMax = 0;
    std::map<int, int64_t> histIn, histScaled; // floor(log2|v|) (float32 subnormals: -127, inf: 128)
};

inline double decodeValue(uint32_t code, Format f)
{
    return fp8math::decodeCode(code, f);
}

// Nearest representable magnitude by table search; returns the signed value.
inline double quantize(float y, Format f)
{
    if (std::isnan(y))
        return NAN;
    const double ay = std::fabs(double(y));
    if (f == Format::BF16) {
        if (std::isinf(y))
            return y;
        int e = 0;
        std::frexp(ay, &e);
        const double step = ay < std::ldexp(1.0, -126) ? std::ldexp(1.0, -133) : std::ldexp(1.0, e - 8);
        const double q = std::nearbyint(ay / step) * step;
        const double r = q > 3.3895313892515355e38 ? INFINITY : q;
        return std::signbit(y) ? -r : r;
    }
    static std::map<Format, std::vector<std::pair<double, uint32_t>>> tables;
    auto &table = tables[f];
    const fp8math::FormatSpec s = fp8math::formatSpec(f);
    if (table.empty()) {
        for (uint32_t c = 0; c <= s.maxCode; ++c)
            table.emplace_back(decodeValue(c, f), c);
        std::sort(table.begin(), table.end());
    }
    if (ay >= s.maxFinite)
        return std::signbit(y) ? -double(s.maxFinite) : double(s.maxFinite);
    auto hi = std::lower_bound(table.begin(), table.end(), std::make_pair(ay, 0u));
    auto lo = hi == table.begin() ? hi : hi - 1;
    const double dlo = ay - lo->first;
    const double dhi = hi->first - ay;
    double q;
    if (dlo < dhi)
        q = lo->first;
    else if (dhi < dlo)
        q = hi->first;
    else
        q = (lo->second % 2 == 0) ? lo->first : hi->first;
    return std::signbit(y) ? -q : q;
}

inline int log2Bin(double a)
{
    if (std::isinf(a))
        return 128;
    if (a < std::ldexp(1.0, -126))
        return -127;
    return std::ilogb(a);
}

struct Scale {
    float encode;
    float decode;
};

inline float amaxOf(const float *x, size_t n)
{
    float a = 0;
    for (size_t i = 0; i < n; ++i)
        if (std::isfinite(x[i]))
            a = std::max(a, std::fabs(x[i]));
    return a;
}

inline Scale blockScale(const Recipe &r, float amax, float globalEncode)
{
    const float fmax = fp8math::formatSpec(r.format).maxFinite;
    if (r.kind == RecipeKind::MxFp8) {
        double e;
        if (amax == 0.0f) {
            e = -127;
        } else if (!r.ocpRule) {
            const float v = amax * (1.0f / fmax);
            e = std::ceil(std::log2(double(v)));
        } else {
            const int emax = std::ilogb(double(fmax));
            e = std::floor(std::log2(double(amax))) - emax;
        }
        e = std::clamp(e, -127.0, 127.0);
        return {float(std::exp2(-e)), float(std::exp2(e))};
    }
    if (r.kind == RecipeKind::NvFp4) {
        const float blockDecode = amax * (1.0f / 6.0f);
        const float fp8 = float(quantize(blockDecode * globalEncode, Format::E4M3));
        const float decode = fp8 * (1.0f / globalEncode);
        if (decode == 0.0f)
            return {0.0f, 0.0f};
        return {1.0f / decode, decode};
    }
    // block scaling
    if (amax == 0.0f)
        return {1.0f, 1.0f};
    float s = fmax / amax;
    if (std::isinf(s))
        s = 3.40282347e38f;
    if (r.pow2)
        s = float(std::exp2(std::floor(std::log2(double(s)))));
    return {s, 1.0f / s};
}

// x is rows x cols row-major (rows = 1 for 1-D).
inline Result compute(const std::vector<float> &x, int64_t rows, int64_t cols, const Recipe &r)
{
    const size_t n = x.size();
    std::vector<float> enc(n, 1.0f), dec(n, 1.0f);
    Result res;
    const float fmax = fp8math::formatSpec(r.format).maxFinite;
    const float tensorAmax = amaxOf(x.data(), n);
    if (r.kind == RecipeKind::Current || r.kind == RecipeKind::Delayed) {
        float s;
        if (r.kind == RecipeKind::Current) {
            s = tensorAmax == 0.0f ? 1.0f : fmax / tensorAmax;
            if (std::isinf(s))
                s = 3.40282347e38f;
            if (r.pow2)
                s = float(std::exp2(std::floor(std::log2(double(s)))));
        } else {
            s = r.delayedScale();
        }
        std::fill(enc.begin(), enc.end(), s);
        std::fill(dec.begin(), dec.end(), 1.0f / s);
        res.scaleInvMin = res.scaleInvMax = 1.0f / s;
    } else if (r.kind != RecipeKind::Bf16) {
        float globalEncode = 1.0f;
        if (r.kind == RecipeKind::NvFp4 && tensorAmax > 0)
            globalEncode = std::min(448.0f * 6.0f / tensorAmax, 3.40282347e38f);
        const int64_t br = (rows > 1) ? r.blockRows : 1;
        const int64_t bc = r.kind == RecipeKind::NvFp4 ? 16 : r.blockCols;
        for (int64_t r0 = 0; r0 < rows; r0 += br) {
            for (int64_t c0 = 0; c0 < cols; c0 += bc) {
                float amax = 0;
                for (int64_t i = r0; i < std::min(rows, r0 + br); ++i)
                    amax = std::max(amax, amaxOf(&x[size_t(i * cols + c0)], size_t(std::min(bc, cols - c0))));
                const Scale s = blockScale(r, amax, globalEncode);
                ++res.blocks;
                res.scaleInvMin = std::min(res.scaleInvMin, double(s.decode));
                res.scaleInvMax = std::max(res.scaleInvMax, double(s.decode));
                for (int64_t i = r0; i < std::min(rows, r0 + br); ++i)
                    for (int64_t j = c0; j < std::min(cols, c0 + bc); ++j) {
                        enc[size_t(i * cols + j)] = s.encode;
                        dec[size_t(i * cols + j)] = s.decode;
                    }
            }
        }
    }
    std::vector<double> xs, qs;
    int64_t nonzeroX = 0;
    for (size_t i = 0; i < n; ++i) {
        ++res.numel;
        const float v = x[i];
        const float scaled = v * enc[i];
        const double q = quantize(scaled, r.format);
        if (v != 0.0f)
            ++nonzeroX; // NaN counts as non-zero
        if (q != 0.0)
            ++res.nonzeroQ;
        if (std::isnan(v)) {
            ++res.nans;
            continue;
        }
        if (v == 0.0f)
            ++res.zeros;
        else
            ++res.histIn[log2Bin(std::fabs(double(v)))];
        if (!std::isnan(scaled) && scaled != 0.0f)
            ++res.histScaled[log2Bin(std::fabs(double(scaled)))];
        if (std::fabs(scaled) > fmax)
            ++res.saturated;
        if (std::isinf(v)) {
            ++res.infs;
            continue;
        }
        res.amax = std::max(res.amax, std::fabs(double(v)));
        if (v != 0.0f)
            res.aminNonzero = std::min(res.aminNonzero, std::fabs(double(v)));
        xs.push_back(v);
        qs.push_back(q * double(dec[i]));
    }
    if (res.numel > 0) {
        res.underflowPct = double(nonzeroX - res.nonzeroQ) / double(res.numel) * 100.0;
        res.saturationPct = double(res.saturated) / double(res.numel) * 100.0;
    }
    const double m = double(xs.size());
    if (m > 0) {
        double sum = 0;
        for (double v : xs)
            sum += v;
        res.mean = sum / m;
        double c2 = 0, c4 = 0, err = 0, xq = 0, xx = 0, qq = 0;
        for (size_t i = 0; i < xs.size(); ++i) {
            const double d = xs[i] - res.mean;
            c2 += d * d;
            c4 += d * d * d * d;
            err += (xs[i] - qs[i]) * (xs[i] - qs[i]);
            xq += xs[i] * qs[i];
            xx += xs[i] * xs[i];
            qq += qs[i] * qs[i];
        }
        res.std = std::sqrt(c2 / m);
        res.kurtosis = c2 > 0 ? (c4 / m) / ((c2 / m) * (c2 / m)) - 3.0 : NAN;
        res.mse = err / m;
        res.cosine = (xx > 0 && qq > 0) ? xq / std::sqrt(xx * qq) : NAN;
        res.sqnrDb = xx > 0 ? 10 * std::log10(xx / err) : NAN;
        res.relativeError = xx > 0 ? std::sqrt(err / xx) : NAN;
    }
    return res;
}

} // namespace fp8scope::reference

#include "smoothing.h"

#include <QCoreApplication>

#include <algorithm>
#include <cmath>

namespace fp8scope {

QString smoothingName(Smoothing kind)
{
    switch (kind) {
    case Smoothing::None: return QCoreApplication::translate("fp8scope", "None");
    case Smoothing::Ema: return QCoreApplication::translate("fp8scope", "EMA (debiased)");
    case Smoothing::RunningMean: return QCoreApplication::translate("fp8scope", "Running mean");
    case Smoothing::Gaussian: return QCoreApplication::translate("fp8scope", "Gaussian");
    }
    return {};
}

int smoothingHalfWidth(double strength)
{
    return int(std::lround(std::clamp(strength, 0.0, 1.0) * 50.0));
}

namespace {

std::vector<double> ema(std::span<const double> x, double w)
{
    std::vector<double> out(x.size(), NAN);
    double acc = 0;
    double decay = 1; // w^k
    for (size_t i = 0; i < x.size(); ++i) {
        if (!std::isfinite(x[i]))
            continue;
        acc = w * acc + (1 - w) * x[i];
        decay *= w;
        out[i] = decay < 1 ? acc / (1 - decay) : x[i];
    }
    return out;
}

std::vector<double> runningMean(std::span<const double> x, int h)
{
    // Prefix sums of the finite values and of their count make each window O(1).
    const size_t n = x.size();
    std::vector<double> sum(n + 1, 0);
    std::vector<int64_t> count(n + 1, 0);
    for (size_t i = 0; i < n; ++i) {
        const bool ok = std::isfinite(x[i]);
        sum[i + 1] = sum[i] + (ok ? x[i] : 0);
        count[i + 1] = count[i] + (ok ? 1 : 0);
    }
    std::vector<double> out(n, NAN);
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(x[i]))
            continue;
        const size_t lo = i >= size_t(h) ? i - size_t(h) : 0;
        const size_t hi = std::min(n, i + size_t(h) + 1);
        out[i] = (sum[hi] - sum[lo]) / double(count[hi] - count[lo]);
    }
    return out;
}

std::vector<double> gaussian(std::span<const double> x, int h)
{
    const size_t n = x.size();
    const double sigma = double(h) / 3.0;
    std::vector<double> kernel(size_t(h) + 1);
    for (int d = 0; d <= h; ++d)
        kernel[size_t(d)] = std::exp(-double(d) * d / (2 * sigma * sigma));
    std::vector<double> out(n, NAN);
    for (size_t i = 0; i < n; ++i) {
        if (!std::isfinite(x[i]))
            continue;
        double s = 0, wsum = 0;
        const size_t lo = i >= size_t(h) ? i - size_t(h) : 0;
        const size_t hi = std::min(n - 1, i + size_t(h));
        for (size_t j = lo; j <= hi; ++j) {
            if (!std::isfinite(x[j]))
                continue;
            const double w = kernel[j > i ? j - i : i - j];
            s += w * x[j];
            wsum += w;
        }
        out[i] = s / wsum;
    }
    return out;
}

} // namespace

std::vector<double> smooth(std::span<const double> values, Smoothing kind, double strength)
{
    strength = std::clamp(strength, 0.0, 0.999);
    const int h = smoothingHalfWidth(strength);
    switch (kind) {
    case Smoothing::Ema:
        if (strength > 0)
            return ema(values, strength);
        break;
    case Smoothing::RunningMean:
        if (h > 0)
            return runningMean(values, h);
        break;
    case Smoothing::Gaussian:
        if (h > 0)
            return gaussian(values, h);
        break;
    case Smoothing::None: break;
    }
    return {values.begin(), values.end()};
}

} // namespace fp8scope

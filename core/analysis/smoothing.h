// Smoothing of a plotted series, as the curve view draws it. Every kind takes one strength in [0, 1) and the
// values in step order; NaN values are passed through and do not enter any average.
//   EMA (debiased, as TensorBoard): a_i = w a_{i-1} + (1 - w) x_i with a_{-1} = 0, shown as a_i / (1 - w^(k)),
//     k = finite values seen so far; w = strength.
//   Running mean: the mean of the finite values in the centred window [i - h, i + h], h = smoothingHalfWidth().
//   Gaussian: weights exp(-d^2 / (2 sigma^2)) over |d| <= 3 sigma, sigma = h / 3, normalised over the finite
//     values present (so the edges are not pulled towards zero).
#pragma once

#include <QString>

#include <span>
#include <vector>

namespace fp8scope {

enum class Smoothing { None, Ema, RunningMean, Gaussian };

QString smoothingName(Smoothing kind);
// Half-width in points of the running-mean and Gaussian windows: round(strength * 50).
int smoothingHalfWidth(double strength);
std::vector<double> smooth(std::span<const double> values, Smoothing kind, double strength);

} // namespace fp8scope

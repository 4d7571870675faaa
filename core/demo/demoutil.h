// What the demo and the scenarios share: seeded random numbers that are the same on every platform (no std::
// distributions, whose draws differ between standard libraries), and writing a file with its folders.
#pragma once

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QString>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numbers>
#include <random>

namespace fp8scope {

// A seeded generator whose draws are the same on every platform (no std:: distributions).
class Rng
{
public:
    explicit Rng(uint64_t seed)
        : m_engine(seed)
    {
    }
    double uniform() { return double(m_engine() >> 11) * 0x1p-53; }
    double normal()
    {
        // Box-Muller; the second value is dropped to keep the sequence simple to reason about.
        const double u1 = std::max(uniform(), 1e-300);
        const double u2 = uniform();
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
    }
    int64_t below(int64_t n) { return int64_t(uniform() * double(n)); }
    double between(double lo, double hi) { return lo + (hi - lo) * uniform(); }

private:
    std::mt19937_64 m_engine;
};

// Writes bytes to path, creating its folders; false with "path: reason" in *error.
inline bool writeDemoFile(const QString &path, const QByteArray &bytes, QString *error)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    if (!f.open(QIODevice::WriteOnly) || f.write(bytes) != bytes.size()) {
        *error = QStringLiteral("%1: %2").arg(path, f.errorString());
        return false;
    }
    return true;
}

} // namespace fp8scope

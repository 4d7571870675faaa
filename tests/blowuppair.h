// Runs that blow up, written as Megatron-LM and Transformer Engine write them (issue 54), for the tests of the
// triage (tests/e2e/tst_blowup.cpp) and of the window (tests/views/tst_triage.cpp): Megatron's training_log lines
// as its code formats them (an interval whose iterations were all skipped prints its loss as 0.000000E+00 and no
// grad norm), TE's statistics with nan and inf, one file a rank.
#pragma once

#include <QByteArray>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QString>
#include <QTest>

#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>

namespace fp8scope::testdata {

constexpr int kInterval = 10; // Megatron's --log-interval and TE's statistics frequency

inline bool writeFile(const QString &path, const QByteArray &bytes, bool append = false)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(append ? QIODevice::Append : QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

// One of Megatron's training_log lines, as its code formats them (megatron/training/training.py): the loss of
// an interval whose iterations were all skipped is the reset sum over max(1, 0) = 0, and its grad norm is None.
inline QByteArray megatronLine(
    int64_t step, int64_t planned, double loss, double gradNorm, int skipped, int nan, double lossScale = 1.0)
{
    QByteArray out = " [2026-11-02 10:00:00] iteration " + QByteArray::number(step).rightJustified(8, ' ') + "/"
        + QByteArray::number(planned).rightJustified(8, ' ')
        + " | consumed samples: " + QByteArray::number(step * 256).rightJustified(12, ' ')
        + " | elapsed time per iteration (ms): 1234.5 | learning rate: " + QByteArray::number(3e-4, 'E', 6)
        + " | global batch size:   256 | lm loss: " + QByteArray::number(skipped == kInterval ? 0.0 : loss, 'E', 6)
        + " | loss scale: " + QByteArray::number(lossScale, 'f', 1) + " |";
    if (skipped < kInterval)
        out += " grad norm: " + QByteArray::number(gradNorm, 'f', 3) + " |";
    out += " number of skipped iterations: " + QByteArray::number(skipped).rightJustified(3, ' ')
        + " | number of nan iterations: " + QByteArray::number(nan).rightJustified(3, ' ') + " |\n";
    return out;
}

// A pretraining loss: a power law to 2.0 with a little noise.
inline double lossAt(int64_t step, std::mt19937 &rng)
{
    std::normal_distribution<double> noise(0.0, 0.01);
    return 2.0 + 8.0 * std::pow(1.0 + double(step) / 100.0, -0.5) + noise(rng);
}

// A Megatron log of `planned` steps to `last`, every kInterval; from `blowUp` on (when given) every iteration is
// skipped (the nan iterations too: the loss itself overflowed).
inline QByteArray megatronLog(uint32_t seed, int64_t planned, int64_t last, std::optional<int64_t> blowUp)
{
    std::mt19937 rng(seed);
    QByteArray out;
    for (int64_t step = kInterval; step <= last; step += kInterval) {
        const double loss = lossAt(step, rng);
        const bool bad = blowUp && step >= *blowUp;
        out += megatronLine(step, planned, loss, 1.2, bad ? kInterval : 0, bad ? kInterval : 0);
    }
    return out;
}

// TE's statistics of one rank of a pipeline at one step: rank r holds layers 2r and 2r+1, the activation and
// gradient underflows% and overflows% of linear_fc1. `value(rank, layer, tensor, stat, step)` gives each value
// (NaN and inf print as Python prints them: nan, inf).
using StatValue = std::function<double(int, int, const QByteArray &, const QByteArray &, int64_t)>;
inline QByteArray teLines(int rank, int64_t step, const StatValue &value)
{
    QByteArray out;
    for (int layer = 2 * rank; layer < 2 * rank + 2; ++layer) {
        for (const QByteArray &tensor : {QByteArray("activation"), QByteArray("gradient")}) {
            for (const QByteArray &stat : {QByteArray("underflows%"), QByteArray("overflows%")}) {
                const double v = value(rank, layer, tensor, stat, step);
                const QByteArray text = std::isnan(v) ? QByteArray("nan")
                    : std::isinf(v)                   ? QByteArray(v > 0 ? "inf" : "-inf")
                                                      : QByteArray::number(v, 'f', 4);
                out += "2026-11-02 10:00:00,000 - INFO - decoder.layers." + QByteArray::number(layer)
                    + ".mlp.linear_fc1_" + tensor + "_" + stat + " \t\t\t\t iteration="
                    + QByteArray::number(step).rightJustified(6, '0') + " \t\t\t\t value=" + text + "\n";
            }
        }
    }
    return out;
}

inline QString teLogPath(const QString &runDir, int rank)
{
    return runDir + QStringLiteral("/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-%1.log").arg(rank);
}

// Every rank's statistics log, each rank a file, every kInterval steps to `last`.
inline void writeTeStats(const QString &runDir, int ranks, int64_t last, const StatValue &value)
{
    for (int rank = 0; rank < ranks; ++rank) {
        QByteArray out;
        for (int64_t step = 0; step <= last; step += kInterval)
            out += teLines(rank, step, value);
        QVERIFY(writeFile(teLogPath(runDir, rank), out));
    }
}

// The statistics of the blow-up: healthy levels; rank `firstRank`'s gradient of layer `layer` turns inf at
// `turnsAt` (one interval before the others), its overflows% rising over the intervals before; from `allAt` on
// every gradient is nan and every activation's overflows% too.
inline StatValue blowUpStats(int firstRank, int layer, int64_t turnsAt, int64_t allAt, bool rising = true)
{
    return [=](int rank, int l, const QByteArray &tensor, const QByteArray &stat, int64_t step) -> double {
        const bool gradient = tensor == "gradient";
        if (step >= allAt && (gradient || stat == "overflows%"))
            return NAN;
        if (gradient && rank == firstRank && l == layer) {
            if (step >= turnsAt)
                return INFINITY;
            if (rising && stat == "overflows%" && step >= turnsAt - 5 * kInterval)
                return 0.5 * double(step - (turnsAt - 6 * kInterval)) / kInterval; // rising to it
        }
        return stat == "underflows%" ? 1.0 + 0.01 * l : 0.0;
    };
}

// bf16/ the baseline of fp8/ (the workspace manifest pairs them; fp8 trains with delayed scaling).
inline void writeWorkspace(const QString &dir)
{
    QVERIFY(writeFile(dir + QStringLiteral("/fp8scope-workspace.json"),
        R"({"runs": {"bf16": {"precision": "bf16"}, "fp8": {"precision": "fp8", "recipe": "delayed", "baseline": "bf16"}}})"));
}

// The pair of the acceptance tests: fp8/ tracks bf16/ (`planned` steps planned, 40 intervals logged past the
// blow-up) until its 8 pipeline ranks' statistics show rank 5's layer 11 gradient inf two intervals before the loss
// shows it (its overflows% rising over the five before), every rank's gradients nan the interval after, and every
// update skipped from `blowUp` on.
inline void writeBlowUpPair(const QString &dir, int64_t planned, int64_t blowUp)
{
    writeWorkspace(dir);
    const int64_t last = blowUp + 40 * kInterval;
    QVERIFY(writeFile(dir + QStringLiteral("/bf16/train.log"), megatronLog(1, planned, last, std::nullopt)));
    QVERIFY(writeFile(dir + QStringLiteral("/fp8/train.log"), megatronLog(2, planned, last, blowUp)));
    writeTeStats(dir + QStringLiteral("/fp8"), 8, last, blowUpStats(5, 11, blowUp - 2 * kInterval, blowUp - kInterval));
}

} // namespace fp8scope::testdata

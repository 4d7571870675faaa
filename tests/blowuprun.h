// A run that blows up, for the tests of a run checked on its own: a CSV loss falling from 11.6 for 119 steps,
// then 20 (with a little deterministic noise) to step 200, in DIR/metrics.csv.
#pragma once

#include <QDir>
#include <QFile>

#include <cmath>

namespace fp8scope::testdata {

inline bool writeBlowUpRun(const QString &dir)
{
    QDir().mkpath(dir);
    QFile csv(dir + QStringLiteral("/metrics.csv"));
    if (!csv.open(QIODevice::WriteOnly))
        return false;
    csv.write("step,loss\n");
    for (int step = 1; step <= 200; ++step) {
        const double loss = (step < 120 ? 11.6 - 0.02 * step : 20.0) + 0.01 * std::sin(step);
        csv.write(QByteArray::number(step) + ',' + QByteArray::number(loss) + '\n');
    }
    return csv.error() == QFile::NoError;
}

} // namespace fp8scope::testdata

// Helpers of the tests that build run folders on disk and read them back from a store: write a file
// (making its folders), read one stored point, list the problems.
#pragma once

#include "core/store/runstore.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTest>

namespace fp8scope::testing {

inline void write(const QString &path, const QByteArray &bytes, bool append = false)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(append ? QIODevice::Append : QIODevice::WriteOnly));
    f.write(bytes);
}

// The value of `key` of `run` at `step`; -1e300 when the run is missing, -2e300 the series, -3e300 the point.
inline double pointAt(const RunStore &s, const QString &run, const SeriesKey &key, int64_t step)
{
    const auto r = s.run(run);
    if (!r)
        return -1e300;
    const auto found = s.findSeries(r->id, key);
    if (found.empty())
        return -2e300;
    for (const SeriesPoint &p : s.points(found.front().id, step, step, 0))
        return p.value;
    return -3e300;
}

// The store's problems as "file:line: message", one per problem.
inline QStringList problemTexts(const RunStore &store)
{
    QStringList out;
    for (const ProblemRecord &p : store.problems())
        out << QStringLiteral("%1:%2: %3").arg(p.file).arg(p.line).arg(p.message);
    return out;
}

} // namespace fp8scope::testing

// An ingest sink that keeps nothing but counts: what the benchmarks time an importer's parse alone with.
#pragma once

#include "core/importers/importer.h"

namespace fp8scope::bench {

class NullSink : public IngestSink
{
public:
    void useRun(const QString &) override { }
    int64_t series(const SeriesKey &) override { return ++n; }
    void point(int64_t, int64_t, double, double) override { ++points; }
    void eval(const EvalRecord &) override { }
    void config(const QString &, const QString &) override { }
    void version(const QString &, const QString &) override { }
    void runInfo(const QString &, const QString &) override { }
    void dump(const DumpRecord &) override { }
    void problem(int64_t, int64_t, const QString &) override { ++problems; }
    int64_t n = 0, points = 0, problems = 0;
};

} // namespace fp8scope::bench

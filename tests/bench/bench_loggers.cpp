// A W&B run log (.wandb) against the same values as a CSV table, ingested into a new store (issue 60's target:
// the log within 2x of the CSV). The log is framed as W&B frames it (tests/core/wandbwriter.h) and its records are
// what wandb-core writes for `run.log({"train/loss": ..., "grad": {"norm": ...}, "lr": ...}, step=s)`: a history
// record of six items (the three keys, _step, _runtime, _timestamp; every key a nested_key, every value JSON) and
// its HistoryStep. The CSV has a step column and the same three columns, the values printed as W&B prints them.
// Alternates one ingest of each, three times: the medians and the median of the pairs' ratios. Also: the log
// read by the importer alone (into a sink that keeps nothing), rows/s. Asserts nothing about time.
// Usage: bench_loggers [rows]   (10^6 by default)
#include "../core/wandbwriter.h"
#include "benchutil.h"
#include "core/importers/jsonimporters.h"
#include "core/importers/wandbimporter.h"
#include "core/store/runstore.h"
#include "nullsink.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <cstdio>

using namespace fp8scope;

namespace {

QByteArray item(const QByteArray &key, const QByteArray &json)
{
    return testing::field(1, testing::field(2, key) + testing::field(16, json));
}

} // namespace

int main(int argc, char **argv)
{
    const int64_t rows = argc > 1 ? std::atoll(argv[1]) : 1000000;
    QTemporaryDir work;
    const QString log = work.filePath(QStringLiteral("data/run-bench.wandb"));
    const QString csv = work.filePath(QStringLiteral("data/history.csv"));
    QDir().mkpath(work.filePath(QStringLiteral("data")));
    {
        testing::LogWriter w;
        QByteArray table = "_step,train/loss,grad/norm,lr\n";
        for (int64_t r = 0; r < rows; ++r) {
            using testing::field;
            using testing::varint;
            const int64_t step = r * 10;
            // Go's shortest 'g' form as wandb-core prints floats (Python's repr for these values).
            const QByteArray loss = shortestNumber(5.0 - 1e-6 * double(r) + 0.01 * double(r % 7)).toLatin1();
            const QByteArray norm = shortestNumber(1.0 + double(r % 1000) / 1000.0).toLatin1();
            const QByteArray lr = shortestNumber(3e-4 * (1.0 - double(r) / double(rows))).toLatin1();
            const QByteArray history = item("train/loss", loss)
                + field(1, field(2, "grad") + field(2, "norm") + field(16, norm)) + item("lr", lr)
                + item("_step", QByteArray::number(step))
                + item("_runtime", shortestNumber(double(r) * 0.25).toLatin1())
                + item("_timestamp", shortestNumber(1.7964772e9 + double(r) * 0.25).toLatin1())
                + field(2, varint(1 << 3) + varint(uint64_t(step)));
            w.add(varint(1 << 3) + varint(uint64_t(r + 1)) + field(2, history));
            table += QByteArray::number(step) + ',' + loss + ',' + norm + ',' + lr + '\n';
        }
        QFile f(log), t(csv);
        if (!f.open(QIODevice::WriteOnly) || !t.open(QIODevice::WriteOnly))
            return 1;
        f.write(w.bytes());
        t.write(table);
    }
    const auto ingestOne = [&](const QString &file) {
        static int n = 0;
        const QString folder = work.filePath(QStringLiteral("store%1").arg(++n));
        QDir().mkpath(folder);
        QFile::link(file, folder + QLatin1Char('/') + QFileInfo(file).fileName());
        RunStore store;
        QString error;
        if (!store.open(folder, &error))
            std::abort();
        const IngestReport r = store.ingest();
        if (r.filesRead != 1 || r.pointsWritten != 3 * rows)
            std::abort(); // every value of every row
    };
    const auto paired = bench::pairedMedians(
        3, [&] { ingestOne(log); }, [&] { ingestOne(csv); });
    WandbImporter importer;
    bench::NullSink sink;
    const double parse = bench::medianSeconds(3, [&] {
        sink = bench::NullSink();
        importer.read(log, {}, sink);
    });
    std::printf("rows %lld (3 series), log %.1f MiB, CSV %.1f MiB\n", static_cast<long long>(rows),
        double(QFileInfo(log).size()) / (1 << 20), double(QFileInfo(csv).size()) / (1 << 20));
    std::printf("%-44s %10s %12s\n", "case", "median s", "rows/s");
    std::printf(
        "%-44s %10.2f %12.0f\n", "W&B .wandb into a new store", paired.workSeconds, double(rows) / paired.workSeconds);
    std::printf("%-44s %10.2f %12.0f\n", "same values as CSV into a new store", paired.referenceSeconds,
        double(rows) / paired.referenceSeconds);
    std::printf("%-44s %10.2f %12.0f\n", "W&B .wandb parsed only (no store)", parse, double(rows) / parse);
    std::printf("W&B / CSV time (median of pairs): %.2fx (target: within 2x)\n", 1.0 / paired.ratio);
    return sink.points == 3 * rows ? 0 : 1;
}

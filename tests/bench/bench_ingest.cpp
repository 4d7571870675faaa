// Ingest throughput on a generated Transformer Engine statistics log in the real format (200 layers x 3
// tensors x 4 stats per iteration, ~2,084 iterations: 5,000,000 lines by default). Prints, in one run:
//   parse only (importer into a sink that keeps nothing), lines/s;
//   end to end into a new store (fp8scope-cli ingest in a child process, median of 3), lines/s and its peak RSS;
//   the sqlite3 shell's `.import` of the same rows as CSV into an equivalent table, rows/s, and the ratio;
//   reopening the store and fetching the 200 x iterations heatmap of one stat, ms;
//   a 1,000,000-point series at 2,000 buckets, ms;
//   1000 ranks' statistics logs (FP8SCOPE_BENCH_RANKS, 2,000 lines each): a reduction group (every rank the
//   same lines, its own timestamps) and a 4-stage pipeline (250 identical ranks a stage, 10 layers each),
//   ingested into a new store (created before the clock starts), against a plain read of the same bytes,
//   alternating, five of each: the medians and the median of the pairs' ratios.
// Asserts nothing about time. Usage: bench_ingest [lines] [workdir]
#include "benchutil.h"
#include "core/importers/tedebugimporter.h"
#include "core/query/catalog.h"
#include "core/store/runstore.h"
#include "nullsink.h"
#include "plainread.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

using namespace fp8scope;

namespace {

// Runs a program, returns (seconds, peak RSS in MiB of the child).
std::pair<double, double> runChild(
    const QString &program, const QStringList &args, const QString &stdinFile = QString())
{
    const auto t0 = std::chrono::steady_clock::now();
    const pid_t pid = fork();
    if (pid == 0) {
        if (!stdinFile.isEmpty())
            freopen(stdinFile.toLocal8Bit().constData(), "r", stdin);
        freopen("/dev/null", "w", stdout);
        std::vector<QByteArray> store;
        std::vector<char *> argv;
        store.push_back(program.toLocal8Bit());
        for (const QString &a : args)
            store.push_back(a.toLocal8Bit());
        for (QByteArray &b : store)
            argv.push_back(b.data());
        argv.push_back(nullptr);
        execvp(argv[0], argv.data());
        _exit(127);
    }
    int status = 0;
    rusage ru {};
    wait4(pid, &status, 0, &ru);
    const double sec = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        std::printf("warning: %s exited with %d\n", qPrintable(program), WEXITSTATUS(status));
    return {sec, double(ru.ru_maxrss) / 1024.0};
}

} // namespace

int main(int argc, char **argv)
{
    const int64_t lines = argc > 1 ? std::atoll(argv[1]) : 5000000;
    QTemporaryDir tmp;
    const QString work = argc > 2 ? QString::fromLocal8Bit(argv[2]) : tmp.path();
    const QString cli = QString::fromLocal8Bit(qgetenv("FP8SCOPE_CLI"));
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    if (cli.isEmpty() || !QFileInfo(cli).isExecutable()) {
        std::fprintf(stderr, "bench_ingest: set FP8SCOPE_CLI to fp8scope-cli (ctest does)\n");
        return 2;
    }
    const QString runDir = work + QStringLiteral("/run");
    QDir(runDir).removeRecursively();
    QDir().mkpath(runDir + QStringLiteral("/nvdlfw_inspect_statistics_logs"));
    const QString log = runDir + QStringLiteral("/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log");
    const QString csv = work + QStringLiteral("/rows.csv");
    {
        QFile f(log), c(csv);
        if (!f.open(QIODevice::WriteOnly) || !c.open(QIODevice::WriteOnly))
            return 1;
        std::mt19937 rng(3);
        std::uniform_real_distribution<double> u(0.0, 5.0);
        const char *tensors[] = {"activation", "gradient", "weight"};
        const char *stats[] = {"underflows%", "scale_inv_min", "scale_inv_max", "mse"};
        QByteArray buf, cbuf;
        int64_t n = 0;
        for (int64_t it = 0; n < lines; ++it) {
            for (int l = 0; l < 200 && n < lines; ++l) {
                for (const char *t : tensors) {
                    for (const char *s : stats) {
                        if (n++ >= lines)
                            break;
                        const QByteArray value = QByteArray::number(u(rng), 'f', 4);
                        const QByteArray layer = "model.decoder.layers." + QByteArray::number(l) + ".mlp.linear_fc1";
                        buf += "2026-01-15 23:06:41,584 - INFO - " + layer + '_' + t + '_' + s + " \t\t\t\t iteration="
                            + QByteArray::number(it).rightJustified(6, '0') + " \t\t\t\t value=" + value + '\n';
                        cbuf += layer + ',' + t + ',' + s + ',' + QByteArray::number(it) + ',' + value + '\n';
                    }
                }
            }
            if (buf.size() > (4 << 20)) {
                f.write(buf);
                c.write(cbuf);
                buf.clear();
                cbuf.clear();
            }
        }
        f.write(buf);
        c.write(cbuf);
    }
    const double mb = double(QFileInfo(log).size()) / 1e6;
    std::printf("fp8scope ingest benchmark: %lld lines (%.0f MB), %u hardware threads\n", (long long)lines, mb,
        std::thread::hardware_concurrency());

    const double parseSec = bench::medianSeconds(3, [&] {
        bench::NullSink sink;
        TeDebugImporter().read(log, {}, sink);
    });
    std::printf("%-44s %10.0f lines/s\n", "parse only (TE importer, null sink)", double(lines) / parseSec);

    // Three fresh ingests: this machine is shared, so the median; the largest peak RSS.
    std::vector<double> ingestRuns;
    double ingestRss = 0;
    for (int i = 0; i < 3; ++i) {
        QDir(runDir + QStringLiteral("/.fp8scope")).removeRecursively();
        const auto [sec, rss] = runChild(cli, {QStringLiteral("ingest"), runDir});
        ingestRuns.push_back(sec);
        ingestRss = std::max(ingestRss, rss);
    }
    std::sort(ingestRuns.begin(), ingestRuns.end());
    const double ingestSec = ingestRuns[1];
    std::printf("%-44s %10.0f lines/s   peak RSS %.0f MiB   (median of 3: %.0f .. %.0f)\n",
        "end to end: fp8scope-cli ingest", double(lines) / ingestSec, ingestRss, double(lines) / ingestRuns[2],
        double(lines) / ingestRuns[0]);

    const QString db = work + QStringLiteral("/shell.sqlite");
    QFile::remove(db);
    const QString script = work + QStringLiteral("/import.sql");
    {
        QFile s(script);
        s.open(QIODevice::WriteOnly);
        s.write("PRAGMA journal_mode=WAL;\nCREATE TABLE points(layer TEXT, tensor TEXT, stat TEXT, step INTEGER, value "
                "REAL, "
                "PRIMARY KEY(layer, tensor, stat, step)) WITHOUT ROWID;\n.mode csv\n.import "
            + csv.toLocal8Bit() + " points\n");
    }
    const auto [shellSec, shellRss] = runChild(QStringLiteral("sqlite3"), {db}, script);
    std::printf("%-44s %10.0f rows/s    peak RSS %.0f MiB\n", "sqlite3 shell .import of the same rows (CSV)",
        double(lines) / shellSec, shellRss);
    std::printf("%-44s %10.2f x\n", "ratio: fp8scope / sqlite3 shell", shellSec / ingestSec);

    Catalog catalog;
    QString error;
    const auto t0 = std::chrono::steady_clock::now();
    if (!catalog.open(runDir, &error) || catalog.runs().empty()) {
        std::fprintf(stderr, "bench_ingest: %s holds no run: %s\n", qPrintable(runDir), qPrintable(error));
        return 1;
    }
    const auto run = catalog.runs().front();
    const Heatmap h
        = catalog.matrix(run.ref, {.stat = QStringLiteral("underflows%"), .tensor = QStringLiteral("activation")});
    const double heatMs = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    std::printf("%-44s %10.1f ms (%lld x %zu)\n", "reopen + heatmap of one stat", heatMs, (long long)h.layers.size(),
        h.steps.size());

    // A 1,000,000-point series (a CSV ingested into its own store), then 2,000 buckets of it.
    {
        const QString longRun = work + QStringLiteral("/long");
        QDir(longRun).removeRecursively();
        QDir().mkpath(longRun);
        QFile f(longRun + QStringLiteral("/series.csv"));
        if (!f.open(QIODevice::WriteOnly))
            return 1;
        QByteArray b = "step,value\n";
        for (int64_t i = 0; i < 1000000; ++i)
            b += QByteArray::number(i) + ',' + QByteArray::number(std::sin(double(i) * 1e-3), 'g', 8) + '\n';
        f.write(b);
        f.close();
        RunStore longStore;
        if (!longStore.open(longRun, &error))
            return 1;
        longStore.ingest();
        const auto r = longStore.runs().front();
        const auto sid = longStore.findSeries(r.id, {{}, {}, QStringLiteral("value"), {}, {}}).front().id;
        size_t buckets = 0;
        const double ms
            = 1000.0 * bench::medianSeconds(5, [&] { buckets = longStore.points(sid, 0, 999999, 2000).size(); });
        std::printf("%-44s %10.1f ms (%zu buckets)\n", "1,000,000-point series at 2,000 buckets", ms, buckets);
    }
    // Ranks.
    const int ranks = qEnvironmentVariableIsSet("FP8SCOPE_BENCH_RANKS")
        ? qEnvironmentVariableIntValue("FP8SCOPE_BENCH_RANKS")
        : 1000;
    for (const int stages : {1, 4}) {
        const QString folder = work + QStringLiteral("/ranks%1").arg(stages);
        QDir(folder).removeRecursively();
        QStringList files;
        for (int rank = 0; rank < ranks; ++rank) {
            const int stage = rank * stages / ranks;
            const QString dir = folder + QStringLiteral("/rank_%1/nvdlfw_inspect_statistics_logs").arg(rank);
            QDir().mkpath(dir);
            QFile f(dir + QStringLiteral("/nvdlfw_inspect_globalrank-%1.log").arg(rank));
            if (!f.open(QIODevice::WriteOnly))
                return 1;
            QByteArray b;
            std::mt19937 rng {uint32_t(stage)};
            std::uniform_real_distribution<double> u(0.0, 5.0);
            for (int line = 0; line < 2000; ++line) {
                const int layer = stage * 10 + line % 10;
                b += "2026-01-15 23:06:41," + QByteArray::number(100 + rank % 900) + " - INFO - model.decoder.layers."
                    + QByteArray::number(layer) + ".mlp.linear_fc1_activation_underflows% \t\t\t\t iteration="
                    + QByteArray::number(line / 10).rightJustified(6, '0')
                    + " \t\t\t\t value=" + QByteArray::number(u(rng), 'f', 4) + '\n';
            }
            f.write(b);
            files << f.fileName();
        }
        // Alternating a plain read of the files and an ingest into a new store (created, empty, before the clock
        // starts: the ingest is what is timed), five times; the medians, and the median of the pairs' ratios.
        std::vector<char> buffer(1 << 20);
        double sum = 0;
        std::vector<double> plain, ingest, ratio, create;
        using Clock = std::chrono::steady_clock;
        const auto seconds
            = [](Clock::time_point a) { return std::chrono::duration<double>(Clock::now() - a).count(); };
        for (int i = 0; i < 5; ++i) {
            auto t = Clock::now();
            for (const QString &file : files)
                sum += bench::plainRead(file, buffer);
            plain.push_back(seconds(t));
            QDir(folder + QStringLiteral("/.fp8scope")).removeRecursively();
            RunStore s;
            QString e;
            t = Clock::now();
            if (!s.open(folder, &e))
                return 1;
            create.push_back(seconds(t));
            t = Clock::now();
            const IngestReport r = s.ingest();
            ingest.push_back(seconds(t));
            ratio.push_back(ingest.back() / plain.back());
            if (!r.errors.isEmpty() || r.filesRead != ranks)
                std::printf("warning: %d of %d files read; %s\n", r.filesRead, ranks,
                    qPrintable(r.errors.join(QLatin1Char(' '))));
        }
        const auto median = [](std::vector<double> v) {
            std::sort(v.begin(), v.end());
            return v[v.size() / 2];
        };
        std::printf("%-44s %10.1f ms   plain read %.1f ms   ratio %.2f x   (new store %.1f ms)%s\n",
            stages == 1 ? qPrintable(QStringLiteral("%1 ranks, one reduction group").arg(ranks))
                        : qPrintable(QStringLiteral("%1 ranks, %2-stage pipeline").arg(ranks).arg(stages)),
            median(ingest) * 1000, median(plain) * 1000, median(ratio), median(create) * 1000, sum < 0 ? " " : "");
    }
    return 0;
}

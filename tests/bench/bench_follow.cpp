// Following a run being written (docs/PERFORMANCE.md "Following a run"), in one run, medians of what it saw:
//   ingest latency: a writer thread appends Megatron log lines at a set rate (10^5 lines a second by default)
//     while a Workspace follows the folder (FolderWatcher, follow ingest jobs); for every step, the time from
//     its line written to the step visible through the GUI thread's catalog: median, 99th percentile, max;
//     and the sustained ingest rate against the writer's;
//   reference: the same lines ingested from the complete file at once (RunStore::ingest), lines a second;
//   the watcher idle: the process's CPU time over wall time while nothing is written (poll and notification on).
// Usage: bench_follow [seconds of writing] [lines a second]
#include "core/store/runstore.h"
#include "views/workspace/workspace.h"

#include <QApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

using namespace fp8scope;
using Clock = std::chrono::steady_clock;

namespace {

QByteArray line(int64_t step)
{
    return " iteration " + QByteArray::number(step).rightJustified(9, ' ') + "/ 100000000 | lm loss: "
        + QByteArray::number(2.0 + 1000.0 / double(step + 100), 'E', 6) + " | grad norm: 1.000E+00 |\n";
}

double cpuSeconds()
{
    rusage u {};
    getrusage(RUSAGE_SELF, &u);
    return double(u.ru_utime.tv_sec + u.ru_stime.tv_sec) + 1e-6 * double(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
}

double percentile(std::vector<double> v, double q)
{
    if (v.empty())
        return 0;
    std::sort(v.begin(), v.end());
    return v[std::min(v.size() - 1, size_t(q * double(v.size() - 1) + 0.5))];
}

} // namespace

int main(int argc, char **argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const double seconds = argc > 1 ? std::atof(argv[1]) : 5.0;
    const int64_t rate = argc > 2 ? std::atoll(argv[2]) : 100000;
    const int64_t total = int64_t(seconds * double(rate));
    QTemporaryDir tmp;
    const QString folder = tmp.filePath(QStringLiteral("run"));
    QDir().mkpath(folder);
    const QString log = folder + QStringLiteral("/train.log");
    {
        QFile f(log);
        if (!f.open(QIODevice::WriteOnly) || f.write(line(1)) < 0)
            return 1;
    }
    Workspace ws;
    bool loaded = false;
    QObject::connect(&ws, &Workspace::loaded, [&] { loaded = true; });
    ws.open({folder});
    if (!QTest::qWaitFor([&] { return loaded; }, 30000) || ws.runCount() != 1)
        return 1;

    // Steps 2.. written in slices of a millisecond's lines; each step's time kept.
    std::vector<Clock::time_point> written(size_t(total) + 2);
    std::atomic<int64_t> writtenTo {1};
    std::thread writer([&] {
        QFile f(log);
        if (!f.open(QIODevice::Append))
            return;
        const auto start = Clock::now();
        int64_t step = 2;
        while (step <= total + 1) {
            const auto due = start + std::chrono::microseconds((step - 2) * 1000000 / rate);
            std::this_thread::sleep_until(due);
            QByteArray slice;
            const int64_t upTo = std::min(total + 1, step + std::max<int64_t>(1, rate / 1000) - 1);
            for (int64_t s = step; s <= upTo; ++s)
                slice += line(s);
            f.write(slice);
            f.flush();
            const auto now = Clock::now();
            for (int64_t s = step; s <= upTo; ++s)
                written[size_t(s)] = now;
            writtenTo.store(upTo);
            step = upTo + 1;
        }
    });
    std::vector<double> latencyMs;
    int64_t seen = 1;
    int updates = 0;
    QObject::connect(&ws, &Workspace::dataAppended, [&] {
        ++updates;
        const int64_t latest = ws.runs().front().latestStep;
        const auto now = Clock::now();
        for (int64_t s = seen + 1; s <= latest && s <= writtenTo.load(); ++s)
            latencyMs.push_back(std::chrono::duration<double, std::milli>(now - written[size_t(s)]).count());
        seen = std::max(seen, latest);
    });
    QElapsedTimer wall;
    wall.start();
    const double cpu0 = cpuSeconds();
    if (!QTest::qWaitFor([&] { return seen >= total + 1; }, int(seconds * 1000) + 60000))
        std::printf("warning: the follower saw %lld of %lld steps before the wait ended\n", (long long)seen,
            (long long)total + 1);
    const double followSeconds = wall.elapsed() / 1000.0;
    const double followCpu = cpuSeconds() - cpu0;
    writer.join();

    // The watcher idle, nothing written: ten seconds.
    QTest::qWait(1000);
    const double idle0 = cpuSeconds();
    QElapsedTimer idle;
    idle.start();
    QTest::qWait(10000);
    const double idleCpu = (cpuSeconds() - idle0) / (idle.elapsed() / 1000.0);

    // Reference: the complete file at once, into a fresh store.
    const QString copy = tmp.filePath(QStringLiteral("copy"));
    QDir().mkpath(copy);
    QFile::copy(log, copy + QStringLiteral("/train.log"));
    RunStore store;
    QString error;
    if (!store.open(copy, &error))
        return 1;
    QElapsedTimer batch;
    batch.start();
    store.ingest();
    const double batchSeconds = batch.elapsed() / 1000.0;
    const double batchRate = double(total + 1) / batchSeconds;
    const double followRate = double(seen - 1) / followSeconds;

    std::printf(
        "%-58s %12s\n", "following a log written at", qPrintable(QString::number(rate) + QStringLiteral(" lines/s")));
    std::printf("%-58s %12.1f\n", "latency, line written -> visible, median (ms)", percentile(latencyMs, 0.5));
    std::printf("%-58s %12.1f\n", "latency, 99th percentile (ms)", percentile(latencyMs, 0.99));
    std::printf("%-58s %12.1f\n", "latency, max (ms)", percentile(latencyMs, 1.0));
    std::printf("%-58s %12d\n", "updates (follow ingests that brought steps)", updates);
    std::printf("%-58s %12.0f\n", "sustained ingest while written (lines/s)", followRate);
    std::printf("%-58s %12.0f\n", "reference: the complete file at once (lines/s)", batchRate);
    std::printf("%-58s %12.2f\n", "ratio: batch rate / writer rate (headroom)", batchRate / double(rate));
    std::printf("%-58s %12.1f\n", "CPU while following (% of one core)", 100.0 * followCpu / followSeconds);
    std::printf("%-58s %12.2f\n", "CPU idle, watcher on (% of one core)", 100.0 * idleCpu);
    return latencyMs.empty() ? 1 : 0;
}

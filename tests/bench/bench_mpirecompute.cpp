// `fp8scope-cli recompute --mpi` on 1 and on 2 ranks over the same dumps (generated: FILES HDF5 dump files of
// 6 tensors each, 1-2.5 M elements a tensor, gzip-compressed as the dump writer writes them, 0.8 GiB for 24), each rank
// on one CPU thread (--threads 1), every dump recomputed each time
// (--all), alternated REPEATS times: the wall time of each (mpirun started to exit), the speed-up 1 rank /
// 2 ranks (the target of issue 29: >= 1.7 on 2 cores) of the whole and of the ranks' shares alone (without
// mpirun's start and rank 0's ingest check), the ranks' balance (bytes read), and rank 0's merge
// cost (storing the results it receives) per 10^6 results. The reference, in the same run: the files split in
// two halves, each recomputed by one rank, both at once against one after the other (what two processes get
// from this machine, its cores, memory and disk shared). Asserts nothing about time.
// Usage: bench_mpirecompute [files] [repeats]   (FP8SCOPE_CLI and FP8SCOPE_MPIEXEC name the programs; ctest
// sets them)
#include "../mpienv.h"
#include "benchutil.h"

#include <QByteArray>
#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>

#include <algorithm>
#include <cstdio>
#include <thread>

namespace {

QProcessEnvironment environment()
{
    return fp8scope::testing::mpiEnvironment();
}

bool run(const QString &program, const QStringList &args, QByteArray *out = nullptr)
{
    QProcess p;
    p.setProcessEnvironment(environment());
    p.start(program, args);
    if (!p.waitForStarted() || !p.waitForFinished(1800000) || p.exitStatus() != QProcess::NormalExit
        || p.exitCode() != 0) {
        std::printf("%s failed: %s\n", qPrintable(program), p.readAllStandardError().constData());
        return false;
    }
    if (out)
        *out = p.readAllStandardOutput();
    return true;
}

} // namespace

int main(int argc, char **argv)
{
    QCoreApplication app(argc, argv);
    const int files = argc > 1 ? std::atoi(argv[1]) : 24;
    const int repeats = argc > 2 ? std::atoi(argv[2]) : 3;
    const QString cli = qEnvironmentVariable("FP8SCOPE_CLI");
    const QString mpirun = qEnvironmentVariable("FP8SCOPE_MPIEXEC");
    if (cli.isEmpty() || mpirun.isEmpty()) {
        std::printf("FP8SCOPE_CLI and FP8SCOPE_MPIEXEC must name fp8scope-cli and mpirun\n");
        return 1;
    }
    QTemporaryDir tmp;
    const QString folder = tmp.filePath(QStringLiteral("run"));
    QDir().mkpath(folder);
    for (int i = 1; i <= files; ++i) {
        if (!run(cli,
                {QStringLiteral("generate"), QStringLiteral("--rows"), QString::number(256 + 128 * (i % 4)),
                    QStringLiteral("--cols"), QStringLiteral("4096"), QStringLiteral("--seed"), QString::number(i),
                    QStringLiteral("--step"), QString::number(100 * i), folder + QStringLiteral("/dump_%1.h5").arg(i)}))
            return 1;
    }
    if (!run(cli, {QStringLiteral("ingest"), folder}))
        return 1;
    // The reference for what two processes get from this machine: the same files in two halves (odd and even),
    // each recomputed by one rank, one after the other against both at once.
    const QString halves[2] = {tmp.filePath(QStringLiteral("odd/run")), tmp.filePath(QStringLiteral("even/run"))};
    for (int h = 0; h < 2; ++h) {
        QDir().mkpath(halves[h]);
        for (int i = 1 + h; i <= files; i += 2) {
            if (!QFile::copy(
                    folder + QStringLiteral("/dump_%1.h5").arg(i), halves[h] + QStringLiteral("/dump_%1.h5").arg(i)))
                return 1;
        }
        if (!run(cli, {QStringLiteral("ingest"), halves[h]}))
            return 1;
    }
    std::printf("fp8scope MPI recompute benchmark: %d dump files x 6 tensors, recipes current and mxfp8, CPU, one "
                "thread a rank, %u hardware threads, %d alternations\n",
        files, std::thread::hardware_concurrency(), repeats);

    QJsonObject last[3];
    bool ok = true;
    const auto recompute = [&](int ranks) {
        QByteArray out;
        ok = ok
            && run(mpirun,
                {QStringLiteral("-n"), QString::number(ranks), QStringLiteral("--oversubscribe"), cli,
                    QStringLiteral("recompute"), folder, QStringLiteral("--mpi"), QStringLiteral("--all"),
                    QStringLiteral("--json"), QStringLiteral("--backend"), QStringLiteral("cpu"),
                    QStringLiteral("--threads"), QStringLiteral("1"), QStringLiteral("--recipe"),
                    QStringLiteral("current"), QStringLiteral("--recipe"), QStringLiteral("mxfp8")},
                &out);
        last[ranks] = QJsonDocument::fromJson(out).object();
    };
    const auto halfArgs = [&](const QString &f) {
        // Not bound to a core: Open MPI binds a lone rank to the first, both runs' to the same one.
        return QStringList {QStringLiteral("-n"), QStringLiteral("1"), QStringLiteral("--bind-to"),
            QStringLiteral("none"), cli, QStringLiteral("recompute"), f, QStringLiteral("--mpi"),
            QStringLiteral("--all"), QStringLiteral("--backend"), QStringLiteral("cpu"), QStringLiteral("--threads"),
            QStringLiteral("1"), QStringLiteral("--recipe"), QStringLiteral("current"), QStringLiteral("--recipe"),
            QStringLiteral("mxfp8")};
    };
    const auto together = [&] {
        QProcess a, b;
        for (QProcess *p : {&a, &b})
            p->setProcessEnvironment(environment());
        a.start(mpirun, halfArgs(halves[0]));
        b.start(mpirun, halfArgs(halves[1]));
        ok = ok && a.waitForFinished(1800000) && b.waitForFinished(1800000) && a.exitCode() == 0 && b.exitCode() == 0;
    };
    const auto oneAfterTheOther
        = [&] { ok = ok && run(mpirun, halfArgs(halves[0])) && run(mpirun, halfArgs(halves[1])); };
    together(); // warm
    const fp8scope::bench::Paired ceiling = fp8scope::bench::pairedMedians(repeats, together, oneAfterTheOther);
    recompute(2); // warm: the files in the page cache, the store's series made
    const fp8scope::bench::Paired p = fp8scope::bench::pairedMedians(
        repeats, [&] { recompute(2); }, [&] { recompute(1); });
    if (!ok)
        return 1;
    const auto bytes = [](const QJsonObject &o, int rank) {
        return o.value(QStringLiteral("ranks"))
            .toArray()
            .at(rank)
            .toObject()
            .value(QStringLiteral("bytes_read"))
            .toDouble();
    };
    const QJsonObject &two = last[2];
    const auto slowest = [](const QJsonObject &o) {
        double s = 0;
        for (const QJsonValue &r : o.value(QStringLiteral("ranks")).toArray())
            s = std::max(s, r.toObject().value(QStringLiteral("seconds")).toDouble());
        return s;
    };
    const double results = two.value(QStringLiteral("merge_results")).toDouble();
    const double merge = two.value(QStringLiteral("merge_seconds")).toDouble();
    std::printf("%-52s %10.2f s\n", "1 rank (median)", p.referenceSeconds);
    std::printf("%-52s %10.2f s\n", "2 ranks (median)", p.workSeconds);
    std::printf("%-52s %10.2f x   (target >= 1.7)\n", "speed-up 1 rank / 2 ranks (median of pairs)", p.ratio);
    std::printf("%-52s %10.2f x   (the ranks' shares alone, last run: %.2f s / %.2f s)\n",
        "speed-up of the work (1 rank / slowest of 2)", slowest(last[1]) / std::max(1e-9, slowest(two)),
        slowest(last[1]), slowest(two));
    std::printf("%-52s %10.2f x   (two 1-rank runs over the halves at once: %.2f s, one after the other: %.2f s)\n",
        "reference: what 2 processes get from this machine", ceiling.ratio, ceiling.workSeconds,
        ceiling.referenceSeconds);
    std::printf(
        "%-52s %10.0f %%\n", "the 2-rank speed-up as a share of the reference's", 100.0 * p.ratio / ceiling.ratio);
    std::printf(
        "%-52s %10.2f    (bytes read, rank 1 / rank 0)\n", "balance", bytes(two, 1) / std::max(1.0, bytes(two, 0)));
    std::printf("%-52s %10.0f     (%g results in %.3f s on rank 0)\n", "merge on rank 0, s per 10^6 results",
        results > 0 ? merge / results * 1e6 : 0.0, results, merge);
    std::printf("%-52s %10d\n", "dumps recomputed a run", two.value(QStringLiteral("recomputed")).toInt());
    return 0;
}

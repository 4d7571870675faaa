// `fp8scope-cli recompute --mpi` under mpirun (Open MPI, --oversubscribe on this 2-core machine): the store it
// writes equals a serial recompute's, series by series and bit for bit, on 2 ranks and on 3 ranks over fewer
// files than ranks; a dump that cannot be read is listed by rank 0, which exits 1 while the other dumps are
// stored, and a second run recomputes only what is missing; a rank killed mid-way takes the run down, keeps
// what rank 0 had stored, and the re-run fills in the rest. Built and run only where CMake found MPI.
#include "core/query/catalog.h"
#include "core/recompute/dumprecompute.h"
#include "mpienv.h"
#include "testmain.h"

#include <QDir>
#include <QDirIterator>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>

#include <signal.h>

using namespace fp8scope;

namespace {

// The statistics a recomputation stores per dump and recipe (storedStatistics).
const int kStatistics = int(fp8scope::storedStatistics(fp8scope::TensorMetrics {}).size());

QString cli()
{
    return qEnvironmentVariable("FP8SCOPE_CLI");
}

QString mpirun()
{
    return qEnvironmentVariable("FP8SCOPE_MPIEXEC");
}

struct Result {
    int code = -1;
    QByteArray out, err;
};

QProcessEnvironment environment()
{
    return testing::mpiEnvironment();
}

Result run(const QString &program, const QStringList &args, int timeoutMs = 180000)
{
    QProcess p;
    p.setProcessEnvironment(environment());
    p.start(program, args);
    Result r;
    if (!p.waitForStarted() || !p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = "did not finish: " + p.readAllStandardError();
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = p.readAllStandardOutput();
    r.err = p.readAllStandardError();
    return r;
}

// `fp8scope-cli recompute FOLDER --backend cpu [more]` in this process: what the MPI stores must equal.
int serialRecompute(const QString &folder, const QStringList &more = {})
{
    return run(cli(),
        QStringList {QStringLiteral("recompute"), folder, QStringLiteral("--backend"), QStringLiteral("cpu")} + more)
        .code;
}

QStringList mpiArgs(int ranks, const QString &folder, const QStringList &more = {})
{
    return QStringList {QStringLiteral("-n"), QString::number(ranks), QStringLiteral("--oversubscribe"), cli(),
               QStringLiteral("recompute"), folder, QStringLiteral("--mpi"), QStringLiteral("--backend"),
               QStringLiteral("cpu"), QStringLiteral("--threads"), QStringLiteral("1")}
    + more;
}

// `files` dumps of rising size (each a step of its own) in parent/run.
bool writeDumps(const QString &parent, int files, int rows = 128)
{
    QDir().mkpath(parent + QStringLiteral("/run"));
    for (int i = 1; i <= files; ++i) {
        const Result r = run(cli(),
            {QStringLiteral("generate"), QStringLiteral("--rows"), QString::number(rows * i), QStringLiteral("--cols"),
                QStringLiteral("256"), QStringLiteral("--seed"), QString::number(i), QStringLiteral("--step"),
                QString::number(100 * i), parent + QStringLiteral("/run/dump_%1.h5").arg(i)});
        if (r.code != 0) {
            qWarning("%s", r.err.constData());
            return false;
        }
    }
    return true;
}

bool copyTree(const QString &from, const QString &to)
{
    QDirIterator it(from, QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString path = it.next();
        if (path.contains(QLatin1String("/.fp8scope/")))
            continue;
        const QString target = to + QLatin1Char('/') + QDir(from).relativeFilePath(path);
        QDir().mkpath(QFileInfo(target).absolutePath());
        if (!QFile::copy(path, target))
            return false;
    }
    return true;
}

// Every recomputed series of the two stores, by (layer, tensor, statistic, recipe): the same steps and the
// same bits. The number of series compared, -1 (with a warning) when they differ.
int compareRecomputed(const QString &a, const QString &b)
{
    Catalog ca, cb;
    QString error;
    if (!ca.open(a, &error) || !cb.open(b, &error)) {
        qWarning("%s", qPrintable(error));
        return -1;
    }
    const auto collect = [](const Catalog &c) {
        std::map<QString, StepSeries> out;
        for (const Run &r : c.runs(false)) {
            for (const Series &s : c.series(r.ref)) {
                if (s.isRecomputed())
                    out[r.name + QLatin1Char('|') + s.layer + QLatin1Char('|') + s.tensor + QLatin1Char('|') + s.stat
                        + QLatin1Char('|') + s.recipe]
                        = c.stepSeries(s);
            }
        }
        return out;
    };
    const auto sa = collect(ca), sb = collect(cb);
    if (sa.size() != sb.size()) {
        qWarning("%zu series against %zu", sa.size(), sb.size());
        return -1;
    }
    for (const auto &[key, x] : sa) {
        const auto it = sb.find(key);
        if (it == sb.end() || it->second.steps != x.steps
            || std::memcmp(it->second.values.data(), x.values.data(), x.values.size() * sizeof(double)) != 0) {
            qWarning("%s differs", qPrintable(key));
            return -1;
        }
    }
    return int(sa.size());
}

QJsonObject json(const Result &r)
{
    return QJsonDocument::fromJson(r.out).object();
}

// The pid of the process of rank `rank` running fp8scope-cli (Open MPI puts the rank in its environment).
qint64 rankPid(int rank)
{
    const QByteArray want = "OMPI_COMM_WORLD_RANK=" + QByteArray::number(rank);
    for (const QFileInfo &d : QDir(QStringLiteral("/proc")).entryInfoList(QDir::Dirs | QDir::NoDotAndDotDot)) {
        bool isPid = false;
        const qint64 pid = d.fileName().toLongLong(&isPid);
        if (!isPid)
            continue;
        QFile cmd(d.filePath() + QStringLiteral("/cmdline")), env(d.filePath() + QStringLiteral("/environ"));
        if (!cmd.open(QIODevice::ReadOnly) || !cmd.readAll().contains("recompute") || !env.open(QIODevice::ReadOnly))
            continue;
        for (const QByteArray &v : env.readAll().split('\0')) {
            if (v == want)
                return pid;
        }
    }
    return 0;
}

} // namespace

class TestMpiRecompute : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY2(QFileInfo(cli()).isExecutable(), "FP8SCOPE_CLI names no executable");
        QVERIFY2(QFileInfo(mpirun()).isExecutable(), "FP8SCOPE_MPIEXEC names no executable");
    }

    // Two ranks over five files, three over two: the stores equal the serial recompute's.
    void equalsTheSerialRecompute()
    {
        QTemporaryDir tmp;
        QVERIFY(writeDumps(tmp.filePath(QStringLiteral("serial")), 5));
        QVERIFY(copyTree(tmp.filePath(QStringLiteral("serial")), tmp.filePath(QStringLiteral("two"))));
        const QStringList recipes {
            QStringLiteral("--recipe"), QStringLiteral("current"), QStringLiteral("--recipe"), QStringLiteral("mxfp8")};
        QCOMPARE(serialRecompute(tmp.filePath(QStringLiteral("serial/run")), recipes), 0);
        Result r = run(mpirun(),
            mpiArgs(2, tmp.filePath(QStringLiteral("two/run")), recipes + QStringList {QStringLiteral("--json")}));
        QVERIFY2(r.code == 0, r.err.constData());
        QJsonObject o = json(r);
        QCOMPARE(o.value(QStringLiteral("dumps")).toInt(), 30); // 5 files x 6 tensors
        QCOMPARE(o.value(QStringLiteral("recomputed")).toInt(), 30);
        QCOMPARE(o.value(QStringLiteral("missing")).toArray().size(), 0);
        const QJsonArray ranks = o.value(QStringLiteral("ranks")).toArray();
        QCOMPARE(ranks.size(), 2);
        // Both ranks worked, by file (six dumps each), and read about as much (the largest file first).
        int dumps = 0;
        double bytes[2] = {0, 0};
        for (int i = 0; i < 2; ++i) {
            const QJsonObject k = ranks[i].toObject();
            QCOMPARE(k.value(QStringLiteral("rank")).toInt(), i);
            QVERIFY(k.value(QStringLiteral("dumps")).toInt() > 0);
            QCOMPARE(k.value(QStringLiteral("dumps")).toInt() % 6, 0);
            dumps += k.value(QStringLiteral("dumps")).toInt();
            bytes[i] = k.value(QStringLiteral("bytes_read")).toDouble();
        }
        QCOMPARE(dumps, 30);
        QVERIFY(std::min(bytes[0], bytes[1]) / std::max(bytes[0], bytes[1]) > 0.6);
        QVERIFY(o.value(QStringLiteral("merge_results")).toInt() == 30 * 2 * kStatistics);
        QCOMPARE(compareRecomputed(tmp.filePath(QStringLiteral("serial/run")), tmp.filePath(QStringLiteral("two/run"))),
            6 * 2 * kStatistics); // 6 (layer, tensor) x 2 recipes x the statistics a recomputation stores

        // Run again: everything is there, nothing is computed.
        r = run(mpirun(), mpiArgs(2, tmp.filePath(QStringLiteral("two/run")), recipes));
        QVERIFY2(r.code == 0, r.err.constData());
        QVERIFY2(
            r.out.contains("recomputed 0 of 0 dumps") && r.out.contains("30 already in the store"), r.out.constData());

        // Three ranks, two files: one rank has nothing to do and says so.
        QTemporaryDir few;
        QVERIFY(writeDumps(few.filePath(QStringLiteral("serial")), 2));
        QVERIFY(copyTree(few.filePath(QStringLiteral("serial")), few.filePath(QStringLiteral("three"))));
        QCOMPARE(serialRecompute(few.filePath(QStringLiteral("serial/run"))), 0);
        r = run(mpirun(), mpiArgs(3, few.filePath(QStringLiteral("three/run")), {QStringLiteral("--json")}));
        QVERIFY2(r.code == 0, r.err.constData());
        o = json(r);
        QCOMPARE(o.value(QStringLiteral("recomputed")).toInt(), 12);
        int idle = 0;
        for (const QJsonValue &k : o.value(QStringLiteral("ranks")).toArray())
            idle += k.toObject().value(QStringLiteral("dumps")).toInt() == 0 ? 1 : 0;
        QCOMPARE(idle, 1);
        QCOMPARE(
            compareRecomputed(few.filePath(QStringLiteral("serial/run")), few.filePath(QStringLiteral("three/run"))),
            6 * kStatistics);
    }

    // A file whose compressed data is damaged (its size and time kept, so the index stands): its dumps fail on
    // the rank that has it, the others are stored, rank 0 lists the missing and exits 1; with the file
    // mended, the re-run computes only those.
    void failedDumpsAreListedAndFilledIn()
    {
        QTemporaryDir tmp;
        QVERIFY(writeDumps(tmp.filePath(QStringLiteral("serial")), 4));
        QVERIFY(copyTree(tmp.filePath(QStringLiteral("serial")), tmp.filePath(QStringLiteral("mpi"))));
        QCOMPARE(serialRecompute(tmp.filePath(QStringLiteral("serial/run"))), 0);
        const QString folder = tmp.filePath(QStringLiteral("mpi/run"));
        QCOMPARE(run(cli(), {QStringLiteral("ingest"), folder}).code, 0);
        const QString damaged = folder + QStringLiteral("/dump_3.h5");
        QFile f(damaged);
        const QDateTime mtime = QFileInfo(damaged).lastModified();
        QVERIFY(f.open(QIODevice::ReadWrite));
        const QByteArray original = f.readAll();
        QByteArray bad = original;
        for (qsizetype i = bad.size() / 4; i < bad.size() * 3 / 4; ++i)
            bad[i] = char(bad[i] ^ 0x5a);
        QVERIFY(f.seek(0) && f.write(bad) == bad.size());
        f.close();
        const auto setTime = [&] {
            QFile t(damaged);
            return t.open(QIODevice::ReadWrite) && t.setFileTime(mtime, QFileDevice::FileModificationTime);
        };
        QVERIFY(setTime());

        Result r = run(mpirun(), mpiArgs(2, folder, {QStringLiteral("--json")}));
        QCOMPARE(r.code, 1);
        QJsonObject o = json(r);
        const QJsonArray missing = o.value(QStringLiteral("missing")).toArray();
        QVERIFY2(!missing.isEmpty(), r.out.constData());
        for (const QJsonValue &m : missing) {
            QCOMPARE(m.toObject().value(QStringLiteral("file")).toString(), QStringLiteral("dump_3.h5"));
            QVERIFY(m.toObject().value(QStringLiteral("error")).toString().startsWith(QLatin1String("rank ")));
        }
        const int stored = o.value(QStringLiteral("recomputed")).toInt();
        QCOMPARE(stored + int(missing.size()), 24);
        // Said in words too, without --json.
        r = run(mpirun(), mpiArgs(2, folder));
        QCOMPARE(r.code, 1);
        QVERIFY2(r.err.contains("missing dump_3.h5"), r.err.constData());

        QVERIFY(f.open(QIODevice::WriteOnly) && f.write(original) == original.size());
        f.close();
        QVERIFY(setTime());
        r = run(mpirun(), mpiArgs(2, folder, {QStringLiteral("--json")}));
        QVERIFY2(r.code == 0, r.err.constData());
        o = json(r);
        QCOMPARE(o.value(QStringLiteral("already_stored")).toInt(), stored);
        QCOMPARE(o.value(QStringLiteral("recomputed")).toInt(), int(missing.size()));
        QCOMPARE(compareRecomputed(tmp.filePath(QStringLiteral("serial/run")), folder), 6 * kStatistics);
    }

    // Rank 1 killed (SIGKILL) once rank 0 has stored results: the run ends non-zero, what rank 0 stored
    // stays, and the re-run computes the rest.
    void killedRankIsFilledInByTheRerun()
    {
        QTemporaryDir tmp;
        QVERIFY(writeDumps(tmp.filePath(QStringLiteral("serial")), 6, 1024));
        QVERIFY(copyTree(tmp.filePath(QStringLiteral("serial")), tmp.filePath(QStringLiteral("mpi"))));
        QCOMPARE(serialRecompute(tmp.filePath(QStringLiteral("serial/run"))), 0);
        const QString folder = tmp.filePath(QStringLiteral("mpi/run"));
        QProcess p;
        p.setProcessEnvironment(environment());
        p.start(mpirun(), mpiArgs(2, folder));
        QVERIFY(p.waitForStarted());
        // The first progress line: rank 0 stored a result.
        QByteArray err;
        QElapsedTimer clock;
        clock.start();
        while (!err.contains("recompute: ") && clock.elapsed() < 60000 && p.state() == QProcess::Running) {
            p.waitForReadyRead(100);
            err += p.readAllStandardError();
        }
        QVERIFY2(err.contains("recompute: "), err.constData());
        QVERIFY2(!err.contains("recompute: 36/36"), "the run was over before a rank could be killed: more work");
        const qint64 pid = rankPid(1);
        QVERIFY(pid > 0);
        QCOMPARE(::kill(pid_t(pid), SIGKILL), 0);
        QVERIFY(p.waitForFinished(60000));
        QVERIFY(p.exitStatus() != QProcess::NormalExit || p.exitCode() != 0);

        const Result r = run(mpirun(), mpiArgs(2, folder, {QStringLiteral("--json")}));
        QVERIFY2(r.code == 0, r.err.constData());
        const QJsonObject o = json(r);
        const int already = o.value(QStringLiteral("already_stored")).toInt();
        QVERIFY2(already > 0 && already < 36, r.out.constData());
        QCOMPARE(already + o.value(QStringLiteral("recomputed")).toInt(), 36);
        QCOMPARE(compareRecomputed(tmp.filePath(QStringLiteral("serial/run")), folder), 6 * kStatistics);
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestMpiRecompute)
#include "tst_mpirecompute.moc"

// Hostile inputs through fp8scope-cli, each in a child process under a 2 GiB address-space limit: every one
// must end, quickly, with what is wrong reported, and the other files of its folder read. Before, the HDF5
// dataset of 2^40 elements whose chunks were never written ran for an hour, the YAML billion laughs wrote
// configs without end, a config linked to /dev/zero read until memory ran out (and the other files were then
// silently not ingested), and 30 MB of junk inside a tfevents file took 52 s to skip.
#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <hdf5.h>
#include <sys/resource.h>

#include <array>
#include <cstring>

namespace {

struct Result {
    int code = -1;
    QByteArray out;
    QByteArray err;
    double seconds = 0;
};

// fp8scope-cli under a 2 GiB address-space limit; killed after `limit` seconds (it must end well before).
Result cli(const QStringList &args, int limit = 30)
{
    QProcess p;
    p.setChildProcessModifier([] {
        const rlimit r {rlim_t(2) << 30, rlim_t(2) << 30};
        setrlimit(RLIMIT_AS, &r);
    });
    QElapsedTimer t;
    t.start();
    p.start(qEnvironmentVariable("FP8SCOPE_CLI"), args);
    const bool ended = p.waitForFinished(limit * 1000);
    if (!ended)
        p.kill();
    p.waitForFinished();
    Result r {ended && p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
        p.readAllStandardError(), double(t.elapsed()) / 1000.0};
    qInfo("fp8scope-cli %s: exit %d in %.2f s", qPrintable(args.first()), r.code, r.seconds);
    return r;
}

void write(const QString &path, const QByteArray &bytes)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QCOMPARE(f.write(bytes), bytes.size());
}

uint32_t crc32c(const char *data, size_t n)
{
    static const std::array<uint32_t, 256> table = [] {
        std::array<uint32_t, 256> t {};
        for (uint32_t i = 0; i < 256; ++i) {
            uint32_t c = i;
            for (int k = 0; k < 8; ++k)
                c = c & 1 ? 0x82F63B78u ^ (c >> 1) : c >> 1;
            t[i] = c;
        }
        return t;
    }();
    uint32_t c = 0xFFFFFFFFu;
    for (size_t i = 0; i < n; ++i)
        c = table[(c ^ uchar(data[i])) & 0xFF] ^ (c >> 8);
    return c ^ 0xFFFFFFFFu;
}

QByteArray le(uint64_t v, int bytes)
{
    QByteArray b;
    for (int i = 0; i < bytes; ++i)
        b += char((v >> (8 * i)) & 0xFF);
    return b;
}

uint32_t masked(const QByteArray &b)
{
    const uint32_t c = crc32c(b.constData(), size_t(b.size()));
    return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

// One TFRecord holding an Event with one scalar summary value.
QByteArray scalarRecord(int64_t step, const QByteArray &tag, float value)
{
    QByteArray v = "\x0a" + QByteArray(1, char(tag.size())) + tag + "\x15";
    uint32_t bits;
    std::memcpy(&bits, &value, 4);
    v += le(bits, 4);
    const QByteArray summary = "\x0a" + QByteArray(1, char(v.size())) + v;
    const QByteArray event
        = "\x10" + QByteArray(1, char(step)) + "\x2a" + QByteArray(1, char(summary.size())) + summary;
    const QByteArray len = le(uint64_t(event.size()), 8);
    return len + le(masked(len), 4) + event + le(masked(event), 4);
}

} // namespace

class TestHostile : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void unwrittenHdf5Chunks();
    void yamlBillionLaughs();
    void configLinkedToAnEndlessStream();
    void junkInsideATfeventsFile();
};

void TestHostile::unwrittenHdf5Chunks()
{
    // 2^20 x 2^20 float32 in 1024 x 1024 chunks, none of them written: a file of a few KB.
    QTemporaryDir dir;
    const QString path = dir.filePath(QStringLiteral("dump.h5"));
    const hid_t file = H5Fcreate(QFile::encodeName(path).constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    QVERIFY(file >= 0);
    const hsize_t dims[2] = {hsize_t(1) << 20, hsize_t(1) << 20};
    const hsize_t chunk[2] = {1024, 1024};
    const hid_t space = H5Screate_simple(2, dims, nullptr);
    const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
    H5Pset_chunk(dcpl, 2, chunk);
    const hid_t ds = H5Dcreate2(file, "huge", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    QVERIFY(ds >= 0);
    H5Dclose(ds);
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Fclose(file);
    QVERIFY(QFileInfo(path).size() < 64 * 1024);
    Result r = cli(
        {QStringLiteral("stats"), path + QStringLiteral(":huge"), QStringLiteral("--backend"), QStringLiteral("cpu")});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("chunks were never written"), r.err.constData());
    QVERIFY2(r.seconds < 10, qPrintable(QString::number(r.seconds)));
    // In a run folder: the dump is not indexed (a problem says why) and recompute ends at once.
    write(dir.filePath(QStringLiteral("metrics.csv")), "step,loss\n1,2\n");
    r = cli({QStringLiteral("ingest"), dir.path(), QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    const QJsonArray problems = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("problems")).toArray();
    QCOMPARE(problems.size(), 1);
    QVERIFY(
        problems[0].toObject().value(QStringLiteral("message")).toString().contains(QLatin1String("never written")));
    r = cli({QStringLiteral("recompute"), dir.path(), QStringLiteral("--backend"), QStringLiteral("cpu")});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("no tensor dumps indexed"), r.err.constData());
    QVERIFY(r.seconds < 10);
}

void TestHostile::yamlBillionLaughs()
{
    QTemporaryDir dir;
    QByteArray yaml = "a: &a [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n";
    for (char c = 'b'; c <= 'i'; ++c)
        yaml += QByteArray(1, c) + ": &" + QByteArray(1, c) + " [*" + QByteArray(1, char(c - 1)) + ",*"
            + QByteArray(1, char(c - 1)) + ",*" + QByteArray(1, char(c - 1)) + ",*" + QByteArray(1, char(c - 1)) + ",*"
            + QByteArray(1, char(c - 1)) + ",*" + QByteArray(1, char(c - 1)) + ",*" + QByteArray(1, char(c - 1)) + ",*"
            + QByteArray(1, char(c - 1)) + ",*" + QByteArray(1, char(c - 1)) + "]\n";
    QVERIFY(yaml.size() < 1000);
    write(dir.filePath(QStringLiteral("config.yaml")), yaml);
    // Deep nesting too: yaml-cpp's parser recursed until the stack ran out.
    write(dir.filePath(QStringLiteral("deep.yaml")), "x: " + QByteArray(100000, '[') + QByteArray(100000, ']') + "\n");
    // And by indentation, which yaml-cpp stops at 500 levels with "bad file".
    QByteArray indented;
    for (int i = 0; i < 600; ++i)
        indented += QByteArray(i, ' ') + "k" + QByteArray::number(i) + ":\n";
    write(dir.filePath(QStringLiteral("indented.yaml")), indented + QByteArray(600, ' ') + "v\n");
    write(dir.filePath(QStringLiteral("metrics.csv")), "step,loss\n1,2\n");
    const Result r = cli({QStringLiteral("ingest"), dir.path(), QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    QVERIFY(r.seconds < 10);
    const QJsonObject doc = QJsonDocument::fromJson(r.out).object();
    QStringList said;
    for (const auto &p : doc.value(QStringLiteral("problems")).toArray())
        said << p.toObject().value(QStringLiteral("file")).toString() + QLatin1String(": ")
                + p.toObject().value(QStringLiteral("message")).toString();
    said.sort();
    QCOMPARE(said.size(), 3);
    QVERIFY2(said[0].startsWith(QLatin1String("config.yaml: more than 50000 config keys")), qPrintable(said[0]));
    QVERIFY2(said[1].startsWith(QLatin1String("deep.yaml: YAML nested deeper than 64")), qPrintable(said[1]));
    QVERIFY2(said[2].startsWith(QLatin1String("indented.yaml: YAML nested deeper than 64")), qPrintable(said[2]));
    QCOMPARE(
        doc.value(QStringLiteral("runs")).toArray().at(0).toObject().value(QStringLiteral("points")).toDouble(), 1.0);
}

void TestHostile::configLinkedToAnEndlessStream()
{
    // Names a config importer takes, linked to /dev/zero: never read (an endless stream), reported, and the
    // folder's other files are read.
    QTemporaryDir dir;
    for (const char *name : {"config.yaml", "config.json", "results.json"})
        QVERIFY(QFile::link(QStringLiteral("/dev/zero"), dir.filePath(QLatin1String(name))));
    write(dir.filePath(QStringLiteral("metrics.csv")), "step,loss\n1,2\n2,1\n");
    const Result r = cli({QStringLiteral("ingest"), dir.path(), QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    QVERIFY(r.seconds < 10);
    const QJsonObject doc = QJsonDocument::fromJson(r.out).object();
    const QJsonArray unreadable = doc.value(QStringLiteral("unreadable")).toArray();
    QCOMPARE(unreadable.size(), 3);
    for (const auto &u : unreadable)
        QVERIFY(u.toObject().value(QStringLiteral("reason")).toString().contains(QLatin1String("/dev/zero")));
    QCOMPARE(
        doc.value(QStringLiteral("runs")).toArray().at(0).toObject().value(QStringLiteral("points")).toDouble(), 2.0);
    // The text output says so too.
    const Result text = cli({QStringLiteral("ingest"), dir.path()});
    QVERIFY2(text.out.contains("unread   config.yaml: a link to /dev/zero, which is not a regular file"),
        text.out.constData());
}

void TestHostile::junkInsideATfeventsFile()
{
    QTemporaryDir dir;
    QByteArray junk(30 << 20, '\0');
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (qsizetype i = 0; i < junk.size(); ++i) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        junk[i] = char(x >> 56);
    }
    write(dir.filePath(QStringLiteral("events.out.tfevents.1.host.0")),
        scalarRecord(1, "loss", 2.5f) + junk + scalarRecord(2, "loss", 2.25f));
    const Result r = cli({QStringLiteral("ingest"), dir.path(), QStringLiteral("--json")});
    QCOMPARE(r.code, 0);
    QVERIFY2(r.seconds < 10, qPrintable(QString::number(r.seconds)));
    const QJsonObject doc = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(
        doc.value(QStringLiteral("runs")).toArray().at(0).toObject().value(QStringLiteral("points")).toDouble(), 2.0);
    const QJsonArray problems = doc.value(QStringLiteral("problems")).toArray();
    QCOMPARE(problems.size(), 1);
    QCOMPARE(problems[0].toObject().value(QStringLiteral("offset")).toDouble(),
        double(scalarRecord(1, "loss", 2.5f).size()));
}

QTEST_GUILESS_MAIN(TestHostile)
#include "tst_hostile.moc"

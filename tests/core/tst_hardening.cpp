// Classes of input that real runs and hostile files bring, each read as what it says or reported with where:
// launcher-prefixed Megatron lines, table headers past the scanner's head, names that are not UTF-8, lines
// with invalid UTF-8 or a damaged separator, deleted and rewritten files, and what a busy or damaged store
// answers.
#include "storeaccess.h"

#include "core/importers/folderscanner.h"
#include "core/importers/linereader.h"
#include "core/query/catalog.h"
#include "core/store/runstore.h"

#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>

using namespace fp8scope;

namespace {

void write(const QString &path, const QByteArray &bytes)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QCOMPARE(f.write(bytes), bytes.size());
}

// The points of a run-level or per-layer series of the folder's only run, by step (empty when none).
std::map<int64_t, double> points(const QString &folder, const QString &stat, const QString &layer = QString(),
    const QString &tensor = QString(), const QString &source = QString())
{
    Catalog c;
    QString error;
    std::map<int64_t, double> out;
    if (!c.open(folder, &error))
        return out;
    for (const Run &r : c.runs()) {
        if (const auto s = c.chooseSeries(r.ref, {.stat = stat, .layer = layer, .tensor = tensor, .source = source})) {
            for (const SeriesPoint &p : c.points(*s))
                out[p.step] = p.value;
        }
    }
    return out;
}

IngestReport ingest(const QString &folder)
{
    RunStore s;
    QString error;
    if (!s.open(folder, &error))
        return {};
    return s.ingest();
}

QStringList problems(const QString &folder)
{
    RunStore s;
    QString error;
    QStringList out;
    if (!s.open(folder, &error))
        return out;
    for (const ProblemRecord &p : s.problems())
        out << QStringLiteral("%1:%2: %3").arg(p.file).arg(p.line).arg(p.message);
    return out;
}

} // namespace

class TestHardening : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void megatronLinesBehindLauncherPrefixes();
    void tableHeaderLongerThanTheHead();
    void namesThatAreNotUtf8();
    void linesWithInvalidUtf8OrADamagedSeparator();
    void utf8Validation();
    void deletedFilesTakeWhatTheyWrote();
    void rewrittenFilesAreReadAgain();
    void sharedSeriesSurviveARewrite();
};

void TestHardening::megatronLinesBehindLauncherPrefixes()
{
    // A timestamp before the line, srun -l's rank, torchrun's [defaultN]:, and both: every line is read.
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("train.out")),
        " [2026-01-15 23:06:01] iteration        1/    1000 | lm loss: 1.100000E+01 | grad norm: 2.0 |\n"
        "0:  iteration        2/    1000 | lm loss: 1.090000E+01 |\n"
        "[default0]: iteration        3/    1000 | lm loss: 1.080000E+01 |\n"
        "[default3]:[2026-01-15 23:06:04] iteration        4/    1000 | lm loss: 1.070000E+01 |\n"
        "12: [rank12]: validation loss at iteration 4 | lm loss value: 1.060000E+01 |\n"
        "0: ------------------------ arguments ------------------------\n"
        "0:   num_layers ...................................... 24\n"
        "0: -------------------- end of arguments ---------------------\n"
        "saving checkpoint at iteration 4 to /ckpt\n");
    const IngestReport report = ingest(dir.path());
    QCOMPARE(report.filesRead, 1);
    QCOMPARE(report.problems, 0);
    const auto loss = points(dir.path(), QStringLiteral("lm loss"));
    QCOMPARE(loss.size(), size_t(4));
    QCOMPARE(loss.at(1), 11.0);
    QCOMPARE(loss.at(4), 10.7);
    QCOMPARE(points(dir.path(), QStringLiteral("validation loss")).at(4), 10.6);
    Catalog c;
    QString error;
    QVERIFY(c.open(dir.path(), &error));
    const auto configs = c.configs(c.runs().front().ref);
    QCOMPARE(configs.size(), size_t(1));
    QCOMPARE(configs.front().key, QStringLiteral("num_layers"));
}

void TestHardening::tableHeaderLongerThanTheHead()
{
    // A W&B history export with 300 columns: its header is past the 4 KiB the scanner looked at.
    QTemporaryDir dir;
    QByteArray header = "_step";
    QByteArray row = "7";
    for (int c = 0; c < 300; ++c) {
        header += ",train/metric_number_" + QByteArray::number(c);
        row += ',' + QByteArray::number(c * 0.5);
    }
    header += ",train/loss";
    row += ",2.5";
    QVERIFY(header.size() > kHeadBytes);
    write(dir.filePath(QStringLiteral("history_abc.csv")), header + '\n' + row + '\n');
    write(dir.filePath(QStringLiteral("notes.md")), "# not a format\n");
    const IngestReport report = ingest(dir.path());
    QCOMPARE(report.filesRead, 1);
    QCOMPARE(report.unrecognised, QStringList {QStringLiteral("notes.md")});
    QCOMPARE(points(dir.path(), QStringLiteral("lm loss")).at(7), 2.5);
    // The CLI says which files it skipped, in text too.
    QProcess cli;
    cli.start(qEnvironmentVariable("FP8SCOPE_CLI"), {QStringLiteral("ingest"), dir.path()});
    QVERIFY(cli.waitForFinished(60000));
    const QByteArray out = cli.readAllStandardOutput();
    QVERIFY2(out.contains("skipped  1 file(s) in no format fp8scope reads:\n         notes.md\n"), out.constData());
}

void TestHardening::namesThatAreNotUtf8()
{
    // A file and a folder whose names hold a byte that is not UTF-8: each is reported, not silently left out.
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("ok.csv")), "step,loss\n1,2\n");
    const QByteArray base = QFile::encodeName(dir.path());
    const QByteArray badFile = base + "/bad\xff.csv";
    const int fd = ::open(badFile.constData(), O_CREAT | O_WRONLY, 0644);
    QVERIFY(fd >= 0);
    QCOMPARE(::write(fd, "step,loss\n1,3\n", 14), ssize_t(14));
    ::close(fd);
    const QByteArray badDir = base + "/run\xfe";
    QCOMPARE(::mkdir(badDir.constData(), 0755), 0);
    const IngestReport report = ingest(dir.path());
    ::unlink(badFile.constData());
    ::rmdir(badDir.constData());
    QCOMPARE(report.filesRead, 1);
    QCOMPARE(report.unreadable.size(), size_t(2));
    QStringList said;
    for (const auto &[path, why] : report.unreadable)
        said << path + QLatin1String(": ") + why;
    said.sort();
    QCOMPARE(said,
        (QStringList {QStringLiteral("bad\\xFF.csv: the file's name is not valid UTF-8, so it is not read; rename it"),
            QStringLiteral("run\\xFE: the folder's name is not valid UTF-8, so nothing in it is read; rename it")}));
}

void TestHardening::linesWithInvalidUtf8OrADamagedSeparator()
{
    // Two layer names that differ only in an invalid byte no longer merge into one series: both lines are
    // reported and skipped. A NUL in " - INFO - " does not make the timestamp part of a layer name.
    QTemporaryDir dir;
    QByteArray log = "2026-01-15 23:06:41,584 - INFO - layers.0.fc1_activation_mse \t iteration=000001 \t value=1.0\n";
    log += "2026-01-15 23:06:41,584 - INFO - layers.\xff.fc1_activation_mse \t iteration=000001 \t value=2.0\n";
    log += "2026-01-15 23:06:41,584 - INFO - layers.\xfe.fc1_activation_mse \t iteration=000001 \t value=3.0\n";
    // A NUL inside the level: the name still follows the last " - ".
    QByteArray damaged = "2026-01-15 23:06:41,584 - INFO - layers.1.fc1_activation_mse \t iteration=000001 \t value=4.0\n";
    damaged[damaged.indexOf("INFO") + 2] = '\0';
    log += damaged;
    // A NUL in the separator itself: what is before iteration= is no name.
    QByteArray broken = "2026-01-15 23:06:41,584 - INFO - layers.3.fc1_activation_mse \t iteration=000001 \t value=6.0\n";
    broken[broken.indexOf(" layers.3")] = '\0';
    log += broken;
    log += "2026-01-15 23:06:41,584 - WARNING - layers.2.fc1_activation_mse \t iteration=000001 \t value=5.0\n";
    write(dir.filePath(QStringLiteral("nvdlfw_inspect_globalrank-0.log")), log);
    ingest(dir.path());
    const QStringList p = problems(dir.path());
    QVERIFY2(p.size() == 3, qPrintable(p.join(QLatin1Char('\n'))));
    QVERIFY2(p[0].endsWith(QLatin1String(":2: invalid UTF-8; line skipped")), qPrintable(p[0]));
    QVERIFY2(p[1].endsWith(QLatin1String(":3: invalid UTF-8; line skipped")), qPrintable(p[1]));
    QVERIFY2(p[2].contains(QLatin1String(":5: no statistic name before 'iteration='")), qPrintable(p[2]));
    Catalog c;
    QString error;
    QVERIFY(c.open(dir.path(), &error));
    QStringList layers;
    for (const LayerTensors &l : c.layerTensors())
        layers << l.layer;
    QCOMPARE(layers,
        (QStringList {QStringLiteral("layers.0.fc1"), QStringLiteral("layers.1.fc1"), QStringLiteral("layers.2.fc1")}));
}

void TestHardening::utf8Validation()
{
    QVERIFY(isValidUtf8("plain ascii"));
    QVERIFY(isValidUtf8("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80"));
    QVERIFY(!isValidUtf8("\xff"));
    QVERIFY(!isValidUtf8("\xc0\xaf")); // overlong '/'
    QVERIFY(!isValidUtf8("\xe0\x80\xaf")); // overlong
    QVERIFY(!isValidUtf8("\xed\xa0\x80")); // a surrogate
    QVERIFY(!isValidUtf8("\xf4\x90\x80\x80")); // past U+10FFFF
    QVERIFY(!isValidUtf8("\xe2\x82")); // cut short
    QVERIFY(!isValidUtf8("a\x80"));
}

void TestHardening::deletedFilesTakeWhatTheyWrote()
{
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("a.csv")), "step,loss\n1,2\n2,1.5\n");
    write(dir.filePath(QStringLiteral("b.csv")), "step,grad\n1,0.5\n");
    QCOMPARE(ingest(dir.path()).filesRead, 2);
    QCOMPARE(points(dir.path(), QStringLiteral("loss")).size(), size_t(2));
    QVERIFY(QFile::remove(dir.filePath(QStringLiteral("a.csv"))));
    const IngestReport again = ingest(dir.path());
    QCOMPARE(again.filesDeleted, 1);
    QVERIFY(points(dir.path(), QStringLiteral("loss")).empty());
    QCOMPARE(points(dir.path(), QStringLiteral("grad")).size(), size_t(1));
    // A run whose every file went goes too.
    write(dir.filePath(QStringLiteral("x/m.csv")), "step,loss\n1,2\n");
    write(dir.filePath(QStringLiteral("y/m.csv")), "step,loss\n1,3\n");
    write(dir.filePath(QStringLiteral("z/m.csv")), "step,loss\n1,4\n");
    QVERIFY(QFile::remove(dir.filePath(QStringLiteral("b.csv"))));
    ingest(dir.path());
    QDir(dir.filePath(QStringLiteral("y"))).removeRecursively();
    ingest(dir.path());
    Catalog c;
    QString error;
    QVERIFY(c.open(dir.path(), &error));
    QStringList names;
    for (const Run &r : c.runs())
        names << r.name;
    QCOMPARE(names, (QStringList {QStringLiteral("x"), QStringLiteral("z")}));
}

void TestHardening::rewrittenFilesAreReadAgain()
{
    QTemporaryDir dir;
    const QString log = dir.filePath(QStringLiteral("train.out"));
    // A first 4 KiB that a rewrite keeps: a long run of lines no importer cares about.
    QByteArray head;
    while (head.size() < 5000)
        head += "> building the data loader, please wait ...\n";
    QByteArray lines = head;
    for (int i = 1; i <= 50; ++i)
        lines += " iteration " + QByteArray::number(i) + "/ 100 | lm loss: " + QByteArray::number(10.0 - i * 0.01) + " |\n";
    write(log, lines);
    ingest(dir.path());
    QCOMPARE(points(dir.path(), QStringLiteral("lm loss")).size(), size_t(50));
    // Rewritten shorter: the old tail goes.
    QByteArray shorter = head;
    for (int i = 1; i <= 20; ++i)
        shorter += " iteration " + QByteArray::number(i) + "/ 100 | lm loss: " + QByteArray::number(5.0) + " |\n";
    write(log, shorter);
    QCOMPARE(ingest(dir.path()).filesRead, 1);
    auto loss = points(dir.path(), QStringLiteral("lm loss"));
    QCOMPARE(loss.size(), size_t(20));
    QCOMPARE(loss.at(20), 5.0);
    // Rewritten longer with the same first 4 KiB but other values before the old end: read again, not
    // resumed from the old offset.
    QByteArray longer = head;
    for (int i = 1; i <= 30; ++i)
        longer += " iteration " + QByteArray::number(i) + "/ 100 | lm loss: " + QByteArray::number(7.0) + " |\n";
    write(log, longer);
    const IngestReport third = ingest(dir.path());
    QCOMPARE(third.filesResumed, 0);
    QCOMPARE(third.filesRead, 1);
    loss = points(dir.path(), QStringLiteral("lm loss"));
    QCOMPARE(loss.size(), size_t(30));
    QCOMPARE(loss.at(1), 7.0);
    // A log that grew is still read on from where it stopped.
    QFile f(log);
    QVERIFY(f.open(QIODevice::Append));
    f.write(" iteration 31/ 100 | lm loss: 6.0 |\n");
    f.close();
    const IngestReport grown = ingest(dir.path());
    QCOMPARE(grown.filesResumed, 1);
    QCOMPARE(points(dir.path(), QStringLiteral("lm loss")).at(31), 6.0);
}

void TestHardening::sharedSeriesSurviveARewrite()
{
    // Two logs of one run (a restart) write the same series: rewriting one keeps the other's points.
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("train_1.out")),
        " iteration 1/ 100 | lm loss: 9.0 |\n iteration 2/ 100 | lm loss: 8.5 |\n");
    write(dir.filePath(QStringLiteral("train_2.out")),
        " iteration 3/ 100 | lm loss: 8.0 |\n iteration 4/ 100 | lm loss: 7.5 |\n");
    ingest(dir.path());
    QCOMPARE(points(dir.path(), QStringLiteral("lm loss")).size(), size_t(4));
    write(dir.filePath(QStringLiteral("train_1.out")), " iteration 1/ 100 | lm loss: 9.9 |\n");
    ingest(dir.path());
    const auto loss = points(dir.path(), QStringLiteral("lm loss"));
    QCOMPARE(loss.size(), size_t(3));
    QCOMPARE(loss.at(1), 9.9);
    QCOMPARE(loss.at(3), 8.0);
    QCOMPARE(loss.at(4), 7.5);
    // And deleting it keeps them too.
    QVERIFY(QFile::remove(dir.filePath(QStringLiteral("train_1.out"))));
    ingest(dir.path());
    QCOMPARE(points(dir.path(), QStringLiteral("lm loss")), (std::map<int64_t, double> {{3, 8.0}, {4, 7.5}}));
}

QTEST_GUILESS_MAIN(TestHardening)
#include "tst_hardening.moc"

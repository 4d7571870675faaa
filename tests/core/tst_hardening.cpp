// Classes of input that real runs and hostile files bring, each read as what it says or reported with where:
// launcher-prefixed Megatron lines, table headers past the scanner's head, names that are not UTF-8, lines
// with invalid UTF-8 or a damaged separator, deleted and rewritten files, and what a busy or damaged store
// answers.
#include "folderfixture.h"
#include "storeaccess.h"

#include "core/importers/folderscanner.h"
#include "core/importers/linereader.h"
#include "core/query/catalog.h"
#include "core/store/runstore.h"
#include "core/tensors/tensorreader.h"

#include <QCoreApplication>
#include <QDir>
#include <QFile>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <fcntl.h>
#include <hdf5.h>
#include <sys/stat.h>
#include <sys/wait.h>
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
    return s.open(folder, &error) ? testing::problemTexts(s) : QStringList();
}

} // namespace

class TestHardening : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void megatronLinesBehindLauncherPrefixes();
    void megatronLogThatRewinds();
    void megatronValuesThatAreNotFinite();
    void jsonCutShort();
    void tableHeaderLongerThanTheHead();
    void namesThatAreNotUtf8();
    void linesWithInvalidUtf8OrADamagedSeparator();
    void utf8Validation();
    void deletedFilesTakeWhatTheyWrote();
    void rewrittenFilesAreReadAgain();
    void sharedSeriesSurviveARewrite();
    void damagedStoreIsDetectedAndRebuilt();
    void rebuildKilledAtAnyPointKeepsTheReviews();
    void storeOfASchemaNoFp8scopeWrote();
    void busyStoreSaysByWhom();
    void perLayerStatisticWithoutALayer();
    void messagesSayWhatIsWrong();
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
    // The arguments block's key, and the plan every line prints ("iteration N/ M": train_iters, issue 54).
    QCOMPARE(configs.size(), size_t(2));
    QCOMPARE(configs.front().key, QStringLiteral("num_layers"));
    QCOMPARE(configs.back().key, QStringLiteral("train_iters"));
    QCOMPARE(configs.back().value, QStringLiteral("1000"));
}

void TestHardening::megatronLogThatRewinds()
{
    // A crash at step 40 and a resume from the checkpoint of step 20 in the same log, then a second resume
    // whose checkpoint line is missing; two ranks printing the same iteration are no rewind. The repeated
    // steps read as the resumed run printed them; each rewind is a point of "rewind" at the step it went back
    // to (the checkpoint's, else the first printed after it), whose value is the last step before it.
    QTemporaryDir dir;
    QByteArray log;
    const auto line = [](int step, double loss) -> QByteArray {
        return " iteration " + QByteArray::number(step).rightJustified(8, ' ')
            + "/     100 | lm loss: " + QByteArray::number(loss, 'E', 6) + " |\n";
    };
    for (int step = 10; step <= 40; step += 10)
        log += line(step, 10.0 - step / 10.0);
    log += line(40, 6.0); // another rank, the same iteration
    log += "RuntimeError: NCCL communicator was aborted\n loading checkpoint from /ckpt at iteration 20\n"
           "  successfully loaded checkpoint from /ckpt [ t 1/1, p 1/1 ] at iteration 20\n";
    for (int step = 30; step <= 60; step += 10)
        log += line(step, 5.0 - step / 100.0);
    for (int step = 50; step <= 70; step += 10) // resumed again, its checkpoint line lost
        log += line(step, 4.0 - step / 100.0);
    // A crash right after step 70 was printed, resumed from step 60: step 70 is printed again.
    log += "  successfully loaded checkpoint from /ckpt [ t 1/1, p 1/1 ] at iteration 60\n" + line(70, 3.0);
    write(dir.filePath(QStringLiteral("train.log")), log);
    const IngestReport report = ingest(dir.path());
    QCOMPARE(report.filesRead, 1);
    QCOMPARE(report.problems, 0);
    const auto loss = points(dir.path(), QStringLiteral("lm loss"));
    QCOMPARE(loss.size(), size_t(7));
    QCOMPARE(loss.at(20), 8.0); // printed once
    QCOMPARE(loss.at(30), 4.7); // the resumed run's, not the first 7.0
    QCOMPARE(loss.at(40), 4.6);
    QCOMPARE(loss.at(50), 3.5); // the second resume's
    QCOMPARE(loss.at(70), 3.0);
    const auto rewinds = points(dir.path(), QStringLiteral("rewind"));
    QCOMPARE(rewinds.size(), size_t(3));
    QCOMPARE(rewinds.at(20), 40.0);
    QCOMPARE(rewinds.at(50), 60.0);
    QCOMPARE(rewinds.at(60), 70.0);
}

void TestHardening::megatronValuesThatAreNotFinite()
{
    // `grad norm: nan` (a step whose gradients overflowed) and `lm loss: inf`: stored as they are (missing
    // values to the curves and the triage) and each line said once, with its fields, as a problem.
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("train.log")),
        " iteration       10/     100 | lm loss: 1.000000E+01 | grad norm: 2.0 |\n"
        " iteration       20/     100 | lm loss: 9.000000E+00 | grad norm: nan |\n"
        " iteration       30/     100 | lm loss: inf | grad norm: nan |\n"
        " validation loss at iteration 30 | lm loss value: nan |\n");
    const IngestReport report = ingest(dir.path());
    QCOMPARE(report.filesRead, 1);
    QCOMPARE(report.problems, 3);
    const QStringList said = problems(dir.path());
    QVERIFY2(said.contains(QStringLiteral("train.log:2: iteration 20: grad norm nan (not a finite number)")),
        qPrintable(said.join(QLatin1Char('\n'))));
    QVERIFY(
        said.contains(QStringLiteral("train.log:3: iteration 30: lm loss inf, grad norm nan (not a finite number)")));
    QVERIFY(
        said.contains(QStringLiteral("train.log:4: iteration 30: validation lm loss value nan (not a finite number)")));
    const auto grad = points(dir.path(), QStringLiteral("grad norm"));
    QCOMPARE(grad.size(), size_t(3));
    QCOMPARE(grad.at(10), 2.0);
    QVERIFY(std::isnan(grad.at(20)));
    QVERIFY(std::isinf(points(dir.path(), QStringLiteral("lm loss")).at(30)));
}

void TestHardening::jsonCutShort()
{
    // An lm-eval results file cut short (a copy that stopped): said as such, with where it stops; a JSON error
    // with more after it stays a plain syntax error.
    QTemporaryDir dir;
    const QByteArray whole = R"({"results": {"arc_easy": {"acc,none": 0.5, "acc_stderr,none": 0.01}}, )"
                             R"("config": {"model_args": "dtype=bfloat16"}})";
    write(dir.filePath(QStringLiteral("results_cut.json")), whole.left(90) + "\n");
    write(dir.filePath(QStringLiteral("results_bad.json")), QByteArray(whole).replace("0.5,", "0.5,,"));
    ingest(dir.path());
    const QStringList said = problems(dir.path());
    QCOMPARE(said.size(), 2);
    const QString cut = said.filter(QStringLiteral("results_cut.json")).value(0);
    QVERIFY2(cut.contains(QStringLiteral("the file ends before its JSON does"))
            && cut.endsWith(QStringLiteral("at byte 91 of 91")),
        qPrintable(cut));
    const QString bad = said.filter(QStringLiteral("results_bad.json")).value(0);
    QVERIFY2(bad.contains(QStringLiteral("invalid JSON")), qPrintable(bad));
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
    QByteArray damaged
        = "2026-01-15 23:06:41,584 - INFO - layers.1.fc1_activation_mse \t iteration=000001 \t value=4.0\n";
    damaged[damaged.indexOf("INFO") + 2] = '\0';
    log += damaged;
    // A NUL in the separator itself: what is before iteration= is no name.
    QByteArray broken
        = "2026-01-15 23:06:41,584 - INFO - layers.3.fc1_activation_mse \t iteration=000001 \t value=6.0\n";
    broken[broken.indexOf(" layers.3")] = '\0';
    log += broken;
    log += "2026-01-15 23:06:41,584 - WARNING - layers.2.fc1_activation_mse \t iteration=000001 \t value=5.0\n";
    write(dir.filePath(QStringLiteral("nvdlfw_inspect_globalrank-0.log")), log);
    ingest(dir.path());
    const QStringList p = problems(dir.path());
    // The two lines of invalid UTF-8 are one class of problem: said once, with the count and the last line.
    QVERIFY2(p.size() == 2, qPrintable(p.join(QLatin1Char('\n'))));
    QVERIFY2(
        p[0].endsWith(QLatin1String(":2: invalid UTF-8; line skipped (and 1 more line like it, the last at line 3)")),
        qPrintable(p[0]));
    QVERIFY2(p[1].contains(QLatin1String(":5: no statistic name before 'iteration='")), qPrintable(p[1]));
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
    // Past the eight-byte ASCII fast path, on either side of a word boundary.
    QVERIFY(isValidUtf8("0123456789abcdef caf\xc3\xa9 0123456789"));
    QVERIFY(!isValidUtf8("0123456789abcdef\xff"));
    QVERIFY(!isValidUtf8("01234567\xc3("));
    QVERIFY(!isValidUtf8("0123456\xe2\x82"));
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
        lines += " iteration " + QByteArray::number(i) + "/ 100 | lm loss: " + QByteArray::number(10.0 - i * 0.01)
            + " |\n";
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

void TestHardening::damagedStoreIsDetectedAndRebuilt()
{
    QTemporaryDir dir;
    QByteArray csv = "step,loss\n";
    for (int s = 0; s < 20000; ++s)
        csv += QByteArray::number(s) + ',' + QByteArray::number(1.0 / (s + 1)) + '\n';
    write(dir.filePath(QStringLiteral("metrics.csv")), csv);
    QCOMPARE(ingest(dir.path()).filesRead, 1);
    const QString store = RunStore::storePathFor(dir.path());
    QVERIFY(
        !QFileInfo::exists(store + QStringLiteral("-wal")) || QFileInfo(store + QStringLiteral("-wal")).size() == 0);
    // Damage pages in the middle of the file.
    {
        QFile f(store);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.size() > 6 * 16384);
        QVERIFY(f.seek(3 * 16384));
        f.write(QByteArray(2 * 16384, '\xA5'));
    }
    RunStore damaged;
    QString error;
    QVERIFY(!damaged.open(dir.path(), &error));
    QVERIFY2(error.startsWith(store) && error.contains(QLatin1String("the store is damaged"))
            && error.contains(QLatin1String("fp8scope-cli ingest --rebuild")),
        qPrintable(error));
    // The CLI says the same and exits non-zero; --rebuild reads the folder again into a new store.
    QProcess cli;
    cli.start(qEnvironmentVariable("FP8SCOPE_CLI"), {QStringLiteral("runs"), dir.path()});
    QVERIFY(cli.waitForFinished(60000));
    QCOMPARE(cli.exitCode(), 1);
    QVERIFY(cli.readAllStandardError().contains("the store is damaged"));
    cli.start(
        qEnvironmentVariable("FP8SCOPE_CLI"), {QStringLiteral("ingest"), dir.path(), QStringLiteral("--rebuild")});
    QVERIFY(cli.waitForFinished(60000));
    QCOMPARE(cli.exitCode(), 0);
    QCOMPARE(points(dir.path(), QStringLiteral("loss")).size(), size_t(20000));
}

// A rebuild killed at any point between two of its steps (a child process that _exits there) leaves a store that
// opens and holds the two reviews and the choice of candidate: the old store or the new one, never neither.
void TestHardening::rebuildKilledAtAnyPointKeepsTheReviews()
{
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("metrics.csv")), "step,loss\n1,3.5\n2,3.25\n3,3.0\n");
    QCOMPARE(ingest(dir.path()).filesRead, 1);
    QString error;
    {
        RunStore store;
        QVERIFY2(store.open(dir.path(), &error), qPrintable(error));
        const std::vector<RunInfo> runs = store.runs();
        QCOMPARE(int(runs.size()), 1);
        QVERIFY2(store.storeFindingReview(runs.front().id, QString(), QStringLiteral("base"),
                     {QStringLiteral("loss-departure|"), ReviewState::Dismissed, QStringLiteral("known"), {}}, &error),
            qPrintable(error));
        QVERIFY2(store.storeFindingReview(runs.front().id, QString(), QString(),
                     {QStringLiteral("layer-signal|layers.3"), ReviewState::Confirmed, QString(), {}}, &error),
            qPrintable(error));
        QVERIFY2(store.storeCandidateChoice(QStringLiteral("base"),
                     {QStringLiteral("fp8-b"), CandidateSource::Chosen, QStringLiteral("the fix"), {}}, &error),
            qPrintable(error));
    }
    // What a store holds of them: reviews on runs and reviews carried for runs not yet ingested, and the choices.
    const auto kept = [&](int *reviews, int *choices) {
        RunStore store;
        QString why;
        if (!store.open(dir.path(), &why)) {
            qWarning("%s", qPrintable(why));
            return false;
        }
        Statement r = RunStoreTestAccess::db(store).prepare(
            "SELECT (SELECT COUNT(*) FROM finding_reviews) + (SELECT COUNT(*) FROM carried_reviews)");
        Statement c
            = RunStoreTestAccess::db(store).prepare("SELECT COUNT(*) FROM candidate_choices WHERE note='the fix'");
        *reviews = r.next() ? int(r.int64(0)) : -1;
        *choices = c.next() ? int(c.int64(0)) : -1;
        return true;
    };
    int points = 0;
    for (int point = 1;; ++point) {
        const pid_t child = fork();
        QVERIFY(child >= 0);
        if (child == 0) {
            RunStore store;
            QString why;
            const bool done = store.rebuild(dir.path(), &why, nullptr, [&](int p) {
                if (p == point)
                    _exit(3); // killed here
            });
            _exit(done ? 0 : 1); // no point of that number: the rebuild ran whole
        }
        int status = 0;
        QCOMPARE(waitpid(child, &status, 0), child);
        QVERIFY(WIFEXITED(status));
        int reviews = -1, choices = -1;
        QVERIFY2(kept(&reviews, &choices), qPrintable(QStringLiteral("killed at point %1").arg(point)));
        QVERIFY2(reviews == 2 && choices == 1,
            qPrintable(
                QStringLiteral("killed at point %1: %2 reviews, %3 choices").arg(point).arg(reviews).arg(choices)));
        if (WEXITSTATUS(status) != 3) {
            QCOMPARE(WEXITSTATUS(status), 0);
            break;
        }
        ++points;
    }
    QCOMPARE(points, 8);
    // Whole: the reviews wait, carried, for the run's ingest, which gives them back.
    RunStore store;
    int carried = -1;
    QVERIFY2(store.rebuild(dir.path(), &error, &carried), qPrintable(error));
    QCOMPARE(carried, 2);
    QVERIFY(store.ingest().errors.isEmpty());
    QCOMPARE(store.carriedReviews(), 0);
    QVERIFY(!QFileInfo::exists(RunStore::storePathFor(dir.path()) + QStringLiteral(".rebuild")));
}

void TestHardening::storeOfASchemaNoFp8scopeWrote()
{
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("metrics.csv")), "step,loss\n1,2\n");
    ingest(dir.path());
    {
        RunStore s;
        QString error;
        QVERIFY(s.open(dir.path(), &error));
        QVERIFY(RunStoreTestAccess::db(s).exec("UPDATE meta SET value='abc' WHERE key='schema_version'", &error));
    }
    RunStore s;
    QString error;
    QVERIFY(!s.open(dir.path(), &error));
    QVERIFY2(error.contains(QLatin1String("schema version is 'abc', which no fp8scope wrote"))
            && error.contains(QLatin1String("--rebuild")),
        qPrintable(error));
}

void TestHardening::busyStoreSaysByWhom()
{
    // Another fp8scope holds the store's write lock (here the test, with a writer mark naming itself): a
    // second ingest waits SQLite's busy timeout, then says the store is busy and by whom, and reads nothing.
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("metrics.csv")), "step,loss\n1,2\n");
    ingest(dir.path());
    write(dir.filePath(QStringLiteral("more.csv")), "step,grad\n1,2\n");
    RunStore holder;
    QString error;
    QVERIFY(holder.open(dir.path(), &error));
    QVERIFY(RunStoreTestAccess::db(holder).exec("BEGIN IMMEDIATE", &error));
    write(RunStore::storePathFor(dir.path()) + QStringLiteral("-writer"),
        QByteArray::number(QCoreApplication::applicationPid()) + "\ntst_hardening ingest (pid "
            + QByteArray::number(QCoreApplication::applicationPid()) + ") since 2026-12-01T08:00:00\n");
    QProcess cli;
    cli.start(qEnvironmentVariable("FP8SCOPE_CLI"), {QStringLiteral("ingest"), dir.path()});
    QVERIFY(cli.waitForFinished(60000));
    const QByteArray out = cli.readAllStandardOutput();
    QCOMPARE(cli.exitCode(), 1);
    QVERIFY2(out.contains("the store is busy: tst_hardening ingest (pid ") && out.contains("try again when it is done"),
        out.constData());
    QVERIFY(RunStoreTestAccess::db(holder).exec("ROLLBACK", &error));
    QFile::remove(RunStore::storePathFor(dir.path()) + QStringLiteral("-writer"));
    QCOMPARE(ingest(dir.path()).filesRead, 1); // more.csv, now that the store is free
    // A mark left by a writer that is gone (killed) names nobody.
    write(RunStore::storePathFor(dir.path()) + QStringLiteral("-writer"), "999999999\nghost ingest\n");
    QCOMPARE(readWriter(RunStore::storePathFor(dir.path())), QString());
}

void TestHardening::perLayerStatisticWithoutALayer()
{
    QTemporaryDir dir;
    QByteArray log;
    for (int layer = 0; layer < 3; ++layer)
        log += "2026-01-15 23:06:41,584 - INFO - layers." + QByteArray::number(layer)
            + ".fc1_activation_underflows% \t iteration=000001 \t value=1.0\n";
    write(dir.filePath(QStringLiteral("nvdlfw_inspect_globalrank-0.log")), log);
    ingest(dir.path());
    QProcess cli;
    cli.start(qEnvironmentVariable("FP8SCOPE_CLI"),
        {QStringLiteral("series"), dir.path(), QStringLiteral("--run"), QFileInfo(dir.path()).fileName(),
            QStringLiteral("--stat"), QStringLiteral("underflows%")});
    QVERIFY(cli.waitForFinished(60000));
    QCOMPARE(cli.exitCode(), 2);
    const QByteArray err = cli.readAllStandardError();
    QVERIFY2(err.contains("is a per-layer statistic") && err.contains("--layer layers.0.fc1 --tensor activation")
            && err.contains("--layer layers.2.fc1 --tensor activation"),
        err.constData());
}

void TestHardening::messagesSayWhatIsWrong()
{
    QTemporaryDir dir;
    Problem problem;
    // An HDF5 dataset created and never written (it had "declares 4 bytes past the end of the file").
    const QString h5 = dir.filePath(QStringLiteral("d.h5"));
    {
        const hid_t file = H5Fcreate(QFile::encodeName(h5).constData(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
        const hsize_t one[1] = {1};
        const hid_t space = H5Screate_simple(1, one, nullptr);
        H5Dclose(H5Dcreate2(file, "never", H5T_NATIVE_FLOAT, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT));
        const hid_t u8 = H5Dcreate2(file, "codes", H5T_NATIVE_UINT8, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
        const uint8_t code = 0x38;
        H5Dwrite(u8, H5T_NATIVE_UINT8, H5S_ALL, H5S_ALL, H5P_DEFAULT, &code);
        const hid_t str = H5Tcopy(H5T_C_S1);
        H5Tset_size(str, 4);
        const hid_t scalar = H5Screate(H5S_SCALAR);
        const hid_t attr = H5Acreate2(u8, "fp8_format", str, scalar, H5P_DEFAULT, H5P_DEFAULT);
        H5Awrite(attr, str, "E3M4");
        H5Aclose(attr);
        H5Sclose(scalar);
        H5Tclose(str);
        H5Dclose(u8);
        H5Sclose(space);
        H5Fclose(file);
    }
    QVERIFY(!openTensor(h5 + QStringLiteral(":never"), &problem));
    QVERIFY2(
        problem.message.contains(QLatin1String("holds no data (created, never written)")), qPrintable(problem.message));
    // An unknown fp8_format is named, not reported as missing.
    QVERIFY(!openTensor(h5 + QStringLiteral(":codes"), &problem));
    QVERIFY2(problem.message.contains(QLatin1String("fp8_format 'E3M4'")), qPrintable(problem.message));
    // A structured .npy dtype (it had "lacks 'descr'").
    QByteArray header = "{'descr': [('x', '<f4'), ('y', '<f4')], 'fortran_order': False, 'shape': (2,), }";
    while ((10 + header.size() + 1) % 64)
        header += ' ';
    header += '\n';
    QByteArray npy("\x93NUMPY\x01\x00", 8);
    npy += char(header.size() & 0xFF);
    npy += char(header.size() >> 8);
    write(dir.filePath(QStringLiteral("s.npy")), npy + header + QByteArray(16, '\0'));
    QVERIFY(!openTensor(dir.filePath(QStringLiteral("s.npy")), &problem));
    QVERIFY2(problem.message.contains(QLatin1String("structured dtype")), qPrintable(problem.message));
    // Fractional safetensors offsets are printed as written (10.5 printed as 11 before).
    const QByteArray json = R"({"w": {"dtype": "F32", "shape": [1], "data_offsets": [0.5, 4.5]}})";
    QByteArray st;
    for (int i = 0; i < 8; ++i)
        st += char((uint64_t(json.size()) >> (8 * i)) & 0xFF);
    write(dir.filePath(QStringLiteral("f.safetensors")), st + json + QByteArray(8, '\0'));
    QVERIFY(!openTensor(dir.filePath(QStringLiteral("f.safetensors")) + QStringLiteral(":w"), &problem));
    QVERIFY2(problem.message.contains(QLatin1String("data_offsets [0.5, 4.5] are not whole byte offsets")),
        qPrintable(problem.message));
}

QTEST_GUILESS_MAIN(TestHardening)
#include "tst_hardening.moc"

// Run folders as multi-node FP8 jobs leave them (issue 40): one test function per class of what the
// writers really write (Transformer Engine's debug tool, Megatron, launchers, loggers), each built from the
// shape of that class: ranks, restarts and resumes, compressed and growing files, links and pipes, long
// heads, every statistic TE writes, validation sets, nested and non-finite JSON, and what one run is.
#include "core/analysis/triage.h"
#include "core/analysis/triageinputs.h"
#include "core/importers/folderscanner.h"
#include "core/query/catalog.h"
#include "core/query/statnames.h"
#include "core/store/runstore.h"
#include "folderfixture.h"
#include "testmain.h"

#include <QDateTime>
#include <QTemporaryDir>
#include <QTest>

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <sys/stat.h>

#include <cmath>
#include <functional>

using namespace fp8scope;
using fp8scope::testing::pointAt;
using fp8scope::testing::problemTexts;
using fp8scope::testing::write;

namespace {

SeriesKey runLevel(const QString &stat, const QString &source)
{
    return {QString(), QString(), stat, source, QString()};
}

QString nameOf(const QTemporaryDir &dir)
{
    return QFileInfo(dir.path()).fileName();
}

// Opens and ingests `folder`; the report's errors fail the test.
#define INGEST(store, folder)                                                                                          \
    do {                                                                                                               \
        QString openError;                                                                                             \
        QVERIFY2((store).open((folder), &openError), qPrintable(openError));                                           \
        const IngestReport ingestReport = (store).ingest();                                                            \
        QVERIFY2(ingestReport.errors.isEmpty(), qPrintable(ingestReport.errors.join(QLatin1Char('\n'))));              \
    } while (false)

QByteArray gzip(const QByteArray &in)
{
    z_stream z {};
    deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY);
    QByteArray out(int(deflateBound(&z, uLong(in.size()))) + 32, '\0');
    z.next_in = reinterpret_cast<Bytef *>(const_cast<char *>(in.constData()));
    z.avail_in = uInt(in.size());
    z.next_out = reinterpret_cast<Bytef *>(out.data());
    z.avail_out = uInt(out.size());
    deflate(&z, Z_FINISH);
    out.resize(qsizetype(z.total_out));
    deflateEnd(&z);
    return out;
}

QByteArray xz(const QByteArray &in)
{
    QByteArray out(in.size() + 4096, '\0');
    size_t pos = 0;
    lzma_easy_buffer_encode(6, LZMA_CHECK_CRC64, nullptr, reinterpret_cast<const uint8_t *>(in.constData()),
        size_t(in.size()), reinterpret_cast<uint8_t *>(out.data()), &pos, size_t(out.size()));
    out.resize(qsizetype(pos));
    return out;
}

QByteArray zstd(const QByteArray &in)
{
    QByteArray out(qsizetype(ZSTD_compressBound(size_t(in.size()))), '\0');
    out.resize(qsizetype(ZSTD_compress(out.data(), size_t(out.size()), in.constData(), size_t(in.size()), 3)));
    return out;
}

QByteArray megatronLines(int from, int to, double base)
{
    QByteArray out;
    for (int it = from; it <= to; ++it)
        out += " iteration " + QByteArray::number(it).rightJustified(8, ' ')
            + "/     100 | lm loss: " + QByteArray::number(base - it * 0.01, 'E', 6) + " |\n";
    return out;
}

QByteArray teLine(const QByteArray &stat, int step, const QByteArray &value)
{
    return "2026-01-16 08:00:00,000 - INFO - " + stat
        + " \t\t\t\t iteration=" + QByteArray::number(step).rightJustified(6, '0') + " \t\t\t\t value=" + value;
}

void age(const QString &path, int seconds)
{
    QFile f(path);
    QVERIFY(f.open(QIODevice::ReadWrite));
    QVERIFY(f.setFileTime(QDateTime::currentDateTime().addSecs(-seconds), QFileDevice::FileModificationTime));
}

} // namespace

class TestClusterFolders : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void validationSetsAreSeriesOfTheirOwn();
    void jsonlKeepsNonFiniteFieldsAndNestedKeys();
    void plannedStepsFromTheTrainersKeys();
    void precisionFromRunNames();
    void noCommonLossIsNotComparable();
    void everyStatisticTeWrites();
    void compressedLogs();
    void compressedLogsReadToTheirEnd();
    void incompleteLastLines();
    void linksPipesAndLongHeads();
    void oneRunIsOneRun();
    void ranksAreOneRun();
    void statisticsCounterRestarts();
    void statisticsRestartInANewFile();
    void megatronLogsInTheirContentsOrder();
    void statisticsSayWhatTheirVersionMeant();
};

void TestClusterFolders::validationSetsAreSeriesOfTheirOwn()
{
    QTemporaryDir dir;
    write(dir.path() + QStringLiteral("/train.log"),
        " iteration       10/     100 | consumed samples: 40 | lm loss: 2.500000E+00 |\n"
        " validation loss at iteration 10 | lm loss value: 2.600000E+00 | lm loss PPL: 1.346374E+01 |\n"
        " validation-wiki loss at iteration 10 | lm loss value: 2.700000E+00 | lm loss PPL: 1.487973E+01 |\n"
        " validation-code loss at iteration 10 | lm loss value: 1.900000E+00 | lm loss PPL: 6.685894E+00 |\n"
        " iteration       20/     100 | consumed samples: 80 | lm loss: 2.400000E+00 |\n"
        " validation loss at iteration 20 on test set | lm loss value: 2.200000E+00 | lm loss PPL: 9.0E+00 |\n");
    RunStore store;
    INGEST(store, dir.path());
    const QString run = nameOf(dir);
    const QString src = QStringLiteral("megatron-log");
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("lm loss"), src), 10), 2.5);
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("lm loss"), src), 20), 2.4);
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("validation lm loss value"), src), 10), 2.6);
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("validation-wiki lm loss value"), src), 10), 2.7);
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("validation-code lm loss value"), src), 10), 1.9);
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("test lm loss value"), src), 20), 2.2);
    // The test set's line is not the validation set's.
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("validation lm loss value"), src), 20), -3e300);
    QVERIFY2(store.problems().empty(), qPrintable(problemTexts(store).join(QLatin1Char('\n'))));
}

void TestClusterFolders::jsonlKeepsNonFiniteFieldsAndNestedKeys()
{
    QTemporaryDir dir;
    // What json.dumps writes: bare NaN and Infinity, nested dicts.
    write(dir.path() + QStringLiteral("/metrics.jsonl"),
        "{\"step\": 1, \"loss\": 3.5, \"lr\": 0.001, \"train\": {\"tps\": 1200.0, \"mem\": {\"peak\": 40}}}\n"
        "{\"step\": 2, \"loss\": NaN, \"lr\": 0.002, \"grad_norm\": Infinity, \"note\": \"NaN stays a word\", "
        "\"train\": {\"tps\": 1210.5}}\n"
        "{\"step\": 3, \"loss\": 3.25, \"lr\": 0.003, \"grad_norm\": -Infinity}\n");
    RunStore store;
    INGEST(store, dir.path());
    const QString run = nameOf(dir);
    const QString src = QStringLiteral("jsonl");
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("lr"), src), 2), 0.002);
    QVERIFY(std::isnan(pointAt(store, run, runLevel(QStringLiteral("loss"), src), 2)));
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("loss"), src), 3), 3.25);
    QCOMPARE(
        pointAt(store, run, runLevel(QStringLiteral("grad_norm"), src), 2), std::numeric_limits<double>::infinity());
    QCOMPARE(
        pointAt(store, run, runLevel(QStringLiteral("grad_norm"), src), 3), -std::numeric_limits<double>::infinity());
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("train/tps"), src), 2), 1210.5);
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("train/mem/peak"), src), 1), 40.0);
    QCOMPARE(pointAt(store, run, runLevel(QStringLiteral("note"), src), 2), -2e300);
    QVERIFY2(store.problems().empty(), qPrintable(problemTexts(store).join(QLatin1Char('\n'))));
}

void TestClusterFolders::plannedStepsFromTheTrainersKeys()
{
    QTemporaryDir dir;
    const auto run = [&](const char *name, const QByteArray &config) {
        write(dir.path() + QLatin1Char('/') + QLatin1String(name) + QStringLiteral("/metrics.csv"),
            "step,loss\n1,3.0\n2,2.9\n");
        write(dir.path() + QLatin1Char('/') + QLatin1String(name) + QStringLiteral("/config.json"), config);
    };
    run("lightning", R"({"trainer": {"max_steps": 5000, "precision": "bf16-mixed"}})");
    run("megatron", R"({"lr_decay_iters": 800, "train_iters": 1000})");
    run("decayonly", R"({"lr_decay_iters": 800})");
    run("hyphens", R"({"--max-steps": "1200"})");
    run("float", R"({"num_train_steps": 3000.0})");
    run("nothing", R"({"seed": 1234})");
    RunStore store;
    INGEST(store, dir.path());
    Catalog catalog;
    QString error;
    QVERIFY2(catalog.open(dir.path(), &error), qPrintable(error));
    const auto planned = [&](const char *name) -> int64_t {
        const auto r = catalog.findRun(QLatin1String(name));
        return r ? analysis::gatherRun(catalog, r->ref).configuredSteps.value_or(-1) : -2;
    };
    QCOMPARE(planned("lightning"), int64_t(5000));
    QCOMPARE(planned("megatron"), int64_t(1000)); // the decay's length only where nothing else says
    QCOMPARE(planned("decayonly"), int64_t(800));
    QCOMPARE(planned("hyphens"), int64_t(1200));
    QCOMPARE(planned("float"), int64_t(3000));
    QCOMPARE(planned("nothing"), int64_t(-1));
}

void TestClusterFolders::precisionFromRunNames()
{
    QTemporaryDir dir;
    for (const char *name : {"tp2_pp2_fp8_tp_pp_sp", "llama-mxfp8", "bf16-baseline", "fp8_vs_bf16", "ablation",
             "nvfp4.run3", "fp8sc", "named"})
        write(dir.path() + QLatin1Char('/') + QLatin1String(name) + QStringLiteral("/metrics.csv"), "step,loss\n1,3\n");
    // What a config says wins over the name.
    write(dir.path() + QStringLiteral("/named/config.json"), R"({"bf16": true})");
    write(dir.path() + QStringLiteral("/named/metrics.csv"), "step,loss\n1,3\n");
    QVERIFY(QDir(dir.path()).rename(QStringLiteral("named"), QStringLiteral("named_fp8")));
    RunStore store;
    INGEST(store, dir.path());
    const auto precision = [&](const char *name) {
        const auto r = store.run(QLatin1String(name));
        return r ? r->precision : QStringLiteral("(no run)");
    };
    QCOMPARE(precision("tp2_pp2_fp8_tp_pp_sp"), QStringLiteral("fp8"));
    QCOMPARE(precision("llama-mxfp8"), QStringLiteral("mxfp8"));
    QCOMPARE(precision("bf16-baseline"), QStringLiteral("bf16"));
    QCOMPARE(precision("nvfp4.run3"), QStringLiteral("nvfp4"));
    QCOMPARE(precision("fp8_vs_bf16"), QString()); // two precisions named: nothing said
    QCOMPARE(precision("ablation"), QString());
    QCOMPARE(precision("fp8sc"), QString()); // a word, not a token
    QCOMPARE(precision("named_fp8"), QStringLiteral("bf16"));
}

void TestClusterFolders::noCommonLossIsNotComparable()
{
    QTemporaryDir dir;
    write(
        dir.path() + QStringLiteral("/base_bf16/metrics.csv"), "step,loss,grad_norm\n1,3.0,1.0\n2,2.9,1.0\n3,2.8,1\n");
    write(dir.path() + QStringLiteral("/run_fp8/metrics.csv"), "step,grad_norm,lr\n1,1.0,0.1\n2,1.1,0.1\n3,1.2,0.1\n");
    RunStore store;
    INGEST(store, dir.path());
    Catalog catalog;
    QString error;
    QVERIFY2(catalog.open(dir.path(), &error), qPrintable(error));
    const auto base = catalog.findRun(QStringLiteral("base_bf16"));
    const auto run = catalog.findRun(QStringLiteral("run_fp8"));
    QVERIFY(base && run);
    const analysis::Comparison c = analysis::compareRuns(catalog, base->ref, run->ref);
    QCOMPARE(analysis::verdictName(c.verdict), QStringLiteral("not-comparable"));
    QVERIFY(std::any_of(c.findings.begin(), c.findings.end(), [](const analysis::Finding &f) {
        return f.kind == analysis::FindingKind::NoCommonLoss && f.summary.contains(QLatin1String("only base_bf16"));
    }));
    QVERIFY(!c.nextSteps.empty());
    // Two runs with the loss are compared as before.
    write(dir.path() + QStringLiteral("/run_fp8/loss.csv"), "step,loss\n1,3.0\n2,2.9\n3,2.8\n");
    store.ingest();
    catalog.refresh();
    QCOMPARE(
        analysis::verdictName(analysis::compareRuns(catalog, base->ref, run->ref).verdict), QStringLiteral("none"));
}

void TestClusterFolders::everyStatisticTeWrites()
{
    // TE's statistics beyond the ones fp8scope names, a custom feature's, AutoswitchGemm's log in its own
    // folder (8 decimals), and a class of lines that are no statistic on 500 lines: kept as series, one run,
    // one problem with a count.
    QTemporaryDir dir;
    QByteArray stats, autoswitch;
    for (int it = 0; it < 500; ++it) {
        const QByteArray step = QByteArray::number(it).rightJustified(6, '0');
        const QByteArray prefix = "2026-01-16 08:00:00,000 - INFO - decoder.layers.0.mlp.linear_fc1_";
        stats += prefix
            + "activation_max_blockwise_dynamic_range_block_size_32_dims_1_max_over_orientations \t\t\t\t "
              "iteration="
            + step + " \t\t\t\t value=" + QByteArray::number(10 + it * 0.01, 'f', 4) + "\n";
        stats += prefix + "activation_percentage_greater_than_threshold \t\t\t\t iteration=" + step
            + " \t\t\t\t value=0.2500\n";
        stats += prefix + "banana_mse \t\t\t\t iteration=" + step + " \t\t\t\t value=1.0000\n";
        autoswitch += prefix + "fprop_activation_underflow_pct \t\t\t\t iteration=" + step
            + " \t\t\t\t value=" + QByteArray::number(it * 1e-6, 'f', 8) + "\n";
    }
    write(dir.path() + QStringLiteral("/logs/train.log"), " iteration        1/     500 | lm loss: 2.0 |\n");
    write(dir.path() + QStringLiteral("/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"), stats);
    write(
        dir.path() + QStringLiteral("/nvdlfw_inspect_autoswitchgemm_logs/nvdlfw_inspect_globalrank-0.log"), autoswitch);
    RunStore store;
    INGEST(store, dir.path());
    QCOMPARE(store.runs().size(), size_t(1));
    const QString run = nameOf(dir);
    const QString layer = QStringLiteral("decoder.layers.0.mlp.linear_fc1");
    const QString src = QStringLiteral("te-debug rank 0");
    QCOMPARE(pointAt(store, run,
                 {layer, QStringLiteral("activation"),
                     QStringLiteral("max_blockwise_dynamic_range_block_size_32_dims_1_max_over_orientations"), src, {}},
                 100),
        11.0);
    QCOMPARE(
        pointAt(store, run,
            {layer, QStringLiteral("activation"), QStringLiteral("percentage_greater_than_threshold"), src, {}}, 7),
        0.25);
    QCOMPARE(
        pointAt(store, run, {layer, QStringLiteral("activation"), QStringLiteral("fprop_underflow_pct"), src, {}}, 499),
        0.000499);
    const QStringList said = problemTexts(store);
    QVERIFY2(said.size() == 1, qPrintable(said.join(QLatin1Char('\n'))));
    QVERIFY2(said.front().contains(QLatin1String("unknown statistic name 'decoder.layers.0.mlp.linear_fc1_banana_mse'"))
            && said.front().contains(QLatin1String("and 499 more lines like it, the last at line 1500")),
        qPrintable(said.front()));
}

void TestClusterFolders::compressedLogs()
{
    QTemporaryDir dir;
    const SeriesKey loss = runLevel(QStringLiteral("lm loss"), QStringLiteral("megatron-log"));
    const SeriesKey fc1 {QStringLiteral("layers.0.fc1"), QStringLiteral("activation"), QStringLiteral("underflows%"),
        QStringLiteral("te-debug rank 0"), {}};
    QByteArray te;
    for (int step = 0; step < 50; ++step)
        te += teLine("layers.0.fc1_activation_underflows%", step, QByteArray::number(step * 0.5, 'f', 4)) + "\n";
    write(dir.path() + QStringLiteral("/run/train.log.gz"), gzip(megatronLines(1, 60, 3.0)));
    write(
        dir.path() + QStringLiteral("/run/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log.xz"), xz(te));
    write(dir.path() + QStringLiteral("/run/metrics.csv.zst"), zstd("step,tokens_per_sec\n1,1000\n2,1010\n"));
    // A gzip still being written: it stops inside a line.
    const QByteArray whole = megatronLines(1, 40, 5.0);
    const QByteArray growing = gzip(whole);
    write(dir.path() + QStringLiteral("/live/train.log.gz"), growing.left(growing.size() * 2 / 3));
    RunStore store;
    INGEST(store, dir.path());
    QVERIFY(store.ingest().unrecognised.isEmpty());
    QCOMPARE(pointAt(store, QStringLiteral("run"), loss, 60), 2.4);
    QCOMPARE(pointAt(store, QStringLiteral("run"), fc1, 49), 24.5);
    QCOMPARE(
        pointAt(store, QStringLiteral("run"), runLevel(QStringLiteral("tokens_per_sec"), QStringLiteral("csv")), 2),
        1010.0);
    // What the cut stream holds is read, up to its last whole line; the line it stops in is said and waits.
    int64_t read = 0;
    for (int it = 1; it <= 40 && pointAt(store, QStringLiteral("live"), loss, it) > 0; ++it)
        read = it;
    QVERIFY2(read > 0 && read < 40, qPrintable(QString::number(read)));
    QVERIFY2(problemTexts(store).filter(QStringLiteral("compressed data ends inside a line")).size() == 1,
        qPrintable(problemTexts(store).join(QLatin1Char('\n'))));
    // The stream completed: read again whole.
    write(dir.path() + QStringLiteral("/live/train.log.gz"), growing);
    store.ingest();
    QCOMPARE(pointAt(store, QStringLiteral("live"), loss, 40), 4.6);
    QVERIFY2(store.problems().empty(), qPrintable(problemTexts(store).join(QLatin1Char('\n'))));
}

// A complete compressed log whose last line has no newline: the stream's end says the line is whole, so it is read
// at once and no problem stays (gzip, xz and zstd alike; liblzma says a stream ended only when told the input did).
void TestClusterFolders::compressedLogsReadToTheirEnd()
{
    QTemporaryDir dir;
    const SeriesKey loss = runLevel(QStringLiteral("lm loss"), QStringLiteral("megatron-log"));
    QByteArray log = megatronLines(1, 30, 3.0);
    log.chop(1); // no newline after iteration 30
    write(dir.path() + QStringLiteral("/gz/train.log.gz"), gzip(log));
    write(dir.path() + QStringLiteral("/xz/train.log.xz"), xz(log));
    write(dir.path() + QStringLiteral("/zst/train.log.zst"), zstd(log));
    RunStore store;
    INGEST(store, dir.path());
    for (const char *run : {"gz", "xz", "zst"}) {
        QVERIFY2(pointAt(store, QLatin1String(run), loss, 30) == 2.7, run);
        QVERIFY2(pointAt(store, QLatin1String(run), loss, 1) == 2.99, run);
    }
    QVERIFY2(store.problems().empty(), qPrintable(problemTexts(store).join(QLatin1Char('\n'))));
    // Read again (nothing changed): still no problem, the same points.
    store.ingest();
    QVERIFY2(store.problems().empty(), qPrintable(problemTexts(store).join(QLatin1Char('\n'))));
    // A stream cut short still says so and waits.
    const QByteArray cut = xz(log);
    write(dir.path() + QStringLiteral("/xz/train.log.xz"), cut.left(cut.size() - 8));
    store.ingest();
    QVERIFY2(problemTexts(store).filter(QStringLiteral("compressed data ends inside a line")).size() == 1,
        qPrintable(problemTexts(store).join(QLatin1Char('\n'))));
}

void TestClusterFolders::incompleteLastLines()
{
    QTemporaryDir dir;
    const QString csv = dir.path() + QStringLiteral("/run/metrics.csv");
    const QString te
        = dir.path() + QStringLiteral("/run/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log");
    const SeriesKey loss = runLevel(QStringLiteral("loss"), QStringLiteral("csv"));
    const SeriesKey fc1 {QStringLiteral("layers.0.fc1"), QStringLiteral("activation"), QStringLiteral("mse"),
        QStringLiteral("te-debug rank 0"), {}};
    // Both files are being written: their last lines stop mid-number.
    write(csv, "step,loss\n0,1.5\n1,12");
    write(
        te, teLine("layers.0.fc1_activation_mse", 0, "1.0000") + "\n" + teLine("layers.0.fc1_activation_mse", 1, "12"));
    RunStore store;
    INGEST(store, dir.path());
    const QString name = nameOf(dir);
    QCOMPARE(pointAt(store, name, loss, 0), 1.5);
    QCOMPARE(pointAt(store, name, loss, 1), -3e300); // never the fragment
    QCOMPARE(pointAt(store, name, fc1, 1), -3e300);
    QCOMPARE(problemTexts(store).filter(QStringLiteral("incomplete last line")).size(), 2);
    // The lines complete: read whole.
    write(csv, "34.5\n", true);
    write(te, "34.5678\n", true);
    store.ingest();
    QCOMPARE(pointAt(store, name, loss, 1), 1234.5);
    QCOMPARE(pointAt(store, name, fc1, 1), 1234.5678);
    QVERIFY2(store.problems().empty(), qPrintable(problemTexts(store).join(QLatin1Char('\n'))));

    // A finished file without a final newline (not modified for long): its last line is read; should it grow
    // after all, the line is read again whole.
    write(csv, "2,1", true);
    age(csv, 3600);
    store.ingest();
    QCOMPARE(pointAt(store, name, loss, 2), 1.0);
    write(csv, ".25\n3,0.5\n", true);
    store.ingest();
    QCOMPARE(pointAt(store, name, loss, 2), 1.25);
    QCOMPARE(pointAt(store, name, loss, 3), 0.5);
    // A file whose last line waited is looked at again although it has not changed: once settled, it is read.
    write(csv, "4,0.4", true);
    store.ingest();
    QCOMPARE(pointAt(store, name, loss, 4), -3e300);
    age(csv, 3600);
    store.ingest();
    QCOMPARE(pointAt(store, name, loss, 4), 0.4);
}

void TestClusterFolders::linksPipesAndLongHeads()
{
    QTemporaryDir dir;
    const QString run = dir.path() + QStringLiteral("/run");
    // The logs live on a shared file system; the run folder links to them.
    write(dir.path() + QStringLiteral("/shared/job42/train.log"), megatronLines(1, 20, 3.0));
    QVERIFY(QDir().mkpath(run));
    QVERIFY(QFile::link(dir.path() + QStringLiteral("/shared/job42"), run + QStringLiteral("/logs")));
    // A link back up (a loop), a dangling link, a pipe.
    QVERIFY(QFile::link(run, dir.path() + QStringLiteral("/shared/job42/back")));
    QVERIFY(QFile::link(dir.path() + QStringLiteral("/gone.log"), run + QStringLiteral("/old.log")));
    QVERIFY(::mkfifo(QFile::encodeName(run + QStringLiteral("/live.log")).constData(), 0600) == 0);
    // A Slurm job prints its environment first: 8 KiB before the first line of the format.
    QByteArray env;
    for (int i = 0; env.size() < 8192; ++i)
        env += "SLURM_VAR_" + QByteArray::number(i) + "=" + QByteArray(40, 'x') + "\n";
    write(run + QStringLiteral("/nvdlfw_inspect_globalrank-0.log"),
        env + teLine("layers.0.fc1_activation_mse", 5, "0.2500") + "\n");
    write(run + QStringLiteral("/job.txt"), env + " using world size: 8\n" + megatronLines(21, 25, 3.0));
    RunStore store;
    QString error;
    QVERIFY2(store.open(run, &error), qPrintable(error));
    const IngestReport report = store.ingest();
    QVERIFY2(report.unrecognised.isEmpty(), qPrintable(report.unrecognised.join(QLatin1Char(' '))));
    const QString name = QStringLiteral("run");
    QCOMPARE(pointAt(store, name, runLevel(QStringLiteral("lm loss"), QStringLiteral("megatron-log")), 20), 2.8);
    QCOMPARE(pointAt(store, name, runLevel(QStringLiteral("lm loss"), QStringLiteral("megatron-log")), 25), 2.75);
    QCOMPARE(pointAt(store, name,
                 {QStringLiteral("layers.0.fc1"), QStringLiteral("activation"), QStringLiteral("mse"),
                     QStringLiteral("te-debug rank 0"), {}},
                 5),
        0.25);
    QStringList said;
    for (const auto &[path, why] : report.unreadable)
        said << path + QStringLiteral(": ") + why;
    said.sort();
    QCOMPARE(said.size(), 3);
    QVERIFY2(
        said[0].startsWith(QLatin1String("live.log: not a regular file")), qPrintable(said.join(QLatin1Char('\n'))));
    QVERIFY2(said[1].startsWith(QLatin1String("logs/back: a link to")) && said[1].contains(QLatin1String("(a loop)")),
        qPrintable(said.join(QLatin1Char('\n'))));
    QVERIFY2(
        said[2].startsWith(QLatin1String("old.log: a link to")) && said[2].endsWith(QLatin1String("does not exist")),
        qPrintable(said.join(QLatin1Char('\n'))));
}

void TestClusterFolders::oneRunIsOneRun()
{
    QTemporaryDir dir;
    const QString ws = dir.path();
    QByteArray te;
    for (int step = 0; step < 3; ++step)
        te += teLine("layers.0.fc1_activation_mse", step, "0.1000") + "\n";
    // Megatron's log in logs/, TE's statistics in a folder of another name.
    write(ws + QStringLiteral("/a/logs/train.log"), megatronLines(1, 3, 3.0));
    write(ws + QStringLiteral("/a/te_debug/nvdlfw_inspect_globalrank-0.log"), te);
    // Lightning's CSV logger beside the statistics.
    write(ws + QStringLiteral("/b/lightning_logs/version_0/metrics.csv"), "step,train_loss\n1,3.0\n");
    write(ws + QStringLiteral("/b/fp8_stats/nvdlfw_inspect_globalrank-0.log"), te);
    // A W&B history export beside the run's config: the run's history, not a run of its own.
    write(ws + QStringLiteral("/c/config.json"), R"({"train_iters": 100})");
    write(ws + QStringLiteral("/c/history_1a2b3c.csv"), "_step,loss\n1,3.0\n2,2.9\n");
    const FolderScan scan = scanFolder(ws);
    QVERIFY(scan.workspace);
    QStringList runs;
    for (const ScannedFile &f : scan.files) {
        if (!runs.contains(f.run))
            runs << f.run;
    }
    runs.sort();
    QCOMPARE(runs, (QStringList {QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("c")}));
    RunStore store;
    INGEST(store, ws);
    QCOMPARE(store.runs().size(), size_t(3));
    QCOMPARE(pointAt(store, QStringLiteral("c"), runLevel(QStringLiteral("loss"), QStringLiteral("csv")), 2), 2.9);
    // Opened on its own, each divides the same way.
    QVERIFY(!scanFolder(ws + QStringLiteral("/a")).workspace);
    QVERIFY(!scanFolder(ws + QStringLiteral("/b")).workspace);
}

namespace {

// One rank's statistics log: `layers` for `steps`, each value from `value`, the timestamps the rank's own.
QByteArray rankLog(int rank, int firstLayer, int layers, int steps, const std::function<double(int, int)> &value)
{
    QByteArray out;
    for (int step = 0; step < steps; ++step) {
        for (int l = firstLayer; l < firstLayer + layers; ++l)
            out += "2026-01-16 08:00:" + QByteArray::number(10 + step % 50) + "," + QByteArray::number(100 + rank % 900)
                + " - INFO - decoder.layers." + QByteArray::number(l)
                + ".mlp.linear_fc1_activation_underflows% \t\t\t\t iteration="
                + QByteArray::number(step * 10).rightJustified(6, '0')
                + " \t\t\t\t value=" + QByteArray::number(value(l, step), 'f', 4) + "\n";
    }
    return out;
}

QString rankPath(int rank)
{
    return QStringLiteral("/rank_%1/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-%1.log").arg(rank);
}

} // namespace

void TestClusterFolders::ranksAreOneRun()
{
    // A 4-stage pipeline of 12 ranks: each stage's 3 ranks (a reduction group) write the same lines, each
    // with its own timestamps; stages hold 10 layers each.
    QTemporaryDir dir;
    for (int rank = 0; rank < 12; ++rank) {
        const int stage = rank / 3;
        write(dir.path() + rankPath(rank),
            rankLog(rank, stage * 10, 10, 5, [](int l, int step) { return l + step * 0.5; }));
    }
    RunStore store;
    INGEST(store, dir.path());
    QCOMPARE(store.runs().size(), size_t(1));
    const auto info = store.run(nameOf(dir));
    QVERIFY(info);
    QCOMPARE(store.rankCopies(info->id).size(), size_t(8)); // two copies in each stage, read once
    Catalog catalog;
    QString error;
    QVERIFY2(catalog.open(dir.path(), &error), qPrintable(error));
    const RunRef ref = catalog.runs().front().ref;
    Heatmap h = catalog.matrix(ref, {QStringLiteral("underflows%"), QStringLiteral("activation"), {}, {}});
    QCOMPARE(h.source, kRanksMax);
    QCOMPARE(h.layers.size(), 40); // the union over the ranks, not one stage's 10
    QCOMPARE(h.layers.front(), QStringLiteral("decoder.layers.0.mlp.linear_fc1"));
    QCOMPARE(h.layers.back(), QStringLiteral("decoder.layers.39.mlp.linear_fc1"));
    QCOMPARE(h.at(25, 2), 26.0);
    QCOMPARE(h.ranks[25 * h.steps.size() + 2], 6); // layer 25 is stage 2's, read from its first rank
    QVERIFY2(h.ranksNote.contains(QLatin1String("ranks 0, 3, 6, 9 hold 40 layers between them"))
            && h.ranksNote.contains(QLatin1String("ranks 1-2 log the same lines as rank 0 (read once)"))
            && h.ranksNote.contains(QLatin1String("ranks 10-11 log the same lines as rank 9 (read once)")),
        qPrintable(h.ranksNote));
    // One rank alone shows its stage.
    h = catalog.matrix(
        ref, {QStringLiteral("underflows%"), QStringLiteral("activation"), QStringLiteral("te-debug rank 3"), {}});
    QCOMPARE(h.layers.size(), 10);
    QCOMPARE(h.layers.front(), QStringLiteral("decoder.layers.10.mlp.linear_fc1"));

    // A rank that parts from its group (its values differ) is read on its own; ingest again is unchanged.
    write(dir.path() + rankPath(4),
        rankLog(4, 10, 10, 5, [](int l, int step) { return l + step * 0.5 + (l == 12 ? 7 : 0); }));
    IngestReport again = store.ingest();
    QCOMPARE(again.filesRead, 1);
    QCOMPARE(store.rankCopies(info->id).size(), size_t(7));
    catalog.refresh();
    h = catalog.matrix(ref, {QStringLiteral("underflows%"), QStringLiteral("activation"), {}, {}});
    QCOMPARE(h.at(12, 0), 19.0); // the max across ranks 3 and 4
    QCOMPARE(h.ranks[12 * h.steps.size()], 4);
    QVERIFY2(h.ranksNote.contains(QLatin1String("log different values of the same layers: the max")),
        qPrintable(h.ranksNote));
    h = catalog.matrix(ref, {QStringLiteral("underflows%"), QStringLiteral("activation"), kRanksMean, {}});
    QCOMPARE(h.at(12, 0), 15.5);
    QCOMPARE(h.at(11, 0), 11.0);
    QCOMPARE(store.ingest().filesUnchanged, 12);

    // The first rank of a group grows while its copies do not (yet): they are copies of it no more; rank 1 is
    // read, and rank 2 is its copy.
    write(dir.path() + rankPath(0),
        rankLog(0, 0, 10, 6, [](int l, int step) { return l + step * 0.5; })
            .mid(rankLog(0, 0, 10, 5, [](int l, int step) { return l + step * 0.5; }).size()),
        true);
    again = store.ingest();
    QCOMPARE(again.filesRead + again.filesResumed, 3);
    const auto copies = store.rankCopies(info->id);
    QCOMPARE(copies.size(), size_t(6)); // 7, less rank 1
    QVERIFY(std::find(copies.begin(), copies.end(), std::pair(QString(rankPath(2)).mid(1), QString(rankPath(1)).mid(1)))
        != copies.end());
    QCOMPARE(pointAt(store, nameOf(dir),
                 {QStringLiteral("decoder.layers.1.mlp.linear_fc1"), QStringLiteral("activation"),
                     QStringLiteral("underflows%"), QStringLiteral("te-debug rank 1"), QString()},
                 40),
        3.0);
}

namespace {

const QString kLayer = QStringLiteral("decoder.layers.0.mlp.linear_fc1");

// A statistics log's lines of steps from..to (every `stride`), each value base + step / 1000.
QByteArray teSteps(int from, int to, int stride, double base)
{
    QByteArray out;
    for (int step = from; step <= to; step += stride)
        out += teLine("decoder.layers.0.mlp.linear_fc1_activation_underflows%", step,
                   QByteArray::number(base + step / 1000.0, 'f', 4))
            + "\n";
    return out;
}

double underflowAt(const RunStore &store, const QString &run, int64_t step, const QString &rank = QStringLiteral("0"))
{
    return pointAt(store, run,
        {kLayer, QStringLiteral("activation"), QStringLiteral("underflows%"), QStringLiteral("te-debug rank ") + rank,
            QString()},
        step);
}

double rewindAt(const RunStore &store, const QString &run, int64_t step, const QString &source)
{
    return pointAt(store, run, runLevel(QStringLiteral("rewind"), source), step);
}

} // namespace

void TestClusterFolders::statisticsCounterRestarts()
{
    // The debug tool's counter starts again at 0 after a resume in the same log (no offset set): the later
    // stretch is placed one stride after the earlier one (no Megatron log says where it resumed), both kept.
    QTemporaryDir dir;
    const QString log = dir.path() + QStringLiteral("/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log");
    write(log, teSteps(0, 90, 10, 1.0) + teSteps(0, 50, 10, 2.0));
    RunStore store;
    INGEST(store, dir.path());
    const QString run = nameOf(dir);
    QCOMPARE(underflowAt(store, run, 0), 1.0); // the first stretch, not overwritten
    QCOMPARE(underflowAt(store, run, 90), 1.09);
    QCOMPARE(underflowAt(store, run, 100), 2.0); // the second, after it
    QCOMPARE(underflowAt(store, run, 150), 2.05);
    QCOMPARE(rewindAt(store, run, 100, QStringLiteral("te-debug")), 90.0);
    const QStringList said = problemTexts(store);
    QVERIFY2(said.filter(QStringLiteral("starts again (iteration=0 after 90)")).size() == 1
            && said.filter(QStringLiteral("one stride after step 90")).size() == 1,
        qPrintable(said.join(QLatin1Char('\n'))));

    // The log grows: the restart read on from where it stopped keeps its placement, and a second restart is
    // placed after the second stretch.
    write(log, teSteps(60, 70, 10, 2.0) + teSteps(0, 10, 10, 3.0), true);
    INGEST(store, dir.path());
    QCOMPARE(underflowAt(store, run, 160), 2.06);
    QCOMPARE(underflowAt(store, run, 170), 2.07);
    QCOMPARE(underflowAt(store, run, 180), 3.0);
    QCOMPARE(underflowAt(store, run, 190), 3.01);
    QCOMPARE(rewindAt(store, run, 180, QStringLiteral("te-debug")), 170.0);
    QCOMPARE(underflowAt(store, run, 0), 1.0);

    // A counter the training set (an offset) goes back to the resumed step, not to 0: its steps stay as
    // printed, the repeated ones keep their later values, and the rewind is marked.
    QTemporaryDir offset;
    write(offset.path() + QStringLiteral("/nvdlfw_inspect_globalrank-0.log"),
        teSteps(0, 90, 10, 1.0) + teSteps(60, 120, 10, 2.0));
    RunStore second;
    INGEST(second, offset.path());
    const QString run2 = nameOf(offset);
    QCOMPARE(underflowAt(second, run2, 50), 1.05);
    QCOMPARE(underflowAt(second, run2, 60), 2.06);
    QCOMPARE(underflowAt(second, run2, 120), 2.12);
    QCOMPARE(underflowAt(second, run2, 180), -3e300);
    QCOMPARE(rewindAt(second, run2, 60, QStringLiteral("te-debug")), 90.0);

    // The restart is drawn and reported: the run's restart finding says where the steps were placed.
    Catalog catalog;
    QString error;
    QVERIFY2(catalog.open(dir.path(), Catalog::newStoreSerial(), &error), qPrintable(error));
    const auto r = catalog.findRun(run);
    QVERIFY(r);
    const analysis::RunInputs in = analysis::gatherRun(catalog, r->ref);
    QVERIFY(in.rewind);
    QCOMPARE(in.rewind->steps, (std::vector<int64_t> {100, 180}));
}

void TestClusterFolders::statisticsRestartInANewFile()
{
    // A resumed job writes its statistics to a new timestamped log whose counter starts again; the run's
    // Megatron log says it resumed from the checkpoint of step 60 after reaching 95. The log without a
    // timestamp is the first job's (though it sorts after the other by name).
    QTemporaryDir dir;
    const QString logs = dir.path() + QStringLiteral("/nvdlfw_inspect_statistics_logs/");
    for (int rank = 0; rank < 3; ++rank) {
        write(logs + QStringLiteral("nvdlfw_inspect_globalrank-%1.log").arg(rank), teSteps(0, 90, 10, 1.0));
        write(logs + QStringLiteral("nvdlfw_inspect_20260116_080000_globalrank-%1.log").arg(rank),
            teSteps(0, 50, 10, 2.0));
    }
    write(dir.path() + QStringLiteral("/slurm-7.out"),
        megatronLines(1, 95, 10.0) + "successfully loaded checkpoint from /ckpt at iteration 60\n"
            + megatronLines(61, 120, 9.0));
    RunStore store;
    INGEST(store, dir.path());
    const QString run = nameOf(dir);
    QCOMPARE(rewindAt(store, run, 60, QStringLiteral("megatron-log")), 95.0);
    QCOMPARE(underflowAt(store, run, 50), 1.05); // the first job's
    QCOMPARE(underflowAt(store, run, 60), 2.0); // the resumed job's counter 0 is step 60
    QCOMPARE(underflowAt(store, run, 90), 2.03); // trained again: the later value
    QCOMPARE(underflowAt(store, run, 110), 2.05);
    QCOMPARE(rewindAt(store, run, 60, QStringLiteral("te-debug")), 90.0);
    // Every rank alike (the other ranks are copies of rank 0's logs).
    QCOMPARE(store.runs().size(), size_t(1));
    const QStringList said = problemTexts(store);
    QVERIFY2(said.filter(QStringLiteral("in the log before")).size() == 1
            && said.filter(QStringLiteral("where the run's Megatron log resumed")).size() == 1,
        qPrintable(said.join(QLatin1Char('\n'))));

    // The first job's log grows (its copy finished late; it had reached 50 when first read): the resumed job's
    // log is placed again from where it ends now, and keeps its values at the steps both hold.
    QTemporaryDir late;
    const QString lateLogs = late.path() + QStringLiteral("/nvdlfw_inspect_statistics_logs/");
    write(lateLogs + QStringLiteral("nvdlfw_inspect_globalrank-0.log"), teSteps(0, 50, 10, 1.0));
    write(lateLogs + QStringLiteral("nvdlfw_inspect_20260116_080000_globalrank-0.log"), teSteps(0, 50, 10, 2.0));
    write(late.path() + QStringLiteral("/slurm-7.out"),
        megatronLines(1, 95, 10.0) + "successfully loaded checkpoint from /ckpt at iteration 60\n"
            + megatronLines(61, 120, 9.0));
    RunStore grown;
    INGEST(grown, late.path());
    QCOMPARE(underflowAt(grown, nameOf(late), 60), 2.0);
    write(lateLogs + QStringLiteral("nvdlfw_inspect_globalrank-0.log"), teSteps(60, 90, 10, 1.0), true);
    INGEST(grown, late.path());
    QCOMPARE(underflowAt(grown, nameOf(late), 50), 1.05);
    QCOMPARE(underflowAt(grown, nameOf(late), 60), 2.0); // the resumed job's, not the first job's 1.06
    QCOMPARE(underflowAt(grown, nameOf(late), 90), 2.03);
    QCOMPARE(underflowAt(grown, nameOf(late), 110), 2.05);
    QCOMPARE(grown.ingest().filesUnchanged, 3);

    // The first job's log rewritten (a copy finished late): the resumed job's log is placed again from it.
    write(logs + QStringLiteral("nvdlfw_inspect_globalrank-0.log"), teSteps(0, 40, 10, 1.0));
    for (int rank = 1; rank < 3; ++rank)
        write(logs + QStringLiteral("nvdlfw_inspect_globalrank-%1.log").arg(rank), teSteps(0, 40, 10, 1.0));
    INGEST(store, dir.path());
    QCOMPARE(underflowAt(store, run, 40), 1.04);
    // The resume point 60 is past one stride after 40: the stretch goes right after the first.
    QCOMPARE(underflowAt(store, run, 50), 2.0);
    QCOMPARE(underflowAt(store, run, 100), 2.05);
    QCOMPARE(underflowAt(store, run, 110), -3e300);
}

void TestClusterFolders::megatronLogsInTheirContentsOrder()
{
    // Two launcher logs of one run whose names sort against their order: the first job's (steps 1-100) and
    // the resumed job's (from the checkpoint of step 80). The resumed job's values of 81-100 win, and the
    // rewind at the boundary between the logs is marked.
    QTemporaryDir dir;
    write(dir.path() + QStringLiteral("/job-b.out"), megatronLines(1, 100, 10.0));
    write(dir.path() + QStringLiteral("/job-a.out"),
        "successfully loaded checkpoint from /ckpt at iteration 80\n" + megatronLines(81, 150, 9.0));
    age(dir.path() + QStringLiteral("/job-b.out"), 3600);
    RunStore store;
    INGEST(store, dir.path());
    const QString run = nameOf(dir);
    const SeriesKey loss = runLevel(QStringLiteral("lm loss"), QStringLiteral("megatron-log"));
    QCOMPARE(pointAt(store, run, loss, 50), 10.0 - 0.5);
    QCOMPARE(pointAt(store, run, loss, 90), 9.0 - 0.9);
    QCOMPARE(pointAt(store, run, loss, 150), 9.0 - 1.5);
    QCOMPARE(rewindAt(store, run, 80, QStringLiteral("megatron-log")), 100.0);

    // The resumed log grows: read on, no second rewind.
    write(dir.path() + QStringLiteral("/job-a.out"), megatronLines(151, 160, 9.0), true);
    INGEST(store, dir.path());
    QCOMPARE(pointAt(store, run, loss, 160), 9.0 - 1.6);
    const auto r = store.run(run);
    QVERIFY(r);
    const auto rewinds = store.findSeries(r->id, runLevel(QStringLiteral("rewind"), QStringLiteral("megatron-log")));
    QCOMPARE(rewinds.size(), size_t(1));
    QCOMPARE(store.points(rewinds.front().id, 0, 1000, 0).size(), size_t(1));

    // Two jobs from scratch (no checkpoint loaded, both from step 1): the later written is the later.
    QTemporaryDir scratch;
    write(scratch.path() + QStringLiteral("/b.out"), megatronLines(1, 30, 10.0));
    write(scratch.path() + QStringLiteral("/a.out"), megatronLines(1, 20, 8.0));
    age(scratch.path() + QStringLiteral("/a.out"), 7200);
    RunStore second;
    INGEST(second, scratch.path());
    QCOMPARE(pointAt(second, nameOf(scratch), loss, 10), 10.0 - 0.1);
    QCOMPARE(pointAt(second, nameOf(scratch), loss, 30), 10.0 - 0.3);
    QCOMPARE(rewindAt(second, nameOf(scratch), 1, QStringLiteral("megatron-log")), 20.0);
}

void TestClusterFolders::statisticsSayWhatTheirVersionMeant()
{
    // The rules, version by version.
    QVERIFY(teStatisticCaveat(QStringLiteral("underflows%"), {}, QStringLiteral("2.6.0+cu12"), false)
                .contains(QLatin1String("equal to zero")));
    QVERIFY(teStatisticCaveat(QStringLiteral("underflows%_columnwise"), {}, QStringLiteral("2.7.1"), false)
                .contains(QLatin1String("-0")));
    QVERIFY(teStatisticCaveat(QStringLiteral("underflows%"), {}, QStringLiteral("2.8.0"), false).isEmpty());
    QVERIFY(teStatisticCaveat(QStringLiteral("underflows%"), {}, QString(), false).isEmpty()); // unknown
    QVERIFY(teStatisticCaveat(QStringLiteral("scale_inv_min"), QStringLiteral("mxfp8"), QStringLiteral("2.16"), false)
                .contains(QLatin1String("padded")));
    QVERIFY(teStatisticCaveat(QStringLiteral("scale_inv_min"), QStringLiteral("mxfp8"), QStringLiteral("2.17"), false)
                .isEmpty());
    QVERIFY(teStatisticCaveat(QStringLiteral("scale_inv_min"), QStringLiteral("delayed"), QStringLiteral("2.6"), false)
                .isEmpty());
    QVERIFY(teStatisticCaveat(QStringLiteral("std"), {}, QStringLiteral("2.9"), true).contains(QLatin1String("sign")));
    QVERIFY(teStatisticCaveat(QStringLiteral("std"), {}, QStringLiteral("2.9"), false).isEmpty());
    QVERIFY(teStatisticCaveat(QStringLiteral("mse"), {}, QStringLiteral("2.1"), true).isEmpty());

    // A run whose package list names its TE version: the heatmap of underflows% says it once; of mse, nothing.
    QTemporaryDir dir;
    write(dir.path() + QStringLiteral("/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"),
        teSteps(0, 30, 10, 1.0)
            + teLine("decoder.layers.0.mlp.linear_fc1_activation_mse", 0, QByteArrayLiteral("0.5000")) + "\n");
    write(dir.path() + QStringLiteral("/requirements.txt"),
        "torch==2.6.0\ntransformer_engine==2.5.0+4f6b0a1\nnumpy==1.26.4\n");
    RunStore store;
    INGEST(store, dir.path());
    Catalog catalog;
    QString error;
    QVERIFY2(catalog.open(dir.path(), Catalog::newStoreSerial(), &error), qPrintable(error));
    const auto r = catalog.findRun(nameOf(dir));
    QVERIFY(r);
    Heatmap h = catalog.matrix(r->ref, {QStringLiteral("underflows%"), QStringLiteral("activation"), {}, {}});
    QCOMPARE(h.layers.size(), 1);
    QVERIFY2(h.caveat.contains(QLatin1String("Transformer Engine 2.5.0+4f6b0a1 counted as underflows the elements "
                                             "equal to zero")),
        qPrintable(h.caveat));
    h = catalog.matrix(r->ref, {QStringLiteral("mse"), QStringLiteral("activation"), {}, {}});
    QCOMPARE(h.layers.size(), 1);
    QVERIFY(h.caveat.isEmpty());
}

FP8SCOPE_TEST_GUILESS_MAIN(TestClusterFolders)
#include "tst_clusterfolders.moc"

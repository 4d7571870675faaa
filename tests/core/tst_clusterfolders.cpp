// Run folders as multi-node FP8 jobs leave them (issue 40): one test function per class of what the
// writers really write (Transformer Engine's debug tool, Megatron, launchers, loggers), each built from the
// shape of that class: ranks, restarts and resumes, compressed and growing files, links and pipes, long
// heads, every statistic TE writes, validation sets, nested and non-finite JSON, and what one run is.
#include "core/analysis/triage.h"
#include "core/analysis/triageinputs.h"
#include "core/query/catalog.h"
#include "core/store/runstore.h"
#include "folderfixture.h"
#include "testmain.h"

#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace fp8scope;
using fp8scope::testing::pointAt;
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

QStringList problemTexts(const RunStore &store)
{
    QStringList out;
    for (const auto &p : store.problems())
        out << QStringLiteral("%1:%2: %3").arg(p.file).arg(p.line).arg(p.message);
    return out;
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

FP8SCOPE_TEST_GUILESS_MAIN(TestClusterFolders)
#include "tst_clusterfolders.moc"

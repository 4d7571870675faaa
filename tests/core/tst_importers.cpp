// Importers and the run store on the real public files of ../shared/fixtures/real (values spot-checked
// against the files) and on generated bad input: every problem carries its file and line or offset,
// nothing crashes, nothing stored before is lost; re-ingest is idempotent and a grown log is read on.
#include "core/importers/folderscanner.h"
#include "core/importers/importers.h"
#include "core/importers/manifestwriter.h"
#include "core/importers/tableimporters.h"
#include "core/importers/tedebugimporter.h"
#include "core/query/catalog.h"
#include "core/store/runstore.h"
#include "core/tensors/tensorreader.h"
#include "folderfixture.h"
#include "storeaccess.h"
#include "storedigest.h"
#include "testmain.h"

#include <QCryptographicHash>
#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QProcess>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstring>
#include <limits>

using namespace fp8scope;
using fp8scope::testing::pointAt;
using fp8scope::testing::write;

namespace {

QString fixtures()
{
    return QDir(QString::fromLocal8Bit(qgetenv("FP8SCOPE_SOURCE_DIR")))
        .absoluteFilePath(QStringLiteral("../shared/fixtures/real"));
}

} // namespace

class TestImporters : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void teNames_data();
    void teNames();
    void csvRecords();
    void realFixtures();
    void badInput();
    void idempotentAndIncremental();
    void earlierDataSurvivesABadFile();
    void bucketsAndHeatmapOrder();
    void workspaceManifest();
    void nestedRunFolders();
    void precisionAndRecipeFromConfigs();
    void heatmapKeepsRecipesApart();
    void quantizedCheckpointIndex();
    void formatsWrittenByRealLibraries();
    void modelFoldersSkipped();
    void wandbExportsAreTheirRuns();
    void runsNamedByTheirOwnFolder();
    void runColumnRunsHaveSettings();
    void phantomRunOfAnOlderStoreGoes();
};

void TestImporters::initTestCase()
{
    QStandardPaths::setTestModeEnabled(true);
}

void TestImporters::teNames_data()
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<QString>("layer");
    QTest::addColumn<QString>("tensor");
    QTest::addColumn<QString>("recipe");
    QTest::addColumn<QString>("stat");
    QTest::newRow("plain") << "model.esm.encoder.layers.1.self_attention.layernorm_qkv_activation_underflows%"
                           << "model.esm.encoder.layers.1.self_attention.layernorm_qkv"
                           << "activation"
                           << ""
                           << "underflows%";
    QTest::newRow("scale_inv_min over min") << "decoder.layers.0.mlp.linear_fc1_gradient_scale_inv_min"
                                            << "decoder.layers.0.mlp.linear_fc1"
                                            << "gradient"
                                            << ""
                                            << "scale_inv_min";
    QTest::newRow("recipe prefix") << "layers.3.linear_fc2_activation_mxfp8_underflows%"
                                   << "layers.3.linear_fc2"
                                   << "activation"
                                   << "mxfp8"
                                   << "underflows%";
    QTest::newRow("block recipe, columnwise") << "layers.3.linear_fc2_weight_fp8_block_scaling_mse_columnwise"
                                              << "layers.3.linear_fc2"
                                              << "weight"
                                              << "fp8_block_scaling"
                                              << "mse_columnwise";
    QTest::newRow("tensor word inside layer") << "my_weight_layer_gradient_weight_l2_norm"
                                              << "my_weight_layer_gradient"
                                              << "weight"
                                              << ""
                                              << "l2_norm";
    QTest::newRow("wgrad dynamic_range") << "layers.0.proj_wgrad_dynamic_range"
                                         << "layers.0.proj"
                                         << "wgrad"
                                         << ""
                                         << "dynamic_range";
    // The general shape <layer>_<tensor>_<stat> (issue 40): TE's newer statistics, a custom feature's, and
    // AutoswitchGemm's <layer>_<gemm>_<tensor>_<stat>.
    QTest::newRow("blockwise dynamic range")
        << "decoder.layers.2.mlp.linear_fc1_activation_max_blockwise_dynamic_range_block_size_32_dims_1_max_over_"
           "orientations"
        << "decoder.layers.2.mlp.linear_fc1"
        << "activation"
        << ""
        << "max_blockwise_dynamic_range_block_size_32_dims_1_max_over_orientations";
    QTest::newRow("custom feature") << "model.layers.0.self_attn.q_proj_activation_percentage_greater_than_threshold"
                                    << "model.layers.0.self_attn.q_proj"
                                    << "activation"
                                    << ""
                                    << "percentage_greater_than_threshold";
    QTest::newRow("autoswitch fprop") << "decoder.layers.1.mlp.linear_fc2_fprop_activation_underflow_pct"
                                      << "decoder.layers.1.mlp.linear_fc2"
                                      << "activation"
                                      << ""
                                      << "fprop_underflow_pct";
    QTest::newRow("autoswitch dgrad") << "decoder.layers.1.mlp.linear_fc2_dgrad_gradient_underflow_pct"
                                      << "decoder.layers.1.mlp.linear_fc2"
                                      << "gradient"
                                      << ""
                                      << "dgrad_underflow_pct";
    QTest::newRow("autoswitch wgrad mse") << "decoder.layers.1.mlp.linear_fc2_wgrad_activation_mse"
                                          << "decoder.layers.1.mlp.linear_fc2"
                                          << "activation"
                                          << ""
                                          << "wgrad_mse";
    QTest::newRow("recipe before a new statistic") << "layers.3.fc1_gradient_mxfp8_max_blockwise_dynamic_range"
                                                   << "layers.3.fc1"
                                                   << "gradient"
                                                   << "mxfp8"
                                                   << "max_blockwise_dynamic_range";
}

void TestImporters::teNames()
{
    QFETCH(QString, name);
    TeStatName n;
    QVERIFY(TeDebugImporter::splitName(name, &n));
    QTEST(n.layer, "layer");
    QTEST(n.tensor, "tensor");
    QTEST(n.recipe, "recipe");
    QTEST(n.stat, "stat");
    QVERIFY(!TeDebugImporter::splitName(QStringLiteral("layers.0.proj_banana_mse"), &n));
    QVERIFY(!TeDebugImporter::splitName(QStringLiteral("layers.0.proj_activation"), &n));
    // A statistic nobody knows is kept under its own name.
    QVERIFY(TeDebugImporter::splitName(QStringLiteral("layers.0.proj_activation_sparkle"), &n));
    QCOMPARE(n.stat, QStringLiteral("sparkle"));
}

void TestImporters::csvRecords()
{
    QStringList f;
    QVERIFY(CsvImporter::splitRecord(QStringLiteral("a,\"b,c\",\"say \"\"hi\"\"\",,e"), &f));
    QCOMPARE(f,
        QStringList({QStringLiteral("a"), QStringLiteral("b,c"), QStringLiteral("say \"hi\""), QString(),
            QStringLiteral("e")}));
    QVERIFY(!CsvImporter::splitRecord(QStringLiteral("a,\"open"), &f));
}

void TestImporters::realFixtures()
{
    if (!QFileInfo(fixtures()).isDir())
        QSKIP("../shared/fixtures/real is absent");
    // A private copy: the shared fixtures stay untouched (a store would otherwise land beside them
    // whenever the process may write there).
    QTemporaryDir copy;
    const QString root = copy.path() + QStringLiteral("/real");
    QDirIterator it(fixtures(), QDir::Files, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString src = it.next();
        const QString dst = root + QLatin1Char('/') + QDir(fixtures()).relativeFilePath(src);
        QDir().mkpath(QFileInfo(dst).absolutePath());
        QVERIFY(QFile::copy(src, dst));
        QFile::setPermissions(dst, QFile::ReadOwner | QFile::WriteOwner);
    }
    RunStore store;
    QString error;
    QVERIFY2(store.open(root, &error), qPrintable(error));
    const IngestReport report = store.ingest();
    QCOMPARE(report.filesFailed, 0);
    const auto problems = store.problems();
    for (const ProblemRecord &p : problems)
        qWarning("%s:%lld: %s", qPrintable(p.file), (long long)p.line, qPrintable(p.message));
    // One: W&B's configs.json keys its runs by display name, its history files by id; said, not guessed.
    QCOMPARE(problems.size(), size_t(1));
    QCOMPARE(problems.front().file, QStringLiteral("wandb_csv/configs.json"));
    // No phantom run of the W&B folder: its two history files are the runs.
    QVERIFY(!store.run(QStringLiteral("wandb_csv")));
    QVERIFY(store.run(QStringLiteral("history_98xg86yz")));
    QVERIFY(store.run(QStringLiteral("history_ww9z3vy4")));

    // Transformer Engine statistics: 6 layers x 3 tensors x 4 stats, iterations 0..240 every 10.
    const auto te = store.run(QStringLiteral("nvdlfw_inspect_esm2"));
    QVERIFY(te);
    QCOMPARE(te->seriesCount, 72);
    QCOMPARE(te->pointCount, 1800);
    const QString l1 = QStringLiteral("model.esm.encoder.layers.1.self_attention.layernorm_qkv");
    QCOMPARE(
        pointAt(store, te->name, {l1, QStringLiteral("activation"), QStringLiteral("underflows%"), {}, {}}, 0), 4.7781);
    const Heatmap h = testing::matrixOf(store, te->id, QStringLiteral("underflows%"), QStringLiteral("activation"));
    QCOMPARE(h.layers.size(), 6);
    QCOMPARE(h.layers.front(), l1);
    QCOMPARE(h.steps.size(), size_t(25));
    QCOMPARE(h.steps.back(), 240);

    // Megatron stdout: the first interval was all skipped (no lm loss: a gap, stored as NaN and drawn as a mark,
    // issue 54), then lm loss 1.203115E+01.
    const QString meg = QStringLiteral("megatron_stdout");
    QCOMPARE(pointAt(store, meg, {{}, {}, QStringLiteral("lm loss"), {}, {}}, 20), 12.03115);
    QCOMPARE(pointAt(store, meg, {{}, {}, QStringLiteral("number of skipped iterations"), {}, {}}, 10), 10.0);
    QVERIFY(std::isnan(pointAt(store, meg, {{}, {}, QStringLiteral("lm loss"), {}, {}}, 10))); // no loss
    QCOMPARE(pointAt(store, meg, {{}, {}, QStringLiteral("validation lm loss value"), {}, {}}, 100), 8.017406);

    // Golden values, list layout, opened as the workspace of its two runs; precision from their configs.
    RunStore goldenStore;
    QVERIFY(goldenStore.open(root + QStringLiteral("/megatron_golden_values"), &error));
    goldenStore.ingest();
    QCOMPARE(goldenStore.problems().size(), size_t(0));
    const auto fp8
        = goldenStore.run(QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp1_pp1_fp8_no_model_parallel"));
    const auto base = goldenStore.run(QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp1_pp1_bf16_baseline"));
    QVERIFY(fp8 && base);
    QCOMPARE(fp8->precision, QStringLiteral("fp8"));
    QCOMPARE(base->precision, QStringLiteral("fp16")); // the "bf16" baseline really trains in FP16
    QCOMPARE(fp8->recipe, QStringLiteral("delayed")); // --fp8-amax-history-len 1024 and no --fp8-recipe
    QCOMPARE(base->recipe, QString());
    const SeriesKey fp8Loss {
        {}, {}, QStringLiteral("lm loss"), QStringLiteral("golden:golden_values_dev_dgx_a100"), {}};
    const auto loss = goldenStore.findSeries(fp8->id, fp8Loss);
    QCOMPARE(loss.size(), size_t(1));
    QCOMPARE(loss.front().points, 400);
    QCOMPARE(pointAt(goldenStore, fp8->name, fp8Loss, 0), 10.8833);
    QCOMPARE(pointAt(goldenStore, fp8->name, fp8Loss, 5), 10.90234);
    QCOMPARE(pointAt(goldenStore, fp8->name, fp8Loss, 1995), 4.64493);

    // lm-eval v0.4 and the "N/A" stderr of the regression file.
    const auto lm = store.run(QStringLiteral("lm_eval"));
    QVERIFY(lm);
    // Both files score arc_easy: each file's result stays (one overwrote the other before).
    bool winogrande = false, arcEasy = false;
    int arcEasyResults = 0;
    for (const EvalRow &row : store.evals(lm->id)) {
        const EvalRecord &e = row.eval;
        if (e.task == QLatin1String("winogrande") && e.metric == QLatin1String("acc")) {
            QCOMPARE(e.value, 0.734017363851618);
            QCOMPARE(e.stderrValue, 0.012418323153051048);
            QCOMPARE(e.inference, QStringLiteral("bf16")); // config.model_dtype "torch.bfloat16"
            winogrande = true;
        }
        if (e.task == QLatin1String("arc_easy") && e.metric == QLatin1String("acc")) {
            ++arcEasyResults;
            if (row.file.endsWith(QLatin1String("cpu_regression_expected.json"))) {
                QCOMPARE(e.value, 0.3);
                QVERIFY(std::isnan(e.stderrValue));
                arcEasy = true;
            }
        }
    }
    QCOMPARE(arcEasyResults, 2);
    QVERIFY(winogrande && arcEasy);

    // The whole folder: megatron_golden_values divides into its two runs here as well, and each keeps its
    // own values (as one run, the FP8 run's files overwrote the baseline's series of the same file names).
    QVERIFY(!store.run(QStringLiteral("megatron_golden_values")));
    const auto wsFp8 = store.run(fp8->name);
    const auto wsBase = store.run(base->name);
    QVERIFY(wsFp8 && wsBase);
    QCOMPARE(wsFp8->pointCount, fp8->pointCount);
    QCOMPARE(wsBase->pointCount, base->pointCount);
    QCOMPARE(wsFp8->precision, QStringLiteral("fp8"));
    QCOMPARE(wsBase->precision, QStringLiteral("fp16"));
    QCOMPARE(pointAt(store, fp8->name, fp8Loss, 0), 10.8833);
    QCOMPARE(pointAt(store, base->name, fp8Loss, 0), 10.89393);

    // W&B history exports: one run per file, 500 rows of two metrics.
    const auto wb = store.run(QStringLiteral("history_98xg86yz"));
    QVERIFY(wb);
    QCOMPARE(wb->pointCount, 1000);
    QCOMPARE(pointAt(store, wb->name, {{}, {}, QStringLiteral("train/loss"), {}, {}}, 8), 3.83203125);
    QCOMPARE(pointAt(store, wb->name, {{}, {}, QStringLiteral("train/loss"), {}, {}}, 48779), 1.0383809804916382);
}

void TestImporters::badInput()
{
    QTemporaryDir dir;
    const QString run = dir.path() + QStringLiteral("/run");
    const QByteArray good
        = "2026-01-15 23:06:41,584 - INFO - layers.1.fc1_activation_mse \t iteration=000010 \t value=0.5000\n";
    QByteArray te = good;
    te += "complete garbage here iteration=abc value=\n";
    te += "2026-01-15 23:06:41,584 - INFO - layers.1.fc1_activation_sparkle \t iteration=000010 \t value=1.0\n";
    te += "2026-01-15 - INFO - layers.1.fc1_activation_mse \t iteration=000020 \t value=\xff\xfe\n";
    te += "2026-01-15 - INFO - layers.1.fc1_activation_mse iteration=000030 value=" + QByteArray(10 << 20, '7') + "\n";
    te += "2026-01-15 23:06:41,584 - INFO - layers.1.fc1_activation_mse \t iteration=000040 \t va"; // truncated
    write(run + QStringLiteral("/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"), te);
    write(run + QStringLiteral("/metrics.csv"), "step,loss\n1,2.5\n2,abc\n3\n4,1.5\n");
    write(run + QStringLiteral("/metrics.jsonl"),
        "{\"step\": 1, \"loss\": 2}\n[1,2]\n{\"step\": 2, \"loss\": \n{\"loss\": 3}\n");
    write(run + QStringLiteral("/golden_values.json"), "{\"lm loss\": {\"start_step\": 1, \"values\": 7}}");
    write(run + QStringLiteral("/fp8scope.json"), "[1, 2, 3]");
    write(run + QStringLiteral("/results.json"),
        "{\"results\": {\"arc\": {\"acc,none\": 0.5, \"acc_stderr,none\": \"N/A\"}}, \"versions\": {");
    write(run + QStringLiteral("/config.yaml"), "a: [1, 2\nb: : :\n");
    RunStore store;
    QString error;
    QVERIFY2(store.open(run, &error), qPrintable(error));
    const IngestReport report = store.ingest();
    QCOMPARE(report.filesFailed, 0);
    QMap<QString, QList<int64_t>> lines;
    for (const ProblemRecord &p : store.problems()) {
        QVERIFY(!p.message.isEmpty());
        QVERIFY(p.line > 0 || p.offset >= 0 || p.file.endsWith(QLatin1String(".json")));
        lines[QFileInfo(p.file).fileName()] << p.line;
    }
    // (Line 3's statistic, unknown to TE's own list, is kept under its name.)
    QCOMPARE(lines.value(QStringLiteral("nvdlfw_inspect_globalrank-0.log")), QList<int64_t>({2, 4, 5, 6}));
    QCOMPARE(lines.value(QStringLiteral("metrics.csv")), QList<int64_t>({3, 4}));
    QCOMPARE(lines.value(QStringLiteral("metrics.jsonl")), QList<int64_t>({2, 3, 4}));
    QVERIFY(lines.contains(QStringLiteral("golden_values.json")));
    QVERIFY(lines.contains(QStringLiteral("fp8scope.json")));
    QVERIFY(lines.contains(QStringLiteral("results.json")));
    QVERIFY(lines.contains(QStringLiteral("config.yaml")));
    // What was readable is stored.
    QCOMPARE(pointAt(store, QStringLiteral("run"),
                 {QStringLiteral("layers.1.fc1"), QStringLiteral("activation"), QStringLiteral("mse"), {}, {}}, 10),
        0.5);
    QCOMPARE(
        pointAt(store, QStringLiteral("run"), {{}, {}, QStringLiteral("loss"), QStringLiteral("csv"), {}}, 4), 1.5);
    QCOMPARE(
        pointAt(store, QStringLiteral("run"), {{}, {}, QStringLiteral("loss"), QStringLiteral("jsonl"), {}}, 1), 2.0);
}

void TestImporters::idempotentAndIncremental()
{
    QTemporaryDir dir;
    const QString log
        = dir.path() + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log");
    QByteArray first;
    for (int it = 0; it < 50; ++it)
        first += "x - INFO - layers." + QByteArray::number(it % 5) + ".fc2_activation_underflows% iteration="
            + QByteArray::number(it / 5 * 10).rightJustified(6, '0') + " value=" + QByteArray::number(it * 0.5) + "\n";
    write(log, first + "x - INFO - layers.0.fc2_activation_underflows% iteration=000");
    RunStore store;
    QString error;
    QVERIFY2(store.open(dir.path(), &error), qPrintable(error));
    IngestReport r = store.ingest();
    QCOMPARE(r.filesRead, 1);
    QCOMPARE(r.pointsWritten, 50);
    QCOMPARE(store.problems().size(), size_t(1)); // the unfinished last line, for now
    const QByteArray before = testing::storeDigest(store);
    // A file whose last line waits is looked at again (read on from that line), and nothing changes.
    r = store.ingest();
    QCOMPARE(r.filesResumed, 1);
    QCOMPARE(r.pointsWritten, 0);
    QCOMPARE(testing::storeDigest(store), before);

    // The writer finishes the line and appends more: only the new lines are read.
    write(log, "100 value=9.5\nx - INFO - layers.1.fc2_activation_underflows% iteration=000100 value=7.25\n", true);
    r = store.ingest();
    QCOMPARE(r.filesResumed, 1);
    QCOMPARE(r.pointsWritten, 2);
    QCOMPARE(store.problems().size(), size_t(0));
    QCOMPARE(
        pointAt(store, QFileInfo(dir.path()).fileName(),
            {QStringLiteral("layers.0.fc2"), QStringLiteral("activation"), QStringLiteral("underflows%"), {}, {}}, 100),
        9.5);

    // A store built in one go from the final file is the same store.
    QTemporaryDir other;
    QVERIFY(QDir().mkpath(other.path() + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs")));
    QVERIFY(QFile::copy(
        log, other.path() + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log")));
    RunStore fresh;
    QVERIFY(fresh.open(other.path(), &error));
    fresh.ingest();
    // Run names follow the folder names; compare the points under one name.
    Statement rename = RunStoreTestAccess::db(fresh).prepare("UPDATE runs SET name=?");
    QVERIFY(rename.bind(1, QFileInfo(dir.path()).fileName()).exec());
    QCOMPARE(testing::storeDigest(fresh), testing::storeDigest(store));
}

void TestImporters::earlierDataSurvivesABadFile()
{
    QTemporaryDir dir;
    write(dir.path() + QStringLiteral("/a.csv"), "step,loss\n1,3.0\n2,2.0\n");
    write(dir.path() + QStringLiteral("/b.csv"), "step,grad\n1,0.5\n2,0.25\n");
    RunStore store;
    QString error;
    QVERIFY(store.open(dir.path(), &error));
    store.ingest();
    const QString run = QFileInfo(dir.path()).fileName();
    QCOMPARE(pointAt(store, run, {{}, {}, QStringLiteral("loss"), {}, {}}, 2), 2.0);
    // One file is replaced by garbage: its problems are reported with the line; what the other file holds
    // stays; the store holds what the files say, so the replaced file's old points are gone.
    write(dir.path() + QStringLiteral("/a.csv"), "step,loss\n\x01\x02\x03 not csv at all\n");
    const IngestReport report = store.ingest();
    QCOMPARE(report.filesFailed, 0);
    QCOMPARE(pointAt(store, run, {{}, {}, QStringLiteral("grad"), {}, {}}, 2), 0.25);
    QVERIFY(pointAt(store, run, {{}, {}, QStringLiteral("loss"), {}, {}}, 2) < -1e299);
    QCOMPARE(store.problems().size(), size_t(1));
    QCOMPARE(store.problems().front().line, 2);
}

void TestImporters::workspaceManifest()
{
    QTemporaryDir dir;
    // One run folder only, but the manifest makes the folder a workspace and pairs the runs.
    write(dir.path() + QStringLiteral("/fp8/a.csv"), "step,loss\n1,3.0\n");
    write(dir.path() + QStringLiteral("/bf16/b.csv"), "step,loss\n1,2.9\n");
    write(dir.path() + QStringLiteral("/fp8scope-workspace.json"),
        R"({"runs": {"fp8": {"precision": "mxfp8", "baseline": "bf16", "name": "FP8 trial"},
                     "ghost": {"precision": "fp8"}, "bf16": {"precision": 16}}})");
    const FolderScan scan = scanFolder(dir.path());
    QVERIFY(scan.workspace);
    RunStore store;
    QString error;
    QVERIFY(store.open(dir.path(), &error));
    store.ingest();
    QStringList names;
    for (const RunInfo &r : store.runs())
        names << r.name;
    names.sort();
    QCOMPARE(names, (QStringList {QStringLiteral("bf16"), QStringLiteral("fp8")})); // no run for "ghost"
    const auto fp8 = store.run(QStringLiteral("fp8"));
    QCOMPARE(fp8->precision, QStringLiteral("mxfp8"));
    QCOMPARE(fp8->baseline, QStringLiteral("bf16"));
    QCOMPARE(fp8->displayName, QStringLiteral("FP8 trial"));
    QStringList problems;
    for (const ProblemRecord &p : store.problems())
        problems << p.file + QLatin1Char(':') + p.message;
    problems.sort();
    QCOMPARE(problems,
        (QStringList {QStringLiteral("fp8scope-workspace.json:workspace manifest 'bf16': 'precision' must be a string"),
            QStringLiteral("fp8scope-workspace.json:workspace manifest 'ghost': no such run (a folder beside the "
                           "manifest, or a W&B history file's run)")}));
    // Not JSON at all: one problem, the runs stay.
    write(dir.path() + QStringLiteral("/fp8scope-workspace.json"), "{\"runs\": [");
    store.ingest();
    QCOMPARE(store.runs().size(), size_t(2));
    bool reported = false;
    for (const ProblemRecord &p : store.problems())
        reported = reported || p.file == QLatin1String("fp8scope-workspace.json");
    QVERIFY(reported);
}

void TestImporters::precisionAndRecipeFromConfigs()
{
    // The run list's precision and recipe from what each run's config records: Transformer Engine recipe
    // classes, Megatron's --fp8-recipe, an amax history without a recipe (delayed, the default), and a
    // manifest, which the configs never override.
    QTemporaryDir dir;
    const QString ws = dir.path();
    const QByteArray csv = "step,loss\n1,2.0\n";
    const struct {
        const char *run;
        const char *file;
        QByteArray text;
        const char *precision;
        const char *recipe;
    } cases[] = {
        {"te_mx", "config.json",
            R"({"fp8_config": {"enabled": true, "fp8_format": "E4M3",
                "fp8_recipe": "transformer_engine.common.recipe.MXFP8BlockScaling"}})",
            "fp8", "mxfp8"},
        {"te_block", "config.json",
            R"({"fp8_config": {"fp8_format": "E4M3", "fp8_recipe": "transformer_engine.common.recipe.Float8BlockScaling"}})",
            "fp8", "blockwise"},
        {"te_current", "config.json",
            R"({"fp8_config": {"fp8_format": "HYBRID", "fp8_recipe": "Float8CurrentScaling"}})", "fp8", "current"},
        {"meg_tensorwise", "model_config.yaml", "MODEL_ARGS:\n  --fp8-format: hybrid\n  --fp8-recipe: tensorwise\n",
            "fp8", "current"},
        {"meg_default", "model_config.yaml", "MODEL_ARGS:\n  --fp8-format: hybrid\n  --fp8-amax-history-len: 1024\n",
            "fp8", "delayed"},
        {"meg_bf16", "model_config.yaml", "MODEL_ARGS:\n  --bf16: true\n  --fp8-amax-history-len: 16\n", "bf16", ""},
        {"unknown_recipe", "config.json", R"({"fp8_format": "E4M3", "fp8_recipe": "my_lab.SpecialScaling"})", "fp8",
            "SpecialScaling"},
    };
    for (const auto &c : cases) {
        write(ws + QLatin1Char('/') + QLatin1String(c.run) + QStringLiteral("/metrics.csv"), csv);
        write(ws + QLatin1Char('/') + QLatin1String(c.run) + QLatin1Char('/') + QLatin1String(c.file), c.text);
    }
    write(ws + QStringLiteral("/manifest/metrics.csv"), csv);
    // With the fields the other readers of a manifest take (the attempts', the audit's): none is "unknown".
    write(ws + QStringLiteral("/manifest/fp8scope.json"),
        R"({"precision": "mxfp8", "recipe": "mxfp8-ocp", "parent": "meg_default", "inference_checkpoint": "export",)"
        R"( "inference_reference": ["reference"]})");
    write(ws + QStringLiteral("/manifest/config.json"), R"({"fp8_format": "E4M3", "fp8_recipe": "DelayedScaling"})");
    RunStore store;
    QString error;
    QVERIFY2(store.open(ws, &error), qPrintable(error));
    store.ingest();
    for (const auto &c : cases) {
        const auto run = store.run(QLatin1String(c.run));
        QVERIFY2(run, c.run);
        QCOMPARE(run->precision, QLatin1String(c.precision));
        QCOMPARE(run->recipe, QLatin1String(c.recipe));
    }
    const auto manifest = store.run(QStringLiteral("manifest"));
    QVERIFY(manifest);
    for (const auto &p : store.problems())
        QVERIFY2(!p.message.contains(QLatin1String("unknown field")), qPrintable(p.message));
    QCOMPARE(manifest->precision, QStringLiteral("mxfp8"));
    QCOMPARE(manifest->recipe, QStringLiteral("mxfp8-ocp"));
    // Read once, into the store: the attempts and the audit read these, not the file.
    QCOMPARE(manifest->parent, QStringLiteral("meg_default"));
    QCOMPARE(manifest->inferenceCheckpoint, QStringLiteral("export"));
    QCOMPARE(manifest->inferenceReference, QStringLiteral("reference"));
    QCOMPARE(manifest->manifest, QStringLiteral("manifest/fp8scope.json"));
    QCOMPARE(manifest->manifestKey, QString());
    // A list of references, kept one per line; a list of anything else is a problem.
    write(ws + QStringLiteral("/manifest/fp8scope.json"),
        R"({"precision": "mxfp8", "inference_reference": ["a.safetensors", "w/b.pt"]})");
    store.ingest();
    QCOMPARE(store.run(QStringLiteral("manifest"))->inferenceReference, QStringLiteral("a.safetensors\nw/b.pt"));
    write(ws + QStringLiteral("/manifest/fp8scope.json"), R"({"precision": "mxfp8", "inference_reference": [3]})");
    store.ingest();
    QStringList said;
    for (const auto &p : store.problems())
        said << p.message;
    QVERIFY2(said.contains(QStringLiteral("manifest: 'inference_reference' must be a path or a list of paths")),
        qPrintable(said.join(QLatin1Char('\n'))));
}

// A run of a group two folders down (group/base/...) is named after its own folder, so a manifest that names it so
// pairs with it; Run Settings write into that folder. The division is the one its parent gives: the folder opened
// alone is the same run.
void TestImporters::runsNamedByTheirOwnFolder()
{
    QTemporaryDir dir;
    const QString ws = dir.filePath(QStringLiteral("ws"));
    write(ws + QStringLiteral("/baselines/base/metrics.csv"), "step,loss\n1,3.0\n2,2.9\n");
    write(ws + QStringLiteral("/baselines/base/fp8scope.json"), R"({"precision": "bf16"})");
    write(ws + QStringLiteral("/fp8/metrics.csv"), "step,loss\n1,3.1\n2,3.0\n");
    write(ws + QStringLiteral("/fp8/fp8scope.json"), R"({"precision": "fp8", "baseline": "base"})");
    // Parts of one run stay parts: a run whose files lie in logs/ is its folder's.
    write(ws + QStringLiteral("/other/logs/metrics.csv"), "step,loss\n1,3.2\n");
    const FolderScan scan = scanFolder(ws);
    QVERIFY(scan.workspace);
    QCOMPARE(scan.runOfFolder.value(QStringLiteral("baselines/base")), QStringLiteral("base"));
    QCOMPARE(scan.runOfFolder.value(QStringLiteral("other")), QStringLiteral("other"));
    QVERIFY(!scan.runOfFolder.contains(QStringLiteral("baselines")));
    Catalog catalog;
    QString error;
    QVERIFY2(testing::openAndIngest(ws, &catalog, &error), qPrintable(error));
    const auto fp8 = catalog.findRun(QStringLiteral("fp8"));
    const auto base = catalog.findRun(QStringLiteral("base"));
    QVERIFY(fp8 && base);
    const Pairing p = catalog.pairing(fp8->ref);
    QCOMPARE(p.baseline, base->ref);
    QCOMPARE(p.basis, Pairing::Basis::Manifest);
    const std::optional<QString> folder = runFolderOf(ws, QStringLiteral("base"));
    QVERIFY(folder);
    QCOMPARE(*folder, QDir(ws).absoluteFilePath(QStringLiteral("baselines/base")));
    // The store keeps each run's folder (no scan to find it again) and its manifest's place.
    QCOMPARE(base->ownFolder, std::optional<QString>(QStringLiteral("baselines/base")));
    QCOMPARE(base->manifest, QStringLiteral("baselines/base/fp8scope.json"));
    const std::optional<ManifestPlace> place
        = runManifestPlace(ws, QStringLiteral("other"), {}, {}, catalog.findRun(QStringLiteral("other"))->ownFolder);
    QVERIFY(place);
    QCOMPARE(place->file, QDir(ws).absoluteFilePath(QStringLiteral("other/fp8scope.json")));
    QCOMPARE(place->key, QString());
}

// Runs a table's run column makes (no folder or file is any of them alone) have settings all the same: a workspace
// manifest beside the table, keyed by the run, which the ingest reads after the table (the runs exist then).
void TestImporters::runColumnRunsHaveSettings()
{
    QTemporaryDir dir;
    const QString ws = dir.filePath(QStringLiteral("sweep"));
    write(ws + QStringLiteral("/logs/all_runs.csv"), "run,step,loss\nlr1,1,3.0\nlr1,2,2.9\nlr2,1,3.1\nlr2,2,3.0\n");
    Catalog catalog;
    QString error;
    QVERIFY2(testing::openAndIngest(ws, &catalog, &error), qPrintable(error));
    const auto lr2 = catalog.findRun(QStringLiteral("lr2"));
    QVERIFY(lr2);
    QVERIFY(!lr2->ownFolder);
    QCOMPARE(lr2->filesFolder, std::optional<QString>(QStringLiteral("logs/")));
    const std::optional<ManifestPlace> place
        = runManifestPlace(ws, lr2->name, lr2->manifest, lr2->manifestKey, lr2->ownFolder, lr2->filesFolder);
    QVERIFY(place);
    QCOMPARE(place->file, QDir(ws).absoluteFilePath(QStringLiteral("logs/fp8scope-workspace.json")));
    QCOMPARE(place->key, QStringLiteral("lr2"));
    RunManifest settings;
    settings.precision = QStringLiteral("fp8");
    settings.baseline = QStringLiteral("lr1");
    QVERIFY2(writeRunManifest(*place, settings, &error), qPrintable(error));
    Catalog again;
    QVERIFY2(testing::openAndIngest(ws, &again, &error), qPrintable(error));
    const auto read = again.findRun(QStringLiteral("lr2"));
    QVERIFY(read);
    QCOMPARE(read->precision, QStringLiteral("fp8"));
    QCOMPARE(read->manifestBaseline, QStringLiteral("lr1"));
    QCOMPARE(read->manifest, QStringLiteral("logs/fp8scope-workspace.json"));
    QCOMPARE(read->manifestKey, QStringLiteral("lr2"));
    QStringList names;
    for (const Run &r : again.runs())
        names << r.name;
    names.sort();
    // The folder's run is made by nothing (every record names its run): no phantom run, no problem.
    QCOMPARE(names, (QStringList {QStringLiteral("lr1"), QStringLiteral("lr2")}));
    QVERIFY(again.problems().empty());
}

// A store an older fp8scope wrote (schema 15) holds the empty run it made of a folder of W&B exports, their files
// counted to it: the upgrade reads the tables again into their own runs, and the empty run goes.
void TestImporters::phantomRunOfAnOlderStoreGoes()
{
    QTemporaryDir dir;
    const QString ws = dir.filePath(QStringLiteral("wandb_export"));
    write(ws + QStringLiteral("/history_aaaa1111.csv"), "_step,train/loss\n1,3.0\n2,2.9\n");
    write(ws + QStringLiteral("/history_bbbb2222.csv"), "_step,train/loss\n1,3.1\n2,3.0\n");
    QString error;
    {
        RunStore store;
        QVERIFY2(store.open(ws, &error), qPrintable(error));
        store.ingest();
        // As version 15 left it: no column of 16's, the folder's run made, the files counted to it.
        Database &db = RunStoreTestAccess::db(store);
        for (const char *sql : {"ALTER TABLE files DROP COLUMN folder_run", "ALTER TABLE runs DROP COLUMN parent",
                 "ALTER TABLE runs DROP COLUMN inference_checkpoint",
                 "ALTER TABLE runs DROP COLUMN inference_reference", "ALTER TABLE runs DROP COLUMN manifest",
                 "ALTER TABLE runs DROP COLUMN manifest_key", "ALTER TABLE runs DROP COLUMN folder",
                 "ALTER TABLE runs DROP COLUMN files_folder", "ALTER TABLE runs DROP COLUMN run_group",
                 "DROP TABLE expert_rows", "INSERT INTO runs(name) VALUES('wandb_export')",
                 "UPDATE files SET run_id=(SELECT id FROM runs WHERE name='wandb_export')",
                 "UPDATE meta SET value='15' WHERE key='schema_version'"})
            QVERIFY2(db.exec(sql, &error), qPrintable(QLatin1String(sql) + QStringLiteral(": ") + error));
    }
    RunStore store;
    QVERIFY2(store.open(ws, &error), qPrintable(error));
    QVERIFY(store.run(QStringLiteral("wandb_export"))); // still there before the ingest
    const IngestReport report = store.ingest();
    QVERIFY2(report.errors.isEmpty(), qPrintable(report.errors.join(QLatin1Char('\n'))));
    QVERIFY(!store.run(QStringLiteral("wandb_export")));
    QStringList names;
    for (const RunInfo &r : store.runs())
        names << r.name;
    names.sort();
    QCOMPARE(names, (QStringList {QStringLiteral("history_aaaa1111"), QStringLiteral("history_bbbb2222")}));
    QCOMPARE(store.run(QStringLiteral("history_aaaa1111"))->pointCount, 2);
}

// W&B history exports side by side are each a run (history_<id>), and the folder that holds them is none: no
// phantom run. Their configs.json, keyed by W&B's display names, is said as a problem (keys that name a history
// run by id are that run's config). Run Settings are saved in a workspace manifest keyed by the run and read back.
void TestImporters::wandbExportsAreTheirRuns()
{
    QTemporaryDir dir;
    const QString ws = dir.filePath(QStringLiteral("wandb_export"));
    write(ws + QStringLiteral("/history_aaaa1111.csv"), "_step,train/loss\n1,3.0\n2,2.9\n");
    write(ws + QStringLiteral("/history_bbbb2222.csv"), "_step,train/loss\n1,3.1\n2,3.0\n");
    write(ws + QStringLiteral("/configs.json"),
        R"x({"FL2 (first/last 2 BF16)": {"fp8_config": {"enabled": true}}, "bbbb2222": {"fp8_recipe": "MXFP8BlockScaling"}})x");
    RunStore store;
    QString error;
    QVERIFY2(store.open(ws, &error), qPrintable(error));
    IngestReport report = store.ingest();
    QVERIFY2(report.errors.isEmpty(), qPrintable(report.errors.join(QLatin1Char('\n'))));
    const auto names = [&store]() {
        QStringList out;
        for (const RunInfo &r : store.runs())
            out << r.name;
        out.sort();
        return out;
    };
    QCOMPARE(names(), (QStringList {QStringLiteral("history_aaaa1111"), QStringLiteral("history_bbbb2222")}));
    QStringList problems;
    for (const ProblemRecord &p : store.problems())
        problems << p.file + QLatin1Char(':') + p.message;
    QCOMPARE(problems.size(), 1);
    QVERIFY2(
        problems.front().startsWith(QStringLiteral("configs.json:the configs of W&B runs 'FL2 (first/last 2 BF16)' ")),
        qPrintable(problems.front()));
    // The config keyed by a history run's id is that run's.
    QCOMPARE(store.run(QStringLiteral("history_bbbb2222"))->recipe, QStringLiteral("mxfp8"));
    // Read again: every file unchanged (each counted to the run it wrote, the folder's division kept apart).
    report = store.ingest();
    QCOMPARE(report.filesUnchanged, 3);
    QCOMPARE(report.filesRead, 0);

    // Run Settings of a run with no folder of its own: the workspace manifest beside its file, keyed by it.
    const std::optional<ManifestPlace> place = runManifestPlace(ws, QStringLiteral("history_aaaa1111"));
    QVERIFY(place);
    QCOMPARE(place->file, QDir(ws).absoluteFilePath(QStringLiteral("fp8scope-workspace.json")));
    QCOMPARE(place->key, QStringLiteral("history_aaaa1111"));
    RunManifest settings;
    settings.precision = QStringLiteral("fp8");
    settings.recipe = QStringLiteral("blockwise");
    settings.name = QStringLiteral("FL2");
    QVERIFY2(writeRunManifest(*place, settings, &error), qPrintable(error));
    QVERIFY2(writeRunParent(*place, QStringLiteral("history_bbbb2222"), &error), qPrintable(error));
    store.ingest();
    QCOMPARE(names(), (QStringList {QStringLiteral("history_aaaa1111"), QStringLiteral("history_bbbb2222")}));
    const auto a = store.run(QStringLiteral("history_aaaa1111"));
    QCOMPARE(a->precision, QStringLiteral("fp8"));
    QCOMPARE(a->recipe, QStringLiteral("blockwise"));
    QCOMPARE(a->displayName, QStringLiteral("FL2"));
    QCOMPARE(a->parent, QStringLiteral("history_bbbb2222"));
    QCOMPARE(a->manifest, QStringLiteral("fp8scope-workspace.json"));
    QVERIFY(!a->folder); // no folder is this run's alone
    QCOMPARE(a->manifestKey, QStringLiteral("history_aaaa1111"));
    // Saved again through what the store says: the same file, the same key.
    const std::optional<ManifestPlace> again = runManifestPlace(ws, a->name, a->manifest, a->manifestKey);
    QVERIFY(again);
    QCOMPARE(again->file, place->file);
    QCOMPARE(again->key, place->key);
    for (const ProblemRecord &p : store.problems())
        QVERIFY2(p.file != QLatin1String("fp8scope-workspace.json"), qPrintable(p.message));
}

void TestImporters::heatmapKeepsRecipesApart()
{
    // Tensors recomputed under several recipes: each heatmap row is one layer under one recipe (before, a
    // layer had a row per recipe, all named alike). The run's own recipe is shown first, then the one most
    // layers have; a recipe asked for is shown where it exists.
    QTemporaryDir dir;
    write(dir.path() + QStringLiteral("/metrics.csv"), "step,loss\n1,2.0\n");
    write(dir.path() + QStringLiteral("/fp8scope.json"), R"({"precision": "fp8", "recipe": "mxfp8"})");
    RunStore store;
    QString error;
    QVERIFY2(store.open(dir.path(), &error), qPrintable(error));
    store.ingest();
    const auto run = store.run(QFileInfo(dir.path()).fileName());
    QVERIFY(run);
    const auto put = [&](const char *layer, const char *recipe, double value) {
        DumpRecord d;
        d.layer = QLatin1String(layer);
        d.tensor = QStringLiteral("weight");
        QString e;
        QVERIFY2(store.storeRecomputed(run->id, d, QLatin1String(recipe), {{QStringLiteral("mse"), value}}, &e),
            qPrintable(e));
    };
    put("model.layers.0", "current", 1.0);
    put("model.layers.1", "current", 2.0);
    put("model.layers.2", "current", 3.0);
    put("model.layers.0", "mxfp8", 10.0);
    put("model.layers.1", "mxfp8", 20.0);
    put("model.layers.0", "delayed", 100.0);
    Heatmap h = testing::matrixOf(store, run->id, QStringLiteral("mse"), QStringLiteral("weight"));
    QCOMPARE(h.source, QStringLiteral("recomputed"));
    QCOMPARE(h.recipe, QStringLiteral("mxfp8")); // the run's own
    QCOMPARE(h.recipes, (QStringList {QStringLiteral("current"), QStringLiteral("mxfp8"), QStringLiteral("delayed")}));
    QCOMPARE(h.layers, (QStringList {QStringLiteral("model.layers.0"), QStringLiteral("model.layers.1")}));
    QCOMPARE(h.steps, (std::vector<int64_t> {-1}));
    QCOMPARE(h.values, (std::vector<double> {10.0, 20.0}));
    h = testing::matrixOf(store, run->id, QStringLiteral("mse"), QStringLiteral("weight"), QStringLiteral("current"));
    QCOMPARE(h.layers.size(), 3);
    QCOMPARE(h.values, (std::vector<double> {1.0, 2.0, 3.0}));
    h = testing::matrixOf(store, run->id, QStringLiteral("mse"), QStringLiteral("weight"), QStringLiteral("nvfp4"));
    QCOMPARE(h.recipe, QStringLiteral("mxfp8")); // not computed under nvfp4
}

void TestImporters::nestedRunFolders()
{
    QTemporaryDir dir;
    const QString ws = dir.path() + QStringLiteral("/ws");
    const SeriesKey loss {{}, {}, QStringLiteral("loss"), QStringLiteral("csv"), {}};
    write(ws + QStringLiteral("/solo/metrics.csv"), "step,loss\n1,5.0\n");
    // A folder of two runs inside the folder of runs, with the same file names: two runs, not one.
    write(ws + QStringLiteral("/pair/x/metrics.csv"), "step,loss\n1,1.0\n");
    write(ws + QStringLiteral("/pair/y/metrics.csv"), "step,loss\n1,2.0\n");
    // Another such folder; its "x" shares the name of pair/x, so both are named by their path.
    write(ws + QStringLiteral("/more/x/metrics.csv"), "step,loss\n1,3.0\n");
    write(ws + QStringLiteral("/more/z/metrics.csv"), "step,loss\n1,4.0\n");
    write(ws + QStringLiteral("/more/fp8scope-workspace.json"), R"({"runs": {"z": {"baseline": "x"}, "x": {}}})");
    // A run whose files sit in subfolders named as the parts of a run (Megatron's logs/ and tensorboard/) is
    // one run; so is one whose own file (here its manifest) says so. The store of a folder opened on its own
    // before is no part of anything.
    write(ws + QStringLiteral("/parts/logs/metrics.csv"), "step,loss\n1,6.0\n");
    write(ws + QStringLiteral("/parts/tensorboard/metrics.csv"), "step,loss\n2,6.5\n");
    write(ws + QStringLiteral("/kept/fp8scope.json"), R"({"precision": "bf16"})");
    write(ws + QStringLiteral("/kept/a/metrics.csv"), "step,loss\n1,7.0\n");
    write(ws + QStringLiteral("/kept/b/metrics.csv"), "step,loss\n2,7.5\n");
    write(ws + QStringLiteral("/solo/.fp8scope/store.sqlite"), "SQLite format 3");

    const FolderScan scan = scanFolder(ws);
    QVERIFY(scan.workspace);
    QVERIFY(scan.unrecognised.isEmpty());
    QMap<QString, QString> runOf;
    for (const ScannedFile &f : scan.files)
        runOf.insert(f.relativePath, f.run);
    QCOMPARE(runOf.value(QStringLiteral("pair/x/metrics.csv")), QStringLiteral("pair/x"));
    QCOMPARE(runOf.value(QStringLiteral("pair/y/metrics.csv")), QStringLiteral("y"));
    QCOMPARE(runOf.value(QStringLiteral("more/x/metrics.csv")), QStringLiteral("more/x"));
    QCOMPARE(runOf.value(QStringLiteral("more/fp8scope-workspace.json")), QStringLiteral("more/x"));
    QCOMPARE(runOf.value(QStringLiteral("parts/logs/metrics.csv")), QStringLiteral("parts"));
    QCOMPARE(runOf.value(QStringLiteral("parts/tensorboard/metrics.csv")), QStringLiteral("parts"));
    QCOMPARE(runOf.value(QStringLiteral("kept/b/metrics.csv")), QStringLiteral("kept"));

    RunStore store;
    QString error;
    QVERIFY2(store.open(ws, &error), qPrintable(error));
    QCOMPARE(store.ingest().filesFailed, 0);
    QStringList names;
    for (const RunInfo &r : store.runs())
        names << r.name;
    QCOMPARE(names,
        (QStringList {QStringLiteral("kept"), QStringLiteral("more/x"), QStringLiteral("pair/x"),
            QStringLiteral("parts"), QStringLiteral("solo"), QStringLiteral("y"), QStringLiteral("z")}));
    QCOMPARE(pointAt(store, QStringLiteral("pair/x"), loss, 1), 1.0);
    QCOMPARE(pointAt(store, QStringLiteral("y"), loss, 1), 2.0);
    QCOMPARE(pointAt(store, QStringLiteral("more/x"), loss, 1), 3.0);
    QCOMPARE(pointAt(store, QStringLiteral("parts"), loss, 1), 6.0);
    QCOMPARE(pointAt(store, QStringLiteral("parts"), loss, 2), 6.5);
    QCOMPARE(pointAt(store, QStringLiteral("kept"), loss, 2), 7.5);
    QCOMPARE(store.run(QStringLiteral("kept"))->precision, QStringLiteral("bf16"));
    // The nested manifest names its runs by their folders beside it.
    QCOMPARE(store.run(QStringLiteral("z"))->baseline, QStringLiteral("x"));
    QCOMPARE(store.problems().size(), size_t(0));

    // Opened on its own, the inner folder divides into the same runs.
    RunStore pair;
    QVERIFY(pair.open(ws + QStringLiteral("/pair"), &error));
    pair.ingest();
    QCOMPARE(pair.runs().size(), size_t(2));
    QCOMPARE(pointAt(pair, QStringLiteral("x"), loss, 1), 1.0);
    QCOMPARE(pointAt(pair, QStringLiteral("y"), loss, 1), 2.0);
    // A run folder as Megatron leaves it (logs/, tensorboard/, rank folders), opened on its own: one run.
    const FolderScan parts = scanFolder(ws + QStringLiteral("/parts"));
    QVERIFY(!parts.workspace);
    QCOMPARE(parts.runOfFolder.value(QString()), QStringLiteral("parts"));
    write(ws + QStringLiteral("/parts/rank_1/metrics.csv"), "step,loss\n3,6.2\n");
    QCOMPARE(scanFolder(ws + QStringLiteral("/parts")).runOfFolder.keys(), QStringList {QString()});
    write(ws + QStringLiteral("/parts/ablation/metrics.csv"), "step,loss\n3,6.2\n");
    QVERIFY(scanFolder(ws + QStringLiteral("/parts")).workspace); // a folder of another name: runs again
    QFile::remove(ws + QStringLiteral("/parts/ablation/metrics.csv"));
    QFile::remove(ws + QStringLiteral("/parts/rank_1/metrics.csv"));

    // A store written when "pair" was read as one run (as fp8scope did before it looked inside the runs of
    // a folder of runs): the files are read again into their runs, and the mixed run goes.
    {
        Database &db = RunStoreTestAccess::db(store);
        QVERIFY(db.exec("INSERT INTO runs(name) VALUES('pair')", &error));
        const int64_t old = db.lastInsertId();
        Statement move = db.prepare("UPDATE files SET run_id=?, folder_run=NULL WHERE path LIKE 'pair/%'");
        QVERIFY(move.bind(1, old).exec());
        Statement mixed = db.prepare("INSERT INTO series(run_id, layer, tensor, stat, source, recipe) "
                                     "VALUES(?, '', '', 'loss', 'csv', '')");
        QVERIFY(mixed.bind(1, old).exec());
    }
    QVERIFY(store.run(QStringLiteral("pair")));
    const IngestReport again = store.ingest();
    QCOMPARE(again.filesRead, 2);
    QCOMPARE(again.filesUnchanged, int(scan.files.size()) - 2);
    QVERIFY(!store.run(QStringLiteral("pair")));
    QCOMPARE(store.runs().size(), size_t(7));
    QCOMPARE(pointAt(store, QStringLiteral("pair/x"), loss, 1), 1.0);
    QCOMPARE(pointAt(store, QStringLiteral("y"), loss, 1), 2.0);
    Statement orphans = RunStoreTestAccess::db(store).prepare(
        "SELECT COUNT(*) FROM series WHERE run_id NOT IN (SELECT id FROM runs)");
    QVERIFY(orphans.next());
    QCOMPARE(orphans.int64(0), 0);
}

void TestImporters::quantizedCheckpointIndex()
{
    // A checkpoint as compressed-tensors and ModelOpt write one: the dump index holds the model's tensors
    // (an NVFP4 weight packed in bytes among them, by its layer and kind), not their decode scales,
    // activation and KV-cache scales, global scales or the integer buffers.
    QTemporaryDir dir;
    QByteArray json = R"({"__metadata__":{"quant_method":"compressed-tensors"},)"
                      R"("model.l.weight":{"dtype":"F8_E4M3","shape":[2,2],"data_offsets":[0,4]},)"
                      R"("model.l.weight_scale":{"dtype":"F32","shape":[2,1],"data_offsets":[4,12]},)"
                      R"("model.l.input_scale":{"dtype":"F32","shape":[1],"data_offsets":[12,16]},)"
                      R"("model.l.weight_scale_2":{"dtype":"F32","shape":[],"data_offsets":[16,20]},)"
                      R"("model.attn.k_scale":{"dtype":"F32","shape":[],"data_offsets":[20,24]},)"
                      R"("model.l.bias":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},)"
                      R"("model.l.weight_zero_point":{"dtype":"I32","shape":[2],"data_offsets":[28,36]},)"
                      R"("model.f.weight_packed":{"dtype":"U8","shape":[2,8],"data_offsets":[36,52]},)"
                      R"("model.f.weight_scale":{"dtype":"F8_E4M3","shape":[2,1],"data_offsets":[52,54]},)"
                      R"("model.f.weight_global_scale":{"dtype":"F32","shape":[1],"data_offsets":[54,58]},)"
                      R"("model.e.down_proj_blocks":{"dtype":"U8","shape":[2,1,16],"data_offsets":[58,90]},)"
                      R"("model.e.down_proj_scales":{"dtype":"U8","shape":[2,1],"data_offsets":[90,92]}})";
    QByteArray file(8, '\0');
    for (int i = 0; i < 8; ++i)
        file[i] = char((quint64(json.size()) >> (8 * i)) & 0xFF);
    file += json + QByteArray(92, '\x30');
    write(dir.path() + QStringLiteral("/ckpt/model.safetensors"), file);
    RunStore store;
    QString error;
    QVERIFY(store.open(dir.path() + QStringLiteral("/ckpt"), &error));
    QCOMPARE(store.ingest().filesFailed, 0);
    QCOMPARE(store.problems().size(), size_t(0));
    const auto run = store.run(QStringLiteral("ckpt"));
    QVERIFY(run);
    QStringList dumps;
    for (const auto &[f, d] : store.dumps(run->id))
        dumps << d.layer + QLatin1Char('|') + d.tensor + QLatin1Char('|') + d.dtype;
    dumps.sort();
    QCOMPARE(dumps,
        (QStringList {QStringLiteral("model.e.down_proj|weight|float4_e2m1"),
            QStringLiteral("model.f|weight|float4_e2m1"), QStringLiteral("model.l|bias|bfloat16"),
            QStringLiteral("model.l|weight|float8_e4m3")}));
}

void TestImporters::bucketsAndHeatmapOrder()
{
    QTemporaryDir dir;
    QByteArray csv = "step,loss\n";
    for (int i = 0; i < 10000; ++i)
        csv += QByteArray::number(i) + ',' + QByteArray::number(std::sin(i * 0.01) + (i == 4321 ? 100.0 : 0.0)) + '\n';
    write(dir.path() + QStringLiteral("/a.csv"), csv);
    QByteArray te;
    for (int layer : {10, 2, 1})
        te += "t - INFO - decoder.layers." + QByteArray::number(layer) + ".mlp_weight_mse iteration=000005 value=1\n";
    write(dir.path() + QStringLiteral("/nvdlfw_inspect_globalrank-0.log"), te);
    RunStore store;
    QString error;
    QVERIFY(store.open(dir.path(), &error));
    store.ingest();
    const auto run = store.run(QFileInfo(dir.path()).fileName());
    QVERIFY(run);
    const auto s = store.findSeries(run->id, {{}, {}, QStringLiteral("loss"), {}, {}});
    QCOMPARE(s.size(), size_t(1));
    const auto all = store.points(s.front().id, 0, 9999, 20000);
    QCOMPARE(all.size(), size_t(10000));
    const auto buckets = store.points(s.front().id, 0, 9999, 100);
    QVERIFY(buckets.size() <= 100 && buckets.size() >= 99);
    int64_t covered = 0;
    bool spike = false;
    for (const SeriesPoint &b : buckets) {
        covered += b.count;
        QVERIFY(b.min <= b.max);
        spike = spike || (b.max > 50 && b.step <= 4321 && b.lastStep >= 4321);
    }
    QCOMPARE(covered, 10000); // every point falls in one bucket
    QVERIFY(spike); // an outlier survives the reduction
    // Long series: buckets come from the 64-point summary blocks plus the edge points.
    QByteArray longCsv = "step,long\n";
    for (int i = 0; i < 200000; ++i)
        longCsv
            += QByteArray::number(i * 3) + ',' + QByteArray::number(i == 123457 ? 500.0 : std::cos(i * 1e-3)) + '\n';
    write(dir.path() + QStringLiteral("/b.csv"), longCsv);
    store.ingest();
    const auto longSeries = store.findSeries(run->id, {{}, {}, QStringLiteral("long"), {}, {}});
    QCOMPARE(longSeries.size(), size_t(1));
    for (const auto &[from, to] : std::vector<std::pair<int64_t, int64_t>> {{0, 599997}, {1000, 500000}}) {
        const auto coarse = store.points(longSeries.front().id, from, to, 100);
        QVERIFY(coarse.size() <= 100 && coarse.size() >= 95);
        int64_t n = 0;
        double top = -1;
        for (const SeriesPoint &b : coarse) {
            n += b.count;
            QVERIFY(b.min <= b.max && b.step >= from && b.lastStep <= to);
            if (b.max > top)
                top = b.max;
        }
        QCOMPARE(n, (to - (from + 2) / 3 * 3) / 3 + 1); // every point of the range, once
        QCOMPARE(top, 500.0); // the spike at step 370371 survives
    }
    const Heatmap h = testing::matrixOf(store, run->id, QStringLiteral("mse"), QStringLiteral("weight"));
    QCOMPARE(h.layers,
        QStringList({QStringLiteral("decoder.layers.1.mlp"), QStringLiteral("decoder.layers.2.mlp"),
            QStringLiteral("decoder.layers.10.mlp")}));
    QVERIFY(layerLess(QStringLiteral("a.2.b"), QStringLiteral("a.10.b")));
    QVERIFY(!layerLess(QStringLiteral("a.10.b"), QStringLiteral("a.2.b")));
}

void TestImporters::formatsWrittenByRealLibraries()
{
    const QString python = QString::fromLocal8Bit(qgetenv("FP8SCOPE_TEST_PYTHON"));
    if (python.isEmpty() || !QFileInfo::exists(python))
        QSKIP("no test Python (FP8SCOPE_TEST_PYTHON) with tensorboard and safetensors");
    QTemporaryDir dir;
    QTemporaryDir oracle;
    QProcess p;
    p.start(python,
        {QString::fromLocal8Bit(qgetenv("FP8SCOPE_SOURCE_DIR"))
                + QStringLiteral("/tests/core/oracles/write_formats.py"),
            dir.path(), oracle.path()});
    QVERIFY(p.waitForFinished(300000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());

    // A copy of the event file with one record's payload corrupted.
    const QString tb = dir.path() + QStringLiteral("/tb");
    const QStringList events = QDir(tb).entryList({QStringLiteral("events.out.tfevents.*")});
    QCOMPARE(events.size(), 1);
    QFile src(tb + QLatin1Char('/') + events.front());
    QVERIFY(src.open(QIODevice::ReadOnly));
    QByteArray bytes = src.readAll();
    std::vector<qint64> records;
    for (qint64 pos = 0; pos + 12 <= bytes.size();) {
        records.push_back(pos);
        uint64_t len = 0;
        std::memcpy(&len, bytes.constData() + pos, 8);
        pos += 12 + qint64(len) + 4;
    }
    QVERIFY(records.size() > 10);
    const qint64 victim = records[6];
    bytes[victim + 14] = char(bytes[victim + 14] ^ 0x5A);
    write(dir.path() + QStringLiteral("/bad/events.out.tfevents.1.bad.0"), bytes);

    RunStore store;
    QString error;
    QVERIFY(store.open(dir.path(), &error));
    store.ingest();
    // Scalars (simple_value and new-style tensors), the histogram, the text summary.
    const QString tbRun = QStringLiteral("tb");
    for (int step = 0; step < 10; ++step) {
        QCOMPARE(pointAt(store, tbRun, {{}, {}, QStringLiteral("loss"), {}, {}}, step), double(1.0f / float(step + 1)));
        QCOMPARE(pointAt(store, tbRun, {{}, {}, QStringLiteral("lr"), {}, {}}, step), 0.5 * step);
    }
    QCOMPARE(pointAt(store, tbRun, {{}, {}, QStringLiteral("w (min)"), {}, {}}, 3), -2.0);
    QCOMPARE(pointAt(store, tbRun, {{}, {}, QStringLiteral("w (max)"), {}, {}}, 3), 3.0);
    QCOMPARE(pointAt(store, tbRun, {{}, {}, QStringLiteral("w (count)"), {}, {}}, 3), 4.0);
    bool args = false;
    for (const KeyValueRow &c : store.configs(store.run(tbRun)->id))
        args = args || (c.key.startsWith(QLatin1String("args")) && c.value == QLatin1String("lr=0.1 fp8=hybrid"));
    QVERIFY(args);
    // add_scalars: one series per key, "<tag>/<key>", in the run of the writer's folder (issue 40).
    QVERIFY(!store.run(QStringLiteral("losses_train")));
    QCOMPARE(pointAt(store, QStringLiteral("scalars"), {{}, {}, QStringLiteral("losses/train"), {}, {}}, 3),
        double(float(2.0 - 0.3)));
    QCOMPARE(pointAt(store, QStringLiteral("scalars"), {{}, {}, QStringLiteral("losses/val"), {}, {}}, 4),
        double(float(3.0 - 0.4)));
    // The corrupted copy: one problem at the record's offset, every other record read.
    const auto problems = store.problems();
    QCOMPARE(problems.size(), size_t(1));
    QCOMPARE(problems.front().offset, victim);
    const auto bad = store.run(QStringLiteral("bad"));
    QVERIFY(bad);
    QCOMPARE(bad->pointCount, store.run(tbRun)->pointCount - 1);
    // safetensors written by the safetensors package land in the dump index.
    // The FP8 weight is indexed with its stored dtype; its decode scales are not a tensor of their own.
    const auto dumps = store.dumps(store.run(QStringLiteral("dumps"))->id);
    QCOMPARE(dumps.size(), size_t(3));
    QCOMPARE(dumps[0].dump.layer, QStringLiteral("layers.0.fc1"));
    QCOMPARE(dumps[0].dump.tensor, QStringLiteral("weight"));
    QCOMPARE(dumps[0].dump.step, 50);
    QCOMPARE(dumps[0].dump.dtype, QStringLiteral("float32"));
    QCOMPARE(dumps[0].dump.shape, QStringLiteral("4x8"));
    QCOMPARE(dumps[1].dump.dtype, QStringLiteral("bfloat16"));
    QCOMPARE(dumps[1].dump.shape, QStringLiteral("2x16"));
    QCOMPARE(dumps[2].dump.layer, QStringLiteral("layers.2.fc3"));
    QCOMPARE(dumps[2].dump.dtype, QStringLiteral("float8_e4m3"));
    // Read through openTensor, its values are torch's dequantization of it, bit for bit.
    Problem problem;
    auto fp8 = openTensor(dir.path() + QStringLiteral("/dumps/iter_000050.safetensors:layers.2.fc3.weight"), &problem);
    QVERIFY2(fp8, qPrintable(problem.toString()));
    QCOMPARE(fp8->info().dtype, DType::F32);
    QVERIFY2(fp8->info().decoding.contains(QLatin1String("(128x128 blocks)")), qPrintable(fp8->info().decoding));
    auto want = openTensor(oracle.filePath(QStringLiteral("fc3_values.npy")), &problem);
    QVERIFY2(want, qPrintable(problem.toString()));
    QCOMPARE(want->info().numel, fp8->info().numel);
    std::vector<float> got(size_t(fp8->info().numel)), expected(got.size());
    QVERIFY(fp8->read(0, fp8->info().numel, got.data(), &problem));
    QVERIFY(want->read(0, want->info().numel, expected.data(), &problem));
    QVERIFY(std::memcmp(got.data(), expected.data(), got.size() * 4) == 0);
}

void TestImporters::modelFoldersSkipped()
{
    // Below a run: an inference export and the unquantized model it was made from are the audit's, listed as
    // skipped (their config.json is the model's, their weights no dumps); safetensors beside no model config are
    // dumps.
    QTemporaryDir dir;
    const QString run = dir.path() + QStringLiteral("/run");
    write(run + QStringLiteral("/metrics.csv"), "step,loss\n1,5.0\n");
    write(run + QStringLiteral("/hf/fp8/config.json"), R"({"quantization_config": {"quant_method": "fp8"}})");
    write(run + QStringLiteral("/hf/fp8/model.safetensors"), "");
    write(run + QStringLiteral("/hf/bf16/config.json"), R"({"architectures": ["LlamaForCausalLM"]})");
    write(run + QStringLiteral("/hf/bf16/model.safetensors"), "");
    write(run + QStringLiteral("/dumps/config.json"), R"({"note": "not a model"})");
    write(run + QStringLiteral("/dumps/iter_1.safetensors"), "");
    const FolderScan scan = scanFolder(run);
    QStringList files;
    for (const ScannedFile &f : scan.files)
        files << f.relativePath;
    QVERIFY2(scan.unrecognised.contains(QStringLiteral("hf/fp8/")), qPrintable(scan.unrecognised.join(u' ')));
    QVERIFY2(scan.unrecognised.contains(QStringLiteral("hf/bf16/")), qPrintable(scan.unrecognised.join(u' ')));
    QVERIFY(!files.contains(QStringLiteral("hf/bf16/model.safetensors")));
    QVERIFY(!files.contains(QStringLiteral("hf/fp8/model.safetensors")));
    QVERIFY2(files.contains(QStringLiteral("dumps/iter_1.safetensors")), qPrintable(files.join(u' ')));
}

FP8SCOPE_TEST_GUILESS_MAIN(TestImporters)
#include "tst_importers.moc"

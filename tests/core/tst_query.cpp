// The query layer on generated run folders, linked without any widget: runs with a stable identity, baseline
// pairing (manifest, the only baseline, the config that differs least, names), canonical statistic names,
// the one series policy, layer x step matrices at their real steps, evals kept per inference setting,
// configs from a Megatron arguments block, versions, and store errors reported as problems.
#include "storeaccess.h"

#include "core/importers/jsonimporters.h"
#include "core/importers/versionsimporter.h"
#include "core/query/catalog.h"
#include "core/query/pairing.h"
#include "core/query/statnames.h"
#include "core/session/foldersession.h"

#include <QDir>
#include <QFile>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <tuple>

using namespace fp8scope;

namespace {

void write(const QString &path, const QByteArray &bytes)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    QCOMPARE(f.write(bytes), bytes.size());
}

// A Megatron stdout log: its arguments block, a framework version line, and lm loss at steps 10, 20, ....
QByteArray megatronLog(const QByteArray &fp8, int steps, double loss0)
{
    QByteArray out = "using world size: 8, data-parallel-size: 8\n"
                     "------------------------ arguments ------------------------\n"
                     "  bf16 ............................................ True\n"
                     "  fp8 ............................................. "
        + fp8
        + "\n"
          "  hidden_size ..................................... 1024\n"
          "  num_layers ...................................... 4\n"
          "  seed ............................................ 1234\n"
          "  tensorboard_dir ................................. /scratch/run/tb\n"
          "-------------------- end of arguments ---------------------\n"
          "[rank0] TransformerEngine version: 1.7.0\n";
    for (int i = 1; i <= steps; ++i) {
        out += QByteArray(" iteration ") + QByteArray::number(i * 10) + "/ 1000 | consumed samples: "
            + QByteArray::number(i * 320) + " | lm loss: " + QByteArray::number(loss0 - 0.01 * i, 'E', 6)
            + " | grad norm: 1.5 | number of skipped iterations: 0 |\n";
    }
    return out;
}

QByteArray lmEval(const QByteArray &modelArgs, double acc)
{
    return "{\"results\": {\"hellaswag\": {\"acc,none\": " + QByteArray::number(acc)
        + ", \"acc_stderr,none\": 0.01}}, \"versions\": {\"hellaswag\": 1}, \"config\": {\"model\": \"vllm\", "
          "\"model_args\": \""
        + modelArgs + "\"}}";
}

} // namespace

class TestQuery : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void canonicalNames_data();
    void canonicalNames();
    void runsHaveStableIdentity();
    void pairing();
    void pairingByTheOnlyBaselineAndByName();
    void pairingByOverlappingSteps();
    void seriesChoice();
    void matrixAtRealSteps();
    void evalsPerInferenceSetting();
    void configsAndVersions();
    void storeErrorsAreProblems();
    void storeErrorsReachTheHandlerWhenFirstMet();
    void ingestProblemsAreProblemsOfTheirFiles();
    void statementsTellErrorsFromTheEnd();
    void layerOrderIsTotal();

private:
    std::optional<Run> run(const QString &name) const { return m_catalog.findRun(name); }

    QTemporaryDir m_dir;
    QString m_ws;
    Catalog m_catalog;
};

void TestQuery::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_ws = m_dir.filePath(QStringLiteral("ws"));
    // The FP8 run and the baseline it was meant to be compared with: the same model and plan.
    write(m_ws + QStringLiteral("/gpt_fp8/train.out"), megatronLog("hybrid", 20, 10.0));
    write(m_ws + QStringLiteral("/gpt_bf16/train.out"), megatronLog("None", 20, 10.0));
    write(m_ws + QStringLiteral("/gpt_bf16/pip_freeze.txt"),
        "# pip freeze\ntorch==2.3.0+cu121\ntransformer_engine==1.7.0\nmegatron-core==0.8.0\nnumpy==1.26.4\n"
        "flash-attn @ file:///wheels/flash_attn.whl\n");
    // A second BF16 run of another model: more keys differ.
    QByteArray other = megatronLog("None", 5, 9.0);
    other.replace("hidden_size ..................................... 1024",
        "hidden_size ..................................... 4096");
    other.replace(
        "num_layers ...................................... 4", "num_layers ...................................... 32");
    write(m_ws + QStringLiteral("/big_bf16/train.out"), other);
    // The FP8 run also logs its loss to a CSV, at every step (more points than the log's every tenth).
    QByteArray csv = "step,train/loss\n";
    for (int s = 1; s <= 200; ++s)
        csv += QByteArray::number(s) + ',' + QByteArray::number(10.0 - 0.001 * s) + '\n';
    write(m_ws + QStringLiteral("/gpt_fp8/metrics.csv"), csv);
    // Transformer Engine statistics at uneven iterations (a log interval that changes).
    QByteArray te;
    for (int step : {0, 10, 20, 100, 1000}) {
        for (int layer = 0; layer < 3; ++layer) {
            te += "2026-01-15 23:06:41,584 - INFO - decoder.layers." + QByteArray::number(layer)
                + ".mlp.linear_fc2_activation_underflows% \t\t\t\t iteration="
                + QByteArray::number(step).rightJustified(6, '0')
                + " \t\t\t\t value=" + QByteArray::number(layer * 10 + step / 10.0, 'f', 4) + '\n';
        }
    }
    write(m_ws + QStringLiteral("/gpt_fp8/rank_0/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"), te);
    // Evaluations of the FP8 run under two inference settings, and one named by its file only.
    write(m_ws + QStringLiteral("/gpt_fp8/eval/results_a.json"), lmEval("pretrained=./ckpt,dtype=bfloat16", 0.50));
    write(m_ws + QStringLiteral("/gpt_fp8/eval/results_b.json"),
        lmEval("pretrained=./ckpt,dtype=bfloat16,quantization=fp8,kv_cache_dtype=fp8_e4m3", 0.47));
    write(m_ws + QStringLiteral("/gpt_fp8/eval/results_nvfp4.json"),
        "{\"results\": {\"hellaswag\": {\"acc,none\": 0.45}}, \"versions\": {\"hellaswag\": 1}}");
    // An MXFP8 run whose manifest names its baseline, and a run nothing says the precision of.
    write(m_ws + QStringLiteral("/mx/fp8scope.json"), R"({"precision": "mxfp8", "baseline": "big_bf16"})");
    write(m_ws + QStringLiteral("/mx/metrics.csv"), "step,loss\n1,9.0\n2,8.9\n");
    write(m_ws + QStringLiteral("/mystery/metrics.csv"), "step,loss\n1,9.0\n");

    RunStore store;
    QString error;
    QVERIFY2(store.open(m_ws, &error), qPrintable(error));
    const IngestReport report = store.ingest();
    QCOMPARE(report.filesFailed, 0);
    QVERIFY2(report.errors.isEmpty(), qPrintable(report.errors.join(QLatin1Char('\n'))));
    QVERIFY2(m_catalog.open(m_ws, &error), qPrintable(error));
    QCOMPARE(m_catalog.runs().size(), size_t(5));
}

void TestQuery::canonicalNames_data()
{
    QTest::addColumn<QString>("written");
    QTest::addColumn<QString>("canonical");
    QTest::addColumn<bool>("samples");
    const auto row = [](const char *w, const char *c, bool samples = false) {
        QTest::newRow(w) << QString::fromLatin1(w) << QString::fromLatin1(c) << samples;
    };
    row("lm loss", "lm loss");
    row("train/lm_loss", "lm loss");
    row("train/loss", "lm loss");
    row("loss", "lm loss");
    row("reduced_train_loss", "lm loss");
    row("grad norm", "grad norm");
    row("grad-norm", "grad norm");
    row("train/grad_norm", "grad norm");
    row("learning rate", "learning rate");
    row("learning-rate", "learning rate");
    row("lr", "learning rate");
    row("train/learning_rate", "learning rate");
    row("lm loss vs samples", "lm loss", true);
    row("grad-norm vs samples", "grad norm", true);
    row("validation lm loss value", "validation loss");
    row("lm loss validation", "validation loss");
    row("val/loss", "validation loss");
    row("number of skipped iterations", "skipped iterations");
    // Outside the vocabulary: kept as written (timings differ in units between loggers).
    row("iteration-time", "iteration-time");
    row("elapsed time per iteration (ms)", "elapsed time per iteration (ms)");
    row("params-norm vs samples", "params norm", true);
}

void TestQuery::canonicalNames()
{
    QFETCH(QString, written);
    QFETCH(QString, canonical);
    QFETCH(bool, samples);
    const CanonicalStat c = canonicalStat(written);
    QCOMPARE(c.name, canonical);
    QCOMPARE(c.axis == SeriesAxis::Samples, samples);
}

void TestQuery::runsHaveStableIdentity()
{
    const auto fp8 = run(QStringLiteral("gpt_fp8"));
    QVERIFY(fp8 && fp8->ref.isValid());
    QCOMPARE(m_catalog.run(fp8->ref)->name, QStringLiteral("gpt_fp8"));
    // Another catalog over the same folder knows the run by another store serial: a ref of one never
    // names a run of the other, though the store ids agree.
    Catalog other;
    QString error;
    QVERIFY(other.open(m_ws, &error));
    const auto again = other.findRun(QStringLiteral("gpt_fp8"));
    QVERIFY(again);
    QCOMPARE(again->ref.id, fp8->ref.id);
    QVERIFY(again->ref != fp8->ref);
    QVERIFY(!other.run(fp8->ref));
    // Closed and reopened: the old ref names nothing.
    const RunRef old = again->ref;
    other.close();
    QVERIFY(other.open(m_ws, &error));
    QVERIFY(!other.run(old));
    QVERIFY(other.findRun(QStringLiteral("gpt_fp8")));
}

void TestQuery::pairing()
{
    const auto fp8 = run(QStringLiteral("gpt_fp8"));
    const auto bf16 = run(QStringLiteral("gpt_bf16"));
    const auto big = run(QStringLiteral("big_bf16"));
    const auto mx = run(QStringLiteral("mx"));
    const auto mystery = run(QStringLiteral("mystery"));
    QVERIFY(fp8 && bf16 && big && mx && mystery);
    // Precision from the arguments block: fp8 is on in one run (it also sets bf16), off in the others.
    QCOMPARE(fp8->precision, QStringLiteral("fp8"));
    QCOMPARE(bf16->precision, QStringLiteral("bf16"));
    // Two BF16 runs open: the one whose config differs least (only the paths differ, and they do not count).
    Pairing p = m_catalog.pairing(fp8->ref);
    QCOMPARE(p.baseline, bf16->ref);
    QCOMPARE(p.basis, Pairing::Basis::Config);
    QCOMPARE(p.configDifferences, 0);
    QVERIFY2(p.reason.contains(QLatin1String("differs least")), qPrintable(p.reason));
    // The manifest wins over everything, even a worse config.
    p = m_catalog.pairing(mx->ref);
    QCOMPARE(p.baseline, big->ref);
    QCOMPARE(p.basis, Pairing::Basis::Manifest);
    // A baseline has none; a run of unknown precision gets none, and says why.
    p = m_catalog.pairing(bf16->ref);
    QVERIFY(!p.baseline.isValid());
    QVERIFY2(p.reason.contains(QLatin1String("it is a baseline")), qPrintable(p.reason));
    p = m_catalog.pairing(mystery->ref);
    QVERIFY(!p.baseline.isValid());
    QVERIFY2(p.reason.contains(QLatin1String("unknown")), qPrintable(p.reason));
    // The keys that do not count: precision and recipe settings, paths and names.
    QVERIFY(isPairingNeutralKey(QStringLiteral("MODEL_ARGS.--fp8-amax-history-len")));
    QVERIFY(isPairingNeutralKey(QStringLiteral("tensorboard_dir")));
    QVERIFY(isPairingNeutralKey(QStringLiteral("config_kwargs.num_layers_at_start_in_bf16")));
    QVERIFY(!isPairingNeutralKey(QStringLiteral("num_layers")));
    QVERIFY(!isPairingNeutralKey(QStringLiteral("seed")));
    QCOMPARE(configDifferences({{QStringLiteral("a"), QStringLiteral("1")}, {QStringLiteral("b"), QStringLiteral("2")}},
                 {{QStringLiteral("a"), QStringLiteral("1")}, {QStringLiteral("c"), QStringLiteral("3")},
                     {QStringLiteral("fp8"), QStringLiteral("hybrid")}}),
        2);
}

void TestQuery::pairingByOverlappingSteps()
{
    // A W&B export of MoE runs: two 360-step FP8 runs, a 360-step BF16 run and a 60-step BF16 retest whose name
    // sorts first; no configs. The baseline is the one covering the FP8 run's steps, not the first by name.
    QTemporaryDir dir;
    const auto csv = [](int steps) {
        QByteArray out = "step,loss\n";
        for (int s = 1; s <= steps; ++s)
            out += QByteArray::number(s) + ',' + QByteArray::number(10.0 - 0.01 * s) + '\n';
        return out;
    };
    write(dir.filePath(QStringLiteral("moe_a_bf16_retest/metrics.csv")), csv(60));
    write(dir.filePath(QStringLiteral("moe_b_bf16/metrics.csv")), csv(360));
    write(dir.filePath(QStringLiteral("moe_c_fp8/metrics.csv")), csv(360));
    write(dir.filePath(QStringLiteral("moe_d_fp8/metrics.csv")), csv(360));
    {
        RunStore s;
        QString error;
        QVERIFY(s.open(dir.path(), &error));
        s.ingest();
    }
    Catalog c;
    QString error;
    QVERIFY(c.open(dir.path(), &error));
    for (const QString &run : {QStringLiteral("moe_c_fp8"), QStringLiteral("moe_d_fp8")}) {
        const Pairing p = c.pairing(c.findRun(run)->ref);
        QCOMPARE(p.baseline, c.findRun(QStringLiteral("moe_b_bf16"))->ref);
        QCOMPARE(p.basis, Pairing::Basis::Steps);
        QVERIFY2(p.reason.contains(QLatin1String("360 of 360")), qPrintable(p.reason));
        QVERIFY2(p.reason.contains(QLatin1String("next: 60")), qPrintable(p.reason));
    }
    QCOMPARE(basisName(Pairing::Basis::Steps), QStringLiteral("steps"));
    // Within a tenth of the most, the overlap does not decide: the names do (a 350-step baseline beside a 360).
    QTemporaryDir near;
    write(near.filePath(QStringLiteral("gpt_bf16/metrics.csv")), csv(350));
    write(near.filePath(QStringLiteral("other_bf16/metrics.csv")), csv(360));
    write(near.filePath(QStringLiteral("gpt_fp8/metrics.csv")), csv(360));
    {
        RunStore s;
        QVERIFY(s.open(near.path(), &error));
        s.ingest();
    }
    Catalog n;
    QVERIFY(n.open(near.path(), &error));
    const Pairing p = n.pairing(n.findRun(QStringLiteral("gpt_fp8"))->ref);
    QCOMPARE(p.baseline, n.findRun(QStringLiteral("gpt_bf16"))->ref);
    QCOMPARE(p.basis, Pairing::Basis::Name);
}

void TestQuery::pairingByTheOnlyBaselineAndByName()
{
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("llama_fp8/metrics.csv")), "step,loss\n1,2\n");
    write(dir.filePath(QStringLiteral("llama_bf16_baseline/metrics.csv")), "step,loss\n1,2\n");
    Catalog c;
    QString error;
    {
        RunStore s;
        QVERIFY(s.open(dir.path(), &error));
        s.ingest();
    }
    QVERIFY(c.open(dir.path(), &error));
    Pairing p = c.pairing(c.findRun(QStringLiteral("llama_fp8"))->ref);
    QCOMPARE(p.basis, Pairing::Basis::OnlyBaseline); // precisions from the names alone
    QCOMPARE(p.baseline, c.findRun(QStringLiteral("llama_bf16_baseline"))->ref);
    // Two baselines and no configs: the one whose name is the FP8 run's but for its precision words.
    write(dir.filePath(QStringLiteral("gpt_bf16/metrics.csv")), "step,loss\n1,2\n");
    write(dir.filePath(QStringLiteral("gpt_fp8/metrics.csv")), "step,loss\n1,2\n");
    c.close();
    {
        RunStore s;
        QVERIFY(s.open(dir.path(), &error));
        s.ingest();
    }
    QVERIFY(c.open(dir.path(), &error));
    p = c.pairing(c.findRun(QStringLiteral("gpt_fp8"))->ref);
    QCOMPARE(p.basis, Pairing::Basis::Name);
    QCOMPARE(p.baseline, c.findRun(QStringLiteral("gpt_bf16"))->ref);
    p = c.pairing(c.findRun(QStringLiteral("llama_fp8"))->ref);
    QCOMPARE(p.baseline, c.findRun(QStringLiteral("llama_bf16_baseline"))->ref);
    QCOMPARE(precisionClass(QString(), QStringLiteral("run-nvfp4-7b")), PrecisionClass::LowPrecision);
    QCOMPARE(precisionClass(QStringLiteral("fp16"), QStringLiteral("x_fp8")), PrecisionClass::Baseline);
    QCOMPARE(precisionClass(QString(), QStringLiteral("ablation")), PrecisionClass::Unknown);
}

void TestQuery::seriesChoice()
{
    const auto fp8 = run(QStringLiteral("gpt_fp8"));
    QVERIFY(fp8);
    // lm loss from two loggers: the log's (20 points, every tenth step) and the CSV's train/loss (200).
    const auto all = m_catalog.candidates(fp8->ref, {.stat = QStringLiteral("lm loss")});
    QCOMPARE(all.size(), size_t(2));
    QCOMPARE(all[0].source, QStringLiteral("csv"));
    QCOMPARE(all[0].sourceStat, QStringLiteral("train/loss"));
    QCOMPARE(all[0].stat, QStringLiteral("lm loss"));
    QCOMPARE(all[0].points, 200);
    QCOMPARE(all[1].source, QStringLiteral("megatron-log"));
    // Any of its names asks for it; a source chooses among them.
    QCOMPARE(m_catalog.chooseSeries(fp8->ref, {.stat = QStringLiteral("train/loss")})->id, all[0].id);
    QCOMPARE(
        m_catalog.chooseSeries(fp8->ref, {.stat = QStringLiteral("loss"), .source = QStringLiteral("megatron-log")})
            ->id,
        all[1].id);
    QVERIFY(!m_catalog.chooseSeries(
        fp8->ref, {.stat = QStringLiteral("lm loss"), .source = QStringLiteral("tensorboard")}));
    // The run's statistics list lm loss once, with both sources.
    bool listed = false;
    for (const StatisticInfo &s : m_catalog.runStatistics(fp8->ref)) {
        if (s.stat == QLatin1String("lm loss")) {
            QCOMPARE(s.sources, (QStringList {QStringLiteral("csv"), QStringLiteral("megatron-log")}));
            listed = true;
        }
        QVERIFY(s.stat != QLatin1String("train/loss"));
    }
    QVERIFY(listed);
    // Points through the chosen series.
    const auto pts = m_catalog.points(all[1]);
    QCOMPARE(pts.size(), size_t(20));
    QCOMPARE(pts.front().step, 10);
    QCOMPARE(pts.front().value, 9.99);
    const auto bucketed = m_catalog.points(all[0], {.from = 1, .to = 200, .resolution = 10});
    QVERIFY(bucketed.size() <= 10 && bucketed.front().count > 1);

    // A tensor statistic logged and recomputed under two recipes: logged first, then the run's own recipe.
    RunStore *store = CatalogTestAccess::store(m_catalog, fp8->ref);
    const QString layer = QStringLiteral("decoder.layers.0.mlp.linear_fc2");
    DumpRecord d {.layer = layer, .tensor = QStringLiteral("activation"), .step = 20};
    QString error;
    QVERIFY(store->storeRecomputed(
        fp8->ref.id, d, QStringLiteral("mxfp8"), {{QStringLiteral("underflows%"), 7.0}}, &error));
    QVERIFY(store->storeRecomputed(
        fp8->ref.id, d, QStringLiteral("delayed"), {{QStringLiteral("underflows%"), 8.0}}, &error));
    const SeriesRequest tensorStat {
        .stat = QStringLiteral("underflows%"), .layer = layer, .tensor = QStringLiteral("activation")};
    const auto tensorCandidates = m_catalog.candidates(fp8->ref, tensorStat);
    QCOMPARE(tensorCandidates.size(), size_t(3));
    QCOMPARE(tensorCandidates[0].source, QStringLiteral("te-debug rank 0"));
    QVERIFY(tensorCandidates[1].isRecomputed() && tensorCandidates[2].isRecomputed());
    // The run's recipe is unknown: of the recomputed ones, natural order of recipe names.
    QCOMPARE(tensorCandidates[1].recipe, QStringLiteral("delayed"));
    SeriesRequest recomputed = tensorStat;
    recomputed.source = QStringLiteral("recomputed");
    QCOMPARE(m_catalog.chooseSeries(fp8->ref, recomputed)->recipe, QStringLiteral("delayed"));
    recomputed.recipe = QStringLiteral("mxfp8");
    QCOMPARE(m_catalog.valueAt(*m_catalog.chooseSeries(fp8->ref, recomputed), 20)->value, 7.0);
    // A run that trained with mxfp8 shows that recipe's first.
    const auto mx = run(QStringLiteral("mx"));
    DumpRecord w {.layer = QStringLiteral("l.0"), .tensor = QStringLiteral("weight"), .step = -1};
    QVERIFY(CatalogTestAccess::store(m_catalog, mx->ref)
                ->storeRecomputed(mx->ref.id, w, QStringLiteral("delayed"), {{QStringLiteral("mse"), 1.0}}, &error));
    QVERIFY(CatalogTestAccess::store(m_catalog, mx->ref)
                ->storeRecomputed(mx->ref.id, w, QStringLiteral("mxfp8"), {{QStringLiteral("mse"), 2.0}}, &error));
    const auto own = m_catalog.chooseSeries(
        mx->ref, {.stat = QStringLiteral("mse"), .layer = QStringLiteral("l.0"), .tensor = QStringLiteral("weight")});
    QCOMPARE(own->recipe, QStringLiteral("mxfp8"));
}

void TestQuery::matrixAtRealSteps()
{
    const auto fp8 = run(QStringLiteral("gpt_fp8"));
    const Heatmap h
        = m_catalog.matrix(fp8->ref, {.stat = QStringLiteral("underflows%"), .tensor = QStringLiteral("activation")});
    QCOMPARE(h.source, QStringLiteral("te-debug rank 0")); // logged before recomputed
    QCOMPARE(h.sources, (QStringList {QStringLiteral("te-debug rank 0"), QStringLiteral("recomputed")}));
    QCOMPARE(h.layers.size(), 3);
    QCOMPARE(h.steps, (std::vector<int64_t> {0, 10, 20, 100, 1000}));
    // Each value at the step it was logged at.
    for (qsizetype l = 0; l < 3; ++l) {
        for (size_t c = 0; c < h.steps.size(); ++c)
            QCOMPARE(h.at(l, c), double(l * 10) + double(h.steps[c]) / 10.0);
    }
    // The column a step falls in is the nearest logged step's (cells reach half way to their neighbours).
    QCOMPARE(h.nearestColumn(90), 3);
    QCOMPARE(h.nearestColumn(55), 2);
    QCOMPARE(h.nearestColumn(61), 3);
    QCOMPARE(h.nearestColumn(-50), 0);
    QCOMPARE(h.nearestColumn(5000), 4);
    // The recomputed source on request, at its one step.
    const Heatmap r = m_catalog.matrix(fp8->ref,
        {.stat = QStringLiteral("underflows%"),
            .tensor = QStringLiteral("activation"),
            .source = QStringLiteral("recomputed"),
            .recipe = QStringLiteral("mxfp8")});
    QCOMPARE(r.source, QStringLiteral("recomputed"));
    QCOMPARE(r.recipe, QStringLiteral("mxfp8"));
    QCOMPARE(r.steps, (std::vector<int64_t> {20}));
    QCOMPARE(r.values, (std::vector<double> {7.0}));
    // Layers, with their tensor kinds, over the runs asked for.
    const auto layers = m_catalog.layerTensors({fp8->ref});
    QCOMPARE(layers.size(), size_t(3));
    QCOMPARE(layers.front().layer, QStringLiteral("decoder.layers.0.mlp.linear_fc2"));
    QCOMPARE(layers.front().tensors, QStringList {QStringLiteral("activation")});
}

void TestQuery::evalsPerInferenceSetting()
{
    const auto fp8 = run(QStringLiteral("gpt_fp8"));
    const auto evals = m_catalog.evals(fp8->ref);
    // One task under three settings: all three stay, each with what it was read from.
    QCOMPARE(evals.size(), size_t(3));
    std::map<QString, Eval> byInference;
    for (const Eval &e : evals)
        byInference[e.inference] = e;
    QCOMPARE(byInference.size(), size_t(3));
    QCOMPARE(byInference.at(QStringLiteral("bf16")).value, 0.50);
    QCOMPARE(byInference.at(QStringLiteral("bf16")).settings, QStringLiteral("dtype=bfloat16"));
    QCOMPARE(byInference.at(QStringLiteral("fp8")).value, 0.47);
    QVERIFY(byInference.at(QStringLiteral("fp8")).settings.contains(QLatin1String("quantization=fp8")));
    QCOMPARE(byInference.at(QStringLiteral("nvfp4")).value, 0.45);
    QVERIFY(byInference.at(QStringLiteral("nvfp4")).settings.startsWith(QLatin1String("file name")));
    QCOMPARE(byInference.at(QStringLiteral("nvfp4")).file, QStringLiteral("gpt_fp8/eval/results_nvfp4.json"));
    // A KV cache in another precision than the weights is part of the setting.
    QJsonObject root;
    root.insert(QStringLiteral("config"),
        QJsonObject {{QStringLiteral("model_args"),
            QJsonObject {{QStringLiteral("dtype"), QStringLiteral("bfloat16")},
                {QStringLiteral("kv_cache_dtype"), QStringLiteral("fp8")}}}});
    QString settings;
    QCOMPARE(
        inferenceSetting(root, QFileInfo(QStringLiteral("/x/results.json")), &settings), QStringLiteral("bf16 kv-fp8"));
}

void TestQuery::configsAndVersions()
{
    const auto bf16 = run(QStringLiteral("gpt_bf16"));
    std::map<QString, QString> config;
    for (const ConfigEntry &c : m_catalog.configs(bf16->ref))
        config[c.key] = c.value;
    QCOMPARE(config[QStringLiteral("num_layers")], QStringLiteral("4"));
    QCOMPARE(config[QStringLiteral("fp8")], QStringLiteral("None"));
    QCOMPARE(config[QStringLiteral("tensorboard_dir")], QStringLiteral("/scratch/run/tb"));
    std::map<QString, QString> versions;
    for (const VersionEntry &v : m_catalog.versions(bf16->ref))
        versions[v.package] = v.version;
    QCOMPARE(versions[QStringLiteral("torch")], QStringLiteral("2.3.0+cu121"));
    // The freeze file's and the log line's Transformer Engine versions agree; the URL-installed package is skipped.
    QCOMPARE(versions[QStringLiteral("transformer-engine")], QStringLiteral("1.7.0"));
    QCOMPARE(versions[QStringLiteral("megatron-core")], QStringLiteral("0.8.0"));
    QCOMPARE(versions.count(QStringLiteral("flash-attn")), size_t(0));
    QCOMPARE(keyVersionsText(m_catalog.versions(bf16->ref)),
        QStringLiteral("transformer-engine 1.7.0, megatron-core 0.8.0, torch 2.3.0+cu121"));
    // The FP8 run has no freeze file: its log's version line alone.
    const auto fp8 = run(QStringLiteral("gpt_fp8"));
    QCOMPARE(keyVersionsText(m_catalog.versions(fp8->ref)), QStringLiteral("transformer-engine 1.7.0"));
    QCOMPARE(normalizePackage(QStringLiteral("Transformer_Engine_cu12")), QStringLiteral("transformer-engine"));
    QCOMPARE(normalizePackage(QStringLiteral("nvidia-cudnn-cu12")), QStringLiteral("cudnn"));
    QVERIFY(!versionFromLine(u"the version of the run is 3"));
    QCOMPARE(versionFromLine(u"Megatron-Core version 0.9.0rc1")->second, QStringLiteral("0.9.0rc1"));
}

void TestQuery::storeErrorsAreProblems()
{
    // A damaged store (a table gone) answers nothing for it, and says so among the problems, with the store's path.
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("r/pip_freeze.txt")), "torch==2.3.0\nnumpy==1.0\nscipy==1.1\n");
    write(dir.filePath(QStringLiteral("r/metrics.csv")), "step,loss\n1,2\n");
    QString error;
    {
        RunStore s;
        QVERIFY(s.open(dir.path(), &error));
        s.ingest();
        QCOMPARE(s.versions(s.runs().front().id).size(), size_t(3));
        QVERIFY(RunStoreTestAccess::db(s).exec("DROP TABLE versions", &error));
    }
    Catalog c;
    QVERIFY(c.open(dir.path(), &error));
    const RunRef r = c.runs().front().ref;
    QVERIFY(c.versions(r).empty());
    bool reported = false;
    for (const ProblemEntry &p : c.problems()) {
        if (p.storeError) {
            QVERIFY2(p.message.contains(QLatin1String("no such table: versions")), qPrintable(p.message));
            QVERIFY(p.path.endsWith(QLatin1String("store.sqlite")));
            reported = true;
        }
    }
    QVERIFY(reported);
    // The rest still reads.
    QCOMPARE(c.points(*c.chooseSeries(r, {.stat = QStringLiteral("loss")})).size(), size_t(1));
}

void TestQuery::storeErrorsReachTheHandlerWhenFirstMet()
{
    // Issue 42: a store error is handed over when a read meets it (no poll), once, as a problem of the store.
    QTemporaryDir dir;
    write(dir.filePath(QStringLiteral("r/pip_freeze.txt")), "torch==2.3.0\n");
    write(dir.filePath(QStringLiteral("r/metrics.csv")), "step,loss\n1,2\n");
    QString error;
    FolderSession session;
    QVERIFY(session.open(dir.path(), &error));
    (void)session.ingest();
    Catalog &c = session.catalog();
    std::vector<ProblemEntry> met;
    c.setStoreErrorHandler([&met](const ProblemEntry &p) { met.push_back(p); });
    const RunRef r = c.runs().front().ref;
    QCOMPARE(c.versions(r).size(), size_t(1));
    QVERIFY(met.empty());
    QVERIFY(RunStoreTestAccess::db(*CatalogTestAccess::store(c, r)).exec("DROP TABLE versions", &error));
    QVERIFY(c.versions(r).empty());
    QCOMPARE(met.size(), size_t(1));
    QVERIFY(met.front().storeError);
    QVERIFY2(met.front().message.contains(QLatin1String("no such table: versions")), qPrintable(met.front().message));
    QCOMPARE(met.front().path, session.storePath(r.store));
    // Met again: still one problem, not said again.
    QVERIFY(c.versions(r).empty());
    QCOMPARE(met.size(), size_t(1));
    // Taken away: nothing more is handed over.
    c.setStoreErrorHandler({});
    QVERIFY(c.versions(r).empty());
    QCOMPARE(met.size(), size_t(1));
}

void TestQuery::ingestProblemsAreProblemsOfTheirFiles()
{
    // What an ingest could not read and the files it failed on become problems of those files (absolute
    // paths); the failed ones are the store's (a failed write), the unreadable ones the folder's.
    FolderSession::FolderIngest ingested {.serial = 7, .folder = QStringLiteral("/runs/a")};
    ingested.report.errors << QStringLiteral("logs/train.log: database or disk is full");
    ingested.report.unreadable.emplace_back(QStringLiteral("bad\uFFFDname.log"), QStringLiteral("not a UTF-8 name"));
    ingested.report.unrecognised << QStringLiteral("notes/job.sh") << QStringLiteral("inference/");
    const std::vector<ProblemEntry> problems = FolderSession::problemsOf(ingested);
    QCOMPARE(problems.size(), size_t(3));
    QCOMPARE(problems[0].path, QStringLiteral("/runs/a/logs/train.log"));
    QCOMPARE(problems[0].message, QStringLiteral("database or disk is full"));
    QVERIFY(problems[0].storeError);
    QCOMPARE(problems[1].path, QStringLiteral("/runs/a/bad\uFFFDname.log"));
    QCOMPARE(problems[1].message, QStringLiteral("not a UTF-8 name"));
    QVERIFY(!problems[1].storeError && !problems[1].skipped);
    // A file in no format read is said too (issue 45: the panel said "No problems" while `ingest` listed it).
    QCOMPARE(problems[2].path, QStringLiteral("/runs/a/notes/job.sh"));
    QVERIFY(problems[2].skipped && !problems[2].storeError);
    // A model folder is not: the checkpoint audit reads it.
    // Nothing read, nothing gone: no change.
    QVERIFY(!FolderSession::changed({ingested}));
    ingested.report.filesResumed = 1;
    QVERIFY(FolderSession::changed({ingested}));
}

void TestQuery::statementsTellErrorsFromTheEnd()
{
    // "No more rows" and "error" are different answers (next() alone could not tell them apart).
    QTemporaryDir dir;
    Database db;
    QString error;
    QVERIFY(db.open(dir.filePath(QStringLiteral("t.sqlite")), &error));
    Statement ok = db.prepare("SELECT 1");
    QVERIFY(ok.next());
    QVERIFY(!ok.next());
    QVERIFY(!ok.failed());
    Statement bad = db.prepare("SELECT json_extract(?, '$')");
    QVERIFY(!bad.failed());
    bad.bindUtf8(1, "{not json");
    QVERIFY(!bad.next());
    QVERIFY(bad.failed());
    QVERIFY2(bad.error().contains(QLatin1String("JSON")), qPrintable(bad.error()));
    bad.reset();
    QVERIFY(!bad.failed());
    Statement missing = db.prepare("SELECT * FROM nowhere", &error);
    QVERIFY(missing.failed());
    QVERIFY(error.contains(QLatin1String("no such table")));
    QVERIFY(!missing.exec());
}

void TestQuery::layerOrderIsTotal()
{
    // Digit runs compare as numbers of any length; names equal as numbers fall back to their text, so that
    // the order is total (a sort with it is defined).
    QVERIFY(layerLess(QStringLiteral("layers.2"), QStringLiteral("layers.10")));
    QVERIFY(!layerLess(QStringLiteral("layers.10"), QStringLiteral("layers.2")));
    QVERIFY(layerLess(QStringLiteral("x5"), QStringLiteral("x99999999999999999999")));
    QVERIFY(!layerLess(QStringLiteral("x99999999999999999999"), QStringLiteral("x5")));
    QVERIFY(layerLess(QStringLiteral("a01"), QStringLiteral("a1"))
        != layerLess(QStringLiteral("a1"), QStringLiteral("a01")));
    const QStringList names {QStringLiteral("a1"), QStringLiteral("a01"), QStringLiteral("a2"), QStringLiteral("a10"),
        QStringLiteral("a"), QStringLiteral("b"), QStringLiteral("a1b"), QStringLiteral("a001"), QStringLiteral("")};
    for (const QString &x : names) {
        QVERIFY(!layerLess(x, x));
        for (const QString &y : names) {
            if (x != y)
                QVERIFY2(layerLess(x, y) != layerLess(y, x), qPrintable(x + QLatin1Char(' ') + y));
            for (const QString &z : names) {
                if (layerLess(x, y) && layerLess(y, z))
                    QVERIFY2(layerLess(x, z), qPrintable(x + QLatin1Char(' ') + y + QLatin1Char(' ') + z));
            }
        }
    }
    // findSeries' order: statistic, tensor, layer in natural order, source, recipe.
    const auto fp8 = run(QStringLiteral("gpt_fp8"));
    const auto all = CatalogTestAccess::store(m_catalog, fp8->ref)
                         ->findSeries(fp8->ref.id, {.tensor = QStringLiteral("activation")});
    QVERIFY(all.size() >= 3);
    for (size_t i = 1; i < all.size(); ++i) {
        const SeriesKey &a = all[i - 1].key, &b = all[i].key;
        QVERIFY(std::make_tuple(a.stat, a.tensor) <= std::make_tuple(b.stat, b.tensor));
        if (a.stat == b.stat && a.tensor == b.tensor && a.layer != b.layer)
            QVERIFY(layerLess(a.layer, b.layer));
    }
}

QTEST_GUILESS_MAIN(TestQuery)
#include "tst_query.moc"

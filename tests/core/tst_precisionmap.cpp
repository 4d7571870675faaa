// The precision map (issue 57): which GEMM ran in which precision and recipe, at which steps, from what the run
// says: Megatron's --first-last-layers-bf16 (its arguments block), its --te-precision-config-file (matchers and
// configs), a Transformer Engine debug config (DisableFP8Layer, DisableQuantizationGEMM with its gemms,
// AutoswitchGemm's thresholds) and AutoswitchGemm's statistics log, all in the writers' own formats; and
// `fp8scope-cli layers --json`.
#include "storeaccess.h"

#include "core/query/precisionmap.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

using namespace fp8scope;

class TestPrecisionMap : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void fromEachSource();
    void layersCommand();
    void nvfp4StatisticsBesideFp8();

private:
    QTemporaryDir m_dir;
    QString m_run;
};

namespace {

bool write(const QString &path, const QByteArray &bytes)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

QByteArray arg(const char *name, const char *value)
{
    return QByteArray("  ") + name + ' ' + QByteArray(std::max<qsizetype>(2, 48 - qsizetype(strlen(name))), '.') + ' '
        + value + '\n';
}

} // namespace

void TestPrecisionMap::initTestCase()
{
    QVERIFY(m_dir.isValid());
    m_run = m_dir.filePath(QStringLiteral("fp8_run"));
    // Megatron's stdout: its arguments (FP8, delayed scaling, 4 layers, the first and the last one in BF16).
    QByteArray log = "------------------------ arguments ------------------------\n";
    log += arg("fp8", "hybrid") + arg("fp8_recipe", "delayed") + arg("num_layers", "4")
        + arg("first_last_layers_bf16", "True") + arg("num_layers_at_start_in_bf16", "1")
        + arg("num_layers_at_end_in_bf16", "1") + arg("te_precision_config_file", "te_precision.yaml");
    log += "-------------------- end of arguments ---------------------\n";
    for (int step = 10; step <= 100; step += 10)
        log += " iteration " + QByteArray::number(step).rightJustified(8)
            + "/     100 | lm loss: " + QByteArray::number(5.0 - step * 0.01, 'E', 6) + " |\n";
    QVERIFY(write(m_run + QStringLiteral("/stdout.log"), log));
    // Megatron's --te-precision-config-file (TransformerEngineMixedPrecision.md): QKV in BF16, the projection in MXFP8.
    QVERIFY(write(m_run + QStringLiteral("/te_precision.yaml"),
        "configs:\n  mxfp8:\n    transformer_engine_config_type: \"TEQuantizationParams\"\n    training_recipe:\n"
        "      fp8_quantization_recipe: \"mxfp8\"\n  bf16:\n    transformer_engine_config_type: "
        "\"TEQuantizationParams\"\n"
        "    training_recipe: {}\nmatchers:\n  attn_qkv_bf16:\n    config: \"bf16\"\n    type: \"glob\"\n"
        "    pattern: \"*.linear_qkv\"\n    enabled: true\n  attn_proj_mxfp8:\n    config: \"mxfp8\"\n    type: "
        "\"glob\"\n"
        "    pattern: \"*.linear_proj\"\n    enabled: true\n  off:\n    config: \"bf16\"\n    type: \"glob\"\n"
        "    pattern: \"*.linear_fc2\"\n    enabled: false\n"));
    // A Transformer Engine debug config: layer 1's fc1 in BF16 (the older feature name), the projections' wgrad in
    // BF16, AutoswitchGemm on the fc2 GEMMs.
    QVERIFY(write(m_run + QStringLiteral("/fp8_debug.yaml"),
        "fc1_bf16:\n  enabled: True\n  layers:\n    layer_name_regex_pattern: "
        "'decoder\\.layers\\.1\\.mlp\\.linear_fc1'\n"
        "  transformer_engine:\n    DisableFP8Layer:\n      enabled: True\n"
        "proj_wgrad:\n  enabled: True\n  layers:\n    layer_types: [linear_proj]\n  transformer_engine:\n"
        "    DisableQuantizationGEMM:\n      enabled: True\n      gemms: [wgrad]\n"
        "not_on:\n  enabled: False\n  layers:\n    layer_types: [linear_fc2]\n  transformer_engine:\n"
        "    DisableQuantizationLayer:\n      enabled: True\n"
        "autoswitch:\n  enabled: True\n  layers:\n    layer_types: [linear_fc2]\n  transformer_engine:\n"
        "    AutoswitchGemm:\n      enabled: True\n      gemms: [fprop, dgrad, wgrad]\n      underflow_threshold_pct: "
        "5.0\n"
        "      mse_threshold: 0.5\n"
        "autoswitch_qkv:\n  enabled: True\n  layers:\n    layer_types: [linear_qkv]\n  transformer_engine:\n"
        "    AutoswitchGemm:\n      enabled: True\n      underflow_threshold_pct: 1.0\n"));
    // The statistics of 4 layers' GEMMs, and AutoswitchGemm's of layer 2's fc2 (its fprop passes 5 % at step 60).
    QByteArray stats, autoswitch;
    for (int step = 10; step <= 100; step += 10) {
        const QByteArray it = QByteArray::number(step).rightJustified(6, '0');
        for (int l = 0; l < 4; ++l) {
            for (const char *g :
                {"self_attention.linear_qkv", "self_attention.linear_proj", "mlp.linear_fc1", "mlp.linear_fc2"})
                stats += "2026-12-05 10:00:00,000 - INFO - decoder.layers." + QByteArray::number(l) + '.' + g
                    + "_activation_underflows% \t\t\t\t iteration=" + it + " \t\t\t\t value=1.0000\n";
        }
        // LogNvfp4TensorStats beside LogFp8TensorStats on one layer (an NVFP4 what-if of an FP8 run).
        for (const char *stat : {"nvfp4_underflows%", "nvfp4_mse"})
            stats += "2026-12-05 10:00:00,000 - INFO - decoder.layers.2.mlp.linear_fc1_activation_" + QByteArray(stat)
                + " \t\t\t\t iteration=" + it + " \t\t\t\t value=9.5000\n";
        // Layer 2's QKV under its own section's threshold (1 %), which the fc2 section's (5 %) would not pass.
        autoswitch += "2026-12-05 10:00:00,000 - INFO - decoder.layers.2.self_attention.linear_qkv_wgrad_gradient_"
                      "underflow_pct \t\t\t\t iteration="
            + it + " \t\t\t\t value=" + QByteArray::number(step >= 40 ? 1.5 : 0.5, 'f', 8) + '\n';
        autoswitch += "2026-12-05 10:00:00,000 - INFO - decoder.layers.2.mlp.linear_fc2_fprop_activation_underflow_pct"
                      " \t\t\t\t iteration="
            + it + " \t\t\t\t value=" + QByteArray::number(step >= 60 && step < 90 ? 7.5 : 1.25, 'f', 8) + '\n';
    }
    QVERIFY(write(m_run + QStringLiteral("/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"), stats));
    QVERIFY(write(
        m_run + QStringLiteral("/nvdlfw_inspect_autoswitchgemm_logs/nvdlfw_inspect_globalrank-0.log"), autoswitch));
}

void TestPrecisionMap::fromEachSource()
{
    Catalog catalog;
    QString error;
    QVERIFY2(testing::openAndIngest(m_dir.path(), &catalog, &error), qPrintable(error));
    QCOMPARE(catalog.runs().size(), size_t(1));
    const RunRef run = catalog.runs().front().ref;
    const PrecisionMap map = precisionMap(catalog, run);
    QCOMPARE(map.precision, QStringLiteral("fp8"));
    QCOMPARE(map.layers.size(), size_t(16));
    const auto layer
        = [](int l, const char *g) { return QStringLiteral("decoder.layers.%1.%2").arg(l).arg(QLatin1String(g)); };
    // Megatron's first and last layers: every GEMM in BF16, the per-module MXFP8 of the projection notwithstanding.
    for (const char *g :
        {"self_attention.linear_qkv", "self_attention.linear_proj", "mlp.linear_fc1", "mlp.linear_fc2"}) {
        QVERIFY2(map.highPrecisionThroughout(layer(0, g)), g);
        QVERIFY2(map.highPrecisionThroughout(layer(3, g)), g);
    }
    QVERIFY(map.at(layer(0, "mlp.linear_fc1"), 50)->source.contains(QStringLiteral("--first-last-layers-bf16")));
    // The per-module recipes: QKV in BF16, the projection under MXFP8.
    QVERIFY(map.highPrecisionThroughout(layer(1, "self_attention.linear_qkv")));
    QVERIFY(map.at(layer(1, "self_attention.linear_qkv"), 50)->source.contains(QStringLiteral("attn_qkv_bf16")));
    QVERIFY(!map.highPrecision(layer(1, "self_attention.linear_proj"), 50));
    QCOMPARE(map.at(layer(1, "self_attention.linear_proj"), 50)->recipe, QStringLiteral("mxfp8"));
    // A disabled matcher or section changes nothing: layer 1's fc2 runs as the run does until its switch.
    QVERIFY(!map.highPrecision(layer(1, "mlp.linear_fc2"), 50));
    // The debug config: layer 1's fc1 in BF16 (DisableFP8Layer); the projections' wgrad alone (not the layer).
    QVERIFY(map.highPrecisionThroughout(layer(1, "mlp.linear_fc1")));
    QVERIFY(!map.highPrecisionThroughout(layer(2, "mlp.linear_fc1")));
    const LayerPrecision *proj = map.find(layer(2, "self_attention.linear_proj"));
    QVERIFY(proj);
    QVERIFY(std::any_of(proj->spans.begin(), proj->spans.end(), [](const PrecisionSpan &s) {
        return s.gemms == QStringList {QStringLiteral("wgrad")} && s.precision == QLatin1String("bf16")
            && s.source.contains(QStringLiteral("DisableQuantizationGEMM"));
    }));
    QVERIFY(!map.highPrecision(layer(2, "self_attention.linear_proj"), 50));
    // AutoswitchGemm: layer 2's fc2 fprop in high precision from step 60 to 80, as its statistic passed 5 %.
    const LayerPrecision *fc2 = map.find(layer(2, "mlp.linear_fc2"));
    QVERIFY(fc2);
    const auto sw
        = std::find_if(fc2->spans.begin(), fc2->spans.end(), [](const PrecisionSpan &s) { return s.automatic; });
    QVERIFY(sw != fc2->spans.end());
    QCOMPARE(sw->from, 60);
    QCOMPARE(sw->to, 80);
    QCOMPARE(sw->gemms, QStringList {QStringLiteral("fprop")});
    QVERIFY(!map.highPrecision(layer(2, "mlp.linear_fc2"), 70)); // dgrad and wgrad stayed in FP8
    // Each section's thresholds for its own layers: layer 2's QKV wgrad switched from step 40 at 1 %.
    const LayerPrecision *qkv = map.find(layer(2, "self_attention.linear_qkv"));
    QVERIFY(qkv);
    const auto qsw
        = std::find_if(qkv->spans.begin(), qkv->spans.end(), [](const PrecisionSpan &s) { return s.automatic; });
    QVERIFY(qsw != qkv->spans.end());
    QCOMPARE(qsw->from, 40);
    QCOMPARE(qsw->gemms, QStringList {QStringLiteral("wgrad")});
    QVERIFY(map.notes.isEmpty());
}

void TestPrecisionMap::layersCommand()
{
    QProcess p;
    p.start(qEnvironmentVariable("FP8SCOPE_CLI"),
        {QStringLiteral("layers"), m_dir.path(), QStringLiteral("--run"), QFileInfo(m_dir.path()).fileName(),
            QStringLiteral("--json")});
    QVERIFY(p.waitForFinished(120000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const QJsonObject doc = QJsonDocument::fromJson(p.readAllStandardOutput()).object();
    QCOMPARE(doc.value(QStringLiteral("precision")).toString(), QStringLiteral("fp8"));
    const QJsonArray layers = doc.value(QStringLiteral("layers")).toArray();
    QCOMPARE(layers.size(), 16);
    int throughout = 0;
    bool automatic = false;
    for (const QJsonValue &l : layers) {
        const QJsonObject o = l.toObject();
        throughout += o.value(QStringLiteral("high_precision_throughout")).toBool();
        const QJsonArray spans = o.value(QStringLiteral("spans")).toArray();
        // The run's own first, over every step.
        QCOMPARE(spans.first().toObject().value(QStringLiteral("from")), QJsonValue());
        QCOMPARE(spans.first().toObject().value(QStringLiteral("source")).toString(),
            QStringLiteral("the run's precision and recipe"));
        for (const QJsonValue &s : spans) {
            if (s.toObject().value(QStringLiteral("automatic")).toBool()
                && o.value(QStringLiteral("layer")).toString() == QLatin1String("decoder.layers.2.mlp.linear_fc2")) {
                automatic = true;
                QCOMPARE(s.toObject().value(QStringLiteral("from")).toInt(), 60);
                QCOMPARE(s.toObject().value(QStringLiteral("to")).toInt(), 80);
            }
        }
    }
    // Layers 0 and 3 (8 GEMMs), layer 1's QKV and its fc1, layer 2's QKV.
    QCOMPARE(throughout, 11);
    QVERIFY(automatic);
}

// TE's LogNvfp4TensorStats names read as the statistic of the nvfp4 recipe, kept beside the layer's FP8 statistic.
void TestPrecisionMap::nvfp4StatisticsBesideFp8()
{
    Catalog catalog;
    QString error;
    QVERIFY2(catalog.open(m_dir.path(), &error), qPrintable(error));
    const RunRef run = catalog.runs().front().ref;
    const std::vector<Series> at
        = catalog.seriesAt(run, QStringLiteral("decoder.layers.2.mlp.linear_fc1"), QStringLiteral("activation"));
    const auto has = [&](const char *stat, const char *recipe) {
        return std::any_of(at.begin(), at.end(), [&](const Series &s) {
            return s.stat == QLatin1String(stat) && s.recipe == QLatin1String(recipe) && s.points == 10;
        });
    };
    QVERIFY(has("underflows%", ""));
    QVERIFY(has("underflows%", "nvfp4"));
    QVERIFY(has("mse", "nvfp4"));
    MatrixRequest request {.stat = QStringLiteral("underflows%"), .tensor = QStringLiteral("activation")};
    const Heatmap own = catalog.matrix(run, request);
    QCOMPARE(own.layers.size(), 16);
    request.recipe = QStringLiteral("nvfp4");
    const Heatmap fp4 = catalog.matrix(run, request);
    QCOMPARE(fp4.recipe, QStringLiteral("nvfp4"));
    QCOMPARE(fp4.layers, QStringList {QStringLiteral("decoder.layers.2.mlp.linear_fc1")});
    QCOMPARE(fp4.at(0, 0), 9.5);
}

QTEST_GUILESS_MAIN(TestPrecisionMap)
#include "tst_precisionmap.moc"

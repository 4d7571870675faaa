// The audit of inference checkpoints (core/audit) on exports written by torch and safetensors in every layout
// the readers know (tests/core/oracles/write_checkpoints.py): clean controls give no finding against any
// reference, each planted fault gives its finding on its layer and nothing else; the name mapping, a user's
// mapping file and a header that lies about its sizes.
#include "core/audit/auditkernels.h"
#include "core/audit/checkpointaudit.h"
#include "core/audit/layernames.h"
#include "core/formats/fp8math.h"
#include "core/tensors/safetensorsreader.h"
#include "core/tensors/teextrastate.h"

#include <QDateTime>
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <bit>
#include <cmath>
#include <cstring>
#include <random>

using namespace fp8scope;

class TestAudit : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void trainingNames();
    void mappingFile();
    void lyingHeaderRefused();
    void cleanExportsHaveNoFindings_data();
    void cleanExportsHaveNoFindings();
    void eachFaultIsFound_data();
    void eachFaultIsFound();
    void shardsAndConfigRead();
    void jsonCarriesFindingsAndLayers();
    void calibrationAgainstTraining();
    void checkpointFoundInRunFolder();
    void cachedWhileFilesHold();
    void layersTrainedInBf16();
    void calibrationOnDumps();
    void calibrationToleranceAndSpread();
    void trainingCheckpointState();
    void hostileExtraState();
    void vectorKernelsAgree_data();
    void vectorKernelsAgree();

private:
    std::optional<AuditResult> audit(const QString &folder, const QStringList &references);
    bool m_written = false;
    QTemporaryDir m_dir;
};

void TestAudit::initTestCase()
{
    const QString python = QString::fromLocal8Bit(qgetenv("FP8SCOPE_TEST_PYTHON"));
    if (python.isEmpty() || !QFileInfo::exists(python))
        return; // the tests that need the checkpoints skip
    QProcess p;
    p.start(python,
        {QString::fromLocal8Bit(qgetenv("FP8SCOPE_SOURCE_DIR"))
                + QStringLiteral("/tests/core/oracles/write_checkpoints.py"),
            m_dir.path()});
    QVERIFY(p.waitForFinished(300000));
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    m_written = true;
}

std::optional<AuditResult> TestAudit::audit(const QString &folder, const QStringList &references)
{
    AuditOptions options;
    for (const QString &r : references)
        options.references << m_dir.filePath(r);
    options.threads = 2;
    Problem problem;
    auto result = auditCheckpoint(m_dir.filePath(folder), options, &problem);
    if (!result)
        qWarning("%s", qPrintable(problem.toString()));
    return result;
}

void TestAudit::trainingNames()
{
    const auto name = [](const char *hf, bool gated = true) {
        const auto t = trainingNameOf(QLatin1String(hf), gated);
        return t ? t->text() : QStringLiteral("-");
    };
    QCOMPARE(name("model.layers.3.self_attn.k_proj"), QStringLiteral("decoder.layers.3.self_attention.linear_qkv (k)"));
    QCOMPARE(name("model.layers.0.self_attn.o_proj"), QStringLiteral("decoder.layers.0.self_attention.linear_proj"));
    QCOMPARE(name("model.layers.12.mlp.gate_proj"), QStringLiteral("decoder.layers.12.mlp.linear_fc1 (gate)"));
    QCOMPARE(name("model.layers.12.mlp.up_proj"), QStringLiteral("decoder.layers.12.mlp.linear_fc1 (up)"));
    // Nemotron's MLP has no gate: up_proj is linear_fc1 whole.
    QCOMPARE(name("model.layers.12.mlp.up_proj", false), QStringLiteral("decoder.layers.12.mlp.linear_fc1"));
    QCOMPARE(name("model.layers.1.mlp.down_proj"), QStringLiteral("decoder.layers.1.mlp.linear_fc2"));
    QCOMPARE(name("lm_head"), QStringLiteral("output_layer"));
    QCOMPARE(name("model.layers.2.block_sparse_moe.experts.5.w3"),
        QStringLiteral("decoder.layers.2.mlp.experts.local_experts.5.linear_fc1 (up)"));
    QCOMPARE(name("model.vision_tower.proj"), QStringLiteral("-"));
}

void TestAudit::mappingFile()
{
    QTemporaryDir dir;
    const QString json = dir.filePath(QStringLiteral("map.json"));
    QFile f(json);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(R"x({"transformer.h.0.attn.c_attn": "decoder.layers.0.self_attention.linear_qkv (q)"})x");
    f.close();
    QHash<QString, TrainingName> mapping;
    Problem problem;
    QVERIFY2(readNameMapping(json, &mapping, &problem), qPrintable(problem.toString()));
    QCOMPARE(mapping.value(QStringLiteral("transformer.h.0.attn.c_attn")).module,
        QStringLiteral("decoder.layers.0.self_attention.linear_qkv"));
    QCOMPARE(mapping.value(QStringLiteral("transformer.h.0.attn.c_attn")).part, QStringLiteral("q"));

    const QString text = dir.filePath(QStringLiteral("map.txt"));
    QFile t(text);
    QVERIFY(t.open(QIODevice::WriteOnly));
    t.write("# inference training\nmodel.x.proj  decoder.layers.0.mlp.linear_fc2\nlonely\n");
    t.close();
    mapping.clear();
    QVERIFY(!readNameMapping(text, &mapping, &problem));
    QCOMPARE(problem.file, text);
    QVERIFY2(problem.message.startsWith(QLatin1String("line 3:")), qPrintable(problem.message));
    QCOMPARE(problem.offset, qint64(qstrlen("# inference training\nmodel.x.proj  decoder.layers.0.mlp.linear_fc2\n")));
}

void TestAudit::lyingHeaderRefused()
{
    // A header whose tensor claims more bytes than the file holds: refused with the file and the offset.
    QTemporaryDir dir;
    const QByteArray header = R"({"w.weight":{"dtype":"F8_E4M3","shape":[64,64],"data_offsets":[0,4096]}})";
    QByteArray bytes(8, '\0');
    const quint64 len = quint64(header.size());
    for (int i = 0; i < 8; ++i)
        bytes[i] = char((len >> (8 * i)) & 0xFF);
    bytes += header;
    bytes += QByteArray(100, '\0');
    QFile f(dir.filePath(QStringLiteral("model.safetensors")));
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(bytes);
    f.close();
    Problem problem;
    QVERIFY(!auditCheckpoint(dir.path(), {}, &problem));
    QCOMPARE(problem.file, f.fileName());
    QCOMPARE(problem.offset, qint64(8));
    QVERIFY2(!problem.message.isEmpty(), "no message");
    // And a folder with nothing to audit says so.
    QTemporaryDir empty;
    QVERIFY(!auditCheckpoint(empty.path(), {}, &problem));
    QVERIFY(problem.message.contains(QLatin1String("no safetensors")));
}

void TestAudit::cleanExportsHaveNoFindings_data()
{
    QTest::addColumn<QString>("folder");
    QTest::addColumn<QStringList>("references");
    for (const char *folder : {"ct_tensor", "ct_channel", "block", "modelopt"}) {
        QTest::addRow("%s, no reference", folder) << QString::fromLatin1(folder) << QStringList();
        QTest::addRow("%s, BF16 weights", folder)
            << QString::fromLatin1(folder) << QStringList {QStringLiteral("reference")};
        QTest::addRow("%s, Megatron checkpoint", folder)
            << QString::fromLatin1(folder) << QStringList {QStringLiteral("megatron/model.pt")};
    }
}

void TestAudit::cleanExportsHaveNoFindings()
{
    if (!m_written)
        QSKIP("no test Python (FP8SCOPE_TEST_PYTHON) with torch and safetensors");
    QFETCH(QString, folder);
    QFETCH(QStringList, references);
    const auto r = audit(folder, references);
    QVERIFY(r);
    for (const AuditFinding &f : r->findings)
        qWarning("%s %s: %s", qPrintable(auditKindName(f.kind)), qPrintable(f.layer), qPrintable(f.evidence));
    QVERIFY(r->findings.empty());
    QVERIFY(r->problems.empty());
    QVERIFY(r->unmapped.isEmpty());
    QVERIFY(r->unmatched.isEmpty());
    int quantized = 0;
    for (const AuditLayer &l : r->layers) {
        if (!l.quantized)
            continue;
        ++quantized;
        QVERIFY(l.training);
        if (!references.isEmpty()) {
            // Every quantized layer was compared, through the fused modules' parts for Megatron's names, and its
            // error is what quantization gives (E4M3: a few per cent).
            QVERIFY2(!l.reference.isEmpty(), qPrintable(l.name));
            QVERIFY2(l.relError > 0.005 && l.relError < 0.05, qPrintable(QString::number(l.relError)));
            QVERIFY(l.relError <= 1.5 * l.freshRelError);
            QVERIFY(l.cosine > 0.999);
        }
    }
    QCOMPARE(quantized, 14);
}

void TestAudit::eachFaultIsFound_data()
{
    QTest::addColumn<QString>("folder");
    QTest::addColumn<QStringList>("references");
    QTest::addColumn<QString>("kind");
    QTest::addColumn<QString>("severity");
    QTest::addColumn<QString>("layer");
    QTest::addColumn<QString>("trainingLayer");
    const QStringList none;
    const QStringList bf16 {QStringLiteral("reference")};
    const QStringList megatron {QStringLiteral("megatron/model.pt")};
    const auto s = [](const char *t) { return QString::fromLatin1(t); };
    QTest::newRow("missing weight scale") << s("fault_missing") << none << s("missing-scale") << s("critical")
                                          << s("model.layers.0.mlp.down_proj") << s("decoder.layers.0.mlp.linear_fc2");
    QTest::newRow("missing static input scale")
        << s("fault_missing_input") << bf16 << s("missing-scale") << s("critical")
        << s("model.layers.1.self_attn.o_proj") << s("decoder.layers.1.self_attention.linear_proj");
    QTest::newRow("zero scale") << s("fault_invalid") << bf16 << s("invalid-scale") << s("critical")
                                << s("model.layers.1.mlp.up_proj") << s("decoder.layers.1.mlp.linear_fc1 (up)");
    QTest::newRow("grid fits no layout") << s("fault_grid") << none << s("invalid-scale") << s("critical")
                                         << s("model.layers.0.self_attn.o_proj")
                                         << s("decoder.layers.0.self_attention.linear_proj");
    QTest::newRow("inverted, BF16 reference")
        << s("fault_inverted") << bf16 << s("inverted-scale") << s("critical") << s("model.layers.0.self_attn.q_proj")
        << s("decoder.layers.0.self_attention.linear_qkv (q)");
    QTest::newRow("inverted, Megatron reference")
        << s("fault_inverted") << megatron << s("inverted-scale") << s("critical")
        << s("model.layers.0.self_attn.q_proj") << s("decoder.layers.0.self_attention.linear_qkv (q)");
    QTest::newRow("inverted, no reference")
        << s("fault_inverted") << none << s("inverted-scale") << s("warning") << s("model.layers.0.self_attn.q_proj")
        << s("decoder.layers.0.self_attention.linear_qkv (q)");
    QTest::newRow("stale weights") << s("fault_stale") << bf16 << s("weight-mismatch") << s("critical")
                                   << s("model.layers.1.mlp.down_proj") << s("decoder.layers.1.mlp.linear_fc2");
    QTest::newRow("stale weights, Megatron reference")
        << s("fault_stale") << megatron << s("weight-mismatch") << s("critical") << s("model.layers.1.mlp.down_proj")
        << s("decoder.layers.1.mlp.linear_fc2");
    QTest::newRow("ignored layer quantized")
        << s("fault_precision") << bf16 << s("precision-mismatch") << s("warning") << s("lm_head") << s("output_layer");
}

void TestAudit::eachFaultIsFound()
{
    if (!m_written)
        QSKIP("no test Python (FP8SCOPE_TEST_PYTHON) with torch and safetensors");
    QFETCH(QString, folder);
    QFETCH(QStringList, references);
    QFETCH(QString, kind);
    QFETCH(QString, severity);
    QFETCH(QString, layer);
    QFETCH(QString, trainingLayer);
    const auto r = audit(folder, references);
    QVERIFY(r);
    // The planted fault, and nothing else.
    QCOMPARE(int(r->findings.size()), 1);
    const AuditFinding &f = r->findings.front();
    QCOMPARE(auditKindName(f.kind), kind);
    QCOMPARE(auditSeverityName(f.severity), severity);
    QCOMPARE(f.layer, layer);
    QCOMPARE(f.trainingLayer, trainingLayer);
    QVERIFY(!f.evidence.isEmpty());
    for (const AuditLayer &l : r->layers)
        QCOMPARE(l.status(), l.name == layer ? kind : QStringLiteral("ok"));
}

void TestAudit::shardsAndConfigRead()
{
    if (!m_written)
        QSKIP("no test Python (FP8SCOPE_TEST_PYTHON) with torch and safetensors");
    const auto channel = audit(QStringLiteral("ct_channel"), {});
    QVERIFY(channel);
    QCOMPARE(channel->files.size(), qsizetype(2));
    QCOMPARE(channel->config.method, QStringLiteral("compressed-tensors"));
    QCOMPARE(channel->config.weightStrategy, QStringLiteral("channel"));
    QCOMPARE(channel->config.staticActivations, std::optional<bool>(false));
    QVERIFY(channel->config.ignores(QStringLiteral("lm_head")));
    QVERIFY(!channel->config.ignores(QStringLiteral("model.layers.0.mlp.down_proj")));
    for (const AuditLayer &l : channel->layers) {
        if (l.quantized)
            QCOMPARE(l.scaleLayout, QStringLiteral("per row"));
    }
    const auto block = audit(QStringLiteral("block"), {});
    QVERIFY(block);
    QCOMPARE(block->config.blockRows, int64_t(128));
    for (const AuditLayer &l : block->layers)
        QCOMPARE(l.scaleName, l.quantized ? QStringLiteral("weight_scale_inv") : QString());
    const auto modelopt = audit(QStringLiteral("modelopt"), {});
    QVERIFY(modelopt);
    QCOMPARE(modelopt->config.method, QStringLiteral("modelopt"));
    QVERIFY(modelopt->config.kvCacheFp8);
    QVERIFY(modelopt->config.ignores(QStringLiteral("lm_head")));
    int inputScales = 0;
    for (const AuditLayer &l : modelopt->layers)
        inputScales += l.inputScale.has_value();
    QCOMPARE(inputScales, 14);
}

void TestAudit::jsonCarriesFindingsAndLayers()
{
    if (!m_written)
        QSKIP("no test Python (FP8SCOPE_TEST_PYTHON) with torch and safetensors");
    const auto r = audit(QStringLiteral("fault_stale"), {QStringLiteral("reference")});
    QVERIFY(r);
    const QJsonObject o = auditToJson(*r);
    const QJsonArray findings = o.value(QStringLiteral("findings")).toArray();
    QCOMPARE(findings.size(), 1);
    const QJsonObject f = findings.first().toObject();
    for (const char *key : {"kind", "severity", "layer", "training_layer", "evidence"})
        QVERIFY2(f.contains(QLatin1String(key)), key);
    QCOMPARE(f.value(QStringLiteral("kind")).toString(), QStringLiteral("weight-mismatch"));
    const QJsonArray layers = o.value(QStringLiteral("layers")).toArray();
    QCOMPARE(layers.size(), qsizetype(r->layers.size()));
    bool seen = false;
    for (const QJsonValue &v : layers) {
        const QJsonObject l = v.toObject();
        if (l.value(QStringLiteral("layer")).toString() != QLatin1String("model.layers.1.mlp.down_proj"))
            continue;
        seen = true;
        QCOMPARE(l.value(QStringLiteral("status")).toString(), QStringLiteral("weight-mismatch"));
        QVERIFY(l.value(QStringLiteral("relative_error")).toDouble() > 0.2);
        QVERIFY(l.value(QStringLiteral("fresh_relative_error")).toDouble() < 0.05);
        QCOMPARE(l.value(QStringLiteral("scale_layout")).toString(), QStringLiteral("per tensor"));
    }
    QVERIFY(seen);
}

void TestAudit::calibrationAgainstTraining()
{
    if (!m_written)
        QSKIP("no test Python (FP8SCOPE_TEST_PYTHON) with torch and safetensors");
    // The static input scales of ct_tensor represent activations up to about 4 (x 448). A training run whose
    // activations reached 9 in one layer (saturated, critical) and 0.1 in another (the range spent above them,
    // warning), 3 elsewhere (fine).
    AuditOptions options;
    options.threads = 2;
    for (int i = 0; i < 2; ++i) {
        for (const char *m :
            {"self_attention.linear_qkv", "self_attention.linear_proj", "mlp.linear_fc1", "mlp.linear_fc2"})
            options.activationAmax.insert(
                QStringLiteral("decoder.layers.%1.%2").arg(i).arg(QLatin1String(m)), {3.0, 3.0});
    }
    options.activationAmax.insert(QStringLiteral("decoder.layers.1.self_attention.linear_proj"), {9.0, 9.0});
    options.activationAmax.insert(QStringLiteral("decoder.layers.0.mlp.linear_fc2"), {0.1, 0.1});
    options.activationSource = QStringLiteral("test");
    Problem problem;
    const auto r = auditCheckpoint(m_dir.filePath(QStringLiteral("ct_tensor")), options, &problem);
    QVERIFY(r);
    QCOMPARE(int(r->findings.size()), 2);
    QCOMPARE(auditKindName(r->findings[0].kind), QStringLiteral("calibration-mismatch"));
    QCOMPARE(auditSeverityName(r->findings[0].severity), QStringLiteral("critical"));
    QCOMPARE(r->findings[0].layer, QStringLiteral("model.layers.1.self_attn.o_proj"));
    QCOMPARE(auditKindName(r->findings[1].kind), QStringLiteral("calibration-mismatch"));
    QCOMPARE(auditSeverityName(r->findings[1].severity), QStringLiteral("warning"));
    QCOMPARE(r->findings[1].layer, QStringLiteral("model.layers.0.mlp.down_proj"));
    for (const AuditLayer &l : r->layers) {
        if (l.quantized)
            QVERIFY2(std::isfinite(l.trainingActivationAmax), qPrintable(l.name));
    }
    // The modelopt export's scalar input scales are read the same way.
    options.activationAmax.insert(QStringLiteral("decoder.layers.0.mlp.linear_fc2"), {3.0, 3.0});
    const auto m = auditCheckpoint(m_dir.filePath(QStringLiteral("modelopt")), options, &problem);
    QVERIFY(m);
    QCOMPARE(int(m->findings.size()), 1);
    QCOMPARE(m->findings[0].layer, QStringLiteral("model.layers.1.self_attn.o_proj"));
}

void TestAudit::checkpointFoundInRunFolder()
{
    // The one export below a run folder (a config.json with a quantization_config beside safetensors), or the one
    // its fp8scope.json names; none where two qualify and nothing says which.
    QTemporaryDir run;
    const auto makeExport = [&](const QString &sub) {
        QDir().mkpath(run.filePath(sub));
        QFile c(run.filePath(sub + QStringLiteral("/config.json")));
        QVERIFY(c.open(QIODevice::WriteOnly));
        c.write(R"({"quantization_config":{"quant_method":"fp8"}})");
        QFile w(run.filePath(sub + QStringLiteral("/model.safetensors")));
        QVERIFY(w.open(QIODevice::WriteOnly));
    };
    QCOMPARE(findInferenceCheckpoint(run.path()), QString());
    makeExport(QStringLiteral("hf/fp8"));
    QCOMPARE(findInferenceCheckpoint(run.path()), QDir(run.filePath(QStringLiteral("hf/fp8"))).absolutePath());
    // A folder of training dumps (safetensors without a quantization config) is not an export.
    QDir().mkpath(run.filePath(QStringLiteral("dumps")));
    QFile dump(run.filePath(QStringLiteral("dumps/iter_100.safetensors")));
    QVERIFY(dump.open(QIODevice::WriteOnly));
    dump.close();
    QCOMPARE(findInferenceCheckpoint(run.path()), QDir(run.filePath(QStringLiteral("hf/fp8"))).absolutePath());
    makeExport(QStringLiteral("other"));
    QCOMPARE(findInferenceCheckpoint(run.path()), QString());
    // What the manifest names (read at ingest: tst_importers manifestNamesTheCheckpoint) decides.
    QCOMPARE(findInferenceCheckpoint(run.path(), QStringLiteral("other")),
        QDir(run.filePath(QStringLiteral("other"))).absolutePath());

    // The reference: the one unquantized model folder (a config.json naming its architectures), which neither
    // the dumps nor the exports are; or what the manifest names, a path or a list.
    QCOMPARE(findInferenceReferences(run.path()), QStringList());
    QDir().mkpath(run.filePath(QStringLiteral("hf/bf16")));
    QFile c(run.filePath(QStringLiteral("hf/bf16/config.json")));
    QVERIFY(c.open(QIODevice::WriteOnly));
    c.write(R"({"architectures": ["LlamaForCausalLM"], "model_type": "llama"})");
    c.close();
    QFile w(run.filePath(QStringLiteral("hf/bf16/model.safetensors")));
    QVERIFY(w.open(QIODevice::WriteOnly));
    w.close();
    QCOMPARE(findInferenceReferences(run.path()),
        QStringList {QDir(run.filePath(QStringLiteral("hf/bf16"))).absolutePath()});
    QCOMPARE(modelFolderKind(run.filePath(QStringLiteral("hf/bf16")),
                 {QStringLiteral("config.json"), QStringLiteral("model.safetensors")}),
        ModelFolder::Unquantized);
    QCOMPARE(modelFolderKind(run.filePath(QStringLiteral("dumps")), {QStringLiteral("iter_100.safetensors")}),
        ModelFolder::None);
    QCOMPARE(findInferenceReferences(run.path(), {QStringLiteral("w/a.safetensors"), QStringLiteral("w/b.pt")}),
        (QStringList {run.filePath(QStringLiteral("w/a.safetensors")), run.filePath(QStringLiteral("w/b.pt"))}));
}

void TestAudit::cachedWhileFilesHold()
{
    if (!m_written)
        QSKIP("no test Python (FP8SCOPE_TEST_PYTHON) with torch and safetensors");
    // The triage's audit is read once while the files keep their sizes and times: a file changed under the same
    // size and time is not seen (the cache answered), a new time is.
    QTemporaryDir dir;
    const QString file = dir.filePath(QStringLiteral("model.safetensors"));
    QVERIFY(QFile::copy(
        m_dir.filePath(QStringLiteral("ct_tensor/config.json")), dir.filePath(QStringLiteral("config.json"))));
    QVERIFY(QFile::copy(m_dir.filePath(QStringLiteral("ct_tensor/model.safetensors")), file));
    Problem problem;
    auto r = cachedAudit(dir.path(), {}, &problem);
    QVERIFY(r);
    QVERIFY(r->findings.empty());
    const QDateTime time = QFileInfo(file).lastModified();
    // The same layout with one scale zero: the same size.
    QFile::remove(file);
    QVERIFY(QFile::copy(m_dir.filePath(QStringLiteral("fault_invalid/model.safetensors")), file));
    QCOMPARE(QFileInfo(file).size(), QFileInfo(m_dir.filePath(QStringLiteral("ct_tensor/model.safetensors"))).size());
    {
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.setFileTime(time, QFileDevice::FileModificationTime));
    }
    r = cachedAudit(dir.path(), {}, &problem);
    QVERIFY(r && r->findings.empty());
    {
        QFile f(file);
        QVERIFY(f.open(QIODevice::ReadWrite));
        QVERIFY(f.setFileTime(time.addSecs(5), QFileDevice::FileModificationTime));
    }
    r = cachedAudit(dir.path(), {}, &problem);
    QVERIFY(r);
    QCOMPARE(int(r->findings.size()), 1);
    QCOMPARE(auditKindName(r->findings.front().kind), QStringLiteral("invalid-scale"));
    // The calibration is applied to the cached audit, on a copy.
    AuditResult calibrated = *r;
    checkCalibration(
        calibrated, {{QStringLiteral("decoder.layers.0.mlp.linear_fc2"), {50.0, 50.0}}}, QStringLiteral("test"));
    QCOMPARE(int(calibrated.findings.size()), 2);
    QCOMPARE(auditSeverityName(calibrated.findings.front().severity), QStringLiteral("critical"));
    QCOMPARE(int(cachedAudit(dir.path(), {}, &problem)->findings.size()), 1);
}

void TestAudit::layersTrainedInBf16()
{
    // Megatron's flags as a YAML config names them, and as its log's arguments block does.
    const auto layers
        = [](const std::vector<std::pair<QString, QString>> &config) { return bf16TrainedLayers(config).layers; };
    QCOMPARE(layers({{QStringLiteral("MODEL_ARGS.--num-layers"), QStringLiteral("12")},
                 {QStringLiteral("MODEL_ARGS.--first-last-layers-bf16"), QStringLiteral("true")}}),
        (std::vector<int> {0, 11}));
    QCOMPARE(layers({{QStringLiteral("num_layers"), QStringLiteral("8")},
                 {QStringLiteral("first_last_layers_bf16"), QStringLiteral("True")},
                 {QStringLiteral("num_layers_at_start_in_bf16"), QStringLiteral("2")},
                 {QStringLiteral("num_layers_at_end_in_bf16"), QStringLiteral("0")}}),
        (std::vector<int> {0, 1}));
    // Without the flag (or the layer count) nothing is said.
    QVERIFY(layers({{QStringLiteral("num_layers"), QStringLiteral("8")}}).empty());
    QVERIFY(layers({{QStringLiteral("first_last_layers_bf16"), QStringLiteral("true")}}).empty());
    QVERIFY(layers({{QStringLiteral("num_layers"), QStringLiteral("8")},
                       {QStringLiteral("first_last_layers_bf16"), QStringLiteral("false")}})
                .empty());
    if (!m_written)
        QSKIP("no test Python (FP8SCOPE_TEST_PYTHON) with torch and safetensors");
    // ct_tensor quantizes both of its layers: with a run that kept layer 1 in BF16, layer 1's seven modules are a
    // precision mismatch, layer 0's are not.
    Problem problem;
    auto r = auditCheckpoint(m_dir.filePath(QStringLiteral("ct_tensor")), {}, &problem);
    QVERIFY(r);
    checkTrainingPrecision(*r,
        bf16TrainedLayers({{QStringLiteral("num_layers"), QStringLiteral("2")},
            {QStringLiteral("first_last_layers_bf16"), QStringLiteral("true")},
            {QStringLiteral("num_layers_at_start_in_bf16"), QStringLiteral("0")}}));
    QCOMPARE(int(r->findings.size()), 7);
    for (const AuditFinding &f : r->findings) {
        QCOMPARE(auditKindName(f.kind), QStringLiteral("precision-mismatch"));
        QVERIFY2(f.layer.startsWith(QLatin1String("model.layers.1.")), qPrintable(f.layer));
        QVERIFY(f.evidence.contains(QLatin1String("the first 0 and the last 1 of 2 layers")));
    }
}

QTEST_GUILESS_MAIN(TestAudit)
#include "tst_audit.moc"

void TestAudit::vectorKernelsAgree_data()
{
    QTest::addColumn<bool>("e5m2");
    QTest::addColumn<bool>("bf16");
    QTest::addColumn<int>("n");
    QTest::addColumn<int>("special"); // where a NaN/inf code is planted, -1 none
    QTest::addColumn<int>("badReference"); // where the reference holds inf, -1 none
    QTest::addColumn<int>("top"); // codes' low seven bits below this
    QTest::newRow("e4m3 bf16 long") << false << true << 4099 << -1 << -1 << 0x80;
    QTest::newRow("e4m3 f32 short") << false << false << 13 << -1 << -1 << 0x80;
    QTest::newRow("e5m2 bf16") << true << true << 1000 << -1 << -1 << 0x80;
    QTest::newRow("e5m2 f32") << true << false << 517 << -1 << -1 << 0x80;
    QTest::newRow("e4m3 NaN code") << false << true << 300 << 77 << -1 << 0x80;
    QTest::newRow("e5m2 inf code") << true << false << 300 << 290 << -1 << 0x80;
    // Small codes only (no value that a wrong decode would make infinite, for the careful loop to mend).
    QTest::newRow("e4m3 small codes") << false << true << 2053 << -1 << -1 << 0x50;
    QTest::newRow("e5m2 small codes") << true << true << 2053 << -1 << -1 << 0x50;
    QTest::newRow("reference inf") << false << false << 300 << -1 << 5 << 0x80;
}

// The vector sums (AVX2 and F16C where this processor has them) and the portable loop both equal the sums
// computed in double from each code's value, every code value included (subnormals, zeros, both signs), odd
// lengths, and the elements left out where a code or the reference is not finite.
void TestAudit::vectorKernelsAgree()
{
    QFETCH(bool, e5m2);
    QFETCH(bool, bf16);
    QFETCH(int, n);
    QFETCH(int, special);
    QFETCH(int, badReference);
    QFETCH(int, top);
    const auto format = e5m2 ? fp8math::Format::E5M2 : fp8math::Format::E4M3;
    std::mt19937 rng(uint32_t(n * 7 + special));
    std::vector<uint8_t> codes(static_cast<size_t>(n));
    std::vector<float> x(static_cast<size_t>(n));
    std::vector<uint16_t> xb(static_cast<size_t>(n));
    const float s = 0.0123f;
    const uint8_t limit = e5m2 ? 0x7C : 0x7F;
    for (int i = 0; i < n; ++i) {
        uint8_t c = uint8_t(rng());
        while ((c & 0x7F) >= std::min<int>(limit, top))
            c = uint8_t(rng());
        codes[size_t(i)] = c;
        // A reference near the dequantized value, off by up to a few per cent.
        float v = fp8math::decodeCode(c, format) * s * (1.0f + 0.04f * (float(rng() % 1000) / 1000.0f - 0.5f));
        if (i == badReference)
            v = std::numeric_limits<float>::infinity();
        uint32_t bits;
        std::memcpy(&bits, &v, 4);
        xb[size_t(i)] = uint16_t(bits >> 16);
        bits &= 0xFFFF0000u;
        x[size_t(i)] = bf16 ? std::bit_cast<float>(bits) : v;
    }
    if (special >= 0)
        codes[size_t(special)] = e5m2 ? 0xFD : 0x7F;
    // The sums in double over the finite elements.
    double err = 0, inv = 0, ref = 0, deq = 0, dot = 0, refMax = 0, deqMax = 0;
    for (int i = 0; i < n; ++i) {
        const double v = fp8math::decodeCode(codes[size_t(i)], format);
        const double d = v * s, a = v / s, xi = x[size_t(i)];
        if (!std::isfinite(d) || !std::isfinite(xi))
            continue;
        err += (d - xi) * (d - xi);
        inv += (a - xi) * (a - xi);
        ref += xi * xi;
        deq += d * d;
        dot += d * xi;
        refMax = std::max(refMax, std::abs(xi));
        deqMax = std::max(deqMax, std::abs(d));
    }
    for (auto kernel : {auditkernels::Kernel::Best, auditkernels::Kernel::Portable}) {
        auditkernels::SegmentSums sums;
        if (bf16)
            auditkernels::addSegment(codes.data(), e5m2, xb.data(), n, s, 1.0f / s, sums, kernel);
        else
            auditkernels::addSegment(codes.data(), e5m2, x.data(), n, s, 1.0f / s, sums, kernel);
        const auto close = [](double a, double b, double tol) { return std::abs(a - b) <= tol * std::abs(b); };
        const QByteArray which = kernel == auditkernels::Kernel::Best ? "best" : "portable";
        QVERIFY2(close(sums.errSq, err, 1e-3),
            QByteArray(which + ": " + QByteArray::number(sums.errSq) + " vs " + QByteArray::number(err)).constData());
        QVERIFY2(close(sums.invErrSq, inv, 1e-3), which.constData());
        QVERIFY2(close(sums.refSq, ref, 1e-4), which.constData());
        QVERIFY2(close(sums.deqSq, deq, 1e-4), which.constData());
        QVERIFY2(close(sums.dot, dot, 1e-4), which.constData());
        QVERIFY2(close(sums.refAmax, refMax, 1e-6), which.constData());
        QVERIFY2(close(sums.deqAmax, deqMax, 1e-6), which.constData());
    }
    if (!auditkernels::vectorKernels())
        qInfo("this processor has no AVX2 with F16C: both passes were the portable loop");
}

// Where the run dumped a layer's activations, what the static scale flushes of them decides the flush side (the
// amax proxy gives way to the measurement); a layer without statistics takes its dump's amax.
void TestAudit::calibrationOnDumps()
{
    AuditResult r;
    const auto layer = [&](const char *name, double inputScale) {
        AuditLayer l;
        l.name = QLatin1String(name);
        l.training = trainingNameOf(l.name, true);
        l.quantized = true;
        l.inputScale = inputScale;
        r.layers.push_back(l);
        return r.layers.size() - 1;
    };
    const auto dumped = [&](size_t i, double saturated, double flushed, double recipeFlushed, double amax) {
        AuditLayer &l = r.layers[i];
        l.calibrationDump = QStringLiteral("dumps/iter_000900.h5");
        l.calibrationStep = 900;
        l.calibrationRecipe = QStringLiteral("current");
        l.dumpSaturatedPct = saturated;
        l.dumpFlushedPct = flushed;
        l.dumpRecipeFlushedPct = recipeFlushed;
        l.dumpAmax = amax;
    };
    // The range is 448 x 0.01 = 4.48 for each.
    const size_t spentButFine = layer("model.layers.0.self_attn.o_proj", 0.01); // amax 0.2: proxy warns
    const size_t flushes = layer("model.layers.0.mlp.down_proj", 0.01); // amax 3: proxy fine
    const size_t dumpOnly = layer("model.layers.1.mlp.down_proj", 0.01); // no statistics: its dump's amax, 9
    const size_t proxyOnly = layer("model.layers.1.self_attn.o_proj", 0.01); // no dump: amax 0.2, the proxy warns
    dumped(spentButFine, 0, 0.4, 0.1, 0.2);
    dumped(flushes, 0, 6.5, 0.5, 3);
    dumped(dumpOnly, 12, 0, 0, 9);
    QHash<QString, ActivationAmax> amax {{QStringLiteral("decoder.layers.0.self_attention.linear_proj"), {0.2, 0.2}},
        {QStringLiteral("decoder.layers.0.mlp.linear_fc2"), {3.0, 3.0}},
        {QStringLiteral("decoder.layers.1.self_attention.linear_proj"), {0.2, 0.2}}};
    checkCalibration(r, amax, QStringLiteral("test statistics"));
    QMap<QString, AuditFinding> byLayer;
    for (const AuditFinding &f : r.findings)
        byLayer.insert(f.layer, f);
    QCOMPARE(byLayer.size(), 3);
    QVERIFY(!byLayer.contains(r.layers[spentButFine].name));
    const AuditFinding flush = byLayer.value(r.layers[flushes].name);
    QCOMPARE(auditSeverityName(flush.severity), QStringLiteral("warning"));
    QVERIFY2(flush.evidence.contains(QLatin1String("flushes 6.5 %")) && flush.evidence.contains(QLatin1String("0.5 %")),
        qPrintable(flush.evidence));
    const AuditFinding saturate = byLayer.value(r.layers[dumpOnly].name);
    QCOMPARE(auditSeverityName(saturate.severity), QStringLiteral("critical")); // 9 / 4.48 > 2
    QVERIFY2(saturate.evidence.contains(QLatin1String("the activation dump of step 900"))
            && saturate.evidence.contains(QLatin1String("saturates 12 %")),
        qPrintable(saturate.evidence));
    QCOMPARE(r.layers[dumpOnly].trainingActivationAmax, 9.0);
    QCOMPARE(auditSeverityName(byLayer.value(r.layers[proxyOnly].name).severity), QStringLiteral("warning"));
    QVERIFY(!byLayer.value(r.layers[proxyOnly].name).evidence.contains(QLatin1String("dump")));
}

// Max calibration is no finding: a logged amax a hair above the range (four printed decimals, a scale stored in
// bfloat16) or a late window whose largest step is above it while its least is not; every late step above it by
// more than that is, a warning or, by how far and what share of the dump saturates, critical.
void TestAudit::calibrationToleranceAndSpread()
{
    AuditResult r;
    QHash<QString, ActivationAmax> amax;
    // Each layer's input scale gives a range of 448 x 0.01 = 4.48.
    const auto layer = [&](const char *name, const char *module, ActivationAmax a) {
        AuditLayer l;
        l.name = QLatin1String(name);
        l.training = trainingNameOf(l.name, true);
        l.quantized = true;
        l.inputScale = 0.01;
        r.layers.push_back(l);
        amax.insert(QLatin1String(module), a);
        QCOMPARE(l.training->module, QLatin1String(module));
    };
    layer("model.layers.0.self_attn.o_proj", "decoder.layers.0.self_attention.linear_proj", {4.4899, 4.4899, 1});
    layer("model.layers.0.mlp.down_proj", "decoder.layers.0.mlp.linear_fc2", {4.9, 4.2, 10}); // the spread covers it
    layer("model.layers.1.self_attn.o_proj", "decoder.layers.1.self_attention.linear_proj", {5.0, 4.7, 10});
    layer("model.layers.1.mlp.down_proj", "decoder.layers.1.mlp.linear_fc2", {12.0, 9.5, 10});
    checkCalibration(r, amax, QStringLiteral("test statistics"));
    QMap<QString, AuditFinding> byLayer;
    for (const AuditFinding &f : r.findings)
        byLayer.insert(f.layer, f);
    QCOMPARE(byLayer.keys(),
        QStringList(
            {QStringLiteral("model.layers.1.mlp.down_proj"), QStringLiteral("model.layers.1.self_attn.o_proj")}));
    const AuditFinding warned = byLayer.value(QStringLiteral("model.layers.1.self_attn.o_proj"));
    QCOMPARE(
        auditSeverityName(warned.severity), QStringLiteral("warning")); // 4.7 / 4.48: every late step a little above
    QVERIFY2(warned.evidence.contains(QLatin1String("every one of the last 10 logged steps"))
            && warned.evidence.contains(QLatin1String("from 4.7 to 5")),
        qPrintable(warned.evidence));
    QCOMPARE(auditSeverityName(byLayer.value(QStringLiteral("model.layers.1.mlp.down_proj")).severity),
        QStringLiteral("critical"));

    // A dump that shows almost nothing saturating takes the warning back; one saturating 1 % or more makes it
    // critical.
    for (AuditLayer &l : r.layers) {
        l.calibrationDump = QStringLiteral("dumps/iter_000900.h5");
        l.calibrationStep = 900;
        l.calibrationRecipe = QStringLiteral("current");
        l.dumpFlushedPct = l.dumpRecipeFlushedPct = 0.1;
        l.dumpSaturatedPct = l.name == QLatin1String("model.layers.1.self_attn.o_proj") ? 0.004 : 0.0;
    }
    checkCalibration(r, amax, QStringLiteral("test statistics"));
    QCOMPARE(int(r.findings.size()), 0); // what the dumps measure stands over the amax of the statistics
    r.layers[2].dumpSaturatedPct = 2.0;
    checkCalibration(r, amax, QStringLiteral("test statistics"));
    QCOMPARE(int(r.findings.size()), 1);
    QCOMPARE(r.findings.front().layer, QStringLiteral("model.layers.1.self_attn.o_proj"));
    QCOMPARE(auditSeverityName(r.findings.front().severity), QStringLiteral("critical"));
}

// A Megatron checkpoint whose Transformer Engine modules keep their FP8 state in _extra_state (written as TE's
// get_extra_state does): layer 0 kept none while layer 1 kept delayed-scaling state, so layer 0 trained in BF16
// and its quantized modules are a precision mismatch; output_layer trained in FP8 and lm_head is served in BF16
// (the other way round); linear_proj's input amax history reached 9, above the range its input scale gives.
void TestAudit::trainingCheckpointState()
{
    if (!m_written)
        QSKIP("no test Python (FP8SCOPE_TEST_PYTHON) with torch and safetensors");
    QHash<QString, TeExtraState> states;
    std::vector<Problem> skipped;
    Problem problem;
    QVERIFY(readTeExtraStates(m_dir.filePath(QStringLiteral("megatron_fp8/model.pt")), &states, &skipped, &problem));
    QVERIFY(skipped.empty());
    QCOMPARE(states.size(), 9);
    QVERIFY(states.value(QStringLiteral("decoder.layers.0.mlp.linear_fc2")).empty);
    const TeExtraState proj = states.value(QStringLiteral("decoder.layers.1.self_attention.linear_proj"));
    QVERIFY(!proj.empty);
    QCOMPARE(proj.recipe, QStringLiteral("transformer_engine.common.recipe.DelayedScaling"));
    QCOMPARE(proj.historyLength, 16);
    QCOMPARE(proj.fwdTensors, 3);
    QCOMPARE(proj.historyAmax(0), 9.0);
    QCOMPARE(proj.historyAmax(1), double(0.05f));
    QCOMPARE(int(proj.scaleFwd.size()), 3);
    QCOMPARE(proj.scaleFwd[0], 448.0f / 9.0f);

    const auto r = audit(QStringLiteral("ct_tensor"), {QStringLiteral("megatron_fp8/model.pt")});
    QVERIFY(r);
    QMap<QString, AuditFinding> byLayer;
    for (const AuditFinding &f : r->findings) {
        QVERIFY2(!byLayer.contains(f.layer), qPrintable(f.layer));
        byLayer.insert(f.layer, f);
    }
    QStringList bf16Layer0;
    for (const char *m : {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj",
             "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"})
        bf16Layer0 << QStringLiteral("model.layers.0.") + QLatin1String(m);
    for (const QString &l : bf16Layer0) {
        QCOMPARE(auditKindName(byLayer.value(l).kind), QStringLiteral("precision-mismatch"));
        QVERIFY2(byLayer.value(l).evidence.contains(QLatin1String("trained in BF16")),
            qPrintable(byLayer.value(l).evidence));
    }
    QCOMPARE(auditKindName(byLayer.value(QStringLiteral("lm_head")).kind), QStringLiteral("precision-mismatch"));
    QVERIFY(byLayer.value(QStringLiteral("lm_head")).evidence.contains(QLatin1String("trained in FP8")));
    const AuditFinding calibration = byLayer.value(QStringLiteral("model.layers.1.self_attn.o_proj"));
    QCOMPARE(auditKindName(calibration.kind), QStringLiteral("calibration-mismatch"));
    QCOMPARE(auditSeverityName(calibration.severity), QStringLiteral("critical"));
    QVERIFY2(calibration.evidence.contains(QLatin1String("delayed-scaling history")), qPrintable(calibration.evidence));
    QCOMPARE(byLayer.size(), 9);
    for (const AuditLayer &l : r->layers) {
        if (l.name.startsWith(QLatin1String("model.layers.1.")))
            QCOMPARE(l.trainingPrecision, QStringLiteral("fp8 (DelayedScaling)"));
    }
    // The same export against the checkpoint without FP8 state: clean (cleanExportsHaveNoFindings).
    QVERIFY(audit(QStringLiteral("ct_tensor"), {QStringLiteral("megatron/model.pt")})->findings.empty());
}

// An _extra_state is read by the interpreter, never run: a pickle that calls anything off the allowlist is
// refused with where; storages by value that lie about their size are refused; empty and None are no state.
void TestAudit::hostileExtraState()
{
    TeExtraState state;
    Problem problem;
    QVERIFY(parseTeExtraState({}, &state, &problem));
    QVERIFY(state.empty);
    QVERIFY(parseTeExtraState(QByteArray::fromHex("80024e2e"), &state, &problem)); // None
    QVERIFY(state.empty);
    // os.system("true"): GLOBAL, a tuple, REDUCE.
    QVERIFY(!parseTeExtraState(QByteArrayLiteral("cos\nsystem\n(X\x04\x00\x00\x00truetR."), &state, &problem));
    QVERIFY2(problem.message.contains(QLatin1String("not a dict")), qPrintable(problem.message));
    // {"scale_fwd": _rebuild_tensor_v2(_load_from_bytes(legacy bytes saying 3 floats but holding 1), 0, (3,), (1,))}
    const QByteArray magic = QByteArray::fromHex("80028a0a6cfc9c46f9206aa850192e");
    const QByteArray legacy = magic + QByteArrayLiteral("\x80\x02M\xe9\x03.") + QByteArrayLiteral("\x80\x02}q\x00.")
        + QByteArrayLiteral("\x80\x02(X\x07\x00\x00\x00"
                            "storagectorch\nFloatStorage\nX\x01\x00\x00\x00"
                            "0X\x03\x00\x00\x00"
                            "cpuK\x03NtQ.")
        + QByteArrayLiteral("\x80\x02]X\x01\x00\x00\x00"
                            "0a.")
        + QByteArray::fromHex("0300000000000000") + QByteArray(4, '\0');
    QByteArray pickle
        = QByteArrayLiteral("\x80\x04}X\x09\x00\x00\x00"
                            "scale_fwdctorch._utils\n_rebuild_tensor_v2\n(ctorch.storage\n_load_from_bytes\n");
    QByteArray len(4, '\0');
    for (int i = 0; i < 4; ++i)
        len[i] = char((legacy.size() >> (8 * i)) & 0xFF);
    pickle += QByteArrayLiteral("(B") + len + legacy + QByteArrayLiteral("tRK\x00K\x03\x85K\x01\x85\x89tRs.");
    QVERIFY(!parseTeExtraState(pickle, &state, &problem));
    QVERIFY2(problem.message.contains(QLatin1String("scale_fwd")) && problem.message.contains(QLatin1String("bytes")),
        qPrintable(problem.message));
    // The same holding its three floats reads.
    for (int i = 0; i < 4; ++i)
        len[i] = char(((legacy.size() + 8) >> (8 * i)) & 0xFF);
    pickle = QByteArrayLiteral("\x80\x04}X\x09\x00\x00\x00"
                               "scale_fwdctorch._utils\n_rebuild_tensor_v2\n(ctorch.storage\n_load_from_bytes\n")
        + QByteArrayLiteral("(B") + len + legacy + QByteArray(8, '\0')
        + QByteArrayLiteral("tRK\x00K\x03\x85K\x01\x85\x89tRs.");
    QVERIFY2(parseTeExtraState(pickle, &state, &problem), qPrintable(problem.message));
    QVERIFY(!state.empty);
    QCOMPARE(int(state.scaleFwd.size()), 3);
}

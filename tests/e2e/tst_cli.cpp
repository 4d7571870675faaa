// fp8scope-cli end to end: generate a dump, read its metrics as JSON and as a what-if table, and get clear
// one-line errors with a non-zero exit for every kind of bad request.
#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <tuple>

class TestCli : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void statsJson();
    void whatIf();
    void errors_data();
    void errors();
    void fp8CheckpointScales();
    void auditCheckpoint();
    void ingestRecomputeAndQuery();
    void runsShowBaselineAndVersions();
    void lossGapOfAShiftedRun();
    void heatmapOfExperts();
    void blocksMapAndTeCheck();
    void usageListsEveryCommand();

private:
    static void write(const QString &path, const QByteArray &bytes)
    {
        QDir().mkpath(QFileInfo(path).absolutePath());
        QFile f(path);
        QVERIFY(f.open(QIODevice::WriteOnly));
        QCOMPARE(f.write(bytes), bytes.size());
    }
    struct Run {
        int code;
        QByteArray out;
        QByteArray err;
    };
    Run cli(const QStringList &args)
    {
        QProcess p;
        p.start(qEnvironmentVariable("FP8SCOPE_CLI"), args);
        p.waitForFinished(300000);
        return {p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1, p.readAllStandardOutput(),
            p.readAllStandardError()};
    }
    QTemporaryDir m_dir;
    QString m_dump;
    const QString m_grad = QStringLiteral(":/iter_000100/model.layers.0.self_attention.linear_qkv/gradient");
};

void TestCli::initTestCase()
{
    m_dump = m_dir.filePath(QStringLiteral("dump.h5"));
    const Run r = cli({QStringLiteral("generate"), m_dump, QStringLiteral("--rows"), QStringLiteral("256"),
        QStringLiteral("--cols"), QStringLiteral("384")});
    QVERIFY2(r.code == 0, r.err.constData());
}

void TestCli::statsJson()
{
    const Run r = cli({QStringLiteral("stats"), m_dump + m_grad, QStringLiteral("--recipe"), QStringLiteral("delayed"),
        QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject doc = QJsonDocument::fromJson(r.out).object();
    const QJsonObject m = doc.value(QStringLiteral("metrics")).toObject();
    QCOMPARE(m.value(QStringLiteral("numel")).toDouble(), 256.0 * 384.0);
    QCOMPARE(m.value(QStringLiteral("recipe")).toString(), QStringLiteral("delayed"));
    // The dump's stale amax history (0.5) gives scale 448/0.5 = 896 while the tensor amax is <= 2^-4.
    QCOMPARE(m.value(QStringLiteral("scale")).toDouble(), 896.0);
    QVERIFY(m.value(QStringLiteral("delayed_over_current_log2")).toDouble() < -2.9);
    QVERIFY(m.value(QStringLiteral("underflow_pct")).toDouble() > 30.0);
    QVERIFY2(m.value(QStringLiteral("delayed_scale_source")).toString().startsWith(QLatin1String("amax 0.5 (max of")),
        qPrintable(m.value(QStringLiteral("delayed_scale_source")).toString()));
    // Without a history the scale stays at its start value, and the table says why.
    const Run fresh = cli({QStringLiteral("stats"), m_dump + m_grad, QStringLiteral("--recipe"),
        QStringLiteral("delayed"), QStringLiteral("--amax-history"), QString()});
    QVERIFY2(fresh.code == 0, fresh.err.constData());
    QVERIFY2(fresh.out.contains("delayed scale from          no amax history"), fresh.out.constData());
    QVERIFY(fresh.out.contains("scale / scale_inv           1 / 1"));
    QVERIFY(m.value(QStringLiteral("hist_log2_abs")).toObject().value(QStringLiteral("count")).toArray().size() > 20);
    QCOMPARE(doc.value(QStringLiteral("tensor")).toObject().value(QStringLiteral("dtype")).toString(),
        QStringLiteral("float32"));
}

// `blocks`: the map's summary and the blocks ranked by damage, as JSON, CSV and a table; the recipe's own
// blocks against FP32 ones; on a DumpTensors file TE's quantization compared (where the test Python has torch).
void TestCli::blocksMapAndTeCheck()
{
    const Run r = cli({QStringLiteral("blocks"), m_dump + m_grad, QStringLiteral("--recipe"), QStringLiteral("mxfp8"),
        QStringLiteral("--json"), QStringLiteral("--top"), QStringLiteral("4")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject doc = QJsonDocument::fromJson(r.out).object();
    const QJsonObject map = doc.value(QStringLiteral("map")).toObject();
    QCOMPARE(map.value(QStringLiteral("block")).toString(), QStringLiteral("1x32"));
    QCOMPARE(map.value(QStringLiteral("blocks")).toDouble(), 256.0 * 12.0);
    const QJsonArray worst = map.value(QStringLiteral("worst")).toArray();
    QCOMPARE(worst.size(), 4);
    // Ranked by damage: the mean relative error never rises down the list.
    for (qsizetype i = 1; i < worst.size(); ++i)
        QVERIFY(worst.at(i - 1).toObject().value(QStringLiteral("rel_error")).toDouble()
            >= worst.at(i).toObject().value(QStringLiteral("rel_error")).toDouble());
    QVERIFY(worst.at(0).toObject().contains(QStringLiteral("scale_exponent"))); // E8M0
    QCOMPARE(doc.value(QStringLiteral("fp32_scales")).toObject().value(QStringLiteral("recipe")).toString(),
        QStringLiteral("block1x32-fp32"));
    const Run csv = cli({QStringLiteral("blocks"), m_dump + m_grad, QStringLiteral("--recipe"), QStringLiteral("nvfp4"),
        QStringLiteral("--csv"), QStringLiteral("--top"), QStringLiteral("0")});
    QVERIFY2(csv.code == 0, csv.err.constData());
    const QList<QByteArray> lines = csv.out.trimmed().split('\n');
    QCOMPARE(lines.front(),
        QByteArray("row,col,first_row,first_col,scale,amax,underflow_pct,saturated_pct,rel_error,flagged"));
    QCOMPARE(lines.size(), 1 + 256 * 24); // every 1x16 block
    const Run table
        = cli({QStringLiteral("blocks"), m_dump + m_grad, QStringLiteral("--recipe"), QStringLiteral("current")});
    QVERIFY2(table.code == 0, table.err.constData());
    QVERIFY2(table.out.contains("blocks 256x384, grid 1 x 1 = 1 blocks"), table.out.constData());
    const Run bad = cli({QStringLiteral("blocks"), m_dump + m_grad, QStringLiteral("--top"), QStringLiteral("-1")});
    QCOMPARE(bad.code, 2);

    const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
    if (python.isEmpty() || !QFile::exists(python))
        return;
    QProcess p;
    p.start(python,
        {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tests/core/oracles/write_te_quantized.py"),
            m_dir.filePath(QStringLiteral("te"))});
    QVERIFY(p.waitForFinished(600000));
    if (p.exitCode() == 3)
        return; // torch is not importable
    QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
    const QString te = m_dir.filePath(QStringLiteral("te/te/"));
    const Run code = cli({QStringLiteral("blocks"), te + QStringLiteral("mxfp8-badcode.pt"), QStringLiteral("--json")});
    QVERIFY2(code.code == 0, code.err.constData());
    const QJsonObject check = QJsonDocument::fromJson(code.out).object().value(QStringLiteral("te_check")).toObject();
    QCOMPARE(check.value(QStringLiteral("equal")).toBool(), false);
    const QJsonObject rowwise = check.value(QStringLiteral("copies")).toArray().at(0).toObject();
    QCOMPARE(rowwise.value(QStringLiteral("codes_differing")).toDouble(), 1.0);
    QCOMPARE(
        rowwise.value(QStringLiteral("differences")).toArray().at(0).toObject().value(QStringLiteral("row")).toDouble(),
        5.0);
    // The map is of the high-precision tensor under the dump's own recipe.
    QCOMPARE(QJsonDocument::fromJson(code.out)
                 .object()
                 .value(QStringLiteral("map"))
                 .toObject()
                 .value(QStringLiteral("recipe"))
                 .toString(),
        QStringLiteral("mxfp8"));
    const Run equal = cli({QStringLiteral("blocks"), te + QStringLiteral("nvfp4-new.pt")});
    QVERIFY2(equal.out.contains("equal, bit for bit"), equal.out.constData());
    const Run hostile = cli({QStringLiteral("blocks"), te + QStringLiteral("hostile-scale-shape.pt")});
    QVERIFY2(hostile.out.contains("not compared") && hostile.out.contains("does not cover"), hostile.out.constData());
}

void TestCli::whatIf()
{
    const Run r
        = cli({QStringLiteral("stats"), m_dump + m_grad, QStringLiteral("--what-if"), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonArray rows = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("what_if")).toArray();
    // A gradient under the hybrid format: its FP8 recipes in E5M2 only (delayed, current, mxfp8, block1x128), then
    // NVFP4 and the BF16 reference.
    QCOMPARE(rows.size(), 6);
    double delayedUnderflow = -1;
    double mxUnderflow = -1;
    for (const QJsonValue &v : rows) {
        const QJsonObject o = v.toObject();
        const QString recipe = o.value(QStringLiteral("recipe")).toString();
        const QString format = o.value(QStringLiteral("format")).toString();
        QVERIFY2(recipe == QLatin1String("nvfp4") || recipe == QLatin1String("bf16") || format == QLatin1String("e5m2"),
            qPrintable(recipe + QLatin1Char(' ') + format));
    }
    // A run trained in E4M3 throughout: its gradients' candidates are E4M3.
    const Run e4m3 = cli({QStringLiteral("stats"), m_dump + m_grad, QStringLiteral("--what-if"),
        QStringLiteral("--json"), QStringLiteral("--fp8-format"), QStringLiteral("e4m3")});
    QVERIFY2(e4m3.code == 0, e4m3.err.constData());
    const QJsonArray e4m3Rows = QJsonDocument::fromJson(e4m3.out).object().value(QStringLiteral("what_if")).toArray();
    QCOMPARE(e4m3Rows.size(), 6);
    QCOMPARE(e4m3Rows.at(0).toObject().value(QStringLiteral("format")).toString(), QStringLiteral("e4m3"));
    for (const QJsonValue &v : e4m3Rows) {
        const QJsonObject o = v.toObject();
        if (o.value(QStringLiteral("recipe")).toString() == QLatin1String("delayed"))
            delayedUnderflow = o.value(QStringLiteral("underflow_pct")).toDouble();
        if (o.value(QStringLiteral("recipe")).toString() == QLatin1String("mxfp8"))
            mxUnderflow = o.value(QStringLiteral("underflow_pct")).toDouble();
    }
    // Per-block scales rescue the gradients that one stale tensor scale loses.
    QVERIFY(mxUnderflow >= 0 && delayedUnderflow > mxUnderflow);
    const Run table = cli({QStringLiteral("stats"), m_dump + m_grad, QStringLiteral("--what-if")});
    QCOMPARE(table.code, 0);
    QVERIFY(table.out.contains("nvfp4"));
    // A gradient's blockwise scaling is by 1x128 blocks (128x128 is the weights').
    QVERIFY(table.out.contains("block1x128"));
    QVERIFY(!table.out.contains("block128x128"));
    QVERIFY(table.out.contains("best recipe: "));
}

void TestCli::errors_data()
{
    QTest::addColumn<QStringList>("args");
    QTest::addColumn<int>("code");
    QTest::addColumn<QString>("message");
    QTest::newRow("missing file") << QStringList {QStringLiteral("stats"), QStringLiteral("/nonexistent/x.h5")} << 1
                                  << QStringLiteral("no such file");
    QTest::newRow("bad dataset") << QStringList {QStringLiteral("stats"), QStringLiteral("DUMP:/iter_000100/nope")} << 1
                                 << QStringLiteral("no dataset '/iter_000100/nope'");
    QTest::newRow("bad recipe") << QStringList {QStringLiteral("stats"), QStringLiteral("DUMP"),
        QStringLiteral("--recipe"), QStringLiteral("fancy")}
                                << 2 << QStringLiteral("unknown recipe 'fancy'");
    QTest::newRow("bad format") << QStringList {QStringLiteral("stats"), QStringLiteral("DUMP"),
        QStringLiteral("--format"), QStringLiteral("e3m4")}
                                << 2
                                << QStringLiteral("unknown format 'e3m4' (e4m3, e5m2, e4m3fnuz, e5m2fnuz, e2m1, bf16)");
    QTest::newRow("format mismatch") << QStringList {QStringLiteral("stats"), QStringLiteral("DUMP"),
        QStringLiteral("--recipe"), QStringLiteral("nvfp4"), QStringLiteral("--format"), QStringLiteral("e4m3")}
                                     << 2 << QStringLiteral("nvfp4 uses e2m1");
    QTest::newRow("no dataset named")
        << QStringList {QStringLiteral("stats"), QStringLiteral("DUMP")} << 1
        << QStringLiteral("holds 6 datasets; name one as FILE:/path/to/dataset (stats FILE --list lists them)");
    QTest::newRow("scale for float32") << QStringList {QStringLiteral("stats"),
        QStringLiteral("DUMP:/iter_000100/model.layers.0.self_attention.linear_qkv/gradient"),
        QStringLiteral("--scale-inv"), QStringLiteral("2")}
                                       << 1 << QStringLiteral("holds float32 values, not FP8 codes");
    QTest::newRow("list a missing file") << QStringList {QStringLiteral("stats"), QStringLiteral("/nonexistent/x.h5"),
        QStringLiteral("--list")} << 1 << QStringLiteral("no such file");
    QTest::newRow("unknown command") << QStringList {QStringLiteral("frobnicate")} << 2
                                     << QStringLiteral("unknown command");
}

void TestCli::errors()
{
    QFETCH(QStringList, args);
    QFETCH(int, code);
    QFETCH(QString, message);
    for (QString &a : args)
        a.replace(QLatin1String("DUMP"), m_dump);
    const Run r = cli(args);
    QCOMPARE(r.code, code);
    const QString err = QString::fromUtf8(r.err);
    QVERIFY2(err.contains(message), qPrintable(err));
    QVERIFY(r.out.isEmpty());
}

void TestCli::auditCheckpoint()
{
    // An export with two FP8 layers, one without its scale: audit finds it (exit 1, --json), and the export
    // without that layer passes (exit 0).
    const auto safetensors = [](const QByteArray &json, const QByteArray &data) -> QByteArray {
        QByteArray file(8, '\0');
        for (int i = 0; i < 8; ++i)
            file[i] = char((quint64(json.size()) >> (8 * i)) & 0xFF);
        return file + json + data;
    };
    QByteArray codes(64 * 64, '\0');
    for (int i = 0; i < codes.size(); ++i)
        codes[i] = char(i % 0x7F);
    const float scale = 1e-3f;
    const QByteArray scaleBytes(reinterpret_cast<const char *>(&scale), 4);
    const QString faulty = m_dir.filePath(QStringLiteral("export_faulty"));
    write(faulty + QStringLiteral("/model.safetensors"),
        safetensors(
            R"({"model.layers.0.mlp.down_proj.weight":{"dtype":"F8_E4M3","shape":[64,64],"data_offsets":[0,4096]},)"
            R"("model.layers.0.mlp.down_proj.weight_scale":{"dtype":"F32","shape":[1],"data_offsets":[4096,4100]},)"
            R"("model.layers.0.mlp.up_proj.weight":{"dtype":"F8_E4M3","shape":[64,64],"data_offsets":[4100,8196]}})",
            codes + scaleBytes + codes));
    Run r = cli({QStringLiteral("audit"), faulty, QStringLiteral("--json")});
    QVERIFY2(r.code == 1, r.err.constData());
    const QJsonObject doc = QJsonDocument::fromJson(r.out).object();
    const QJsonArray findings = doc.value(QStringLiteral("findings")).toArray();
    QCOMPARE(findings.size(), 1);
    const QJsonObject f = findings.first().toObject();
    QCOMPARE(f.value(QStringLiteral("kind")).toString(), QStringLiteral("missing-scale"));
    QCOMPARE(f.value(QStringLiteral("severity")).toString(), QStringLiteral("critical"));
    QCOMPARE(f.value(QStringLiteral("layer")).toString(), QStringLiteral("model.layers.0.mlp.up_proj"));
    QCOMPARE(f.value(QStringLiteral("training_layer")).toString(), QStringLiteral("decoder.layers.0.mlp.linear_fc1"));
    QCOMPARE(doc.value(QStringLiteral("layers")).toArray().size(), 2);

    const QString clean = m_dir.filePath(QStringLiteral("export_clean"));
    write(clean + QStringLiteral("/model.safetensors"),
        safetensors(
            R"({"model.layers.0.mlp.down_proj.weight":{"dtype":"F8_E4M3","shape":[64,64],"data_offsets":[0,4096]},)"
            R"("model.layers.0.mlp.down_proj.weight_scale":{"dtype":"F32","shape":[1],"data_offsets":[4096,4100]}})",
            codes + scaleBytes));
    r = cli({QStringLiteral("audit"), clean});
    QVERIFY2(r.code == 0, r.out.constData());
    QVERIFY2(r.out.contains("1 layers, 1 quantized; 0 findings"), r.out.constData());

    // A static input scale against the training run's activations (Transformer Engine's debug statistics): they
    // reached 2.0 near the end, the scale represents 0.448.
    const float inputScale = 1e-3f;
    const QString calibrated = m_dir.filePath(QStringLiteral("export_calibrated"));
    write(calibrated + QStringLiteral("/model.safetensors"),
        safetensors(
            R"({"model.layers.0.mlp.down_proj.weight":{"dtype":"F8_E4M3","shape":[64,64],"data_offsets":[0,4096]},)"
            R"("model.layers.0.mlp.down_proj.weight_scale":{"dtype":"F32","shape":[1],"data_offsets":[4096,4100]},)"
            R"("model.layers.0.mlp.down_proj.input_scale":{"dtype":"F32","shape":[1],"data_offsets":[4100,4104]}})",
            codes + scaleBytes + QByteArray(reinterpret_cast<const char *>(&inputScale), 4)));
    QByteArray log;
    for (int step = 0; step <= 100; step += 10)
        log += QByteArrayLiteral("2026-11-30 12:00:00,000 - INFO - decoder.layers.0.mlp.linear_fc2_activation_cur_amax"
                                 " \t\t\t\t iteration=")
            + QByteArray::number(step).rightJustified(6, '0')
            + " \t\t\t\t value=" + QByteArray::number(0.3 + step * 0.017) + '\n';
    const QString training = m_dir.filePath(QStringLiteral("training_run"));
    write(training + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"), log);
    r = cli({QStringLiteral("audit"), calibrated, QStringLiteral("--run"), training, QStringLiteral("--json")});
    QVERIFY2(r.code == 1, r.err.constData());
    const QJsonArray calibration = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("findings")).toArray();
    QCOMPARE(calibration.size(), 1);
    QCOMPARE(calibration.first().toObject().value(QStringLiteral("kind")).toString(),
        QStringLiteral("calibration-mismatch"));
    QCOMPARE(calibration.first().toObject().value(QStringLiteral("severity")).toString(), QStringLiteral("critical"));
    QVERIFY2(calibration.first().toObject().value(QStringLiteral("evidence")).toString().contains(QLatin1String("2")),
        r.out.constData());

    // The run's activation dumps: cast with the input scales. linear_fc2's (amax 2, as its statistics say) saturates
    // under the scale; linear_fc1's (no statistics: its dump's amax, 0.01; magnitudes spread over seven decades)
    // loses far more to zero under a scale 0.448 represents than under the run's own current scaling.
    const auto dumpTensor = [](const std::vector<float> &v) {
        return QByteArray(reinterpret_cast<const char *>(v.data()), qsizetype(v.size() * 4));
    };
    std::vector<float> fc2(64 * 64), fc1(64 * 64);
    for (size_t i = 0; i < fc2.size(); ++i) {
        fc2[i] = (i % 2 ? -2.0f : 2.0f) * float(i % 97) / 96.0f; // uniform up to 2
        fc1[i] = (i % 2 ? -1.0f : 1.0f) * 0.01f * std::pow(10.0f, -7.0f * float(i % 89) / 88.0f);
    }
    write(training + QStringLiteral("/dumps/iter_000100.safetensors"),
        safetensors(R"({"iter_000100/decoder.layers.0.mlp.linear_fc2/activation":{"dtype":"F32","shape":[64,64],)"
                    R"("data_offsets":[0,16384]},"iter_000100/decoder.layers.0.mlp.linear_fc1/activation":)"
                    R"({"dtype":"F32","shape":[64,64],"data_offsets":[16384,32768]}})",
            dumpTensor(fc2) + dumpTensor(fc1)));
    const QString both = m_dir.filePath(QStringLiteral("export_two_inputs"));
    write(both + QStringLiteral("/model.safetensors"),
        safetensors(
            R"({"model.layers.0.mlp.down_proj.weight":{"dtype":"F8_E4M3","shape":[64,64],"data_offsets":[0,4096]},)"
            R"("model.layers.0.mlp.down_proj.weight_scale":{"dtype":"F32","shape":[1],"data_offsets":[4096,4100]},)"
            R"("model.layers.0.mlp.down_proj.input_scale":{"dtype":"F32","shape":[1],"data_offsets":[4100,4104]},)"
            R"("model.layers.0.mlp.up_proj.weight":{"dtype":"F8_E4M3","shape":[64,64],"data_offsets":[4104,8200]},)"
            R"("model.layers.0.mlp.up_proj.weight_scale":{"dtype":"F32","shape":[1],"data_offsets":[8200,8204]},)"
            R"("model.layers.0.mlp.up_proj.input_scale":{"dtype":"F32","shape":[1],"data_offsets":[8204,8208]}})",
            codes + scaleBytes + QByteArray(reinterpret_cast<const char *>(&inputScale), 4) + codes + scaleBytes
                + QByteArray(reinterpret_cast<const char *>(&inputScale), 4)));
    r = cli({QStringLiteral("audit"), both, QStringLiteral("--run"), training, QStringLiteral("--json")});
    QVERIFY2(r.code == 1, r.err.constData());
    const QJsonObject dumped = QJsonDocument::fromJson(r.out).object();
    QMap<QString, QJsonObject> byLayer, layerRows;
    for (const QJsonValue &f : dumped.value(QStringLiteral("findings")).toArray())
        byLayer.insert(f.toObject().value(QStringLiteral("layer")).toString(), f.toObject());
    for (const QJsonValue &l : dumped.value(QStringLiteral("layers")).toArray())
        layerRows.insert(l.toObject().value(QStringLiteral("layer")).toString(), l.toObject());
    QCOMPARE(byLayer.size(), 2);
    const QJsonObject down = byLayer.value(QStringLiteral("model.layers.0.mlp.down_proj"));
    QCOMPARE(down.value(QStringLiteral("severity")).toString(), QStringLiteral("critical"));
    QVERIFY2(down.value(QStringLiteral("evidence")).toString().contains(QLatin1String("activation dump of step 100")),
        r.out.constData());
    const QJsonObject downDump = layerRows.value(QStringLiteral("model.layers.0.mlp.down_proj"))
                                     .value(QStringLiteral("calibration_dump"))
                                     .toObject();
    QCOMPARE(downDump.value(QStringLiteral("step")).toInteger(), 100);
    // Uniform up to 2 against a range of 0.448: about 78 % saturate.
    QVERIFY2(downDump.value(QStringLiteral("saturated_pct")).toDouble() > 70
            && downDump.value(QStringLiteral("saturated_pct")).toDouble() < 85,
        r.out.constData());
    QCOMPARE(downDump.value(QStringLiteral("recipe_flushed_pct")).toDouble(), 0.0);
    const QJsonObject up = byLayer.value(QStringLiteral("model.layers.0.mlp.up_proj"));
    QCOMPARE(up.value(QStringLiteral("severity")).toString(), QStringLiteral("warning"));
    QCOMPARE(up.value(QStringLiteral("training_layer")).toString(), QStringLiteral("decoder.layers.0.mlp.linear_fc1"));
    const QJsonObject upDump = layerRows.value(QStringLiteral("model.layers.0.mlp.up_proj"))
                                   .value(QStringLiteral("calibration_dump"))
                                   .toObject();
    QVERIFY2(upDump.value(QStringLiteral("flushed_pct")).toDouble()
            > upDump.value(QStringLiteral("recipe_flushed_pct")).toDouble() + 10,
        r.out.constData());
    QCOMPARE(upDump.value(QStringLiteral("saturated_pct")).toDouble(), 0.0);

    r = cli({QStringLiteral("audit"), m_dir.filePath(QStringLiteral("no_such_export"))});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("no safetensors file to audit"), r.err.constData());
}

void TestCli::fp8CheckpointScales()
{
    // An FP8 checkpoint as DeepSeek-V3 stores one: an E4M3 weight and its 128x128 block decode scales
    // beside it (NAME_scale_inv). stats reports the weight's values, and says how it decoded them.
    const int n = 256;
    QByteArray codes(n * n, '\0');
    for (int i = 0; i < n * n; ++i)
        codes[i] = char(i % 0x7F); // 0 .. 448, no NaN
    const float grid[4] = {0.5f, 0.25f, 0.125f, 2.0f};
    // Beside them, as in real checkpoints, a tensor of a dtype fp8scope does not read: it must not stop the rest.
    QByteArray json = QByteArrayLiteral(R"({"w":{"dtype":"F8_E4M3","shape":[256,256],"data_offsets":[0,65536]},)"
                                        R"("w_scale_inv":{"dtype":"F32","shape":[2,2],"data_offsets":[65536,65552]},)"
                                        R"("step":{"dtype":"I64","shape":[],"data_offsets":[65552,65560]}})");
    QByteArray file(8, '\0');
    for (int i = 0; i < 8; ++i)
        file[i] = char((quint64(json.size()) >> (8 * i)) & 0xFF);
    file += json + codes + QByteArray(reinterpret_cast<const char *>(grid), 16) + QByteArray(8, '\0');
    const QString path = m_dir.filePath(QStringLiteral("model.safetensors"));
    QFile f(path);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(file);
    f.close();

    Run r = cli({QStringLiteral("stats"), path + QStringLiteral(":w"), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    QJsonObject doc = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(doc.value(QStringLiteral("tensor")).toObject().value(QStringLiteral("decoding")).toString(),
        QStringLiteral("E4M3 codes x scale_inv (128x128 blocks) from tensor 'w_scale_inv'"));
    // Code 0x7E (448) lands in every block; the largest scale is the bottom-right block's 2.
    QCOMPARE(doc.value(QStringLiteral("metrics")).toObject().value(QStringLiteral("amax")).toDouble(), 896.0);
    // The list gives each tensor's stored dtype and shape, then those it does not read, marked so.
    const Run list = cli({QStringLiteral("stats"), path, QStringLiteral("--list")});
    QCOMPARE(list.code, 0);
    QCOMPARE(list.out, QByteArray("w\tfloat8_e4m3\t256x256\nw_scale_inv\tfloat32\t2x2\nstep\tI64\t\tnot read\n"));
    const Run table = cli({QStringLiteral("stats"), path + QStringLiteral(":w")});
    QVERIFY2(table.out.contains("\ndecode   E4M3 codes x scale_inv (128x128 blocks) from tensor 'w_scale_inv'\n"),
        table.out.constData());
    // The codes themselves, and one scale for the whole tensor, on request.
    r = cli({QStringLiteral("stats"), path + QStringLiteral(":w"), QStringLiteral("--json"),
        QStringLiteral("--scale-inv"), QStringLiteral("none")});
    doc = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(doc.value(QStringLiteral("metrics")).toObject().value(QStringLiteral("amax")).toDouble(), 448.0);
    QCOMPARE(doc.value(QStringLiteral("tensor")).toObject().value(QStringLiteral("dtype")).toString(),
        QStringLiteral("float8_e4m3"));
    r = cli({QStringLiteral("stats"), path + QStringLiteral(":w"), QStringLiteral("--json"),
        QStringLiteral("--scale-inv"), QStringLiteral("0.125")});
    doc = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(doc.value(QStringLiteral("metrics")).toObject().value(QStringLiteral("amax")).toDouble(), 56.0);
    r = cli({QStringLiteral("stats"), path + QStringLiteral(":w"), QStringLiteral("--scale-inv"),
        QStringLiteral("w_bias")});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("scale_inv tensor 'w_bias': no tensor named 'w_bias'"), r.err.constData());
}

void TestCli::ingestRecomputeAndQuery()
{
    // A run folder holding the dump: ingest indexes it, recompute stores its metrics as series that the
    // series and heatmap commands return, equal to what stats computes for the same tensor.
    QTemporaryDir run;
    QVERIFY(QFile::copy(m_dump, run.filePath(QStringLiteral("dump.h5"))));
    Run r = cli({QStringLiteral("ingest"), run.path(), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject ingest = QJsonDocument::fromJson(r.out).object();
    QCOMPARE(ingest.value(QStringLiteral("problems")).toArray().size(), 0);
    r = cli({QStringLiteral("recompute"), run.path(), QStringLiteral("--recipe"), QStringLiteral("current"),
        QStringLiteral("--backend"), QStringLiteral("cpu")});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(r.out.startsWith("recomputed 6 of 6 tensors"));
    const QString runName = QFileInfo(run.path()).fileName();
    r = cli({QStringLiteral("series"), run.path(), QStringLiteral("--run"), runName, QStringLiteral("--stat"),
        QStringLiteral("underflows%"), QStringLiteral("--layer"),
        QStringLiteral("model.layers.0.self_attention.linear_qkv"), QStringLiteral("--tensor"),
        QStringLiteral("gradient"), QStringLiteral("--source"), QStringLiteral("recomputed"), QStringLiteral("--csv")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.trimmed().split('\n');
    QCOMPARE(lines.size(), 2);
    const QList<QByteArray> row = lines[1].split(',');
    QCOMPARE(row[0], QByteArray("100"));
    const Run stats = cli({QStringLiteral("stats"), m_dump + m_grad, QStringLiteral("--recipe"),
        QStringLiteral("current"), QStringLiteral("--json"), QStringLiteral("--backend"), QStringLiteral("cpu")});
    const double expected = QJsonDocument::fromJson(stats.out)
                                .object()
                                .value(QStringLiteral("metrics"))
                                .toObject()
                                .value(QStringLiteral("underflow_pct"))
                                .toDouble();
    QVERIFY(expected > 0);
    QCOMPARE(row[1].toDouble(), expected);
    r = cli({QStringLiteral("heatmap"), run.path(), QStringLiteral("--run"), runName, QStringLiteral("--stat"),
        QStringLiteral("underflows%"), QStringLiteral("--tensor"), QStringLiteral("gradient"),
        QStringLiteral("--csv")});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY(r.out.startsWith("layer,100\n"));
    const QList<QByteArray> currentRows = r.out.trimmed().split('\n');
    // Recomputed under a second recipe: one row per layer still, under the recipe asked for.
    r = cli({QStringLiteral("recompute"), run.path(), QStringLiteral("--recipe"), QStringLiteral("mxfp8"),
        QStringLiteral("--backend"), QStringLiteral("cpu")});
    QVERIFY2(r.code == 0, r.err.constData());
    for (const char *recipe : {"current", "mxfp8"}) {
        r = cli({QStringLiteral("heatmap"), run.path(), QStringLiteral("--run"), runName, QStringLiteral("--stat"),
            QStringLiteral("underflows%"), QStringLiteral("--tensor"), QStringLiteral("gradient"),
            QStringLiteral("--csv"), QStringLiteral("--recipe"), QLatin1String(recipe)});
        QVERIFY2(r.code == 0, r.err.constData());
        QCOMPARE(r.out.trimmed().split('\n').size(), currentRows.size());
        if (QByteArray(recipe) == "current")
            QCOMPARE(r.out.trimmed().split('\n'), currentRows);
        else
            QVERIFY(r.out.trimmed().split('\n') != currentRows);
    }
    r = cli({QStringLiteral("heatmap"), run.path(), QStringLiteral("--run"), runName, QStringLiteral("--stat"),
        QStringLiteral("underflows%"), QStringLiteral("--tensor"), QStringLiteral("gradient")});
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY2(r.err.contains("--recipe chooses"), r.err.constData());
    r = cli({QStringLiteral("heatmap"), run.path(), QStringLiteral("--run"), runName, QStringLiteral("--stat"),
        QStringLiteral("underflows%"), QStringLiteral("--tensor"), QStringLiteral("gradient"),
        QStringLiteral("--recipe"), QStringLiteral("nvfp4")});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("was not recomputed under nvfp4"), r.err.constData());
    r = cli({QStringLiteral("series"), run.path(), QStringLiteral("--run"), QStringLiteral("nope"),
        QStringLiteral("--stat"), QStringLiteral("x")});
    QCOMPARE(r.code, 1);
    QVERIFY(r.err.contains("no run 'nope'"));
}

void TestCli::runsShowBaselineAndVersions()
{
    // Two BF16 runs and an FP8 run without manifests: `runs` says which baseline it chose and why, and the
    // versions each recorded; two evaluations of the FP8 run under other inference settings both stay.
    QTemporaryDir ws;
    const QByteArray args = "------------------------ arguments ------------------------\n"
                            "  num_layers ...................................... 24\n"
                            "  hidden_size ..................................... 2048\n"
                            "  bf16 ............................................ True\n";
    const QByteArray end = "-------------------- end of arguments ---------------------\n"
                           " iteration 10/ 100 | lm loss: 9.0E+00 |\n";
    write(ws.filePath(QStringLiteral("a_fp8/train.out")),
        args + "  fp8 ............................................. hybrid\n" + end);
    write(ws.filePath(QStringLiteral("b_bf16/train.out")),
        args + "  fp8 ............................................. None\n" + end);
    QByteArray other = args;
    other.replace("2048", "8192");
    write(ws.filePath(QStringLiteral("c_bf16/train.out")),
        other + "  fp8 ............................................. None\n" + end);
    write(
        ws.filePath(QStringLiteral("a_fp8/pip_freeze.txt")), "torch==2.4.1\ntransformer-engine==1.11.0\nnumpy==2.0\n");
    const QByteArray eval
        = R"({"results": {"mmlu": {"acc,none": %1, "acc_stderr,none": 0.004}}, "versions": {"mmlu": 1},
        "config": {"model_args": "pretrained=./hf,%2"}})";
    write(ws.filePath(QStringLiteral("a_fp8/eval/bf16.json")),
        QByteArray(eval).replace("%1", "0.61").replace("%2", "dtype=bfloat16"));
    write(ws.filePath(QStringLiteral("a_fp8/eval/fp8.json")),
        QByteArray(eval).replace("%1", "0.58").replace("%2", "dtype=bfloat16,quantization=fp8"));
    // Not read in yet: the readers show what is stored, and say what to do rather than print nothing.
    const QByteArray hint = "no runs stored for " + ws.path().toUtf8() + ": read its files in first with "
        + "'fp8scope-cli ingest " + ws.path().toUtf8() + "'";
    Run r = cli({QStringLiteral("runs"), ws.path()});
    QCOMPARE(r.code, 0);
    QVERIFY(r.out.isEmpty());
    QVERIFY2(r.err.contains(hint), r.err.constData());
    r = cli({QStringLiteral("series"), ws.path(), QStringLiteral("--run"), QStringLiteral("a_fp8"),
        QStringLiteral("--stat"), QStringLiteral("lm loss")});
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains(hint), r.err.constData());
    r = cli({QStringLiteral("layers"), ws.path()});
    QCOMPARE(r.code, 2);
    QVERIFY2(r.err.contains(hint), r.err.constData());

    r = cli({QStringLiteral("ingest"), ws.path(), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonArray runs = QJsonDocument::fromJson(r.out).object().value(QStringLiteral("runs")).toArray();
    QCOMPARE(runs.size(), 3);
    QCOMPARE(runs[0].toObject().value(QStringLiteral("name")).toString(), QStringLiteral("a_fp8"));
    QCOMPARE(runs[0].toObject().value(QStringLiteral("evals")).toDouble(), 2.0); // one task, two settings

    r = cli({QStringLiteral("runs"), ws.path()});
    QVERIFY2(r.code == 0, r.err.constData());
    const QList<QByteArray> lines = r.out.split('\n');
    QVERIFY2(lines[0].startsWith("a_fp8\tprecision=fp8\trecipe=\tbaseline=b_bf16\t"), r.out.constData());
    QVERIFY2(lines[1].contains(
                 "baseline  b_bf16 (config: of 2 high-precision runs, its config differs least: 0 keys (next: 1))"),
        r.out.constData());
    QVERIFY2(
        lines[2].contains("versions  transformer-engine 1.11.0, torch 2.4.1 (3 packages in all)"), r.out.constData());
    QVERIFY2(r.out.contains("b_bf16\tprecision=bf16\trecipe=\tbaseline=\t"), r.out.constData());
    QVERIFY2(r.out.contains("baseline  none (none: trained in BF16: it is a baseline, not compared with one)"),
        r.out.constData());

    r = cli({QStringLiteral("runs"), ws.path(), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject fp8 = QJsonDocument::fromJson(r.out).array().at(0).toObject();
    QCOMPARE(fp8.value(QStringLiteral("baseline")).toString(), QStringLiteral("b_bf16"));
    QCOMPARE(fp8.value(QStringLiteral("pairing")).toString(), QStringLiteral("config"));
    QCOMPARE(fp8.value(QStringLiteral("versions")).toObject().value(QStringLiteral("torch")).toString(),
        QStringLiteral("2.4.1"));
}

// An FP8 run whose loss is its baseline's shifted by 0.02 at every step: the gap at the end has no noise band,
// and says why ("the difference does not vary"), not "+-0 noise".
void TestCli::lossGapOfAShiftedRun()
{
    QTemporaryDir ws;
    for (const auto &[name, fp8, shift] : {std::tuple {"bf16", "None", 0.0}, std::tuple {"fp8", "hybrid", 0.02}}) {
        QByteArray log = "------------------------ arguments ------------------------\n"
                         "  num_layers ...................................... 24\n"
                         "  train_iters ..................................... 1000\n"
                         "  fp8 ............................................. "
            + QByteArray(fp8) + "\n-------------------- end of arguments ---------------------\n";
        for (int it = 10; it <= 1000; it += 10)
            log += QStringLiteral(" iteration %1/    1000 | lm loss: %2 |\n")
                       .arg(it, 8)
                       .arg(2.0 + 8.0 * std::exp(-it / 200.0) + shift, 0, 'E', 6)
                       .toLatin1();
        write(ws.filePath(QStringLiteral("%1/train.out").arg(QLatin1String(name))), log);
    }
    const Run r = cli({QStringLiteral("triage"), ws.path(), QStringLiteral("--json")});
    QVERIFY2(r.code == 0, r.err.constData());
    QString gap;
    for (const QJsonValue c : QJsonDocument::fromJson(r.out).object().value(QStringLiteral("comparisons")).toArray()) {
        for (const QJsonValue f : c.toObject().value(QStringLiteral("findings")).toArray()) {
            if (f.toObject().value(QStringLiteral("kind")).toString() == QLatin1String("loss-gap"))
                gap = f.toObject().value(QStringLiteral("summary")).toString();
        }
    }
    QVERIFY2(gap.contains(QStringLiteral("the loss is 0.02 above bf16's (0.97 %, the difference does not vary): over")),
        qPrintable(gap));
}

// A mixture-of-experts run (demo --scenario --experts): `heatmap` prints a row per GEMM with the worst expert's
// value and, under it, the expert each value is from; --experts mean and --expert I reduce otherwise, --experts all
// prints a row per expert, --experts-of GEMM one GEMM's experts; a bad reduction is refused.
void TestCli::heatmapOfExperts()
{
    QTemporaryDir dir;
    const QString folder = dir.filePath(QStringLiteral("moe"));
    Run r = cli({QStringLiteral("demo"), folder, QStringLiteral("--scenario"), QStringLiteral("mid-run-instability"),
        QStringLiteral("--seed"), QStringLiteral("3"), QStringLiteral("--experts"), QStringLiteral("4")});
    QVERIFY2(r.code == 0, r.err.constData());
    const QJsonObject planted = [&] {
        QFile f(folder + QStringLiteral("/planted.json"));
        return f.open(QIODevice::ReadOnly) ? QJsonDocument::fromJson(f.readAll()).object() : QJsonObject();
    }();
    const QString gemm = planted.value(QStringLiteral("gemm")).toString();
    const int layers = planted.value(QStringLiteral("layers")).toInt();
    QVERIFY(!gemm.isEmpty() && layers > 0);
    r = cli({QStringLiteral("ingest"), folder});
    QVERIFY2(r.code == 0, r.err.constData());
    const QStringList base {QStringLiteral("heatmap"), folder, QStringLiteral("--run"),
        planted.value(QStringLiteral("run")).toString(), QStringLiteral("--stat"), QStringLiteral("underflows%"),
        QStringLiteral("--tensor"), QStringLiteral("activation"), QStringLiteral("--csv")};
    const auto rows = [](const QByteArray &out) {
        QList<QList<QByteArray>> table;
        for (const QByteArray &line : out.trimmed().split('\n'))
            table << line.split(',');
        return table;
    };
    // By default: a row per GEMM (QKV, projection, two grouped MLP GEMMs) and an expert row under each grouped one.
    r = cli(base);
    QVERIFY2(r.code == 0, r.err.constData());
    QVERIFY2(r.err.contains("worst expert"), r.err.constData());
    const auto grouped = rows(r.out);
    QCOMPARE(grouped.size(), 1 + layers * (4 + 2));
    qsizetype at = -1;
    for (qsizetype i = 0; i < grouped.size(); ++i) {
        if (grouped[i].front() == gemm.toUtf8())
            at = i;
    }
    QVERIFY(at > 0);
    QCOMPARE(grouped[at + 1].front(), gemm.toUtf8() + " [expert]");
    // Each value is the largest of the GEMM's experts at that step, from the expert named under it.
    r = cli(QStringList(base) << QStringLiteral("--experts-of") << gemm);
    QVERIFY2(r.code == 0, r.err.constData());
    const auto experts = rows(r.out);
    QCOMPARE(experts.size(), 1 + 4);
    for (qsizetype col = 1; col < grouped[at].size(); col += 7) {
        const int e = grouped[at + 1][col].toInt();
        QCOMPARE(experts[1 + e].front(), gemm.toUtf8() + ".gemm_" + QByteArray::number(e));
        double worst = -1;
        for (qsizetype k = 1; k < experts.size(); ++k)
            worst = std::max(worst, experts[k][col].toDouble());
        QCOMPARE(grouped[at][col].toDouble(), worst);
        QCOMPARE(experts[1 + e][col].toDouble(), worst);
    }
    // The mean; one expert; every expert.
    r = cli(QStringList(base) << QStringLiteral("--experts") << QStringLiteral("mean"));
    QVERIFY2(r.code == 0, r.err.constData());
    const auto mean = rows(r.out);
    double sum = 0;
    for (qsizetype k = 1; k < experts.size(); ++k)
        sum += experts[k][1].toDouble();
    QVERIFY(std::abs(mean[at][1].toDouble() - sum / 4) < 1e-9);
    QVERIFY(mean[at + 1][1].isEmpty()); // a mean is no one expert's
    r = cli(QStringList(base) << QStringLiteral("--expert") << QStringLiteral("2"));
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(rows(r.out)[at][1].toDouble(), experts[3][1].toDouble());
    r = cli(QStringList(base) << QStringLiteral("--experts") << QStringLiteral("all"));
    QVERIFY2(r.code == 0, r.err.constData());
    QCOMPARE(rows(r.out).size(), 1 + layers * (2 + 2 * 4));
    // Refused: a reduction it does not know, an expert that is not an index, a GEMM the run does not have.
    r = cli(QStringList(base) << QStringLiteral("--experts") << QStringLiteral("median"));
    QCOMPARE(r.code, 2);
    QVERIFY(r.err.contains("--experts takes max, mean or all"));
    r = cli(QStringList(base) << QStringLiteral("--expert") << QStringLiteral("x"));
    QCOMPARE(r.code, 2);
    r = cli(QStringList(base) << QStringLiteral("--experts-of")
                              << QStringLiteral("decoder.layers.99.mlp.experts.linear_fc1"));
    QCOMPARE(r.code, 1);
    QVERIFY2(r.err.contains("of the experts of decoder.layers.99"), r.err.constData());
}

void TestCli::usageListsEveryCommand()
{
    // The usage text names every command main() dispatches (demo was missing).
    const Run r = cli({QStringLiteral("--help")});
    QCOMPARE(r.code, 0);
    for (const char *command : {"stats", "generate", "demo", "ingest", "runs", "series", "heatmap", "recompute"})
        QVERIFY2(r.out.contains(QByteArray(QByteArray("\n  ") + command + ' ')), command);
    const Run none = cli({});
    QCOMPARE(none.code, 2);
    QVERIFY(none.err.contains("usage: fp8scope-cli"));
}

QTEST_GUILESS_MAIN(TestCli)
#include "tst_cli.moc"

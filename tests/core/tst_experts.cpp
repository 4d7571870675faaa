// Mixture-of-experts GEMMs (issue 57): each writer's naming of an expert recognised as one expert of one GEMM,
// and a layer x step matrix with a GEMM's experts grouped in one row (the worst expert named at each step, their
// mean, one expert), or one GEMM's experts alone, read from a statistics log in Transformer Engine's format.
#include "storeaccess.h"

#include "core/formats/expertnames.h"
#include "core/query/expertgroups.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

using namespace fp8scope;

class TestExperts : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void namesOfEachWriter_data();
    void namesOfEachWriter();
    void groupedRows();
    void notFiniteOnOneExpert();
    void expertsMapReadsOneGemm();
};

void TestExperts::namesOfEachWriter_data()
{
    QTest::addColumn<QString>("layer");
    QTest::addColumn<QString>("gemm");
    QTest::addColumn<int>("expert");
    // Transformer Engine's GroupedLinear (grouped_linear.py: self.name + f".gemm_{q_id}").
    QTest::newRow("te") << "decoder.layers.3.mlp.experts.linear_fc1.gemm_17"
                        << "decoder.layers.3.mlp.experts.linear_fc1" << 17;
    QTest::newRow("te unnamed module") << "Layer_4.gemm_0"
                                       << "Layer_4" << 0;
    // Megatron's SequentialMLP and TEGroupedMLP.
    QTest::newRow("megatron local") << "decoder.layers.0.mlp.experts.local_experts.12.linear_fc2"
                                    << "decoder.layers.0.mlp.experts.linear_fc2" << 12;
    QTest::newRow("megatron weight") << "decoder.layers.1.mlp.experts.linear_fc1.weight7"
                                     << "decoder.layers.1.mlp.experts.linear_fc1" << 7;
    // Hugging Face: Mixtral, Qwen-MoE, DeepSeek.
    QTest::newRow("mixtral") << "model.layers.2.block_sparse_moe.experts.5.w1"
                             << "model.layers.2.block_sparse_moe.experts.w1" << 5;
    QTest::newRow("deepseek") << "model.layers.9.mlp.experts.63.down_proj"
                              << "model.layers.9.mlp.experts.down_proj" << 63;
    // Not experts: a dense MLP, a shared expert, the router.
    QTest::newRow("dense") << "decoder.layers.3.mlp.linear_fc1" << QString() << -1;
    QTest::newRow("shared expert") << "model.layers.9.mlp.shared_experts.down_proj" << QString() << -1;
    QTest::newRow("router") << "decoder.layers.3.mlp.router" << QString() << -1;
    QTest::newRow("gemm in a name") << "decoder.layers.3.gemm_fusion.linear" << QString() << -1;
    // An index that is no plain number (a leading zero, more than 9 digits) is no expert: one number, one expert.
    QTest::newRow("leading zero") << "decoder.layers.3.mlp.experts.linear_fc1.gemm_01" << QString() << -1;
    QTest::newRow("huge index") << "decoder.layers.3.mlp.experts.linear_fc1.gemm_12345678901" << QString() << -1;
    QTest::newRow("huge hf index") << "model.layers.9.mlp.experts.12345678901.down_proj" << QString() << -1;
}

void TestExperts::namesOfEachWriter()
{
    QFETCH(QString, layer);
    QFETCH(QString, gemm);
    QFETCH(int, expert);
    const auto e = expertOf(layer);
    QCOMPARE(e.has_value(), expert >= 0);
    if (!e)
        return;
    QCOMPARE(e->gemm, gemm);
    QCOMPARE(e->expert, expert);
    // The pattern matches every expert of the GEMM, whole, and no other GEMM's.
    const QRegularExpression all(QRegularExpression::anchoredPattern(expertsPattern(layer)));
    QVERIFY(all.isValid());
    QVERIFY(all.match(layer).hasMatch());
    QVERIFY(all.match(QString(layer).replace(QString::number(expert), QStringLiteral("1000"))).hasMatch()
        || layer.count(QString::number(expert)) > 1);
    QVERIFY(!all.match(gemm).hasMatch());
}

namespace {

// Two GEMMs of three experts and a dense layer, over four steps.
Heatmap threeExperts()
{
    Heatmap h;
    h.layers = {QStringLiteral("l.0.attn.qkv"), QStringLiteral("l.0.mlp.experts.fc1.gemm_0"),
        QStringLiteral("l.0.mlp.experts.fc1.gemm_1"), QStringLiteral("l.0.mlp.experts.fc1.gemm_2"),
        QStringLiteral("l.0.mlp.experts.fc2.gemm_0"), QStringLiteral("l.0.mlp.experts.fc2.gemm_1"),
        QStringLiteral("l.0.mlp.experts.fc2.gemm_2")};
    h.steps = {0, 10, 20, 30};
    h.values = {
        1, 1, 1, 1, // qkv
        2, 2, 9, 2, // fc1 expert 0
        3, 3, 3, NAN, // fc1 expert 1 (no value at 30: a token-less expert)
        4, 1, 1, 1, // fc1 expert 2
        5, 5, 5, 5, // fc2 0
        6, 6, 6, 6, // fc2 1
        7, 7, 7, 7, // fc2 2
    };
    return h;
}

} // namespace

void TestExperts::groupedRows()
{
    // The worst expert: one row per GEMM, the expert each value is from.
    Heatmap h = threeExperts();
    MatrixRequest max {.experts = ExpertRows::Max};
    groupExperts(&h, max);
    QCOMPARE(h.layers,
        QStringList({QStringLiteral("l.0.attn.qkv"), QStringLiteral("l.0.mlp.experts.fc1"),
            QStringLiteral("l.0.mlp.experts.fc2")}));
    QCOMPARE(h.rowExperts, std::vector<int>({0, 3, 3}));
    QCOMPARE(h.at(0, 2), 1.0);
    QCOMPARE(h.at(1, 0), 4.0);
    QCOMPARE(h.cellExpert(1, 0), 2);
    QCOMPARE(h.at(1, 1), 3.0);
    QCOMPARE(h.cellExpert(1, 1), 1);
    QCOMPARE(h.at(1, 2), 9.0);
    QCOMPARE(h.cellExpert(1, 2), 0);
    QCOMPARE(h.at(1, 3), 2.0); // expert 1 logged nothing at 30
    QCOMPARE(h.cellExpert(2, 0), 2);
    QCOMPARE(h.cellExpert(0, 0), -1); // a dense layer's
    QCOMPARE(h.expertReduction, QStringLiteral("worst expert"));
    QCOMPARE(h.rowLayers[1].size(), 3);
    QCOMPARE(h.rowLayers[1].front(), QStringLiteral("l.0.mlp.experts.fc1.gemm_0"));
    // Their mean, over the experts that have a value.
    h = threeExperts();
    groupExperts(&h, {.experts = ExpertRows::Mean});
    QCOMPARE(h.at(1, 0), 3.0);
    QCOMPARE(h.at(1, 3), 1.5);
    QCOMPARE(h.cellExpert(1, 0), -1);
    // One expert's values.
    h = threeExperts();
    groupExperts(&h, {.experts = ExpertRows::One, .expert = 1});
    QCOMPARE(h.at(1, 0), 3.0);
    QVERIFY(std::isnan(h.at(1, 3)));
    QCOMPARE(h.at(2, 0), 6.0);
    QCOMPARE(h.expertReduction, QStringLiteral("expert 1"));
    // Every expert: nothing grouped.
    h = threeExperts();
    groupExperts(&h, {.experts = ExpertRows::All});
    QCOMPARE(h.layers.size(), 7);
    QVERIFY(h.rowExperts.empty());
    // A matrix of no experts stays as it is.
    Heatmap dense;
    dense.layers = {QStringLiteral("a"), QStringLiteral("b")};
    dense.steps = {1};
    dense.values = {1, 2};
    groupExperts(&dense, max);
    QCOMPARE(dense.layers.size(), 2);
    QVERIFY(dense.rowExperts.empty());
    QVERIFY(dense.expertReduction.isEmpty());
}

void TestExperts::notFiniteOnOneExpert()
{
    // A NaN one expert logged (and the rank it is from) makes its GEMM's cell a mark, the expert named.
    Heatmap h = threeExperts();
    h.ranks.assign(h.values.size(), 0);
    h.ranks[3 * 4 + 1] = 5;
    h.values[3 * 4 + 1] = NAN;
    h.nonFinite.push_back({3, 1, NAN, 5});
    h.nonFinite.push_back({0, 3, INFINITY, 0});
    groupExperts(&h, {.experts = ExpertRows::Max});
    QCOMPARE(h.nonFinite.size(), size_t(2));
    const auto fc1 = std::find_if(h.nonFinite.begin(), h.nonFinite.end(), [](const auto &c) { return c.layer == 1; });
    QVERIFY(fc1 != h.nonFinite.end());
    QCOMPARE(fc1->step, size_t(1));
    QCOMPARE(fc1->expert, 2);
    QCOMPARE(fc1->rank, 5);
    QVERIFY(std::isnan(h.at(1, 1)));
    QCOMPARE(h.cellExpert(1, 1), 2);
    // The dense layer's mark stays on its row.
    const auto qkv = std::find_if(h.nonFinite.begin(), h.nonFinite.end(), [](const auto &c) { return c.layer == 0; });
    QVERIFY(qkv != h.nonFinite.end());
    QCOMPARE(qkv->step, size_t(3));
    QCOMPARE(h.ranks.size(), h.values.size());
}

void TestExperts::expertsMapReadsOneGemm()
{
    // A TE statistics log of two layers, each with a GroupedLinear of four experts and a dense GEMM.
    QTemporaryDir dir;
    QByteArray log;
    for (int step = 0; step <= 40; step += 10) {
        for (int layer = 0; layer < 2; ++layer) {
            const auto line = [&](const QString &name, double v) {
                log += "2026-11-30 12:00:00,000 - INFO - " + name.toUtf8()
                    + "_activation_underflows% \t\t\t\t iteration=" + QByteArray::number(step).rightJustified(6, '0')
                    + " \t\t\t\t value=" + QByteArray::number(v, 'f', 4) + '\n';
            };
            line(QStringLiteral("decoder.layers.%1.self_attention.linear_qkv").arg(layer), 0.5);
            for (int e = 0; e < 4; ++e)
                line(QStringLiteral("decoder.layers.%1.mlp.experts.linear_fc1.gemm_%2").arg(layer).arg(e),
                    layer == 1 && e == 3 && step >= 20 ? 30.0 : 1.0 + e);
        }
    }
    QVERIFY(QDir(dir.path()).mkpath(QStringLiteral("run/nvdlfw_inspect_statistics_logs")));
    QFile f(dir.filePath(QStringLiteral("run/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log")));
    QVERIFY(f.open(QIODevice::WriteOnly) && f.write(log) == log.size());
    f.close();
    Catalog catalog;
    QString error;
    QVERIFY2(testing::openAndIngest(dir.path(), &catalog, &error), qPrintable(error));
    QCOMPARE(catalog.runs().size(), size_t(1));
    const RunRef run = catalog.runs().front().ref;
    const MatrixRequest base {.stat = QStringLiteral("underflows%"), .tensor = QStringLiteral("activation")};
    // As stored: a row per expert.
    QCOMPARE(catalog.matrix(run, base).layers.size(), 10);
    // The ingest reduced each GEMM's experts step by step, and the store reads them back while they are fresh.
    const auto reduced = CatalogTestAccess::store(catalog, run)
                             ->expertRows(run.id, base.stat, base.tensor, QStringLiteral("te-debug rank 0"), QString());
    QVERIFY(reduced.has_value());
    QCOMPARE(reduced->size(), size_t(2));
    QCOMPARE(reduced->back().gemm, QStringLiteral("decoder.layers.1.mlp.experts.linear_fc1"));
    QCOMPARE(reduced->back().which.back(), 3);
    // Grouped: a row per GEMM, the overloaded expert named where it is the worst.
    MatrixRequest grouped = base;
    grouped.experts = ExpertRows::Max;
    const Heatmap g = catalog.matrix(run, grouped);
    QCOMPARE(g.layers.size(), 4);
    const int fc1 = int(g.layers.indexOf(QStringLiteral("decoder.layers.1.mlp.experts.linear_fc1")));
    QVERIFY(fc1 >= 0);
    QCOMPARE(g.rowExperts[size_t(fc1)], 4);
    QCOMPARE(g.at(fc1, 4), 30.0);
    QCOMPARE(g.cellExpert(fc1, 4), 3);
    QCOMPARE(g.at(fc1, 0), 4.0);
    // The experts map: that GEMM's four experts alone, in expert order.
    MatrixRequest map = grouped;
    map.expertsOf = QStringLiteral("decoder.layers.1.mlp.experts.linear_fc1");
    const Heatmap m = catalog.matrix(run, map);
    QCOMPARE(m.layers.size(), 4);
    QCOMPARE(m.layers.front(), QStringLiteral("decoder.layers.1.mlp.experts.linear_fc1.gemm_0"));
    QCOMPARE(m.layers.back(), QStringLiteral("decoder.layers.1.mlp.experts.linear_fc1.gemm_3"));
    QCOMPARE(m.expertsOf, map.expertsOf);
    QVERIFY(m.rowExperts.empty());
    QCOMPARE(m.at(3, 4), 30.0);
    QCOMPARE(m.at(3, 1), 4.0);
    // A GEMM the run does not have: nothing.
    map.expertsOf = QStringLiteral("decoder.layers.7.mlp.experts.linear_fc1");
    QVERIFY(catalog.matrix(run, map).layers.isEmpty());

    // The store's reduced rows and the points give one answer: the worst and the mean, with their experts.
    RunStore *store = CatalogTestAccess::store(catalog, run);
    QVERIFY(store->expertRows(run.id, base.stat, base.tensor, QStringLiteral("te-debug rank 0"), QString()));
    const auto viaPoints = [&](ExpertRows rows) {
        Heatmap h = catalog.matrix(run, base);
        groupExperts(&h, {.experts = rows});
        return h;
    };
    for (ExpertRows rows : {ExpertRows::Max, ExpertRows::Mean}) {
        MatrixRequest r = base;
        r.experts = rows;
        const Heatmap stored = catalog.matrix(run, r), points = viaPoints(rows);
        QCOMPARE(stored.layers, points.layers);
        QCOMPARE(stored.values, points.values);
        QCOMPARE(stored.cellExperts, points.cellExperts);
        QCOMPARE(stored.rowExperts, points.rowExperts);
        QCOMPARE(stored.rowLayers, points.rowLayers);
    }
    // One expert: every GEMM's row, all its experts counted; a GEMM without that expert an empty row.
    MatrixRequest one = base;
    one.experts = ExpertRows::One;
    one.expert = 3;
    Heatmap three = catalog.matrix(run, one);
    QCOMPARE(three.layers.size(), 4);
    QCOMPARE(three.rowExperts[size_t(fc1)], 4);
    QCOMPARE(three.at(fc1, 4), 30.0);
    one.expert = 9;
    const Heatmap nine = catalog.matrix(run, one);
    QCOMPARE(nine.layers.size(), 4);
    QVERIFY(std::isnan(nine.at(fc1, 0)));

    // Stale: a change the reduced rows were not made again for (a recomputed metric moves the data generation) is
    // not served from them; the matrix is grouped from the points, and says the same.
    DumpRecord d;
    d.layer = QStringLiteral("decoder.layers.0.self_attention.linear_qkv");
    d.tensor = QStringLiteral("activation");
    QVERIFY2(store->storeRecomputed(run.id, d, QStringLiteral("current"), {{QStringLiteral("mse"), 0.5}}, &error),
        qPrintable(error));
    QVERIFY(!store->expertRows(run.id, base.stat, base.tensor, QStringLiteral("te-debug rank 0"), QString()));
    QCOMPARE(catalog.matrix(run, grouped).values, g.values);
    // New steps of the log, ingested: the rows are made again, with them.
    QFile more(dir.filePath(QStringLiteral("run/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log")));
    QVERIFY(more.open(QIODevice::Append));
    QByteArray step50;
    for (int layer = 0; layer < 2; ++layer) {
        for (int e = 0; e < 4; ++e)
            step50 += "2026-11-30 12:00:00,000 - INFO - decoder.layers." + QByteArray::number(layer)
                + ".mlp.experts.linear_fc1.gemm_" + QByteArray::number(e)
                + "_activation_underflows% \t\t\t\t iteration=000050 \t\t\t\t value=" + QByteArray::number(40 + e)
                + ".0000\n";
    }
    QVERIFY(more.write(step50) == step50.size());
    more.close();
    QVERIFY(store->ingest().errors.isEmpty());
    catalog.refresh();
    const auto again = store->expertRows(run.id, base.stat, base.tensor, QStringLiteral("te-debug rank 0"), QString());
    QVERIFY(again.has_value());
    QCOMPARE(again->back().steps.back(), 50);
    QCOMPARE(again->back().worst.back(), 43.0);
    QCOMPARE(again->back().which.back(), 3);
}

QTEST_GUILESS_MAIN(TestExperts)
#include "tst_experts.moc"

// Issue 42 (part): the item models tested alone, each built from a small description and checked with Qt's
// QAbstractItemModelTester (its contract: indexes, parents, row counts, signals around changes) and for its
// contents. LayerTreeModel and ProblemsModel are built from plain lists; the models that read the workspace
// (runs, statistics) follow once they read a description of their own (issue 42's FolderSession).
#include "views/models/layertreemodel.h"
#include "views/models/problemsmodel.h"

#include "testmain.h"

#include <QAbstractItemModelTester>
#include <QSignalSpy>
#include <QTest>

using namespace fp8scope;

namespace {

// The layers of a small two-block model as a run's statistics name them, in depth order, with the tensors
// logged for each; an attention projection with no tensors of its own and a 10th layer after the 2nd.
std::vector<std::pair<QString, QStringList>> someLayers()
{
    const QStringList three {QStringLiteral("activation"), QStringLiteral("weight"), QStringLiteral("gradient")};
    return {{QStringLiteral("decoder.layers.2.self_attention.linear_qkv"), three},
        {QStringLiteral("decoder.layers.2.mlp.linear_fc2"), {QStringLiteral("activation")}},
        {QStringLiteral("decoder.layers.10.self_attention.linear_proj"), {}},
        {QStringLiteral("decoder.layers.10.mlp.linear_fc2"), three}, {QStringLiteral("output_layer"), three}};
}

QStringList childNames(const QAbstractItemModel &m, const QModelIndex &parent)
{
    QStringList out;
    for (int r = 0; r < m.rowCount(parent); ++r)
        out << m.index(r, 0, parent).data().toString();
    return out;
}

} // namespace

class TestModels : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // The tree's shape: each dotted part a level, in the order the layers came (depth order: 2 before 10),
    // each layer's tensors beneath it; every node's roles.
    void layerTreeFromDottedNames()
    {
        LayerTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setLayers(someLayers());
        QCOMPARE(childNames(model, {}), (QStringList {QStringLiteral("decoder"), QStringLiteral("output_layer")}));
        const QModelIndex layers = model.index(0, 0, model.index(0, 0));
        QCOMPARE(layers.data().toString(), QStringLiteral("layers"));
        QCOMPARE(childNames(model, layers), (QStringList {QStringLiteral("2"), QStringLiteral("10")}));
        QCOMPARE(childNames(model, model.index(0, 0, layers)),
            (QStringList {QStringLiteral("self_attention"), QStringLiteral("mlp")}));

        const QModelIndex qkv = model.find(QStringLiteral("decoder.layers.2.self_attention.linear_qkv"));
        QVERIFY(qkv.isValid());
        QCOMPARE(qkv.data(LayerTreeModel::LayerRole).toString(),
            QStringLiteral("decoder.layers.2.self_attention.linear_qkv"));
        QCOMPARE(qkv.data(LayerTreeModel::TensorRole).toString(), QString());
        QCOMPARE(childNames(model, qkv),
            (QStringList {QStringLiteral("activation"), QStringLiteral("weight"), QStringLiteral("gradient")}));
        const QModelIndex grad
            = model.find(QStringLiteral("decoder.layers.2.self_attention.linear_qkv"), QStringLiteral("gradient"));
        QVERIFY(grad.isValid());
        QCOMPARE(grad.parent(), qkv);
        QCOMPARE(grad.data(LayerTreeModel::TensorRole).toString(), QStringLiteral("gradient"));
        QCOMPARE(grad.data(LayerTreeModel::LayerRole).toString(), qkv.data(LayerTreeModel::LayerRole).toString());
        QCOMPARE(grad.data(Qt::ToolTipRole).toString(),
            QStringLiteral("decoder.layers.2.self_attention.linear_qkv/gradient"));
        QCOMPARE(grad.data(LayerTreeModel::PathRole).toString(),
            QStringLiteral("decoder.layers.2.self_attention.linear_qkv.gradient"));
        // A node above a layer has a path but no layer.
        QCOMPARE(layers.data(LayerTreeModel::PathRole).toString(), QStringLiteral("decoder.layers"));
        QCOMPARE(layers.data(LayerTreeModel::LayerRole).toString(), QString());
        // A layer without tensors is a leaf; a name or tensor it does not have finds nothing.
        const QModelIndex proj = model.find(QStringLiteral("decoder.layers.10.self_attention.linear_proj"));
        QVERIFY(proj.isValid());
        QCOMPARE(model.rowCount(proj), 0);
        QVERIFY(!model.find(QStringLiteral("decoder.layers.3")).isValid());
        QVERIFY(!model.find(QStringLiteral("decoder.layers.2.mlp.linear_fc2"), QStringLiteral("weight")).isValid());
        QVERIFY(!model.find(QString()).isValid());
        QCOMPARE(model.headerData(LayerTreeModel::NameColumn, Qt::Horizontal, Qt::DisplayRole).toString(),
            QStringLiteral("Layer"));
    }

    // Set again (a folder that grew, another run chosen): one reset, the old indexes gone, the new tree whole;
    // and emptied.
    void layerTreeResets()
    {
        LayerTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setLayers(someLayers());
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        std::vector<std::pair<QString, QStringList>> fewer {
            {QStringLiteral("model.h.0.attn.c_attn"), {QStringLiteral("activation")}},
            {QStringLiteral("model.h.1.attn.c_attn"), {QStringLiteral("activation")}}};
        model.setLayers(fewer);
        QCOMPARE(reset.count(), 1);
        QCOMPARE(childNames(model, {}), QStringList {QStringLiteral("model")});
        QVERIFY(!model.find(QStringLiteral("decoder.layers.2.mlp.linear_fc2")).isValid());
        const QModelIndex h = model.index(0, 0, model.index(0, 0));
        QCOMPARE(childNames(model, h), (QStringList {QStringLiteral("0"), QStringLiteral("1")}));
        model.setLayers({});
        QCOMPARE(reset.count(), 2);
        QCOMPARE(model.rowCount(), 0);
    }

    // Problems as the panel lists them: the file's name, where (a line, or a byte offset, or nothing), what;
    // the path, line and offset as roles (a double click opens the file there).
    void problemsListed()
    {
        ProblemsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setProblems({{QStringLiteral("/runs/fp8/logs/train.out"), 12, -1, QStringLiteral("a bad line"), false},
            {QStringLiteral("/runs/fp8/dump.safetensors"), 0, 4096, QStringLiteral("a truncated header"), false},
            {QStringLiteral("/runs/.fp8scope/store.sqlite"), 0, -1, QStringLiteral("a damaged page"), true}});
        QCOMPARE(model.rowCount(), 3);
        QCOMPARE(model.columnCount(), int(ProblemsModel::ColumnCount));
        const auto cell
            = [&](int row, int column, int role = Qt::DisplayRole) { return model.index(row, column).data(role); };
        QCOMPARE(cell(0, ProblemsModel::FileColumn).toString(), QStringLiteral("train.out"));
        QCOMPARE(cell(0, ProblemsModel::LineColumn).toString(), QStringLiteral("line 12"));
        QCOMPARE(cell(1, ProblemsModel::LineColumn).toString(), QStringLiteral("offset 4096"));
        QCOMPARE(cell(2, ProblemsModel::LineColumn).toString(), QString());
        QCOMPARE(cell(1, ProblemsModel::MessageColumn).toString(), QStringLiteral("a truncated header"));
        QCOMPARE(cell(0, ProblemsModel::MessageColumn, ProblemsModel::PathRole).toString(),
            QStringLiteral("/runs/fp8/logs/train.out"));
        QCOMPARE(cell(0, ProblemsModel::FileColumn, ProblemsModel::LineRole).toLongLong(), 12);
        QCOMPARE(cell(1, ProblemsModel::FileColumn, ProblemsModel::OffsetRole).toLongLong(), 4096);
        QCOMPARE(cell(1, ProblemsModel::FileColumn, Qt::ToolTipRole).toString(),
            QStringLiteral("/runs/fp8/dump.safetensors"));
        QCOMPARE(model.headerData(ProblemsModel::LineColumn, Qt::Horizontal, Qt::DisplayRole).toString(),
            QStringLiteral("Where"));
        QVERIFY(!model.headerData(ProblemsModel::LineColumn, Qt::Vertical, Qt::DisplayRole).isValid());
    }

    // More problems found (a growing log read on): rows appended, no reset, so the panel keeps its selection;
    // the same again: nothing; another list (the workspace closed and opened another folder): a reset.
    void problemsAppendedOrReset()
    {
        ProblemsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        std::vector<ProblemEntry> problems {{QStringLiteral("/a/train.out"), 3, -1, QStringLiteral("one"), false}};
        model.setProblems(problems);
        QSignalSpy inserted(&model, &QAbstractItemModel::rowsInserted);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        problems.push_back({QStringLiteral("/a/train.out"), 9, -1, QStringLiteral("two"), false});
        problems.push_back({QStringLiteral("/a/train.out"), 11, -1, QStringLiteral("three"), false});
        model.setProblems(problems);
        QCOMPARE(inserted.count(), 1);
        QCOMPARE(inserted.front().at(1).toInt(), 1);
        QCOMPARE(inserted.front().at(2).toInt(), 2);
        QCOMPARE(reset.count(), 0);
        QCOMPARE(model.rowCount(), 3);
        model.setProblems(problems);
        QCOMPARE(inserted.count(), 1);
        QCOMPARE(reset.count(), 0);
        model.setProblems({{QStringLiteral("/b/train.out"), 1, -1, QStringLiteral("other"), false}});
        QCOMPARE(reset.count(), 1);
        QCOMPARE(model.rowCount(), 1);
        QCOMPARE(model.index(0, ProblemsModel::MessageColumn).data().toString(), QStringLiteral("other"));
        model.setProblems({});
        QCOMPARE(reset.count(), 2);
        QCOMPARE(model.rowCount(), 0);
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestModels)
#include "tst_models.moc"

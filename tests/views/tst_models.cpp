// Issue 42 (part): the item models tested alone, each built from a small description and checked with Qt's
// QAbstractItemModelTester (its contract: indexes, parents, row counts, signals around changes) and for its
// contents. Each is built from a plain list of what it shows; following the workspace is each one's `follow`,
// exercised by the window's tests.
#include "views/models/layertreemodel.h"
#include "views/models/problemsmodel.h"
#include "views/models/runlistmodel.h"
#include "views/models/statstablemodel.h"

#include "testmain.h"

#include <QAbstractItemModelTester>
#include <QColor>
#include <QDateTime>
#include <QLocale>
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

// A table model's cell: its data at (row, column) in a role.
auto cellsOf(const QAbstractItemModel &model)
{
    return [&model](int row, int column, int role = Qt::DisplayRole) { return model.index(row, column).data(role); };
}

QStringList childNames(const QAbstractItemModel &m, const QModelIndex &parent)
{
    QStringList out;
    for (int r = 0; r < m.rowCount(parent); ++r)
        out << m.index(r, 0, parent).data().toString();
    return out;
}

// A run as the run list shows it.
RunListModel::Row runRow(int64_t id, const QString &name, const QString &precision, int64_t points, int64_t latest,
    const QString &baseline = {})
{
    RunListModel::Row r;
    r.run.run.ref = {1, id};
    r.run.run.name = name;
    r.run.run.folder = QStringLiteral("/runs");
    r.run.run.precision = precision;
    r.run.run.recipe = precision == QLatin1String("fp8") ? QStringLiteral("delayed") : QString();
    r.run.run.pointCount = points;
    r.run.latestStep = latest;
    r.run.colour = Qt::blue;
    r.baseline = baseline;
    r.run.pairing.reason = QStringLiteral("the same config but precision");
    return r;
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

    // Problems as the panel lists them: the file's name, where (a line or a W&B log's record, a byte offset, or
    // nothing), what;
    // the path, line and offset as roles (a double click opens the file there).
    void problemsListed()
    {
        ProblemsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setProblems({{QStringLiteral("/runs/fp8/logs/train.out"), 12, -1, QStringLiteral("a bad line"), false},
            {QStringLiteral("/runs/fp8/dump.safetensors"), 0, 4096, QStringLiteral("a truncated header"), false},
            {QStringLiteral("/runs/.fp8scope/store.sqlite"), 0, -1, QStringLiteral("a damaged page"), true},
            {QStringLiteral("/runs/wandb/run-1/run-1.wandb"), 7, 32775, QStringLiteral("a damaged chunk"), false},
            {QStringLiteral("/runs/fp8/metrics.jsonl"), 3, 210, QStringLiteral("a bad row"), false}});
        QCOMPARE(model.rowCount(), 5);
        QCOMPARE(model.columnCount(), int(ProblemsModel::ColumnCount));
        const auto cell = cellsOf(model);
        QCOMPARE(cell(0, ProblemsModel::FileColumn).toString(), QStringLiteral("train.out"));
        QCOMPARE(cell(0, ProblemsModel::LineColumn).toString(), QStringLiteral("line 12"));
        QCOMPARE(cell(1, ProblemsModel::LineColumn).toString(), QStringLiteral("byte 4096"));
        QCOMPARE(cell(2, ProblemsModel::LineColumn).toString(), QString());
        // A W&B log's problems count records, not lines (a binary file).
        QCOMPARE(cell(3, ProblemsModel::LineColumn).toString(), QStringLiteral("record 7, byte 32775"));
        QCOMPARE(cell(4, ProblemsModel::LineColumn).toString(), QStringLiteral("line 3, byte 210"));
        QCOMPARE(cell(1, ProblemsModel::MessageColumn).toString(), QStringLiteral("a truncated header"));
        QCOMPARE(cell(0, ProblemsModel::MessageColumn, ProblemsModel::PathRole).toString(),
            QStringLiteral("/runs/fp8/logs/train.out"));
        QCOMPARE(cell(0, ProblemsModel::FileColumn, ProblemsModel::LineRole).toLongLong(), 12);
        QCOMPARE(cell(1, ProblemsModel::FileColumn, ProblemsModel::OffsetRole).toLongLong(), 4096);
        QCOMPARE(cell(1, ProblemsModel::FileColumn, Qt::ToolTipRole).toString(),
            QStringLiteral("/runs/fp8/dump.safetensors"));
        // The message whole on hover, where its column cuts it.
        QCOMPARE(
            cell(1, ProblemsModel::MessageColumn, Qt::ToolTipRole).toString(), QStringLiteral("a truncated header"));
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

    // The run list: a run's name with its colour and check box, precision, recipe, baseline (the reason in its
    // tooltip), points and newest step; "advanced" only for a run that moved while followed, said stopped past
    // its threshold; a check box changed asks for the run to be shown or hidden.
    void runListColumnsAndCheckBoxes()
    {
        RunListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        RunListModel::Row fp8
            = runRow(2, QStringLiteral("fp8"), QStringLiteral("fp8"), 1234567, 4000, QStringLiteral("bf16"));
        fp8.run.advanced = QDateTime::currentDateTimeUtc().addSecs(-5);
        fp8.stallThresholdMs = 120000;
        RunListModel::Row stopped = runRow(3, QStringLiteral("fp8-retry"), QStringLiteral("fp8"), 10, 20);
        stopped.run.advanced = QDateTime::currentDateTimeUtc().addSecs(-600);
        stopped.stallThresholdMs = 120000;
        model.setRows({runRow(1, QStringLiteral("bf16"), QStringLiteral("bf16"), 20, -1), fp8, stopped});
        QCOMPARE(model.rowCount(), 3);
        const auto cell = cellsOf(model);
        QCOMPARE(cell(1, RunListModel::NameColumn).toString(), QStringLiteral("fp8"));
        QCOMPARE(cell(1, RunListModel::NameColumn, Qt::DecorationRole).value<QColor>(), QColor(Qt::blue));
        QCOMPARE(cell(1, RunListModel::NameColumn, Qt::CheckStateRole).toInt(), int(Qt::Checked));
        QVERIFY(model.flags(model.index(1, RunListModel::NameColumn)) & Qt::ItemIsUserCheckable);
        QVERIFY(!(model.flags(model.index(1, RunListModel::PointsColumn)) & Qt::ItemIsUserCheckable));
        QCOMPARE(cell(1, RunListModel::RecipeColumn).toString(), QStringLiteral("delayed"));
        QCOMPARE(cell(1, RunListModel::BaselineColumn).toString(), QStringLiteral("bf16"));
        QCOMPARE(cell(1, RunListModel::BaselineColumn, Qt::ToolTipRole).toString(),
            QStringLiteral("Baseline: the same config but precision"));
        QCOMPARE(cell(1, RunListModel::PointsColumn).toString(), QLocale().toString(1234567));
        QCOMPARE(cell(0, RunListModel::LatestStepColumn).toString(), QString()); // no step yet
        QCOMPARE(cell(1, RunListModel::LatestStepColumn).toString(), QLocale().toString(4000));
        QVERIFY(!cell(0, RunListModel::AdvancedColumn).isValid());
        QCOMPARE(cell(1, RunListModel::AdvancedColumn).toString(), QStringLiteral("5 s ago"));
        QVERIFY(cell(2, RunListModel::AdvancedColumn).toString().startsWith(QStringLiteral("stopped, 10 min ago")));
        QVERIFY(cell(2, RunListModel::AdvancedColumn, Qt::ForegroundRole).isValid());
        QCOMPARE(cell(1, RunListModel::NameColumn, RunListModel::RunRole).value<RunRef>(), (RunRef {1, 2}));
        QSignalSpy requested(&model, &RunListModel::visibilityRequested);
        QVERIFY(model.setData(model.index(1, RunListModel::NameColumn), int(Qt::Unchecked), Qt::CheckStateRole));
        QCOMPARE(requested.count(), 1);
        QCOMPARE(requested.front().at(0).value<RunRef>(), (RunRef {1, 2}));
        QCOMPARE(requested.front().at(1).toBool(), false);
        QVERIFY(!model.setData(model.index(1, RunListModel::PointsColumn), int(Qt::Unchecked), Qt::CheckStateRole));
        QCOMPARE(RunListModel::agoText(3 * 3600 * 1000), QStringLiteral("3 h ago"));
    }

    // The same runs with new values (points arrived, a run hidden): the changed rows only, no reset; other runs:
    // a reset.
    void runListChangesInPlace()
    {
        RunListModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        std::vector<RunListModel::Row> rows {runRow(1, QStringLiteral("bf16"), QStringLiteral("bf16"), 20, 100),
            runRow(2, QStringLiteral("fp8"), QStringLiteral("fp8"), 20, 100)};
        model.setRows(rows);
        QSignalSpy changed(&model, &QAbstractItemModel::dataChanged);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        rows[1].run.run.pointCount = 40;
        rows[1].run.latestStep = 200;
        model.setRows(rows);
        QCOMPARE(reset.count(), 0);
        QCOMPARE(changed.count(), 1);
        QCOMPARE(changed.front().at(0).toModelIndex().row(), 1);
        QCOMPARE(model.index(1, RunListModel::LatestStepColumn).data().toString(), QLocale().toString(200));
        rows[0].run.visible = false;
        model.setRows(rows);
        QCOMPARE(changed.count(), 2);
        QCOMPARE(changed.back().at(0).toModelIndex().row(), 0);
        QCOMPARE(model.index(0, RunListModel::NameColumn).data(Qt::CheckStateRole).toInt(), int(Qt::Unchecked));
        model.setRows(rows); // nothing changed
        QCOMPARE(changed.count(), 2);
        rows.push_back(runRow(3, QStringLiteral("fp8-retry"), QStringLiteral("fp8"), 5, 10));
        model.setRows(rows);
        QCOMPARE(reset.count(), 1);
        QCOMPARE(model.rowCount(), 3);
    }

    // The statistics table: a tensor's statistics, then the run's, then its evaluation scores; values with eight
    // significant digits shown and the exact value as a role (copies carry it); the scope in words.
    void statisticsTable()
    {
        StatsTableModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        QSignalSpy reset(&model, &QAbstractItemModel::modelReset);
        model.setRows({{QStringLiteral("underflows%"), 0.123456789, 400, QStringLiteral("te-debug rank 0"), {}, true},
            {QStringLiteral("mse"), 2.5e-7, 400, QStringLiteral("recomputed"), QStringLiteral("mxfp8"), true},
            {QStringLiteral("lm loss"), 2.0, 400, QStringLiteral("megatron-log"), {}, false},
            {QStringLiteral("arc / acc"), 0.9996, -1, QStringLiteral("/runs/fp8/eval/results.json"),
                QStringLiteral("inference fp8"), false, true}});
        QCOMPARE(reset.count(), 1);
        QCOMPARE(model.rowCount(), 4);
        const auto cell = cellsOf(model);
        QCOMPARE(cell(0, StatsTableModel::ValueColumn).toString(), QLocale().toString(0.123456789, 'g', 8));
        QCOMPARE(cell(0, StatsTableModel::ValueColumn, StatsTableModel::SortValueRole).toDouble(), 0.123456789);
        QCOMPARE(cell(0, StatsTableModel::ValueColumn, Qt::ToolTipRole).toString(), QStringLiteral("0.123456789"));
        QCOMPARE(cell(3, StatsTableModel::ValueColumn).toString(), QLocale().toString(0.9996, 'g', 8));
        QCOMPARE(cell(1, StatsTableModel::RecipeColumn).toString(), QStringLiteral("mxfp8"));
        QCOMPARE(cell(0, StatsTableModel::ScopeColumn).toString(), QStringLiteral("tensor"));
        QCOMPARE(cell(2, StatsTableModel::ScopeColumn).toString(), QStringLiteral("run"));
        QCOMPARE(cell(3, StatsTableModel::ScopeColumn).toString(), QStringLiteral("evaluation"));
        QCOMPARE(cell(2, StatsTableModel::StepColumn).toLongLong(), 400);
        QVERIFY(!cell(3, StatsTableModel::StepColumn).isValid()); // an evaluation has no step
        QCOMPARE(cell(2, StatsTableModel::StepColumn, Qt::TextAlignmentRole).toInt(),
            int(Qt::AlignRight | Qt::AlignVCenter));
        QCOMPARE(model.headerData(StatsTableModel::ScopeColumn, Qt::Horizontal, Qt::DisplayRole).toString(),
            QStringLiteral("Scope"));
        model.setRows({});
        QCOMPARE(reset.count(), 2);
        QCOMPARE(model.rowCount(), 0);
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestModels)
#include "tst_models.moc"

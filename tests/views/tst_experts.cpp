// A mixture-of-experts run in the window (issue 57), at 1366x768: the heatmap shows one row per GEMM with its
// experts reduced (the worst by default, said in the scale's label), the worst expert named on hover; a click on a
// GEMM's row opens its experts x steps map with the worst expert selected, Backspace goes back; the experts'
// reduction can be the mean, one expert or every expert; the layer tree holds each GEMM's experts under it.
#include "app/gui/mainwindow.h"
#include "core/demo/scenarios.h"
#include "core/formats/expertnames.h"
#include "guitest.h"
#include "testmain.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/models/layertreemodel.h"
#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"

#include <QComboBox>
#include <QDir>
#include <QDockWidget>
#include <QMainWindow>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTemporaryDir>
#include <QTest>
#include <QToolButton>
#include <QTreeView>

using namespace fp8scope;

class TestExperts : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void groupedHeatmapAndExpertsMap();
    void layerTreeGroupsExperts();
    void bf16LayersHatched();

private:
    QTemporaryDir m_tmp;
    QString m_folder;
    ScenarioPlan m_plan;
    std::unique_ptr<MainWindow> m_window;
};

void TestExperts::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    guitest::keepSettingsIn(m_tmp);
    m_folder = m_tmp.filePath(QStringLiteral("moe"));
    QString error;
    QVERIFY2(generateScenario(m_folder, Scenario::MidRunInstability, 3, &m_plan, &error, {.experts = 8, .layers = 6}),
        qPrintable(error));
    QVERIFY(m_plan.expert >= 0);
    QVERIFY(!m_plan.layer.startsWith(QLatin1String("decoder.layers.5.")));
    // The last layer kept in BF16 by a Transformer Engine debug config in the run's folder.
    QVERIFY(guitest::writeFile(m_folder + QLatin1Char('/') + m_plan.run + QStringLiteral("/fp8_debug.yaml"),
        "last_layer_bf16:\n  enabled: True\n  layers:\n    layer_name_regex_pattern: 'decoder\\.layers\\.5\\.'\n"
        "  transformer_engine:\n    DisableQuantizationLayer:\n      enabled: True\n"));
    m_window = std::make_unique<MainWindow>(BackendChoice::Cpu, nullptr);
    m_window->resize(1366, 768);
    m_window->show();
    QVERIFY(QTest::qWaitForWindowExposed(m_window.get()));
    QSignalSpy ready(m_window.get(), &MainWindow::ready);
    m_window->openFolders({m_folder});
    QVERIFY(ready.wait(60000));
}

void TestExperts::groupedHeatmapAndExpertsMap()
{
    MainWindow *w = m_window.get();
    HeatmapView *heat = w->heatmap();
    const auto runs = heat->findChild<QComboBox *>(QStringLiteral("heatmapRun"));
    QVERIFY(runs);
    runs->setCurrentIndex(runs->findText(m_plan.run));
    heat->setStatistic(QStringLiteral("underflows%"));
    heat->setTensor(m_plan.tensor);
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading(), 60000);
    // A row per GEMM: 6 layers of QKV, projection, and two grouped MLP GEMMs of 8 experts each.
    const Heatmap &h = heat->heatmap();
    QCOMPARE(heat->expertRows(), ExpertRows::Max);
    QCOMPARE(h.layers.size(), 6 * 4);
    const int row = int(h.layers.indexOf(m_plan.gemm));
    QVERIFY2(row >= 0, qPrintable(m_plan.gemm));
    QCOMPARE(h.rowExpertCount(row), 8);
    QVERIFY(heat->scaleLabel().contains(QStringLiteral("worst expert")));
    auto *expertsBox = heat->findChild<QComboBox *>(QStringLiteral("heatmapExperts"));
    QVERIFY(expertsBox && expertsBox->isVisible());
    // At the last step the hover names the worst expert of the GEMM (the one its value is from).
    const int last = int(h.steps.size()) - 1;
    const int worst = h.cellExpert(row, size_t(last));
    QVERIFY(worst >= 0 && worst < 8);
    const double worstValue = h.at(row, size_t(last));
    const QPointF centre = heat->cellCentre(row, last);
    const QString tip = heat->toolTipAt(centre);
    QVERIFY2(tip.contains(QStringLiteral("the worst: expert %1").arg(worst)), qPrintable(tip));
    QVERIFY(tip.contains(QStringLiteral("8 experts")));
    // The view's CSV names the expert of each value, as the CLI's does.
    QVERIFY(heat->csv().contains(m_plan.gemm + QStringLiteral(" [expert]")));
    guitest::shoot(w, QStringLiteral("17-moe-grouped-heatmap.png"));
    // The worst expert's row is told apart from its GEMM's: a selected expert marks its GEMM's row.
    QCOMPARE(heat->rowOfLayer(m_plan.layer), row);
    const QString worstLayer = m_plan.gemm + QStringLiteral(".gemm_%1").arg(worst);

    // A click on the GEMM's row: its experts map, the worst expert at that step selected.
    QTest::mouseClick(heat->plot(), Qt::LeftButton, {}, centre.toPoint());
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading(), 60000);
    QCOMPARE(heat->expertsOf(), m_plan.gemm);
    QCOMPARE(heat->heatmap().layers.size(), 8);
    QCOMPARE(heat->heatmap().expertsOf, m_plan.gemm);
    QCOMPARE(w->selection()->layer(), worstLayer);
    QCOMPARE(w->selection()->step(), h.steps[size_t(last)]);
    // The map's rows are the experts' values: the worst expert's is the grouped row's value, the largest.
    const Heatmap &map = heat->heatmap();
    const int worstRow = int(map.layers.indexOf(worstLayer));
    QVERIFY(worstRow >= 0);
    QCOMPARE(map.at(worstRow, size_t(last)), worstValue);
    for (qsizetype r = 0; r < map.layers.size(); ++r)
        QVERIFY(!(map.at(r, size_t(last)) > worstValue));
    QVERIFY(heat->scaleLabel().contains(QStringLiteral("one GEMM's experts")));
    guitest::shoot(w, QStringLiteral("18-moe-experts-map.png"));
    auto *back = heat->findChild<QToolButton *>(QStringLiteral("heatmapBack"));
    QVERIFY(back);
    QTRY_VERIFY(back->isVisible());
    QVERIFY2(back->text().contains(m_plan.gemm.section(QLatin1Char('.'), -3)), qPrintable(back->text()));
    QTRY_VERIFY(!expertsBox->isVisible());
    // Beside the map, the router's loss (Megatron's load_balancing_loss, as the run logs it) drawn as a curve.
    auto *router = heat->findChild<QToolButton *>(QStringLiteral("heatmapRouter"));
    QVERIFY(router);
    QTRY_VERIFY(router->isVisible());
    router->click();
    QCOMPARE(w->curves()->statistic(), QStringLiteral("load_balancing_loss"));
    // In the map, a click selects that expert's layer.
    const int other = (worst + 1) % 8;
    const int otherRow = int(heat->heatmap().layers.indexOf(m_plan.gemm + QStringLiteral(".gemm_%1").arg(other)));
    QVERIFY(otherRow >= 0);
    QTest::mouseClick(heat->plot(), Qt::LeftButton, {}, heat->cellCentre(otherRow, 0).toPoint());
    QCOMPARE(w->selection()->layer(), m_plan.gemm + QStringLiteral(".gemm_%1").arg(other));

    // Backspace: back to every GEMM's row.
    heat->setFocus();
    QTest::keyClick(heat, Qt::Key_Backspace);
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading(), 60000);
    QVERIFY(heat->expertsOf().isEmpty());
    QCOMPARE(heat->heatmap().layers.size(), 6 * 4);
    QTRY_VERIFY(!back->isVisible());
    QVERIFY(!router->isVisible());
    // Return on the selected expert opens its GEMM's map again.
    QTest::keyClick(heat, Qt::Key_Return);
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading(), 60000);
    QCOMPARE(heat->expertsOf(), m_plan.gemm);
    back->click();
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading() && heat->expertsOf().isEmpty(), 60000);

    // The mean of the experts, one expert, every expert.
    heat->setExpertRows(ExpertRows::Mean);
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading(), 60000);
    QVERIFY(heat->scaleLabel().contains(QStringLiteral("mean of experts")));
    const double mean = heat->heatmap().at(row, size_t(last));
    QVERIFY2(
        mean < worstValue, qPrintable(QStringLiteral("%1 %2 %3").arg(mean).arg(worstValue).arg(heat->scaleLabel())));
    heat->setExpert(m_plan.expert);
    heat->setExpertRows(ExpertRows::One);
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading(), 60000);
    QVERIFY(heat->scaleLabel().contains(QStringLiteral("expert %1").arg(m_plan.expert)));
    heat->setExpertRows(ExpertRows::All);
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading(), 60000);
    QCOMPARE(heat->heatmap().layers.size(), 6 * (2 + 2 * 8));
    QVERIFY(heat->heatmap().rowExperts.empty());
    heat->setExpertRows(ExpertRows::Max);
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading(), 60000);
}

void TestExperts::layerTreeGroupsExperts()
{
    QTreeView *tree = m_window->layerTree();
    QVERIFY(tree);
    auto *proxy = qobject_cast<QSortFilterProxyModel *>(tree->model());
    auto *model = qobject_cast<LayerTreeModel *>(proxy ? proxy->sourceModel() : tree->model());
    QVERIFY(model);
    // The planted expert under its GEMM, named by its index; the GEMM says how many experts it has.
    const QModelIndex expert = model->find(m_plan.layer);
    QVERIFY(expert.isValid());
    QCOMPARE(expert.data().toString(), expertLabel(m_plan.expert));
    QCOMPARE(expert.data(LayerTreeModel::LayerRole).toString(), m_plan.layer);
    const QModelIndex gemm = expert.parent();
    QCOMPARE(gemm.data().toString(), QStringLiteral("%1 (8 experts)").arg(m_plan.gemm.section(QLatin1Char('.'), -1)));
    QCOMPARE(model->rowCount(gemm), 8);
    // Its tensors under the expert, as under any layer.
    QVERIFY(model->find(m_plan.layer, m_plan.tensor).isValid());
}

// The GEMMs of a layer kept in BF16 are hatched rows, their cells not coloured as if 0 % underflowed, the source on
// hover; the layer tree marks them.
void TestExperts::bf16LayersHatched()
{
    HeatmapView *heat = m_window->heatmap();
    QCOMPARE(heat->expertRows(), ExpertRows::Max);
    QTRY_VERIFY_WITH_TIMEOUT(!heat->isLoading() && heat->highPrecisionRows().size() == 4, 60000);
    const Heatmap &h = heat->heatmap();
    for (int row : heat->highPrecisionRows()) {
        QVERIFY2(h.layers[row].startsWith(QLatin1String("decoder.layers.5.")), qPrintable(h.layers[row]));
        QVERIFY(std::isnan(heat->drawnValueAt(heat->cellCentre(row, int(h.steps.size()) / 2))));
        const QString tip = heat->toolTipAt(heat->cellCentre(row, int(h.steps.size()) / 2));
        QVERIFY2(tip.contains(QStringLiteral("in BF16 for the whole run"))
                && tip.contains(QStringLiteral("last_layer_bf16")),
            qPrintable(tip));
    }
    // A row in FP8 is coloured.
    const int fp8Row = int(h.layers.indexOf(QStringLiteral("decoder.layers.4.self_attention.linear_qkv")));
    QVERIFY(fp8Row >= 0);
    QVERIFY(!std::isnan(heat->drawnValueAt(heat->cellCentre(fp8Row, int(h.steps.size()) / 2))));
    // The tree, for the run the heatmap shows.
    m_window->selection()->set(
        heat->run(), QStringLiteral("decoder.layers.5.self_attention.linear_qkv"), QStringLiteral("activation"), -1);
    auto *proxy = qobject_cast<QSortFilterProxyModel *>(m_window->layerTree()->model());
    auto *model = qobject_cast<LayerTreeModel *>(proxy->sourceModel());
    const QModelIndex qkv = model->find(QStringLiteral("decoder.layers.5.self_attention.linear_qkv"));
    QVERIFY(qkv.isValid());
    QTRY_VERIFY_WITH_TIMEOUT(qkv.data().toString().endsWith(QStringLiteral("[BF16]")), 60000);
    QVERIFY(qkv.data(Qt::ToolTipRole).toString().contains(QStringLiteral("DisableQuantizationLayer")));
    // The layer's node and a GEMM of experts in it, every layer under them in BF16, are marked too.
    QVERIFY(qkv.parent().parent().data().toString().endsWith(QStringLiteral("[BF16]"))); // decoder > layers > 5
    const QModelIndex expert = model->find(QStringLiteral("decoder.layers.5.mlp.experts.linear_fc1.gemm_0"));
    QVERIFY(expert.isValid());
    QVERIFY(expert.parent().data().toString().endsWith(QStringLiteral("[BF16]")));
    QVERIFY(!model->find(QStringLiteral("decoder.layers.4.self_attention.linear_qkv"))
                 .parent()
                 .parent()
                 .data()
                 .toString()
                 .contains(QStringLiteral("BF16")));
    QVERIFY(!model->find(QStringLiteral("decoder.layers.4.self_attention.linear_qkv"))
                 .data()
                 .toString()
                 .contains(QStringLiteral("BF16")));
}

FP8SCOPE_TEST_GUI_MAIN(TestExperts)
#include "tst_experts.moc"

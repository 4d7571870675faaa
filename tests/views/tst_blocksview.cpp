// The Blocks tab (views/blocks/blockmapview) in the real window, offscreen at 1366x768, on a demo pair with one
// more dump: a 256x1024 activation whose one value 10^5 times its neighbours' scale sits at (37, 300). The map of
// the selected dump, its worst block listed first, a click on the map and a row of the list selecting a block
// and drawing its values, the recipe picker and the layer selection recomputing it, the cells at the plot's
// resolution and every block once zoomed in; and, where the test Python has torch, a Transformer Engine
// DumpTensors run whose quantized copies are maps of their own with TE's quantization compared.
#include "app/gui/mainwindow.h"
#include "core/demo/demogenerator.h"
#include "core/tensors/hdf5dumpwriter.h"
#include "guitest.h"
#include "testmain.h"
#include "views/blocks/blockmapview.h"
#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"
#include "windowtest.h"

#include <QComboBox>
#include <QProcess>
#include <QStandardItemModel>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>

#include <algorithm>
#include <random>

using namespace fp8scope;

namespace {

constexpr int64_t kRows = 256, kCols = 1024, kOutlierRow = 37, kOutlierCol = 300;

bool writePlantedDump(const QString &path, const QString &layer, QString *error)
{
    std::mt19937 gen(4);
    std::normal_distribution<float> d(0.0f, 0.01f);
    std::vector<uint16_t> bf(size_t(kRows * kCols));
    for (size_t i = 0; i < bf.size(); ++i) {
        const float x = i == size_t(kOutlierRow * kCols + kOutlierCol) ? 5000.0f : d(gen);
        bf[i] = uint16_t(fp8math::castToCode(x, fp8math::Format::BF16));
    }
    Problem problem;
    auto w = Hdf5DumpWriter::create(path, &problem);
    if (!w
        || !w->writeTensor(QStringLiteral("/iter_000999/%1/activation").arg(layer), DType::BF16, {kRows, kCols},
            bf.data(), {QStringLiteral("mxfp8"), QStringLiteral("E4M3"), {}, {}}, &problem)) {
        *error = problem.toString();
        return false;
    }
    return true;
}

} // namespace

class TestBlocksView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY(m_tmp.isValid());
        guitest::keepSettingsIn(m_tmp);
        const QString pair = m_tmp.filePath(QStringLiteral("pair"));
        QString error;
        QVERIFY2(guitest::generatePair(pair, 3, 4, 1200, &m_plan, &error), qPrintable(error));
        QVERIFY2(writePlantedDump(pair + QStringLiteral("/fp8/dumps/iter_000999.h5"), m_plan.plantedLayerName, &error),
            qPrintable(error));
        m_window = guitest::openWindow({pair}, QSize(1366, 768));
        QVERIFY(m_window);
        m_blocks = m_window->blocks();
        QVERIFY(m_blocks);
        auto *tabs = m_window->findChild<QTabWidget *>(QStringLiteral("viewTabs"));
        tabs->setCurrentWidget(m_blocks);
        m_fp8 = m_window->workspace()->findRun(QStringLiteral("fp8"));
        QVERIFY(m_fp8.isValid());
    }

    // The selected dump's map under the run's block recipe: a row of blocks per row, 32 block columns; the
    // outlier's block (37, 9) first in the list, alone flagged, the pattern named.
    void mapsTheSelectedDump()
    {
        QVERIFY(m_blocks->statusText().contains(QLatin1String("Select a layer")));
        m_window->selection()->set(m_fp8, m_plan.plantedLayerName, QStringLiteral("activation"), 999);
        QTRY_VERIFY_WITH_TIMEOUT(!m_blocks->isComputing() && m_blocks->shownMap(), 60000);
        const BlockMap *m = m_blocks->shownMap();
        QCOMPARE(m->recipe.name(), QStringLiteral("mxfp8"));
        QCOMPARE(m->gridRows, kRows);
        QCOMPARE(m->gridCols, kCols / 32);
        const int64_t outlier = kOutlierRow * m->gridCols + kOutlierCol / 32;
        QCOMPARE(m->ranked(1).front(), outlier);
        auto *table = m_window->findChild<QTableView *>(QStringLiteral("blocksTable"));
        QVERIFY(table);
        QCOMPARE(table->model()->index(0, 0).data().toString(), QStringLiteral("(37, 9)"));
        QCOMPARE(table->model()->index(0, 8).data().toString(), QStringLiteral("yes"));
        QCOMPARE(table->model()->index(1, 8).data().toString(), QString());
        QVERIFY2(m_blocks->statusText().contains(QLatin1String("isolated")), qPrintable(m_blocks->statusText()));
        QVERIFY(m_blocks->statusText().contains(QLatin1String("with FP32 scales on the same blocks")));
        guitest::shoot(m_window.get(), QStringLiteral("20-blocks.png"));
    }

    // A click on the map selects the block under it and draws its values against the format's range; a row of
    // the list selects its block.
    void clickAndListSelect()
    {
        QCustomPlot *plot = m_blocks->plot();
        const BlockMap *m = m_blocks->shownMap();
        QVERIFY(m);
        const int64_t outlier = kOutlierRow * m->gridCols + kOutlierCol / 32;
        // Zoomed in (as the wheel does), a block is several pixels tall: a click lands on one.
        plot->yAxis->setRange(20.5, 60.5);
        plot->replot();
        const QPoint at(int(plot->xAxis->coordToPixel(double(kOutlierCol / 32))),
            int(plot->yAxis->coordToPixel(double(kOutlierRow))));
        QCOMPARE(m_blocks->blockAt(at), outlier);
        QSignalSpy selected(m_blocks, &BlockMapView::blockSelected);
        QTest::mouseClick(plot, Qt::LeftButton, {}, at);
        QCOMPARE(selected.count(), 1);
        QCOMPARE(m_blocks->selectedBlock(), outlier);
        auto *tabs = m_blocks->findChild<QTabWidget *>(QStringLiteral("blocksTabs"));
        auto *values = m_blocks->findChild<QCustomPlot *>(QStringLiteral("blockValuesPlot"));
        QCOMPARE(tabs->currentWidget(), values);
        auto *bars = qobject_cast<QCPBars *>(values->plottable(0));
        QVERIFY(bars);
        QVERIFY(!bars->data()->isEmpty());
        // 32 values: the outlier at the top of E4M3's range (2^8.3 after its E8M0 scale), 31 far below.
        double count = 0;
        for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
            count += it->value;
        QCOMPARE(count, 32.0);
        QVERIFY(m_blocks->statusText().contains(QLatin1String("Selected block (37, 9)")));

        auto *table = m_window->findChild<QTableView *>(QStringLiteral("blocksTable"));
        table->selectRow(2);
        QCOMPARE(m_blocks->selectedBlock(), m->ranked(3)[2]);
        guitest::shoot(m_window.get(), QStringLiteral("21-blocks-selected.png"));
    }

    // The cells follow the plot's resolution: fewer than the 8192 blocks on a small plot, every block once
    // zoomed in to a few columns.
    void cellsAtThePlotsResolution()
    {
        QCustomPlot *plot = m_blocks->plot();
        plot->xAxis->setRange(-0.5, 31.5);
        plot->yAxis->setRange(-0.5, 255.5);
        plot->replot();
        const QSize full = m_blocks->cellCount();
        QCOMPARE(full.width(), 32);
        QCOMPARE(full.height(), std::min(int(kRows), plot->axisRect()->height()));
        // Whole cells centred on their blocks: the first at 0, the last at N - 1, each drawn whole (no tight
        // boundary halving the edge cells), so the map covers -0.5 to N - 0.5 in block units.
        auto *map = qobject_cast<QCPColorMap *>(plot->plottable(0));
        QVERIFY(map);
        QVERIFY(!map->tightBoundary());
        QCOMPARE(map->data()->keyRange().lower, 0.0);
        QCOMPARE(map->data()->keyRange().upper, 31.0);
        plot->xAxis->setRange(3.5, 9.5);
        plot->yAxis->setRange(30.5, 40.5);
        plot->replot();
        QCOMPARE(m_blocks->cellCount(), QSize(6, 10));
        // A double-click shows the whole tensor again.
        QTest::mouseDClick(plot, Qt::LeftButton, {}, plot->axisRect()->rect().center());
        QCOMPARE(plot->xAxis->range().lower, -0.5);
        QCOMPARE(plot->yAxis->range().upper, double(kRows) - 0.5);
        // The colour bar names what the cells show, as soon as it changes.
        m_blocks->setField(BlockField::Scale);
        QCOMPARE(plot->findChild<QCPColorScale *>() ? plot->findChild<QCPColorScale *>()->axis()->label() : QString(),
            QStringLiteral("log2 scale_inv"));
        m_blocks->setField(BlockField::RelError);
    }

    // The recipe picker recomputes the map under another recipe; another layer's dump is mapped when selected.
    void recipeAndSelectionRecompute()
    {
        m_blocks->setRecipe(QStringLiteral("nvfp4"));
        QTRY_VERIFY_WITH_TIMEOUT(!m_blocks->isComputing() && m_blocks->shownMap()
                && m_blocks->shownMap()->recipe.name() == QLatin1String("nvfp4"),
            60000);
        QCOMPARE(m_blocks->shownMap()->gridCols, kCols / 16);
        // NVFP4's FP32 tensor scale is the outlier's: its block loses its other values, and so do blocks whose
        // E4M3 scale falls below E4M3's range under that tensor scale.
        QVERIFY(m_blocks->shownMap()->flagged(kOutlierRow * (kCols / 16) + kOutlierCol / 16));
        QVERIFY(m_blocks->shownMap()->flaggedCount() > 1);
        // A what-if row in E5M2 (a gradient's) is mapped in E5M2; NVFP4 keeps E2M1.
        m_blocks->setRecipe(QStringLiteral("mxfp8"), QStringLiteral("e5m2"));
        QTRY_VERIFY_WITH_TIMEOUT(!m_blocks->isComputing() && m_blocks->shownMap()
                && m_blocks->shownMap()->recipe.name() == QLatin1String("mxfp8"),
            60000);
        QCOMPARE(m_blocks->shownMap()->recipe.format, fp8math::Format::E5M2);
        m_blocks->setRecipe(QStringLiteral("block128x128"));
        QTRY_VERIFY_WITH_TIMEOUT(!m_blocks->isComputing() && m_blocks->shownMap()
                && m_blocks->shownMap()->blockShape() == QLatin1String("128x128"),
            60000);
        QCOMPARE(m_blocks->shownMap()->gridRows, int64_t(2));
        // A map of one row of blocks (the demo's 64x256 tensors in 128x128 tiles) is drawn: at least two cells
        // a dimension, covering the whole tile.
        // A demo dump of another layer (64x256).
        const QString dumpStep = m_plan.dumpSteps.front();
        m_window->selection()->set(m_fp8, m_plan.plantedLayerName, QStringLiteral("weight"), dumpStep.toLongLong());
        QTRY_VERIFY_WITH_TIMEOUT(!m_blocks->isComputing() && m_blocks->dump()
                && m_blocks->dump()->record.tensor == QLatin1String("weight") && m_blocks->shownMap(),
            60000);
        QCOMPARE(m_blocks->shownMap()->rows, int64_t(64));
        QCOMPARE(m_blocks->shownMap()->gridRows, int64_t(1));
        QVERIFY(m_blocks->cellCount().height() >= 2 && m_blocks->cellCount().width() >= 2);
        // Two cells of half a block each, centred at -0.25 and 0.25: drawn whole, -0.5 to 0.5.
        auto *map = qobject_cast<QCPColorMap *>(m_blocks->plot()->plottable(0));
        QCOMPARE(map->data()->valueSize(), 2);
        QCOMPARE(map->data()->valueRange().lower, -0.25);
        QCOMPARE(map->data()->valueRange().upper, 0.25);
        QCOMPARE(m_blocks->selectedBlock(), int64_t(-1));
    }

    // A DumpTensors run (TE 2.15's layout): the high-precision tensor's map, and each quantized copy's map as TE
    // made it, with its quantization compared bit for bit.
    void transformerEngineDumps()
    {
        const QString python = qEnvironmentVariable("FP8SCOPE_TEST_PYTHON");
        if (python.isEmpty() || !QFile::exists(python))
            QSKIP("no test Python");
        const QString out = m_tmp.filePath(QStringLiteral("te"));
        QProcess p;
        p.start(python,
            {qEnvironmentVariable("FP8SCOPE_SOURCE_DIR") + QStringLiteral("/tests/core/oracles/write_te_quantized.py"),
                out});
        QVERIFY(p.waitForFinished(600000));
        if (p.exitCode() == 3)
            QSKIP("torch is not importable in the test Python");
        QVERIFY2(p.exitCode() == 0, p.readAllStandardError().constData());
        // One layer's activation at iteration 100, as DumpTensors writes it (no log naming the layer).
        const QString run = m_tmp.filePath(QStringLiteral("terun"));
        const QString iter = run + QStringLiteral("/tensor_dumps/rank_0/iter_000100");
        QVERIFY(QDir().mkpath(iter));
        QVERIFY(
            QFile::copy(out + QStringLiteral("/te/mxfp8-badscale.pt"), iter + QStringLiteral("/fc1_activation.pt")));
        QVERIFY(QFile::copy(out + QStringLiteral("/te/nvfp4-badamax.pt"), iter + QStringLiteral("/fc2_activation.pt")));
        QSignalSpy ready(m_window.get(), &MainWindow::ready);
        m_window->openFolders({run});
        QVERIFY(ready.wait(120000));
        const RunRef te = m_window->workspace()->findRun(QStringLiteral("terun"));
        QVERIFY(te.isValid());
        // Both files' high-precision tensors (the ingest may still be on the second when the window is ready).
        const auto hp = [&] {
            const std::vector<Dump> all = m_window->workspace()->catalog().dumps(te);
            return std::count_if(all.begin(), all.end(),
                [](const Dump &d) { return d.record.dataset == QLatin1String("high_precision"); });
        };
        QTRY_COMPARE_WITH_TIMEOUT(hp(), 2, 60000);
        const std::vector<Dump> dumps = m_window->workspace()->catalog().dumps(te);
        QStringList layers;
        for (const Dump &d : dumps)
            layers << d.record.layer + QLatin1Char('/') + d.record.tensor + QLatin1Char('/') + d.record.dataset;
        const auto dumpOf = [&](const char *layer) {
            const auto it = std::find_if(dumps.begin(), dumps.end(), [&](const Dump &d) {
                return d.record.layer.startsWith(QLatin1String(layer))
                    && d.record.dataset.endsWith(QLatin1String("high_precision"));
            });
            if (it == dumps.end())
                qFatal("no dump of %s among %s", layer, qPrintable(layers.join(QStringLiteral(", "))));
            return *it;
        };
        // The NVFP4 dump is mapped under the recipe TE quantized it with, whatever the picker held.
        m_blocks->setRecipe(QStringLiteral("mxfp8"));
        m_window->selection()->set(te, dumpOf("fc2").record.layer, dumpOf("fc2").record.tensor, 100);
        QTRY_VERIFY_WITH_TIMEOUT(!m_blocks->isComputing() && m_blocks->result() && m_blocks->result()->te, 60000);
        QCOMPARE(m_blocks->shownMap()->recipe.name(), QStringLiteral("nvfp4"));
        m_window->selection()->set(te, dumpOf("fc1").record.layer, dumpOf("fc1").record.tensor, 100);
        QTRY_VERIFY_WITH_TIMEOUT(!m_blocks->isComputing() && m_blocks->result() && m_blocks->result()->te, 60000);
        QCOMPARE(m_blocks->sources(),
            (QStringList {QStringLiteral("recipe"), QStringLiteral("rowwise"), QStringLiteral("columnwise")}));
        QVERIFY(!m_blocks->result()->te->equal());
        QVERIFY(m_blocks->statusText().contains(QLatin1String("Transformer Engine's quantization")));
        QTRY_VERIFY_WITH_TIMEOUT(m_blocks->result()->map.recipe.name() == QLatin1String("mxfp8"), 60000);
        m_blocks->setSource(QStringLiteral("rowwise"));
        QCOMPARE(m_blocks->shownMap(), &m_blocks->result()->te->copies.front().map);
        // TE's block (9, 2) decodes with twice its scale: every value off by its own size, flagged and first.
        const BlockMap *row = m_blocks->shownMap();
        QCOMPARE(row->ranked(1).front(), 9 * row->gridCols + 2);
        QVERIFY(row->flagged(9 * row->gridCols + 2));
        QCOMPARE(row->flaggedCount(), int64_t(1));
        m_blocks->setSource(QStringLiteral("columnwise"));
        const BlockMap *col = m_blocks->shownMap();
        QCOMPARE(col->rows, int64_t(384)); // the transpose's view
        m_blocks->selectBlock(0);
        auto *values = m_blocks->findChild<QCustomPlot *>(QStringLiteral("blockValuesPlot"));
        auto *bars = qobject_cast<QCPBars *>(values->plottable(0));
        double count = 0;
        for (auto it = bars->data()->constBegin(); it != bars->data()->constEnd(); ++it)
            count += it->value;
        QVERIFY(count > 0 && count <= 32);
    }

private:
    QTemporaryDir m_tmp;
    DemoPlan m_plan;
    std::unique_ptr<MainWindow> m_window;
    BlockMapView *m_blocks = nullptr;
    RunRef m_fp8;
};

FP8SCOPE_TEST_GUI_MAIN(TestBlocksView)
#include "tst_blocksview.moc"

// The window on real folders (issue 45): names that stay apart when shortened, legends where the data is not
// (and kept at every size), docks of per-layer data that step aside while a folder has none, a folder of TE
// statistics opening on a statistic that says something, short series drawn raw, empty views without axes,
// files left out listed in the problems panel. Geometry is checked where the item is about geometry.
#include "app/gui/appsettings.h"
#include "app/gui/mainwindow.h"
#include "core/demo/scenarios.h"
#include "core/formats/shortnames.h"
#include "core/report/triagereport.h"
#include "guitest.h"
#include "testmain.h"
#include "views/compare/compareview.h"
#include "views/compare/evalchart.h"
#include "views/curves/curvestack.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/histogram/histogramview.h"
#include "views/models/problemsmodel.h"
#include "views/models/runlistmodel.h"
#include "views/plotting/legendplacement.h"
#include "views/plotting/qcp.h"
#include "views/plotting/textwrap.h"
#include "views/report/reportrenderer.h"
#include "views/triage/triagewizard.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"
#include "windowtest.h"

#include <QDockWidget>
#include <QRegularExpression>
#include <QScrollArea>
#include <QSignalSpy>
#include <QSplitter>
#include <QTabWidget>
#include <QTableView>
#include <QTest>
#include <QToolButton>

#include <cmath>
#include <set>

using namespace fp8scope;
using guitest::openWindow;
using guitest::writeFile;

namespace {

// Eight of Megatron-LM's functional-test variants of one model, as their folders are named.
const QStringList kMegatronVariants {
    QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp1_pp1_bf16_baseline"),
    QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp1_pp1_fp8_no_model_parallel"),
    QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp1_pp2_fp8_pp"),
    QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp2_pp2_fp8_tp_pp"),
    QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp2_pp2_fp8_tp_pp_sp"),
    QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp2_pp2_native_fp8_tp_pp_sp"),
    QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp4_pp1_fp8_tp"),
    QStringLiteral("gpt3_345m_weekly_dgx_h100_1N8G_mcore_tp1_pp4_fp8_pp"),
};

// A loss curve of `points` points: falling from 10 towards 2.6, a little noise, each run a little apart.
QByteArray lossCsv(int points, int stride, double offset)
{
    QByteArray csv = "step,lm loss\n";
    for (int i = 1; i <= points; ++i) {
        const int step = i * stride;
        const double loss = 2.6 + offset + 7.4 * std::exp(-step / 400.0) + 0.03 * std::sin(step * 0.37);
        csv += QByteArray::number(step) + ',' + QByteArray::number(loss, 'g', 8) + '\n';
    }
    return csv;
}

// A plot names its curves: a legend over none of their points, inside the plot, or labels at the lines' ends,
// one a curve, none over another. Returns the rectangles of what names them.
QList<QRectF> checkLegendKept(QCustomPlot *plot, int curves)
{
    QList<QRectF> rects;
    std::set<QString> names;
    if (plot->legend->visible()) {
        for (int i = 0; i < plot->legend->itemCount(); ++i) {
            if (auto *item = qobject_cast<QCPPlottableLegendItem *>(plot->legend->item(i)))
                names.insert(item->plottable()->name());
        }
        const QRectF legend = legendRect(plot);
        rects << legend;
        [&] {
            QVERIFY(QRectF(plot->viewport()).contains(legend));
            QCOMPARE(pointsInside(plot, legend), 0);
            QVERIFY(directLabels(plot).isEmpty());
        }();
    } else if (auto *toggle = plot->parentWidget()->findChild<QToolButton *>(QStringLiteral("curveNames"));
               directLabels(plot).isEmpty() && toggle && toggle->isVisibleTo(plot->parentWidget())) {
        // Neither fits a plot this short: the names on demand, the legend no larger than the plot.
        toggle->click();
        plot->replot();
        [&] {
            QVERIFY(plot->legend->visible());
            QVERIFY(legendRect(plot).height() <= plot->axisRect()->rect().height());
        }();
        for (int i = 0; i < plot->legend->itemCount(); ++i) {
            if (auto *item = qobject_cast<QCPPlottableLegendItem *>(plot->legend->item(i)))
                names.insert(item->plottable()->name());
        }
        toggle->click();
    } else {
        const QStringList labels = directLabels(plot, &rects);
        names.insert(labels.begin(), labels.end());
        [&] {
            auto *t = plot->parentWidget()->findChild<QToolButton *>(QStringLiteral("curveNames"));
            QVERIFY2(!labels.isEmpty(),
                qPrintable(QStringLiteral("neither a legend nor labels: axes %1x%2, names button %3")
                               .arg(plot->axisRect()->rect().width())
                               .arg(plot->axisRect()->rect().height())
                               .arg(t ? int(t->isVisibleTo(plot->parentWidget())) : -1)));
            for (qsizetype i = 1; i < rects.size(); ++i)
                QVERIFY2(!rects[i].intersects(rects[i - 1].adjusted(0, 0, 0, -0.5)), qPrintable(labels[i]));
            // Right of the axes, in the plot, over none of its points.
            const QRectF area = plot->axisRect()->rect();
            for (const QRectF &r : rects) {
                QVERIFY(r.left() >= area.right() && QRectF(plot->viewport()).contains(r));
                QVERIFY(r.top() >= area.top() - 1 && r.bottom() <= area.bottom() + 1);
                QCOMPARE(pointsInside(plot, r), 0);
            }
        }();
    }
    [&] { QVERIFY2(names.size() >= size_t(curves), qPrintable(QString::number(names.size()))); }();
    return rects;
}

// The rectangle a comparison's departure interval covers on a curve view, in the plot's pixels.
QRectF departureRect(CurveView *view, const ComparisonData &d)
{
    const auto &dep = d.statistic.departure;
    const double x1 = view->plot()->xAxis->coordToPixel(view->plotX(d.run, double(dep.low)));
    const double x2 = view->plot()->xAxis->coordToPixel(view->plotX(d.run, double(dep.high)));
    const QRect area = view->plot()->axisRect()->rect();
    return QRectF(QPointF(std::min(x1, x2) - 2, area.top()), QPointF(std::max(x1, x2) + 2, area.bottom()));
}

} // namespace

class TestLayout : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void shortNamesTellRunsApart();
    void legendGoesWhereTheDataIsNot();
    void eightRunsStayApartAndKeepALegend_data();
    void eightRunsStayApartAndKeepALegend();
    void legendKeepsOffTheDeparture_data();
    void legendKeepsOffTheDeparture();
    void evalChartReadsTwentyTasks();
    void focusGivesATabTheWindow();
    void plotsStackOnOneXAxis();
    void wizardOnAFreshProfile();
    void exportsKeepTheirWholeTitle();
    void reportFiguresKeepOffTheDeparture();
    void docksOfLayerDataStepAside();
    void teStatisticsOpenOnWhatSaysSomething();
    void shortAndSparseSeriesAreDrawnRaw();
    void skippedFilesAreListed();

private:
    QTemporaryDir m_tmp;
    QString m_eight;
    ScenarioPlan m_mid;
};

void TestLayout::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    guitest::keepSettingsIn(m_tmp);
    m_eight = m_tmp.filePath(QStringLiteral("eight"));
    for (int i = 0; i < kMegatronVariants.size(); ++i) {
        QVERIFY(writeFile(m_eight + QLatin1Char('/') + kMegatronVariants[i] + QStringLiteral("/wandb_export.csv"),
            lossCsv(300, 10, 0.04 * i)));
    }
    QString error;
    QVERIFY2(generateScenario(m_tmp.filePath(QStringLiteral("mid")), Scenario::MidRunInstability, 11, &m_mid, &error),
        qPrintable(error));
}

void TestLayout::shortNamesTellRunsApart()
{
    const QStringList shortNames = distinctShortNames(kMegatronVariants);
    QCOMPARE(shortNames.size(), kMegatronVariants.size());
    QCOMPARE(std::set<QString>(shortNames.begin(), shortNames.end()).size(), size_t(kMegatronVariants.size()));
    // What all share is gone; what one has alone stays whole.
    QCOMPARE(shortNames[0], QStringLiteral("tp1_pp1_bf16_baseline"));
    QCOMPARE(shortNames[4], QStringLiteral("tp2_pp2_fp8_tp_pp_sp"));
    QCOMPARE(shortNames[5], QStringLiteral("tp2_pp2_native_fp8_tp_pp_sp"));
    // Eliding each in its middle, as a narrow column does, made two of them one.
    const auto middle = [](const QString &s) -> QString { return s.left(6) + QChar(0x2026) + s.right(5); };
    QCOMPARE(middle(kMegatronVariants[4]), middle(kMegatronVariants[5]));
    // A limit: shortened where they stay apart, whole where they would not.
    const QStringList limited = distinctShortNames(kMegatronVariants, 16);
    QCOMPARE(std::set<QString>(limited.begin(), limited.end()).size(), size_t(kMegatronVariants.size()));
    for (const QString &s : limited)
        QVERIFY2(s.size() <= 16 || shortNames.contains(s), qPrintable(s));
    QVERIFY(std::any_of(limited.begin(), limited.end(), [](const QString &s) { return s.contains(QChar(0x2026)); }));
    // Shared ends that are words, not characters: "fp8-a" and "fp8-b" keep their last words.
    QCOMPARE(distinctShortNames({QStringLiteral("run-fp8-a"), QStringLiteral("run-fp8-b")}),
        (QStringList {QStringLiteral("a"), QStringLiteral("b")}));
    // A name that is all shared keeps its last word; one name stays whole; equal names stay equal.
    QCOMPARE(distinctShortNames({QStringLiteral("llama_fp8"), QStringLiteral("llama_fp8_retry")}),
        (QStringList {QStringLiteral("fp8"), QStringLiteral("retry")}));
    QCOMPARE(distinctShortNames({QStringLiteral("only_one")}), QStringList {QStringLiteral("only_one")});
    // An empty name (a run checked alone has no baseline to name) stays empty, the other whole.
    QCOMPARE(distinctShortNames({QString(), QStringLiteral("only_run")}),
        (QStringList {QString(), QStringLiteral("only_run")}));
    QCOMPARE(distinctShortNames({QStringLiteral("x_a"), QStringLiteral("x_a"), QStringLiteral("x_b")}),
        (QStringList {QStringLiteral("a"), QStringLiteral("a"), QStringLiteral("b")}));
}

void TestLayout::legendGoesWhereTheDataIsNot()
{
    QCustomPlot plot;
    plot.setViewport(QRect(0, 0, 500, 320));
    plot.legend->setVisible(true);
    QCPGraph *g = plot.addGraph();
    g->setName(QStringLiteral("a rising curve"));
    // Rising from the bottom left to the top right: the top right corner is taken, the top left free.
    for (int i = 0; i <= 100; ++i)
        g->addData(i, i);
    plot.xAxis->setRange(0, 100);
    plot.yAxis->setRange(0, 100);
    LegendPlacement p = placeLegend(&plot);
    QVERIFY(!p.outside);
    QCOMPARE(p.corner, Qt::AlignTop | Qt::AlignLeft);
    QCOMPARE(pointsInside(&plot, legendRect(&plot)), 0);
    QVERIFY(plot.axisRect()->rect().contains(legendRect(&plot).toRect()));
    // A marked region over the top left (a departure): the bottom right, which the curve leaves free too.
    auto *mark = new QCPItemRect(&plot);
    mark->topLeft->setCoords(0, 100);
    mark->bottomRight->setCoords(30, 0);
    mark->setProperty(kKeepClearProperty, true);
    plot.replot();
    p = placeLegend(&plot);
    QVERIFY(!p.outside);
    QCOMPARE(p.corner, Qt::AlignBottom | Qt::AlignRight);
    // Data in every corner: above the axes, covering none of it.
    QCPGraph *h = plot.addGraph();
    h->setName(QStringLiteral("a falling curve"));
    for (int i = 0; i <= 100; ++i)
        h->addData(i, 100 - i);
    QCPGraph *flat = plot.addGraph();
    flat->setName(QStringLiteral("two flat lines"));
    for (int i = 0; i <= 100; ++i) {
        flat->addData(i, 1);
        flat->addData(i, 99);
    }
    p = placeLegend(&plot);
    QVERIFY(p.outside);
    QVERIFY(legendRect(&plot).bottom() <= plot.axisRect()->rect().top());
    // Room again: back inside.
    plot.removeGraph(flat);
    plot.removeGraph(h);
    mark->setVisible(false);
    p = placeLegend(&plot);
    QVERIFY(!p.outside);
    QVERIFY(plot.axisRect()->rect().contains(legendRect(&plot).toRect()));
    // Data in every corner and a name longer than the plot is wide: a row above would be cut, so the name is
    // written right of the axes, elided, over none of the points, within the plot.
    QCPGraph *everywhere = plot.addGraph();
    everywhere->setName(QStringLiteral("decoder.layers.9.mlp.linear_fc2 activation of the run fp8_with_a_name_that_"
                                       "goes_on_and_on_past_the_plot"));
    for (int i = 0; i <= 100; ++i) {
        everywhere->addData(i, 2);
        everywhere->addData(i, 98);
    }
    g->setVisible(false);
    plot.legend->setVisible(true);
    p = placeLegend(&plot);
    QVERIFY(p.labels && !p.outside);
    QList<QRectF> rects;
    QCOMPARE(directLabels(&plot, &rects).size(), 1);
    QVERIFY(QRectF(plot.viewport()).contains(rects.front()));
    QVERIFY(rects.front().left() >= plot.axisRect()->rect().right());
    QCOMPARE(pointsInside(&plot, rects.front()), 0);
}

void TestLayout::eightRunsStayApartAndKeepALegend_data()
{
    QTest::addColumn<QSize>("size");
    QTest::newRow("1366x768") << QSize(1366, 768);
    QTest::newRow("1920x1080") << QSize(1920, 1080);
}

void TestLayout::eightRunsStayApartAndKeepALegend()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_eight}, size);
    QVERIFY(w);
    QCOMPARE(w->workspace()->runCount(), 8);
    // The run list: names apart, the whole name on hover.
    QAbstractItemModel *runs = w->runTable()->model();
    std::set<QString> listed;
    for (int r = 0; r < runs->rowCount(); ++r) {
        const QString shown = runs->index(r, RunListModel::NameColumn).data().toString();
        listed.insert(shown);
        QVERIFY2(!shown.startsWith(QLatin1String("gpt3_345m")), qPrintable(shown));
        QVERIFY(runs->index(r, RunListModel::NameColumn)
                    .data(Qt::ToolTipRole)
                    .toString()
                    .startsWith(QLatin1String("gpt3_345m_weekly_dgx_h100_1N8G_mcore_")));
    }
    QCOMPARE(listed.size(), size_t(8));
    // As drawn: the column's width less the check box and colour square, elided in the middle by the view.
    QTableView *table = w->runTable();
    const int room = table->columnWidth(RunListModel::NameColumn) - 50;
    std::set<QString> drawn;
    for (const QString &name : listed)
        drawn.insert(table->fontMetrics().elidedText(name, Qt::ElideMiddle, room));
    QVERIFY2(drawn.size() == 8, qPrintable(QStringList(drawn.begin(), drawn.end()).join(QLatin1Char(','))));
    // The curves' legend: there, eight entries apart, over no point of any curve.
    CurveView *curves = w->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    QTRY_COMPARE(curves->curves().size(), size_t(8));
    curves->refetchNow();
    QCustomPlot *plot = curves->plot();
    plot->replot();
    checkLegendKept(plot, 8);
    guitest::shoot(w.get(), QStringLiteral("15-eight-runs.png"));
    // The Curves tab given less height (a laptop with the heatmap open): still named, now at the lines' ends.
    curves->setFixedHeight(200);
    QTRY_VERIFY(curves->height() == 200);
    curves->refetchNow();
    plot->replot();
    checkLegendKept(plot, 8);
}

void TestLayout::legendKeepsOffTheDeparture_data()
{
    QTest::addColumn<QSize>("size");
    QTest::newRow("1366x768") << QSize(1366, 768);
    QTest::newRow("1920x1080") << QSize(1920, 1080);
}

void TestLayout::legendKeepsOffTheDeparture()
{
    QFETCH(QSize, size);
    auto w = openWindow({m_tmp.filePath(QStringLiteral("mid"))}, size);
    QVERIFY(w);
    w->showComparison();
    CompareView *view = w->compare();
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->comparison(), 120000);
    QTest::qWait(100);
    const ComparisonData *d = view->comparison();
    QVERIFY(d->statistic.departure.step.has_value());
    for (CurveView *c : {view->overlay(), view->difference()}) {
        c->refetchNow();
        c->updateLegend();
        c->plot()->replot();
        const QRectF departure = departureRect(c, *d);
        for (const QRectF &legend : checkLegendKept(c->plot(), 1)) {
            QVERIFY2(!legend.intersects(departure),
                qPrintable(QStringLiteral("%1: legend %2,%3 %4x%5 over the departure %6..%7")
                               .arg(c->objectName())
                               .arg(legend.x())
                               .arg(legend.y())
                               .arg(legend.width())
                               .arg(legend.height())
                               .arg(departure.left())
                               .arg(departure.right())));
        }
    }
}

void TestLayout::evalChartReadsTwentyTasks()
{
    // Twenty tasks, each scored on two inference precisions: forty rows of two-line labels.
    std::vector<analysis::EvalRow> rows;
    for (int t = 0; t < 20; ++t) {
        for (const char *inference : {"bf16", "fp8"}) {
            analysis::EvalRow r;
            r.task = QStringLiteral("mmlu_high_school_subject_%1").arg(t);
            r.metric = QStringLiteral("acc");
            r.inference = QLatin1String(inference);
            r.baseline = 0.3 + 0.02 * t;
            r.run = r.baseline - (t % 5 == 0 ? 0.08 : 0.01);
            r.difference = r.run - r.baseline;
            r.standardError = 0.02;
            r.z = r.difference / r.standardError;
            r.significant = r.z <= -2;
            rows.push_back(r);
        }
    }
    // In a pane shorter than the chart, as the comparison's Evals tab has it: scrolled, never squeezed.
    QScrollArea scroll;
    scroll.setWidgetResizable(true);
    auto *chart = new EvalChart;
    scroll.setWidget(chart);
    scroll.resize(520, 300);
    scroll.show();
    QVERIFY(QTest::qWaitForWindowExposed(&scroll));
    chart->setRows(rows, QStringLiteral("bf16_baseline"), QStringLiteral("fp8_tp_pp_sp"), QColor(Qt::darkRed));
    QTRY_VERIFY(chart->height() >= chart->minimumHeight());
    QCustomPlot *plot = chart->plot();
    plot->replot();
    // The task names level, one under another, each row as tall as its two-line label.
    QCOMPARE(plot->yAxis->tickLabelRotation(), 0.0);
    const double label = 2 * QFontMetricsF(plot->yAxis->tickLabelFont()).height();
    for (int k = 1; k < int(rows.size()); ++k) {
        const double gap = std::abs(plot->yAxis->coordToPixel(k) - plot->yAxis->coordToPixel(k - 1));
        QVERIFY2(
            gap >= label, qPrintable(QStringLiteral("row %1: %2 px for a %3 px label").arg(k).arg(gap).arg(label)));
    }
    QVERIFY(plot->yAxis->coordToPixel(0) < plot->yAxis->coordToPixel(1)); // the first task on top
    // The legend above the axes, off the bars.
    QVERIFY(plot->legend->visible());
    QVERIFY(legendRect(plot).bottom() <= plot->axisRect()->rect().top());
    // The scores along x: their tick labels apart.
    const QVector<double> ticks = plot->xAxis->tickVector();
    QVERIFY(ticks.size() >= 2);
    const QFontMetricsF fm(plot->xAxis->tickLabelFont());
    const QVector<QString> texts = plot->xAxis->tickVectorLabels();
    for (int i = 1; i < ticks.size(); ++i) {
        const double gap = plot->xAxis->coordToPixel(ticks[i]) - plot->xAxis->coordToPixel(ticks[i - 1]);
        QVERIFY(gap > (fm.horizontalAdvance(texts[i]) + fm.horizontalAdvance(texts[i - 1])) / 2);
    }
}

void TestLayout::focusGivesATabTheWindow()
{
    // The demo pair: both runs log TE's statistics, so the Layers tab draws both.
    const QString pair = m_tmp.filePath(QStringLiteral("focuspair"));
    QString error;
    QVERIFY2(guitest::generatePair(pair, 5, 6, 1000, nullptr, &error), qPrintable(error));
    auto w = openWindow({pair}, QSize(1920, 1080));
    QVERIFY(w);
    w->showComparison();
    CompareView *view = w->compare();
    QTRY_VERIFY_WITH_TIMEOUT(!view->isComputing() && view->comparison(), 120000);
    QTest::qWait(50);
    const int listsWidth = view->tabs()->width();
    QVERIFY(listsWidth < view->splitter()->width() * 47 / 100); // the lists' share, as first shown
    view->tabs()->setCurrentIndex(CompareView::kLayersTab);
    // The maps' tab takes 55 % of the comparison's width when chosen, or as much as the plots' least width leaves.
    const int plotsLeast = view->splitter()->widget(0)->minimumSizeHint().width() + view->splitter()->handleWidth();
    const int wanted = std::min(view->splitter()->width() * 54 / 100, view->splitter()->width() - plotsLeast);
    QTRY_VERIFY2(view->tabs()->width() >= wanted && view->tabs()->width() > listsWidth + 30,
        qPrintable(QStringLiteral("%1 of %2 (%3 wanted, %4 before)")
                       .arg(view->tabs()->width())
                       .arg(view->splitter()->width())
                       .arg(wanted)
                       .arg(listsWidth)));
    auto *base = view->findChild<HeatmapView *>(QStringLiteral("compareBaselineHeatmap"));
    auto *run = view->findChild<HeatmapView *>(QStringLiteral("compareRunHeatmap"));
    QVERIFY(base && run);
    QTRY_VERIFY_WITH_TIMEOUT(!base->isLoading() && !run->isLoading() && !base->heatmap().layers.isEmpty()
            && !run->heatmap().layers.isEmpty(),
        60000);
    QTest::qWait(50);
    const QSize before = base->plot()->axisRect()->rect().size();
    QList<QDockWidget *> shown;
    for (QDockWidget *d : w->findChildren<QDockWidget *>()) {
        if (!d->isHidden())
            shown << d;
    }
    QVERIFY(!shown.isEmpty());
    auto *heatDock = w->findChild<QDockWidget *>(QStringLiteral("heatmapDock"));
    auto *problemsDock = w->findChild<QDockWidget *>(QStringLiteral("problemsDock"));
    QVERIFY(heatDock && problemsDock);
    // Of docks tabbed in one place, the one in front is the one drawn.
    const auto inFront = [](QDockWidget *d) { return !d->isHidden() && !d->visibleRegion().isEmpty(); };
    heatDock->raise();
    QTRY_VERIFY(inFront(heatDock) && !inFront(problemsDock));
    // One focus state: the comparison's Focus button and View > Focus on the Tab are the same, each shows it.
    auto *focus = view->findChild<QToolButton *>(QStringLiteral("compareFocus"));
    auto *action = w->findChild<QAction *>(QStringLiteral("focusTab"));
    QVERIFY(focus && focus->isVisible() && action);
    focus->click();
    QVERIFY(w->isFocusMode() && focus->isChecked() && action->isChecked());
    for (QDockWidget *d : std::as_const(shown))
        QVERIFY2(d->isHidden(), qPrintable(d->objectName()));
    // The comparison has the window: its maps are wider than they were, the plots still beside them.
    QTRY_VERIFY(view->width() >= w->width() * 95 / 100);
    QVERIFY(view->overlay()->isVisible());
    for (HeatmapView *h : {base, run}) {
        QTRY_VERIFY(h->plot()->axisRect()->rect().width() > before.width());
        const QSize size = h->plot()->axisRect()->rect().size();
        QVERIFY2(size.height() >= before.height(),
            qPrintable(QStringLiteral("%1: %2x%3 (before %4x%5)")
                           .arg(h->objectName())
                           .arg(size.width())
                           .arg(size.height())
                           .arg(before.width())
                           .arg(before.height())));
    }
    // The menu ends it: the button follows, everything comes back as it was, the heatmap in front of the
    // problems as before.
    action->trigger();
    QVERIFY(!w->isFocusMode() && !focus->isChecked() && !action->isChecked());
    for (QDockWidget *d : std::as_const(shown))
        QVERIFY2(!d->isHidden(), qPrintable(d->objectName()));
    QTRY_VERIFY(inFront(heatDock));
    QVERIFY(!inFront(problemsDock));
    // From the menu, ended by the button: the same state both ways.
    action->trigger();
    QVERIFY(w->isFocusMode() && focus->isChecked());
    QVERIFY(heatDock->isHidden());
    QTRY_VERIFY(view->width() >= w->width() * 95 / 100);
    focus->click();
    QVERIFY(!w->isFocusMode() && !action->isChecked() && !focus->isChecked());
    QVERIFY(!heatDock->isHidden());
    QTRY_VERIFY(inFront(heatDock) && !inFront(problemsDock));
}

void TestLayout::plotsStackOnOneXAxis()
{
    const QString pair = m_tmp.filePath(QStringLiteral("stackpair"));
    QString error;
    QVERIFY2(guitest::generatePair(pair, 7, 4, 2000, nullptr, &error), qPrintable(error));
    auto w = openWindow({pair}, QSize(1366, 768));
    QVERIFY(w);
    CurveStack *stack = w->curveStack();
    w->curves()->setStatistic(QStringLiteral("lm loss"));
    QCOMPARE(stack->plots().size(), 1);
    // Stack Plot, twice: grad norm, then learning rate (what the runs have, not yet shown), one under another.
    auto *add = w->findChild<QToolButton *>(QStringLiteral("stackPlot"));
    QVERIFY(add && add->isVisible());
    add->click();
    add->click();
    QCOMPARE(stack->plots().size(), 3);
    QCOMPARE(stack->stackedStatistics(), (QStringList {QStringLiteral("grad norm"), QStringLiteral("learning rate")}));
    // The window stays as it was: the stack does not raise its minimum height past a laptop's screen.
    QTest::qWait(50);
    QCOMPARE(w->size(), QSize(1366, 768));
    QVERIFY(w->minimumSizeHint().height() <= 720);
    for (CurveView *p : stack->plots())
        QTRY_VERIFY2(!p->curves().empty(), qPrintable(p->statistic()));
    QTest::qWait(50);
    for (int i = 1; i < 3; ++i) {
        QVERIFY(stack->plots()[i]->y() > stack->plots()[i - 1]->y());
        QVERIFY(stack->plots()[i]->height() >= 100);
    }
    if (!qEnvironmentVariableIsEmpty("FP8SCOPE_SHOT_DIR")) {
        for (const QSize size : {QSize(1366, 768), QSize(1920, 1080)}) {
            w->resize(size);
            QTest::qWait(200);
            guitest::shoot(w.get(), QStringLiteral("16-stacked-plots.png"));
        }
        w->resize(1366, 768);
        QTest::qWait(100);
    }
    // One zoom for all: the first plot's x range is every plot's.
    CurveView *top = stack->plots()[0], *middle = stack->plots()[1], *bottom = stack->plots()[2];
    top->plot()->xAxis->setRange(400, 900);
    for (CurveView *p : {middle, bottom}) {
        QCOMPARE(p->plot()->xAxis->range().lower, 400.0);
        QCOMPARE(p->plot()->xAxis->range().upper, 900.0);
    }
    // A pan of the bottom one moves the others back.
    bottom->plot()->xAxis->setRange(500, 1000);
    QCOMPARE(top->plot()->xAxis->range().lower, 500.0);
    QCOMPARE(middle->plot()->xAxis->range().upper, 1000.0);
    // One cursor: the mouse over the middle plot is a line in the others, gone when it leaves.
    top->plot()->replot();
    middle->plot()->replot();
    const QRect area = middle->plot()->axisRect()->rect();
    const QPoint at(area.left() + area.width() / 3, area.center().y());
    QTest::mouseMove(middle->plot(), at);
    const double x = middle->plot()->xAxis->pixelToCoord(at.x());
    QTRY_VERIFY(std::abs(top->hoverLine() - x) < 1e-9);
    QVERIFY(std::abs(bottom->hoverLine() - x) < 1e-9);
    QVERIFY(std::isnan(middle->hoverLine()));
    QEvent leave(QEvent::Leave);
    QCoreApplication::sendEvent(middle->plot(), &leave);
    QVERIFY(std::isnan(top->hoverLine()));
    // Remove: the middle one goes; the first has no Remove.
    QVERIFY(!top->findChild<QToolButton *>(QStringLiteral("removeStackedPlot")));
    auto *remove = middle->findChild<QToolButton *>(QStringLiteral("removeStackedPlot"));
    QVERIFY(remove);
    remove->click();
    QCOMPARE(stack->plots().size(), 2);
    QCOMPARE(stack->stackedStatistics(), QStringList {QStringLiteral("learning rate")});
    // The stack is kept with the window's settings, and comes back with the next window's first folder.
    w->close();
    QCOMPARE(AppSettings().stackedStatistics(), QStringList {QStringLiteral("learning rate")});
    auto again = openWindow({pair}, QSize(1366, 768));
    QVERIFY(again);
    QCOMPARE(again->curveStack()->stackedStatistics(), QStringList {QStringLiteral("learning rate")});
    again->curveStack()->setStackedStatistics({});
    again->close();
    QVERIFY(AppSettings().stackedStatistics().isEmpty());
}

void TestLayout::wizardOnAFreshProfile()
{
    // A profile never used (no window state, no splitter sizes kept), a laptop's screen.
    QTemporaryDir profile;
    QVERIFY(profile.isValid());
    guitest::keepSettingsIn(profile);
    auto w = openWindow({m_tmp.filePath(QStringLiteral("mid"))}, QSize(1366, 768));
    QVERIFY(w);
    w->showTriage();
    TriageWizard *wizard = w->triage();
    QVERIFY(wizard);
    // The size the wizard takes on a 1366x768 screen (the offscreen platform's screen is 800x600, where the
    // wizard would sit at its minimum width, which differs between a debug and a release build).
    wizard->resize(QSize(1200, 800).boundedTo(QSize(1366, 768) * 0.95));
    QTRY_VERIFY_WITH_TIMEOUT(!wizard->isComputing() && wizard->comparison(), 120000);
    // The loss step names the departure as the departure, and the end as the end.
    wizard->setStep(TriageWizard::LossStep);
    QString verdict = wizard->verdictText();
    verdict.remove(QRegularExpression(QStringLiteral("<[^>]*>")));
    const int64_t departure = *wizard->comparison()->statistic.departure.step;
    const int64_t end = wizard->comparison()->statistic.departure.trace.steps.back();
    QVERIFY(end > departure);
    QVERIFY2(verdict.contains(QStringLiteral("It departs at step %1 of the").arg(departure)), qPrintable(verdict));
    QVERIFY2(
        verdict.contains(QStringLiteral("the end is step %1, the last both logged").arg(end)), qPrintable(verdict));
    QVERIFY2(!verdict.contains(QStringLiteral("at the end (step %1").arg(departure)), qPrintable(verdict));
    // The class step's heatmap: every layer's row named that fits, its cells built at the plot's width, at once.
    wizard->setStep(TriageWizard::ClassStep);
    HeatmapView *heat = wizard->heatmap();
    QTRY_VERIFY_WITH_TIMEOUT(heat->isVisible() && !heat->isLoading() && !heat->heatmap().layers.isEmpty(), 60000);
    QTest::qWait(100);
    heat->plot()->replot();
    const QCPRange rows = heat->plot()->yAxis->range();
    const double layers = double(heat->heatmap().layers.size());
    QVERIFY2(rows.size() >= std::min(3.0, layers) - 1e-9, qPrintable(QString::number(rows.size())));
    QVERIFY(rows.lower < layers - 0.5 && rows.upper > -0.5);
    // Laid out once the step's splitter has its sizes (later on a loaded machine): waited for, not assumed.
    QTRY_VERIFY_WITH_TIMEOUT(
        (heat->plot()->replot(), heat->plot()->axisRect()->height() > 100 && heat->plot()->axisRect()->width() > 50),
        10000);
    QVERIFY2(heat->plot()->yAxis->tickVectorLabels().size() > 1,
        qPrintable(QString::number(heat->plot()->yAxis->tickVectorLabels().size())));
    // A cell drawn where its layer's row is: the colour map's value there is the matrix's.
    int row = -1, column = -1;
    QVERIFY(heat->cellAt(heat->cellCentre(0, int(heat->heatmap().steps.size() / 2)), &row, &column));
    QCOMPARE(row, 0);
    // The class step's curves name the suspect layer, not the grey layers behind it.
    CurveView *curves = wizard->layerCurves();
    QTRY_VERIFY(curves->curves().size() > 2);
    QStringList names = directLabels(curves->plot());
    if (curves->plot()->legend->visible()) {
        for (int i = 0; i < curves->plot()->legend->itemCount(); ++i) {
            if (auto *item = qobject_cast<QCPPlottableLegendItem *>(curves->plot()->legend->item(i)))
                names << item->plottable()->name();
        }
    }
    QCOMPARE(names.size(), 1);
    // Whole, or (a plot too narrow for it) its end, the layer's index and GEMM, after an ellipsis.
    const QString named = names.front();
    QVERIFY2(named.startsWith(w->selection()->layer())
            || (named.startsWith(QChar(0x2026)) && named.size() > 8 && w->selection()->layer().endsWith(named.mid(1))),
        qPrintable(named));
}

void TestLayout::exportsKeepTheirWholeTitle()
{
    // A plot in a narrow dock, its title longer than the plot is wide.
    const QString pair = m_tmp.filePath(QStringLiteral("exportpair"));
    QString error;
    QVERIFY2(guitest::generatePair(pair, 9, 4, 400, nullptr, &error), qPrintable(error));
    auto w = openWindow({pair}, QSize(1366, 768));
    QVERIFY(w);
    CurveView *curves = w->curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    QTRY_VERIFY(!curves->curves().empty());
    const QString title = curves->title();
    const int narrow
        = QFontMetrics(QFont(curves->plot()->font().family(), 11, QFont::Bold)).horizontalAdvance(title) / 2;
    const QStringList lines = curves->titleLines(narrow);
    QVERIFY2(lines.size() >= 2, qPrintable(lines.join(QLatin1Char('/'))));
    // Whole: the lines are the title, each within the width.
    QCOMPARE(lines.join(QString()).remove(QLatin1Char(' ')), QString(title).remove(QLatin1Char(' ')));
    for (const QString &l : lines)
        QVERIFY2(QFontMetrics(QFont(curves->plot()->font().family(), 11, QFont::Bold)).horizontalAdvance(l) <= narrow,
            qPrintable(l));
    // At the size asked.
    const QString png = m_tmp.filePath(QStringLiteral("asked.png"));
    QVERIFY2(curves->exportPlot(png, &error, QSize(1200, 700)), qPrintable(error));
    QCOMPARE(QImage(png).size(), QSize(1200, 700));
    // Unasked: at least the plot's size on screen.
    const QString onScreen = m_tmp.filePath(QStringLiteral("screen.png"));
    QVERIFY2(w->histogram()->exportPlot(onScreen, &error), qPrintable(error));
    const QSize plotSize = w->histogram()->plot()->size() * w->histogram()->devicePixelRatioF();
    QVERIFY(QImage(onScreen).width() >= plotSize.width() && QImage(onScreen).height() >= plotSize.height());

    // The report's tables break a run name after its separators, not inside its words.
    QImage device(800, 600, QImage::Format_RGB32);
    const QFont font(QStringLiteral("DejaVu Sans"), 10);
    const QString name = kMegatronVariants[5];
    const QStringList wrapped = wrapText(name, font, QFontMetricsF(font, &device).horizontalAdvance(name) / 3, &device);
    QVERIFY(wrapped.size() >= 3);
    QCOMPARE(wrapped.join(QString()), name);
    for (qsizetype i = 0; i + 1 < wrapped.size(); ++i)
        QVERIFY2(wrapped[i].endsWith(QLatin1Char('_')), qPrintable(wrapped.join(QLatin1Char('/'))));
    // Numbers keep together.
    QCOMPARE(wrapText(QStringLiteral("-0.0123"), font, 1000, &device), QStringList {QStringLiteral("-0.0123")});
}

void TestLayout::reportFiguresKeepOffTheDeparture()
{
    // The PDF's curves of the mid-run instability, laid out as the renderer draws them (A4's text width and a
    // figure's height at 96 dpi): no legend, nor label, over the departure's interval or a drawn point.
    auto w = openWindow({m_tmp.filePath(QStringLiteral("mid"))}, QSize(1366, 768));
    QVERIFY(w);
    const Catalog &catalog = w->workspace()->catalog();
    RunRef baseline, run;
    for (const WorkspaceRun &r : w->workspace()->runs()) {
        if (r.run.name == m_mid.baseline)
            baseline = r.run.ref;
        if (r.run.name == m_mid.run)
            run = r.run.ref;
    }
    QString error;
    const auto doc = report::buildTriageReport(catalog, baseline, run, nullptr, {}, &error);
    QVERIFY2(doc, qPrintable(error));
    int checked = 0;
    for (const report::Section &section : doc->sections) {
        for (const report::Block &b : section.blocks) {
            const auto *figure = std::get_if<report::Figure>(&b);
            const auto *curve = figure ? std::get_if<report::CurveFigure>(&figure->content) : nullptr;
            if (!curve || !curve->markedSpan)
                continue;
            QCustomPlot plot;
            layOutCurveFigure(plot, *curve, QSize(643, int(figure->heightMm / 25.4 * 96)));
            const double x1 = plot.xAxis->coordToPixel(curve->markedSpan->first);
            const double x2 = plot.xAxis->coordToPixel(curve->markedSpan->second);
            const QRectF span(QPointF(std::min(x1, x2), plot.axisRect()->top()),
                QPointF(std::max(x1, x2), plot.axisRect()->bottom()));
            QList<QRectF> named = checkLegendKept(&plot, 1);
            for (const QRectF &r : named)
                QVERIFY2(!r.intersects(span), qPrintable(figure->caption));
            ++checked;
        }
    }
    QVERIFY(checked >= 1);
}

void TestLayout::docksOfLayerDataStepAside()
{
    // Logs only: no per-layer statistic, no dump. The layer tree, heatmap and histogram step aside.
    const QString logs = m_tmp.filePath(QStringLiteral("logsonly"));
    QVERIFY(writeFile(logs + QStringLiteral("/run_fp8/wandb_export.csv"), lossCsv(200, 10, 0)));
    auto w = openWindow({logs}, QSize(1366, 768));
    QVERIFY(w);
    const auto dock = [&](const char *name) { return w->findChild<QDockWidget *>(QLatin1String(name)); };
    // Nothing to list either: the problems, the heatmap's neighbour, go with it.
    for (const char *name : {"layersDock", "heatmapDock", "histogramDock", "problemsDock"})
        QVERIFY2(dock(name)->isHidden(), name);
    QVERIFY(!dock("runsDock")->isHidden());
    // The curves have the room the heatmap had (the statistics panel, which lists the runs' values, stays).
    QTRY_VERIFY2(w->curves()->height() > w->height() * 70 / 100, qPrintable(QString::number(w->curves()->height())));
    QVERIFY(w->curves()->width() > w->width() * 45 / 100);
    // A folder with per-layer statistics and dumps added (the demo pair): they come back.
    QString error;
    const QString pair = m_tmp.filePath(QStringLiteral("pair"));
    QVERIFY2(guitest::generatePair(pair, 3, 4, 400, nullptr, &error), qPrintable(error));
    QSignalSpy ready(w.get(), &MainWindow::ready);
    w->addFolders({pair});
    QVERIFY(ready.wait(120000));
    for (const char *name : {"layersDock", "heatmapDock", "histogramDock", "problemsDock"})
        QVERIFY2(!dock(name)->isHidden(), name);
}

void TestLayout::teStatisticsOpenOnWhatSaysSomething()
{
    const QString fixture = QDir(QString::fromLocal8Bit(qgetenv("FP8SCOPE_SOURCE_DIR")))
                                .absoluteFilePath(QStringLiteral("../shared/fixtures/real/nvdlfw_inspect_esm2"));
    if (!QFileInfo(fixture).isDir())
        QSKIP("../shared/fixtures/real is absent");
    // A copy: opening writes the store beside the logs.
    const QString folder = m_tmp.filePath(QStringLiteral("esm2"));
    QDir().mkpath(folder + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs"));
    for (const QString &f :
        QDir(fixture + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs")).entryList(QDir::Files))
        QVERIFY(QFile::copy(fixture + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs/") + f,
            folder + QStringLiteral("/rank_0/nvdlfw_inspect_statistics_logs/") + f));
    auto w = openWindow({folder}, QSize(1366, 768));
    QVERIFY(w);
    // Not `mse` (0.0000 wherever nothing was cast): the underflows, of the first layer's activation, drawn.
    QCOMPARE(w->curves()->statistic(), QStringLiteral("tensor:underflows%"));
    QVERIFY(!w->selection()->layer().isEmpty());
    QTRY_VERIFY(!w->curves()->curves().empty());
    QVERIFY(w->curves()->message().isEmpty());
    QVERIFY(w->curves()->axesShown());
    // No dumps: the histogram steps aside; had it been shown, it would draw no axes.
    QVERIFY(w->findChild<QDockWidget *>(QStringLiteral("histogramDock"))->isHidden());
    QVERIFY(!w->findChild<QDockWidget *>(QStringLiteral("heatmapDock"))->isHidden());
    QVERIFY(!w->histogram()->axesShown());
    // A tensor statistic with no tensor chosen: words on a blank plot, no axes.
    w->selection()->setLayer(QString());
    QTRY_VERIFY(!w->curves()->message().isEmpty());
    QVERIFY(!w->curves()->axesShown());
    QVERIFY(!w->curves()->plot()->xAxis->grid()->visible());
}

void TestLayout::shortAndSparseSeriesAreDrawnRaw()
{
    // Logged every 50 steps for 3100 steps: 62 points. Smoothed, its end would lag its last value.
    const QString sparse = m_tmp.filePath(QStringLiteral("sparse"));
    QVERIFY(writeFile(sparse + QStringLiteral("/a/wandb_export.csv"), lossCsv(62, 50, 0)));
    QVERIFY(writeFile(sparse + QStringLiteral("/b/wandb_export.csv"), lossCsv(400, 10, 0.1)));
    auto w = openWindow({sparse}, QSize(1366, 768));
    QVERIFY(w);
    CurveView *curves = w->curves();
    curves->setSmoothing(Smoothing::Ema, 0.9);
    curves->setStatistic(QStringLiteral("lm loss"));
    QTRY_COMPARE(curves->curves().size(), size_t(2));
    for (const CurveView::RunCurve &c : curves->curves()) {
        const bool dense = c.values.size() >= size_t(CurveView::kMinSmoothedPoints);
        QCOMPARE(c.smoothed->visible(), dense);
        QCOMPARE(c.raw->pen().color().alpha() == 255, !dense);
    }
    QVERIFY(std::any_of(curves->curves().begin(), curves->curves().end(),
        [](const CurveView::RunCurve &c) { return c.values.size() == 62 && !c.smoothed->visible(); }));
}

void TestLayout::skippedFilesAreListed()
{
    // `ingest` lists a file in no format it reads: the panel says so too, not "No problems".
    const QString folder = m_tmp.filePath(QStringLiteral("withnotes"));
    QVERIFY(writeFile(folder + QStringLiteral("/wandb_export.csv"), lossCsv(50, 10, 0)));
    QVERIFY(writeFile(folder + QStringLiteral("/launch_notes.txt"), "nodes: 4\n"));
    auto w = openWindow({folder}, QSize(1366, 768));
    QVERIFY(w);
    QAbstractItemModel *problems = w->problemsTable()->model();
    QCOMPARE(problems->rowCount(), 1);
    QCOMPARE(problems->index(0, ProblemsModel::FileColumn).data().toString(), QStringLiteral("launch_notes.txt"));
    QVERIFY(problems->index(0, ProblemsModel::MessageColumn).data().toString().contains(QLatin1String("not read")));
    QCOMPARE(w->findChild<QDockWidget *>(QStringLiteral("problemsDock"))->windowTitle(),
        QStringLiteral("Problems (1 skipped)"));
    // Said, but no failure: the status bar does not count it as an import problem.
    QVERIFY(!w->statusBar()->currentMessage().contains(QLatin1String("import problem")));
}

FP8SCOPE_TEST_GUI_MAIN(TestLayout)
#include "tst_layout.moc"

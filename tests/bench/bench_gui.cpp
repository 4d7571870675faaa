// GUI responsiveness, offscreen, in one run (medians; nothing asserted about time):
//   launch to the first complete paint of the demo workspace, cold (store deleted: ingest included) and warm
//     (store exists); reference: fp8scope-cli-equivalent ingest alone (RunStore::ingest) and an empty window;
//   pan/zoom of a 1,000,000-point series in the curve view (refetch from the store + replot), target 16 ms;
//     reference: a replot without refetch;
//   a 500-layer x 10,000-step heatmap: new data + replot, target 50 ms; reference: a replot of unchanged data;
//   a selection change on the demo (layer, tensor, step) to every view updated and repainted, target 100 ms.
// Usage: bench_gui [repeats]
#include "app/gui/mainwindow.h"
#include "benchutil.h"
#include "core/demo/demogenerator.h"
#include "core/store/runstore.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <cstdio>
#include <random>

using namespace fp8scope;
using bench::medianSeconds;

namespace {

struct Row {
    const char *what;
    double ms;
    double targetMs; // 0: none
    const char *reference;
    double referenceMs;
};

void openAndPaint(MainWindow &w, const QString &folder)
{
    QSignalSpy ready(&w, &MainWindow::ready);
    w.openFolders({folder});
    if (!ready.wait(300000))
        std::fprintf(stderr, "bench_gui: %s did not load\n", qPrintable(folder));
    w.grab(); // paints every view completely
}

} // namespace

int main(int argc, char **argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QTemporaryDir tmp;
    qputenv("XDG_CONFIG_HOME", QFile::encodeName(tmp.filePath(QStringLiteral("config"))));
    QApplication app(argc, argv);
    const int repeats = argc > 1 ? std::max(1, atoi(argv[1])) : 5;
    std::vector<Row> rows;

    const QString demo = tmp.filePath(QStringLiteral("demo"));
    QString error;
    if (!generateDemo(demo, DemoOptions {}, nullptr, &error)) {
        std::fprintf(stderr, "bench_gui: %s\n", qPrintable(error));
        return 1;
    }
    const QString storeDir = demo + QStringLiteral("/.fp8scope");

    // Launch to first complete paint.
    const double ingestOnly = medianSeconds(repeats, [&] {
        QDir(storeDir).removeRecursively();
        RunStore s;
        if (s.open(demo, &error))
            s.ingest();
    });
    const double cold = medianSeconds(repeats, [&] {
        QDir(storeDir).removeRecursively();
        MainWindow w(BackendChoice::Cpu, nullptr);
        w.show();
        openAndPaint(w, demo);
    });
    const double warm = medianSeconds(repeats, [&] {
        MainWindow w(BackendChoice::Cpu, nullptr);
        w.show();
        openAndPaint(w, demo);
    });
    const double empty = medianSeconds(repeats, [&] {
        MainWindow w(BackendChoice::Cpu, nullptr);
        w.show();
        w.grab();
    });
    rows.push_back({"launch to first paint, demo, cold", cold * 1e3, 0, "ingest alone", ingestOnly * 1e3});
    rows.push_back({"launch to first paint, demo, warm", warm * 1e3, 0, "empty window", empty * 1e3});

    MainWindow window(BackendChoice::Cpu, nullptr);
    window.resize(1600, 1000);
    window.show();
    openAndPaint(window, demo);

    // Selection changes on the demo: layer, tensor and step together, then a full repaint.
    {
        const Heatmap h = window.heatmap()->heatmap();
        window.curves()->setStatistic(QStringLiteral("tensor:underflows%"));
        std::mt19937 rng(7);
        const double sel = medianSeconds(repeats * 4, [&] {
            const qsizetype layer = qsizetype(rng() % uint32_t(h.layers.size()));
            const size_t step = rng() % h.steps.size();
            window.selection()->set(window.heatmap()->run(), h.layers[layer],
                rng() % 2 ? QStringLiteral("activation") : QStringLiteral("gradient"), h.steps[step]);
            window.grab();
        });
        rows.push_back({"selection change to all views repainted", sel * 1e3, 100, "", 0});
    }

    // A 1,000,000-point series: a wide CSV with one statistic.
    {
        const QString big = tmp.filePath(QStringLiteral("big"));
        QDir().mkpath(big);
        QFile f(big + QStringLiteral("/history_big.csv"));
        f.open(QIODevice::WriteOnly);
        QByteArray text = "step,lm loss\n";
        std::mt19937_64 rng(3);
        std::normal_distribution<double> noise(0, 0.05);
        for (int i = 0; i < 1000000; ++i) {
            text += QByteArray::number(i) + ',' + QByteArray::number(3 + 8 * std::exp(-i / 2e5) + noise(rng), 'g', 7)
                + '\n';
            if (text.size() > (1 << 22)) {
                f.write(text);
                text.clear();
            }
        }
        f.write(text);
        f.close();
        openAndPaint(window, big);
        CurveView *curves = window.curves();
        curves->setStatistic(QStringLiteral("lm loss"));
        QCustomPlot *plot = curves->plot();
        curves->resetZoom();
        const QCPRange full = plot->xAxis->range();
        int k = 0;
        const double pan = medianSeconds(repeats * 4, [&] {
            // Alternate: pan a tenth of the range, zoom in or out by 2x around the centre.
            QCPRange r = plot->xAxis->range();
            if (k % 3 == 0)
                r += r.size() * 0.1;
            else if (k % 3 == 1)
                r = QCPRange(r.center() - r.size() / 4, r.center() + r.size() / 4);
            else
                r = QCPRange(r.center() - r.size(), r.center() + r.size());
            if (r.lower < full.lower || r.upper > full.upper)
                r = QCPRange(full.lower + full.size() * 0.2, full.lower + full.size() * 0.6);
            ++k;
            plot->xAxis->setRange(r);
            curves->refetchNow();
            plot->replot(QCustomPlot::rpImmediateRefresh);
        });
        const double replot = medianSeconds(repeats * 4, [&] { plot->replot(QCustomPlot::rpImmediateRefresh); });
        size_t drawn = 0;
        for (const auto &c : curves->curves())
            drawn += c.steps.size();
        std::printf("1M-point series: %zu points or buckets drawn at %d px\n", drawn, plot->axisRect()->width());
        rows.push_back({"1M-point series pan/zoom (refetch + replot)", pan * 1e3, 16, "replot alone", replot * 1e3});
    }

    // A 500 x 10,000 heatmap.
    {
        Heatmap h;
        for (int l = 0; l < 500; ++l)
            h.layers << QStringLiteral("model.layers.%1.mlp.linear_fc2").arg(l);
        for (int s = 0; s < 10000; ++s)
            h.steps.push_back(s * 10);
        h.values.resize(size_t(500) * 10000);
        std::mt19937 rng(5);
        std::uniform_real_distribution<double> u(0, 5);
        for (double &v : h.values)
            v = u(rng);
        HeatmapView *heat = window.heatmap();
        // The store hands the view a fresh matrix (an rvalue); the copies are made before the clock runs.
        std::vector<Heatmap> fresh(size_t(repeats), h);
        size_t next = 0;
        const double full = medianSeconds(repeats, [&] {
            heat->setHeatmap(std::move(fresh[next++])); // sets the cells and replots
            heat->plot()->replot(QCustomPlot::rpImmediateRefresh);
        });
        const double replot
            = medianSeconds(repeats * 4, [&] { heat->plot()->replot(QCustomPlot::rpImmediateRefresh); });
        rows.push_back({"500 x 10,000 heatmap, new data + replot", full * 1e3, 50, "replot alone", replot * 1e3});
    }

    std::printf("\n%-46s %10s %10s %8s   %-14s %10s %8s\n", "measure (median)", "ms", "target", "/target", "reference",
        "ms", "/ref");
    for (const Row &r : rows) {
        std::printf("%-46s %10.1f ", r.what, r.ms);
        if (r.targetMs > 0)
            std::printf("%10.0f %8.2f   ", r.targetMs, r.ms / r.targetMs);
        else
            std::printf("%10s %8s   ", "-", "-");
        if (r.referenceMs > 0)
            std::printf("%-14s %10.1f %8.2f\n", r.reference, r.referenceMs, r.ms / r.referenceMs);
        else
            std::printf("%-14s %10s %8s\n", "-", "-", "-");
    }
    return 0;
}

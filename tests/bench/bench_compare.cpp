// Switching the comparison view's pair: the time from setPair() until every part is drawn again (the
// overlay, the difference strip and the tables), for a pair the view computed before and for one it
// computes anew (the triage engine's comparison on the query queue), on the demo pair and on two long runs
// (CSV exports of N points each; N from the first argument, default 10^6). Reference, in the same run: the
// ordinary curve view redrawing the loss; the ratio is the seen pair's switch to it.
// Usage: bench_compare [POINTS [NEW_PAIR_REPEATS]]
#include "app/gui/mainwindow.h"
#include "benchutil.h"
#include "core/demo/demogenerator.h"
#include "views/compare/compareview.h"
#include "views/curves/curveview.h"
#include "views/workspace/workspace.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QTest>
#include <QTextStream>

#include <algorithm>
#include <cmath>
#include <cstdio>

using namespace fp8scope;

namespace {

bool writeRun(const QString &dir, qint64 points, double offset)
{
    QDir().mkpath(dir);
    QFile f(dir + QStringLiteral("/wandb_export.csv"));
    if (!f.open(QIODevice::WriteOnly))
        return false;
    QByteArray chunk = "step,lm loss\n";
    for (qint64 s = 1; s <= points; ++s) {
        const double loss
            = 2.0 + 9.0 / std::sqrt(double(s)) + offset * double(s) / double(points) + 0.01 * std::sin(double(s) * 0.7);
        chunk += QByteArray::number(s) + ',' + QByteArray::number(loss, 'g', 9) + '\n';
        if (chunk.size() > (1 << 20)) {
            if (f.write(chunk) != chunk.size())
                return false;
            chunk.clear();
        }
    }
    return f.write(chunk) == chunk.size();
}

// Opens the folders and times pair switches (alternating the two orders) against the curve view's redraw.
bool measure(MainWindow &w, const QStringList &folders, const char *what, int repeats, int freshRepeats)
{
    QSignalSpy ready(&w, &MainWindow::ready);
    w.openFolders(folders);
    if (!ready.wait(1800000))
        return false;
    Workspace *ws = w.workspace();
    if (ws->runCount() < 2)
        return false;
    const RunRef a = ws->runAt(0), b = ws->runAt(1);
    w.showComparison();
    CompareView *view = w.compare();
    bool flip = false;
    const auto switchPair = [&] {
        flip = !flip;
        view->setPair(flip ? b : a, flip ? a : b);
        while (view->isComputing())
            QCoreApplication::processEvents(QEventLoop::AllEvents, 5);
        view->overlay()->refetchNow();
        view->difference()->refetchNow();
        QCoreApplication::processEvents();
    };
    switchPair(); // warm: the stores' pages in the cache
    CurveView *curves = w.curves();
    curves->setStatistic(QStringLiteral("lm loss"));
    const auto redraw = [&] {
        curves->resetZoom();
        curves->refetchNow();
    };
    // A pair seen before (the view keeps what it computed), and one computed anew.
    const bench::Paired seen = bench::pairedMedians(repeats, switchPair, redraw);
    const bench::Paired fresh = bench::pairedMedians(
        freshRepeats,
        [&] {
            view->forgetComparisons();
            switchPair();
        },
        redraw);
    std::printf("%-28s %14.1f ms %14.1f ms %14.1f ms %8.2f\n", what, seen.workSeconds * 1e3, fresh.workSeconds * 1e3,
        seen.referenceSeconds * 1e3, seen.workSeconds / seen.referenceSeconds);
    return view->comparison() != nullptr;
}

} // namespace

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    const qint64 points = argc > 1 ? QByteArray(argv[1]).toLongLong() : 1000000;
    // A comparison computed anew reads and aligns every point: at 10^7 a few tens of seconds, so fewer repeats.
    const int freshRepeats = argc > 2 ? std::max(1, QByteArray(argv[2]).toInt()) : (points > 2000000 ? 3 : 5);
    QTemporaryDir tmp;
    qputenv("XDG_CONFIG_HOME", QFile::encodeName(tmp.filePath(QStringLiteral("config"))));
    qputenv("XDG_CACHE_HOME", QFile::encodeName(tmp.filePath(QStringLiteral("cache"))));
    DemoOptions o;
    QString error;
    if (!generateDemo(tmp.filePath(QStringLiteral("demo")), o, nullptr, &error)) {
        std::fprintf(stderr, "bench_compare: %s\n", qPrintable(error));
        return 1;
    }
    const QString longPair = tmp.filePath(QStringLiteral("long"));
    if (!writeRun(longPair + QStringLiteral("/bf16"), points, 0.0)
        || !writeRun(longPair + QStringLiteral("/fp8"), points, 0.05)) {
        std::fprintf(stderr, "bench_compare: could not write the long runs\n");
        return 1;
    }
    MainWindow w(BackendChoice::Cpu, nullptr);
    w.resize(1600, 1000);
    w.show();
    std::printf("%-28s %17s %17s %17s %8s\n", "pair switch (median)", "seen pair", "new pair", "curve redraw", "ratio");
    if (!measure(w, {tmp.filePath(QStringLiteral("demo"))}, "demo (3000 steps)", 9, 9))
        return 1;
    const QByteArray label = "two runs of " + QByteArray::number(points) + " points";
    if (!measure(w, {longPair}, label.constData(), 5, freshRepeats))
        return 1;
    return 0;
}

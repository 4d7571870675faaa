// The window's Attempts tab with many attempts (issue 44): a BF16 baseline and 20 FP8 attempts against it,
// 10^5 logged iterations each (Megatron's log), each attempt one config change from the one before it and three
// of them departing. Times, in one run, offscreen, medians:
//   the reference: reading every run's loss once from the store (Catalog::stepSeries), s;
//   first: the attempts computed (every attempt compared with the baseline, computeAttempts) in a catalog
//     already open, once, s, and its ratio to the reference;
//   warm: the same again, each pair's triage stamp holding (nothing compared again);
//   tab: the Attempts tab from a refresh to its table filled and its plot painted, warm (the store built, the
//     pairs compared), s; the target is 1 s.
// Usage: bench_attempts [attempts, default 20] [iterations, default 100000] [repeats, default 3]
#include "app/gui/mainwindow.h"
#include "benchutil.h"
#include "core/analysis/attempts.h"
#include "core/query/catalog.h"
#include "views/attempts/attemptschart.h"
#include "views/attempts/attemptsview.h"
#include "views/plotting/qcp.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>

using namespace fp8scope;

namespace {

bool writeFile(const QString &path, const QByteArray &data)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
}

// A run's Megatron log: the loss falling as a power law with noise; rising from `departAt` (0: never).
QByteArray lossLog(int64_t iterations, int64_t departAt, uint32_t seed)
{
    std::mt19937 rng(seed);
    std::normal_distribution<double> noise(0.0, 0.02);
    QByteArray out;
    out.reserve(qsizetype(iterations) * 64);
    for (int64_t step = 1; step <= iterations; ++step) {
        double loss = 2.5 + 8.0 * std::pow(double(step) / 100.0 + 1.0, -0.5) + noise(rng);
        if (departAt > 0 && step >= departAt)
            loss += 0.3 * double(step - departAt) / double(iterations - departAt);
        out += " iteration " + QByteArray::number(step).rightJustified(8, ' ') + "/"
            + QByteArray::number(iterations).rightJustified(8, ' ') + " | lm loss: " + QByteArray::number(loss, 'E', 6)
            + " |\n";
    }
    return out;
}

} // namespace

int main(int argc, char **argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QTemporaryDir tmp;
    qputenv("XDG_CONFIG_HOME", QFile::encodeName(tmp.filePath(QStringLiteral("config"))));
    QApplication app(argc, argv);
    const int attempts = argc > 1 ? std::max(1, atoi(argv[1])) : 20;
    const int64_t iterations = argc > 2 ? std::max<int64_t>(100, atoll(argv[2])) : 100000;
    const int repeats = argc > 3 ? std::max(1, atoi(argv[3])) : 3;

    // The folder: the baseline and its attempts, each one config key away from the one before it.
    const QString dir = tmp.filePath(QStringLiteral("path"));
    QByteArray config = "MODEL_ARGS:\n  --num-layers: 24\n  --hidden-size: 2048\n  --lr: 0.0003\n";
    if (!writeFile(dir + QStringLiteral("/bf16/config.yaml"), config + "  --bf16: true\n")
        || !writeFile(dir + QStringLiteral("/bf16/logs/train.out"), lossLog(iterations, 0, 1))
        || !writeFile(dir + QStringLiteral("/bf16/fp8scope.json"), R"({"precision": "bf16"})")) {
        std::fprintf(stderr, "bench_attempts: cannot write %s\n", qPrintable(dir));
        return 1;
    }
    for (int a = 0; a < attempts; ++a) {
        const QString run = dir + QStringLiteral("/fp8_%1").arg(a, 2, 10, QLatin1Char('0'));
        config += "  --fp8-margin: " + QByteArray::number(a) + "\n";
        const int64_t depart = a % 7 == 3 ? iterations * 6 / 10 : 0;
        if (!writeFile(run + QStringLiteral("/config.yaml"), config + "  --bf16: true\n  --fp8-format: hybrid\n")
            || !writeFile(run + QStringLiteral("/logs/train.out"), lossLog(iterations, depart, 1))
            || !writeFile(run + QStringLiteral("/fp8scope.json"), R"({"precision": "fp8", "baseline": "bf16"})")) {
            std::fprintf(stderr, "bench_attempts: cannot write %s\n", qPrintable(run));
            return 1;
        }
        config.chop(qsizetype(qstrlen("  --fp8-margin: ") + QByteArray::number(a).size() + 1));
        config += "  --lr-warmup-iters: " + QByteArray::number(100 + a) + "\n";
    }

    // The window opens the folder once (the store is built), then the tab is timed warm.
    MainWindow window(BackendChoice::Cpu, nullptr);
    window.resize(1600, 1000);
    window.show();
    QSignalSpy ready(&window, &MainWindow::ready);
    window.openFolders({dir});
    if (!ready.wait(1800000)) {
        std::fprintf(stderr, "bench_attempts: the folder did not open\n");
        return 1;
    }
    Catalog catalog;
    QString error;
    if (!catalog.open(dir, &error)) {
        std::fprintf(stderr, "bench_attempts: %s\n", qPrintable(error));
        return 1;
    }
    const std::vector<RunRef> baselines = analysis::baselinesWithAttempts(catalog);
    if (baselines.size() != 1) {
        std::fprintf(stderr, "bench_attempts: %zu baselines\n", baselines.size());
        return 1;
    }
    size_t found = 0;
    const auto compute = [&] { found = analysis::computeAttempts(catalog, baselines.front()).attempts.size(); };
    // The first: every pair compared (as after the folders changed); then the stamps hold.
    const double first = bench::medianSeconds(1, compute);
    const auto reference = [&] {
        for (const Run &r : catalog.runs()) {
            if (auto s = catalog.chooseSeries(r.ref, {.stat = QStringLiteral("lm loss")}))
                (void)catalog.stepSeries(*s);
        }
    };
    const bench::Paired computed = bench::pairedMedians(repeats, compute, reference);

    AttemptsView *view = window.attempts();
    window.findChild<QTabWidget *>(QStringLiteral("viewTabs"))->setCurrentWidget(view);
    const auto shown = [&] {
        view->recompute();
        if (!QTest::qWaitFor(
                [&] { return !view->isComputing() && view->table()->model()->rowCount() == attempts; }, 600000))
            std::fprintf(stderr, "bench_attempts: the tab did not fill\n");
        view->chart()->plot()->replot(QCustomPlot::rpImmediateRefresh);
        QCoreApplication::processEvents();
    };
    shown(); // the first: the comparisons' own caches warm
    const double tab = bench::medianSeconds(repeats, shown);

    std::printf("fp8scope attempts benchmark: %d attempts of %lld iterations, %d repeats (medians)\n", attempts,
        static_cast<long long>(iterations), repeats);
    std::printf("%-58s %10s %12s\n", "case", "s", "ratio");
    std::printf(
        "%-58s %10.3f %12s\n", "reference: every run's loss read from the store", computed.referenceSeconds, "1");
    std::printf("%-58s %10.3f %12.2f\n", "first: every attempt compared (computeAttempts)", first,
        first / computed.referenceSeconds);
    std::printf("%-58s %10.3f %12.2f\n", "warm: computeAttempts, every stamp holding", computed.workSeconds,
        computed.workSeconds / computed.referenceSeconds);
    std::printf("%-58s %10.3f %12.2f\n", "tab: refresh to the table filled and the plot painted", tab,
        tab / computed.referenceSeconds);
    std::printf("attempts found: %zu; target: the tab within 1 s warm (docs/PERFORMANCE.md)\n", found);
    return found == size_t(attempts) ? 0 : 1;
}

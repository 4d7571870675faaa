// Mixture-of-experts runs at scale (issue 57), offscreen, in one run (medians; nothing asserted about time):
//   ingest of a Transformer Engine statistics log of a 24-layer, 64-expert model (per layer QKV, projection and two
//     GroupedLinear MLP GEMMs of 64 experts: 3,120 GEMMs, named as TE names them, NAME.gemm_I), one statistic of one
//     tensor at 2,000 logged steps, per line; reference: a dense log of as many GEMMs and lines;
//   the grouped heatmap's first paint (the matrix read from the store and grouped, a row per GEMM: 96 rows, then
//     drawn); reference: the heatmap of a dense run of 96 layers at the same steps, read and drawn;
//   an experts map's first paint (one GEMM's 64 experts read and drawn); reference: a dense run of 64 layers.
// Usage: bench_experts [steps] [repeats]
#include "benchutil.h"
#include "core/query/catalog.h"
#include "core/store/runstore.h"
#include "views/heatmap/heatmapview.h"
#include "views/plotting/qcp.h"
#include "views/workspace/selection.h"

#include <QApplication>
#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <chrono>
#include <cstdio>
#include <random>

using namespace fp8scope;

namespace {

constexpr int kLayers = 24;
constexpr int kExperts = 64;

// A source that offers nothing: the benchmark hands the view its matrices.
class HandedSource : public HeatmapSource
{
public:
    using HeatmapSource::HeatmapSource;
    std::vector<RunChoice> runs() const override { return {}; }
    RunRef preferredRun() const override { return {}; }
    std::vector<std::pair<QString, QString>> statistics(RunRef) const override { return {}; }
    quint64 load(
        RunRef, const MatrixRequest &, const QString &, QObject *, std::function<void(const Heatmap &)>) override
    {
        return 0;
    }
    void cancel(quint64) override { }
    QString noStatisticsText(RunRef) const override { return {}; }
};

// Writes a statistics log of `names` at `steps` logged steps (one statistic, one tensor); returns its lines.
int64_t writeLog(const QString &runDir, const QStringList &names, int steps)
{
    QDir().mkpath(runDir + QStringLiteral("/nvdlfw_inspect_statistics_logs"));
    QFile f(runDir + QStringLiteral("/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"));
    if (!f.open(QIODevice::WriteOnly))
        return 0;
    std::mt19937_64 rng(7);
    std::uniform_real_distribution<double> u(0.1, 5.0);
    std::vector<QByteArray> prefix;
    for (const QString &n : names)
        prefix.push_back(
            "2026-12-05 10:00:00,000 - INFO - " + n.toUtf8() + "_activation_underflows% \t\t\t\t iteration=");
    int64_t lines = 0;
    QByteArray buffer;
    for (int s = 0; s < steps; ++s) {
        const QByteArray step = QByteArray::number(s * 10).rightJustified(6, '0');
        for (const QByteArray &p : prefix) {
            buffer += p + step + " \t\t\t\t value=" + QByteArray::number(u(rng), 'f', 4) + '\n';
            ++lines;
        }
        if (buffer.size() > (8 << 20)) {
            f.write(buffer);
            buffer.clear();
        }
    }
    f.write(buffer);
    return lines;
}

QStringList moeNames()
{
    QStringList out;
    for (int l = 0; l < kLayers; ++l) {
        const QString p = QStringLiteral("decoder.layers.%1.").arg(l);
        out << p + QStringLiteral("self_attention.linear_qkv") << p + QStringLiteral("self_attention.linear_proj");
        for (const char *gemm : {"linear_fc1", "linear_fc2"}) {
            for (int e = 0; e < kExperts; ++e)
                out << p + QStringLiteral("mlp.experts.%1.gemm_%2").arg(QLatin1String(gemm)).arg(e);
        }
    }
    return out;
}

QStringList denseNames(int n)
{
    QStringList out;
    for (int i = 0; i < n; ++i)
        out << QStringLiteral("decoder.layers.%1.mlp.linear_fc%2").arg(i / 4).arg(i % 4);
    return out;
}

double seconds(const std::function<void()> &body)
{
    const auto a = std::chrono::steady_clock::now();
    body();
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

double median(std::vector<double> v)
{
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    const int steps = argc > 1 ? std::max(10, atoi(argv[1])) : 2000;
    const int repeats = argc > 2 ? std::max(1, atoi(argv[2])) : 3;
    QTemporaryDir tmp;
    const QString moe = tmp.filePath(QStringLiteral("moe")), dense = tmp.filePath(QStringLiteral("dense"));
    const QStringList moeLayers = moeNames();
    const int64_t lines = writeLog(moe + QStringLiteral("/run"), moeLayers, steps);
    writeLog(dense + QStringLiteral("/run"), denseNames(int(moeLayers.size())), steps);
    std::printf("bench_experts: %lld GEMMs (%d layers, %d experts), %d steps, %lld lines a log\n",
        static_cast<long long>(moeLayers.size()), kLayers, kExperts, steps, static_cast<long long>(lines));

    // Ingest, alternating the two folders, each into a new store.
    std::vector<double> moeIngest, denseIngest;
    for (int i = 0; i < repeats; ++i) {
        for (const QString &folder : {dense, moe}) {
            QFile::remove(folder + QStringLiteral("/.fp8scope/store.sqlite"));
            QDir(folder + QStringLiteral("/.fp8scope")).removeRecursively();
            RunStore store;
            QString error;
            if (!store.open(folder, &error)) {
                std::fprintf(stderr, "bench_experts: %s\n", qPrintable(error));
                return 1;
            }
            const double t = seconds([&] { store.ingest(); });
            (folder == moe ? moeIngest : denseIngest).push_back(t);
        }
    }
    // The heatmaps' references: dense runs of 96 and 64 layers at the same steps.
    const QString rows96 = tmp.filePath(QStringLiteral("rows96")), rows64 = tmp.filePath(QStringLiteral("rows64"));
    writeLog(rows96 + QStringLiteral("/run"), denseNames(kLayers * 4), steps);
    writeLog(rows64 + QStringLiteral("/run"), denseNames(kExperts), steps);
    for (const QString &folder : {rows96, rows64}) {
        RunStore store;
        QString error;
        if (!store.open(folder, &error)) {
            std::fprintf(stderr, "bench_experts: %s\n", qPrintable(error));
            return 1;
        }
        store.ingest();
    }
    Catalog catalog;
    QString error;
    for (const QString &folder : {moe, rows96, rows64}) {
        if (!catalog.open(folder, &error)) {
            std::fprintf(stderr, "bench_experts: %s\n", qPrintable(error));
            return 1;
        }
    }
    const auto runOf = [&](const QString &folder) {
        for (const Run &r : catalog.runs()) {
            if (QDir(r.folder) == QDir(folder))
                return r.ref;
        }
        return RunRef();
    };
    const RunRef moeRun = runOf(moe), run96 = runOf(rows96), run64 = runOf(rows64);
    Selection selection;
    HandedSource source;
    HeatmapView view(&source, &selection);
    view.resize(1366, 420);
    view.show();
    QApplication::processEvents();
    const MatrixRequest plain {.stat = QStringLiteral("underflows%"), .tensor = QStringLiteral("activation")};
    MatrixRequest grouped = plain;
    grouped.experts = ExpertRows::Max;
    MatrixRequest map = grouped;
    map.expertsOf = QStringLiteral("decoder.layers.11.mlp.experts.linear_fc2");
    // Read and drawn: the first paint, the matrix read off the store (the view's worker does it) and then drawn.
    struct Timing {
        double read, draw;
    };
    const auto firstPaint = [&](RunRef run, const MatrixRequest &request, qsizetype expectRows) {
        Heatmap h;
        const double read = seconds([&] { h = catalog.matrix(run, request); });
        if (h.layers.size() != expectRows)
            std::fprintf(stderr, "bench_experts: %lld rows, not %lld\n", static_cast<long long>(h.layers.size()),
                static_cast<long long>(expectRows));
        view.setHeatmap({}); // a new matrix each time
        const double draw = seconds([&] {
            view.setHeatmap(std::move(h));
            view.plot()->replot();
        });
        return Timing {read, draw};
    };
    std::vector<double> gRead, gDraw, dRead, dDraw, mRead, mDraw, eRead, eDraw;
    for (int i = 0; i < std::max(repeats, 5); ++i) {
        Timing t = firstPaint(run96, plain, kLayers * 4);
        dRead.push_back(t.read);
        dDraw.push_back(t.draw);
        t = firstPaint(moeRun, grouped, kLayers * 4);
        gRead.push_back(t.read);
        gDraw.push_back(t.draw);
        t = firstPaint(run64, plain, kExperts);
        eRead.push_back(t.read);
        eDraw.push_back(t.draw);
        t = firstPaint(moeRun, map, kExperts);
        mRead.push_back(t.read);
        mDraw.push_back(t.draw);
    }
    const auto total = [](const std::vector<double> &a, const std::vector<double> &b) {
        std::vector<double> s;
        for (size_t i = 0; i < a.size(); ++i)
            s.push_back(a[i] + b[i]);
        return median(s);
    };
    std::printf("\n%-44s %12s %12s %-40s %12s %8s\n", "what", "median", "target", "reference", "median", "ratio");
    const double mi = median(moeIngest) / double(lines) * 1e9, di = median(denseIngest) / double(lines) * 1e9;
    std::printf("%-44s %9.1f ns %12s %-40s %9.1f ns %7.2fx\n", "MoE ingest, per line", mi, "1.5x",
        "dense ingest of as many lines, per line", di, mi / di);
    const double g = total(gRead, gDraw) * 1e3, d = total(dRead, dDraw) * 1e3;
    std::printf("%-44s %9.1f ms %12s %-40s %9.1f ms %7.2fx\n", "grouped heatmap (96 rows), read + draw", g, "2x",
        "dense heatmap of 96 layers", d, g / d);
    std::printf("%-44s %9.1f ms %12s %-40s %9.1f ms %7.2fx\n", "  of which read (and grouped)", median(gRead) * 1e3, "",
        "  of which read", median(dRead) * 1e3, median(gRead) / median(dRead));
    std::printf("%-44s %9.1f ms %12s %-40s %9.1f ms %7.2fx\n", "  of which drawn", median(gDraw) * 1e3, "",
        "  of which drawn", median(dDraw) * 1e3, median(gDraw) / median(dDraw));
    const double m = total(mRead, mDraw) * 1e3, e = total(eRead, eDraw) * 1e3;
    std::printf("%-44s %9.1f ms %12s %-40s %9.1f ms %7.2fx\n", "experts map (64 rows), read + draw", m, "2x",
        "dense heatmap of 64 layers", e, m / e);
    return 0;
}

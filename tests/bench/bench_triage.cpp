// Triage of a workspace of two runs (a BF16 baseline and its FP8 twin, paired by a workspace manifest) whose
// FP8 run logged 10^7 statistic points (Transformer Engine's statistics log: 100 layers x 3 tensors x 4
// statistics every 10 steps) and both runs their loss and grad norm every 10 steps (Megatron's log), with a
// planted fault: layer 0's activation underflows rise from 45 % of the steps, the loss departs from 60 %.
// Prints, in one run:
//   the reference: reading those points once from the store (every series at full resolution), s;
//   cold: the first triage of the freshly built store (computed, then stored), s;
//   warm: the triage computed again in a fresh catalog (median of 5, paired with the reference), s, and the
//         ratio triage / reference;
//   stored: the triage read back from the store while its stamp holds (median of 5), ms;
//   live: the FP8 run's last 50 iterations (held back above) appended 10 at a time, each batch ingested and
//         triaged whole in a fresh catalog and by the live triage's engine (analysis::IncrementalTriage over
//         a catalog keeping its points), medians of the 5 batches and their ratio (the findings must agree);
//         and the engine once more with nothing new;
//   and the verdict, the departure and the first layer signal (the planted ones).
// The target (issue 21): warm under 2 s on the development machine. Asserts nothing about time.
// Usage: bench_triage [points] [workdir]
#include "benchutil.h"
#include "core/analysis/incrementaltriage.h"
#include "core/query/catalog.h"
#include "core/session/foldersession.h"
#include "core/store/runstore.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <random>
#include <thread>

using namespace fp8scope;
using namespace fp8scope::analysis;

namespace {

constexpr int kLayers = 100;
constexpr int kInterval = 10;
const char *const kTensors[] = {"activation", "gradient", "weight"};
const char *const kStats[] = {"underflows%", "scale_inv_min", "scale_inv_max", "mse"};

bool writeFile(const QString &path, const QByteArray &data)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(data) == data.size();
}

bool appendFile(const QString &path, const QByteArray &data)
{
    QFile f(path);
    return f.open(QIODevice::Append) && f.write(data) == data.size();
}

// Megatron's training lines of iterations [first, last] of a run planned for `iterations`: the loss falling as
// a power law with noise, the FP8 run's rising from `departAt`.
QByteArray megatronLog(int64_t first, int64_t last, int64_t iterations, int64_t departAt, uint32_t seed)
{
    std::mt19937 rng(seed + uint32_t(first));
    std::normal_distribution<double> noise(0.0, 0.02);
    const int64_t steps = iterations * kInterval;
    QByteArray out;
    for (int64_t i = first; i <= last; ++i) {
        const int64_t step = i * kInterval;
        double loss = 2.5 + 8.0 * std::pow(double(step) / 100.0 + 1.0, -0.5) + noise(rng);
        double grad = 0.8 + 0.1 * noise(rng) / 0.02;
        if (departAt > 0 && step >= departAt) {
            loss += 0.15 * double(step - departAt) / double(steps - departAt);
            grad *= 1.0 + 2.0 * double(step - departAt) / double(steps - departAt);
        }
        out += " iteration " + QByteArray::number(step).rightJustified(8, ' ') + "/"
            + QByteArray::number(steps).rightJustified(8, ' ') + " | lm loss: " + QByteArray::number(loss, 'E', 6)
            + " | grad norm: " + QByteArray::number(grad, 'f', 3) + " |\n";
    }
    return out;
}

// Transformer Engine's statistics lines of iterations [first, last], at most `points` of them all told
// (*written counts them): layer 0's activation underflows ramp from `onset` over the planned steps.
bool statisticsLog(
    QFile *f, int64_t first, int64_t last, int64_t steps, int64_t onset, int64_t points, int64_t *written)
{
    std::mt19937 rng(3 + uint32_t(first));
    std::normal_distribution<double> noise(0.0, 1.0);
    QByteArray buf;
    for (int64_t it = first; it <= last; ++it) {
        const int64_t step = it * kInterval;
        for (int l = 0; l < kLayers && *written < points; ++l) {
            const QByteArray layer = "model.decoder.layers." + QByteArray::number(l) + ".self_attention.linear_qkv";
            for (const char *t : kTensors) {
                for (const char *s : kStats) {
                    if ((*written)++ >= points)
                        break;
                    const QByteArray stat(s);
                    double v = stat == "underflows%" ? 1.0 + 0.05 * noise(rng)
                        : stat == "mse"              ? 2e-4 * (1.0 + 0.05 * noise(rng))
                        : stat == "scale_inv_min"    ? 1e-3 * (1.0 + 0.02 * noise(rng))
                                                     : 4e-3 * (1.0 + 0.02 * noise(rng));
                    if (l == 0 && qstrcmp(t, "activation") == 0 && stat == "underflows%" && step >= onset)
                        v += 6.0 * double(step - onset) / double(steps - onset);
                    buf += "2026-01-15 23:06:41,584 - INFO - " + layer + '_' + t + '_' + stat
                        + " \t\t\t\t iteration=" + QByteArray::number(step).rightJustified(6, '0')
                        + " \t\t\t\t value=" + QByteArray::number(v, 'g', 6) + '\n';
                }
            }
        }
        if (buf.size() > (4 << 20)) {
            if (f->write(buf) != buf.size())
                return false;
            buf.clear();
        }
    }
    return f->write(buf) == buf.size();
}

bool sameFindings(const Comparison &a, const Comparison &b)
{
    if (a.verdict != b.verdict || a.departure != b.departure || a.lead != b.lead
        || a.findings.size() != b.findings.size())
        return false;
    for (size_t i = 0; i < a.findings.size(); ++i) {
        const Finding &x = a.findings[i], &y = b.findings[i];
        if (findingIdentity(x) != findingIdentity(y) || x.severity != y.severity || x.step != y.step
            || x.summary != y.summary || x.evidence != y.evidence)
            return false;
    }
    return true;
}

double seconds(const std::chrono::steady_clock::time_point &t0)
{
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

} // namespace

int main(int argc, char **argv)
{
    const int64_t points = argc > 1 ? std::atoll(argv[1]) : 10000000;
    QTemporaryDir tmp;
    const QString work = argc > 2 ? QString::fromLocal8Bit(argv[2]) : tmp.path();
    std::setvbuf(stdout, nullptr, _IOLBF, 0);
    const QString ws = work + QStringLiteral("/workspace");
    QDir(ws).removeRecursively();
    const int64_t perIteration = kLayers * 3 * 4;
    const int64_t iterations = (points + perIteration - 1) / perIteration;
    const int64_t steps = iterations * kInterval;
    const int64_t onset = steps * 45 / 100, departure = steps * 60 / 100;
    // The FP8 run's last kLiveBatches x kLiveIterations iterations are held back for the live phase, which
    // appends them one batch at a time as a run being written would.
    constexpr int64_t kLiveBatches = 5, kLiveIterations = 10;
    const int64_t written = std::max<int64_t>(1, iterations - kLiveBatches * kLiveIterations);
    bool ok = writeFile(ws + QStringLiteral("/fp8scope-workspace.json"),
                  R"({"runs": {"bf16": {"precision": "bf16"}, "fp8": {"precision": "fp8", "recipe": "delayed",)"
                  R"( "baseline": "bf16"}}})")
        && writeFile(ws + QStringLiteral("/bf16/train.log"), megatronLog(1, iterations, iterations, 0, 1))
        && writeFile(ws + QStringLiteral("/fp8/train.log"), megatronLog(1, written, iterations, departure, 2));
    const QString statistics
        = ws + QStringLiteral("/fp8/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log");
    int64_t statisticPoints = 0;
    {
        QFile f(statistics);
        QDir().mkpath(QFileInfo(f).absolutePath());
        ok = ok && f.open(QIODevice::WriteOnly)
            && statisticsLog(&f, 1, written, steps, onset, points, &statisticPoints);
    }
    if (!ok) {
        std::printf("could not write the workspace under %s\n", qPrintable(work));
        return 1;
    }
    std::printf("fp8scope triage benchmark: %lld statistic points (%d layers x 3 tensors x 4 statistics x %lld "
                "steps; the last %lld held back for the live phase), loss and grad norm every %d steps, %u hardware "
                "threads\n",
        (long long)points, kLayers, (long long)iterations, (long long)(iterations - written), kInterval,
        std::thread::hardware_concurrency());

    QString error;
    auto t0 = std::chrono::steady_clock::now();
    {
        RunStore store;
        if (!store.open(ws, &error)) {
            std::printf("%s\n", qPrintable(error));
            return 1;
        }
        const IngestReport report = store.ingest();
        if (!report.errors.isEmpty()) {
            std::printf("%s\n", qPrintable(report.errors.join(QLatin1Char('\n'))));
            return 1;
        }
    }
    std::printf("%-52s %10.2f s\n", "store built (ingest, for the record)", seconds(t0));

    const auto open = [&](Catalog *c) {
        if (!c->open(ws, &error)) {
            std::printf("%s\n", qPrintable(error));
            std::exit(1);
        }
    };
    // The reference: every series of both runs read once, at full resolution.
    int64_t read = 0;
    const auto readAll = [&] {
        Catalog c;
        open(&c);
        read = 0;
        for (const Run &r : c.runs(false)) {
            for (const Series &s : c.series(r.ref))
                read += int64_t(c.points(s).size());
        }
    };

    Catalog cold;
    open(&cold);
    t0 = std::chrono::steady_clock::now();
    QStringList storeErrors;
    const TriageResult first = triageStored(cold, {}, &storeErrors);
    const double coldSec = seconds(t0);
    if (!storeErrors.isEmpty())
        std::printf("warning: %s\n", qPrintable(storeErrors.join(QLatin1Char('\n'))));
    std::printf("%-52s %10.2f s\n", "cold: first triage of the built store (and store it)", coldSec);

    TriageResult warm;
    const bench::Paired p = bench::pairedMedians(
        5,
        [&] {
            Catalog c;
            open(&c);
            warm = triage(c);
        },
        readAll);
    std::printf("%-52s %10.2f s   (%lld points)\n", "reference: read every point once (median of 5)",
        p.referenceSeconds, (long long)read);
    std::printf("%-52s %10.2f s\n", "warm: triage computed again (median of 5)", p.workSeconds);
    std::printf("%-52s %10.2f x\n", "ratio: triage / reading the points", 1.0 / p.ratio);

    TriageResult stored;
    const double storedSec = bench::medianSeconds(5, [&] {
        Catalog c;
        open(&c);
        stored = triageStored(c);
    });
    std::printf("%-52s %10.1f ms  (%s)\n", "stored: triage read back (median of 5)", storedSec * 1e3,
        !stored.comparisons.empty() && stored.comparisons.front().fromStore ? "from the store" : "NOT from the store");

    // Live: the held-back iterations appended one batch at a time, each ingested, then triaged both ways: by
    // the live triage's engine (IncrementalTriage over a catalog that keeps its points, primed on what was
    // there) and whole in a fresh catalog; the two must agree.
    FolderSession session;
    if (!session.open(ws, &error)) {
        std::printf("%s\n", qPrintable(error));
        return 1;
    }
    Catalog &kept = session.catalog();
    kept.setKeepPoints(true);
    IncrementalTriage engine;
    (void)engine.update(kept);
    std::vector<double> incremental, whole;
    bool agree = true;
    int64_t appended = 0;
    for (int64_t first = written + 1; first <= iterations; first += kLiveIterations) {
        const int64_t last = std::min(iterations, first + kLiveIterations - 1);
        QFile f(statistics);
        const int64_t before = statisticPoints;
        if (!f.open(QIODevice::Append) || !statisticsLog(&f, first, last, steps, onset, points, &statisticPoints)
            || !appendFile(ws + QStringLiteral("/fp8/train.log"), megatronLog(first, last, iterations, departure, 2))) {
            std::printf("could not append to the workspace\n");
            return 1;
        }
        f.close();
        appended += std::min(statisticPoints, points) - before;
        const IngestReport r = session.ingest().front().report;
        if (!r.errors.isEmpty()) {
            std::printf("%s\n", qPrintable(r.errors.join(QLatin1Char('\n'))));
            return 1;
        }
        t0 = std::chrono::steady_clock::now();
        const TriageResult live = engine.update(kept);
        incremental.push_back(seconds(t0));
        t0 = std::chrono::steady_clock::now();
        Catalog fresh;
        open(&fresh);
        const TriageResult all = triage(fresh);
        whole.push_back(seconds(t0));
        agree = agree && live.comparisons.size() == all.comparisons.size() && live.comparisons.size() == 1
            && sameFindings(live.comparisons.front(), all.comparisons.front());
    }
    t0 = std::chrono::steady_clock::now();
    (void)engine.update(kept);
    const double unchanged = seconds(t0);
    const auto median = [](std::vector<double> v) {
        std::sort(v.begin(), v.end());
        return v.empty() ? 0.0 : v[v.size() / 2];
    };
    std::printf("%-52s %10.2f s   (%lld batches of %lld statistic points)\n",
        "live: whole triage after a batch (median)", median(whole), (long long)whole.size(),
        (long long)(whole.empty() ? 0 : appended / int64_t(whole.size())));
    std::printf("%-52s %10.2f s\n", "live: incremental triage after a batch (median)", median(incremental));
    std::printf("%-52s %10.2f x   (%s)\n", "ratio: whole / incremental", median(whole) / median(incremental),
        agree ? "the same findings" : "FINDINGS DIFFER");
    std::printf("%-52s %10.1f ms\n", "live: incremental triage with nothing new", unchanged * 1e3);
    if (!agree)
        return 1;

    if (warm.comparisons.size() != 1) {
        std::printf("expected one comparison, got %zu\n", warm.comparisons.size());
        return 1;
    }
    const Comparison &c = warm.comparisons.front();
    const auto signal = std::find_if(c.findings.begin(), c.findings.end(),
        [](const Finding &f) { return f.kind == analysis::FindingKind::LayerSignal; });
    std::printf("verdict %s, departure %s (planted %lld), first layer signal %s %s %s at %s (planted layer 0 "
                "activation underflows%% from %lld)\n",
        qPrintable(verdictName(c.verdict)), c.departure ? qPrintable(QString::number(*c.departure)) : "none",
        (long long)departure, signal == c.findings.end() ? "none" : qPrintable(signal->layer),
        signal == c.findings.end() ? "" : qPrintable(signal->tensor),
        signal == c.findings.end() ? "" : qPrintable(signal->stat),
        signal == c.findings.end() || !signal->step ? "-" : qPrintable(QString::number(*signal->step)),
        (long long)onset);
    return 0;
}

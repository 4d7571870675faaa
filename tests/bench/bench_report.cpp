// The triage report of the demo pair (the window's File > Open Demo: 12 layers, 3000 steps, seed 1), as
// `fp8scope-cli report` makes it: the document built (the comparison of the loss and the grad norm, the layer
// matrix and curves, the suspect's histogram and the what-if with the block census recomputed on the CPU, every
// input file hashed) and painted into a PDF (contents, plots, bookmarks); the build again without a backend
// (nothing recomputed from dumps). Prints the median of 5 of each part
// and of the whole, and the whole against the reference measured in the same run, alternating with it: the
// triage alone (analysis::compareRuns on the same catalog), what any report must at least compute.
// The target (issue 25): the demo's report in under 3 s. Asserts nothing about time.
// Usage: bench_report [workdir]
#include "benchutil.h"
#include "core/analysis/triage.h"
#include "core/demo/demogenerator.h"
#include "core/numerics/cpubackend.h"
#include "core/query/catalog.h"
#include "core/report/triagereport.h"
#include "core/session/foldersession.h"
#include "views/report/reportrenderer.h"

#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QTemporaryDir>

#include <cstdio>

using namespace fp8scope;

int main(int argc, char **argv)
{
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
        qputenv("QT_QPA_PLATFORM", "offscreen");
    QApplication app(argc, argv);
    QTemporaryDir tmp;
    const QString work = argc > 1 ? QString::fromLocal8Bit(argv[1]) : tmp.path();
    const QString demo = QDir(work).filePath(QStringLiteral("demo"));
    QString error;
    DemoPlan plan;
    if (!QFileInfo::exists(demo) && !generateDemo(demo, DemoOptions {}, &plan, &error)) {
        std::fprintf(stderr, "bench_report: %s\n", qPrintable(error));
        return 1;
    }
    FolderSession session;
    if (!session.open(demo, &error)) {
        std::fprintf(stderr, "bench_report: %s\n", qPrintable(error));
        return 1;
    }
    (void)session.ingest();
    Catalog &catalog = session.catalog();
    const auto [baseline, run] = report::defaultReportPair(catalog);
    if (!run.isValid()) {
        std::fprintf(stderr, "bench_report: the demo has no pair\n");
        return 1;
    }
    CpuBackend backend;
    report::TriageReportOptions options;
    options.version = QStringLiteral("bench");
    options.command = QStringLiteral("fp8scope-cli report %1 -o report.pdf").arg(demo);
    const QString pdf = QDir(work).filePath(QStringLiteral("report.pdf"));
    std::optional<report::Document> doc;
    RenderedReport rendered;
    bool ok = true;
    const auto build = [&] {
        doc = report::buildTriageReport(catalog, baseline, run, &backend, options, &error);
        ok = ok && doc.has_value();
    };
    const auto paint = [&] { ok = ok && doc && renderReport(*doc, pdf, {}, &rendered, &error); };
    const double buildSeconds = bench::medianSeconds(5, build, true);
    const double paintSeconds = bench::medianSeconds(5, paint, true);
    // The same document without hashing the input files.
    report::TriageReportOptions unhashed = options;
    unhashed.hashFiles = false;
    const double noHashSeconds = bench::medianSeconds(5,
        [&] { ok = ok && report::buildTriageReport(catalog, baseline, run, &backend, unhashed, &error).has_value(); });
    // The same document without a backend: nothing recomputed from dumps (no histograms, no what-if).
    const double noDumpsSeconds = bench::medianSeconds(
        5, [&] { ok = ok && report::buildTriageReport(catalog, baseline, run, nullptr, options, &error).has_value(); });
    const bench::Paired whole = bench::pairedMedians(
        5,
        [&] {
            build();
            paint();
        },
        [&] { (void)analysis::compareRuns(catalog, baseline, run); });
    if (!ok) {
        std::fprintf(stderr, "bench_report: %s\n", qPrintable(error));
        return 1;
    }
    std::printf("triage report of the demo pair (%d pages, %lld bytes; %s)\n", rendered.pages,
        static_cast<long long>(QFileInfo(pdf).size()), qPrintable(backend.name()));
    std::printf("| part | median of 5 (s) |\n|---|---|\n");
    std::printf("| build the document | %.3f |\n", buildSeconds);
    std::printf("| ... without hashing the input files | %.3f |\n", noHashSeconds);
    std::printf("| ... without recomputing dumps (no histograms, no what-if) | %.3f |\n", noDumpsSeconds);
    std::printf("| paint the PDF (with bookmarks) | %.3f |\n", paintSeconds);
    std::printf("| whole report | %.3f |\n", whole.workSeconds);
    std::printf("| reference: the triage alone | %.3f |\n", whole.referenceSeconds);
    std::printf("whole / triage: %.1fx (median of the paired ratios); target: whole under 3 s\n", 1.0 / whole.ratio);
    return 0;
}

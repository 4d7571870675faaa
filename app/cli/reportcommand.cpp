#include "reportcommand.h"

#include "app/common/commandline.h"
#include "app/cudafactory.h"
#include "clijob.h"
#include "folderargs.h"

#include "core/jobs/jobqueue.h"
#include "core/numerics/backendselect.h"
#include "core/query/catalog.h"
#include "core/report/triagereport.h"
#include "core/session/foldersession.h"

#ifdef FP8SCOPE_CLI_REPORT
#include "views/report/reportrenderer.h"
#endif

#include <QCommandLineParser>
#include <QCoreApplication>
#include <QDir>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QTextStream>

namespace fp8scope::cli {

bool needsWidgets(const QString &command)
{
    return command == QLatin1String("report");
}

int runReport(const QStringList &args)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    const QString outputOpt = QStringLiteral("o");
    const QString baselineOpt = QStringLiteral("baseline");
    const QString runOpt = QStringLiteral("run");
    const QString pageOpt = QStringLiteral("page-size");
    const QString backendOpt = QStringLiteral("backend");
    if (const int rc = parseCommand(parser, *cliCommand(u"report"), args))
        return rc < 0 ? 0 : rc;
    if (!parser.isSet(outputOpt)) {
        err << "fp8scope-cli report: -o FILE.pdf is required\n";
        return 2;
    }
    if (parser.isSet(baselineOpt) != parser.isSet(runOpt)) {
        err << "fp8scope-cli report: --baseline and --run go together\n";
        return 2;
    }
    const auto backendChoice = backendChoiceFromName(parser.value(backendOpt));
    if (!backendChoice) {
        err << "fp8scope-cli: --backend takes auto, cpu or cuda\n";
        return 2;
    }
#ifndef FP8SCOPE_CLI_REPORT
    err << "fp8scope-cli report: this build has no GUI libraries (FP8SCOPE_GUI=OFF) to paint a report with\n";
    return 1;
#else
    const auto pageSize = reportPageSize(parser.value(pageOpt));
    if (!pageSize) {
        err << "fp8scope-cli report: --page-size takes A4 or Letter, not '" << parser.value(pageOpt) << "'\n";
        return 2;
    }
    const QString folder = QFileInfo(parser.positionalArguments().front()).absoluteFilePath();
    const QString output = QFileInfo(parser.value(outputOpt)).absoluteFilePath();
    FolderSession session;
    if (!openAndIngest(folder, &session, err))
        return 1;
    Catalog &catalog = session.catalog();
    RunRef baseline, run;
    if (parser.isSet(runOpt)) {
        const auto b = catalog.findRun(parser.value(baselineOpt));
        const auto r = catalog.findRun(parser.value(runOpt));
        if (!b || !r) {
            err << "fp8scope-cli: no run '" << (b ? parser.value(runOpt) : parser.value(baselineOpt)) << "'\n";
            return 1;
        }
        baseline = b->ref;
        run = r->ref;
    } else {
        std::tie(baseline, run) = report::defaultReportPair(catalog);
        if (!run.isValid()) {
            err << "fp8scope-cli report: " << folder << " holds no run; there is nothing to report\n";
            return 1;
        }
    }
    report::TriageReportOptions options;
    options.version = QCoreApplication::applicationVersion();
    const QString pageName = *pageSize == QPageSize::Letter ? QStringLiteral("Letter") : QStringLiteral("A4");
    // A folder of one run: the report of that run on its own, which the default choice makes again.
    options.command = baseline.isValid()
        ? QStringLiteral("fp8scope-cli report %1 -o %2 --baseline %3 --run %4 --page-size %5")
              .arg(folder, output, catalog.run(baseline)->name, catalog.run(run)->name, pageName)
        : QStringLiteral("fp8scope-cli report %1 -o %2 --page-size %3").arg(folder, output, pageName);
    // Built as a job (the worker owns the backend, as in the GUI), painted here: plots are widgets.
    QElapsedTimer timer;
    timer.start();
    std::optional<report::Document> document;
    QString error;
    const QString jobError = runJob([&](JobContext &ctx) {
        BackendSelection selection = selectBackend(*backendChoice, 0, cudaFactory());
        if (!selection.backend) {
            error = selection.error;
            return;
        }
        document = report::buildTriageReport(catalog, baseline, run, selection.backend.get(), options, &error,
            [&ctx](int done, int total, const QString &what) {
                ctx.setProgress(done, total, what);
                return !ctx.isCancelled();
            });
    });
    if (!jobError.isEmpty() || !document) {
        err << "fp8scope-cli report: " << (jobError.isEmpty() ? error : jobError) << '\n';
        return 1;
    }
    RenderedReport rendered;
    if (!renderReport(*document, output, {*pageSize}, &rendered, &error)) {
        err << "fp8scope-cli report: " << error << '\n';
        return 1;
    }
    out << "wrote " << output << " (" << rendered.pages << " pages, " << timer.elapsed() << " ms)\n";
    for (const auto &[title, page] : rendered.sections)
        out << "  p. " << page << "  " << title << '\n';
    return 0;
#endif
}

} // namespace fp8scope::cli

// fp8scope-cli: the headless front end. Every command shares its parsing, numerics and storage with the GUI
// through fp8scope_core.
#include "democommand.h"
#include "generatecommand.h"
#include "reportcommand.h"
#include "statscommand.h"
#include "storecommands.h"
#include "triagecommand.h"

#include <QCoreApplication>
#include <QTextStream>

#ifdef FP8SCOPE_CLI_REPORT
#include <QApplication>
#endif

#include <memory>

int main(int argc, char **argv)
{
    // A report paints plots, which are widgets: a QApplication on the offscreen platform (no display needed)
    // unless the user chose another. Every other command needs no GUI at all.
    std::unique_ptr<QCoreApplication> application;
#ifdef FP8SCOPE_CLI_REPORT
    if (argc > 1 && fp8scope::cli::needsWidgets(QString::fromLocal8Bit(argv[1]))) {
        if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM"))
            qputenv("QT_QPA_PLATFORM", "offscreen");
        application = std::make_unique<QApplication>(argc, argv);
    }
#endif
    if (!application)
        application = std::make_unique<QCoreApplication>(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("fp8scope-cli"));
    QCoreApplication::setApplicationVersion(QStringLiteral(FP8SCOPE_VERSION));
    QStringList args = QCoreApplication::arguments();
    QTextStream err(stderr);
    const QString usage = QStringLiteral(
        "usage: fp8scope-cli COMMAND [options]\n"
        "commands:\n"
        "  stats FILE[:DATASET]   FP8 metrics of one tensor (--recipe, --format, --what-if, --json)\n"
        "  generate OUT.h5        write a synthetic tensor dump in the fp8scope-dump HDF5 layout\n"
        "  demo OUTDIR            write the synthetic BF16/FP8 demo run pair with planted problems\n"
        "  ingest FOLDER          read a run folder (logs, evals, configs, dumps) into its store\n"
        "  runs FOLDER            list the runs: precision, recipe, baseline and why, versions (--json)\n"
        "  series FOLDER          print one series (--run, --stat, [--layer, --tensor, --source], --csv)\n"
        "  heatmap FOLDER         print a layers x steps matrix (--run, --stat, --tensor, [--source], --csv)\n"
        "  recompute FOLDER       FP8 metrics of every indexed dump into the store (--recipe, --backend)\n"
        "  triage FOLDER          every FP8 run against its baseline: verdict, findings, what to try (--json)\n"
        "  compare FOLDER         a statistic of a run against its baseline: aligned, band, departure (--run, --csv)\n"
        "  report FOLDER -o PDF   the triage report of a run against its baseline as a PDF (--baseline, --run)\n"
        "run 'fp8scope-cli COMMAND --help' for a command's options\n");
    if (args.size() < 2) {
        err << usage;
        return 2;
    }
    if (args[1] == QLatin1String("--help") || args[1] == QLatin1String("-h")) {
        QTextStream(stdout) << usage;
        return 0;
    }
    const QString command = args.takeAt(1);
    if (command == QLatin1String("stats"))
        return fp8scope::cli::runStats(args);
    if (command == QLatin1String("generate"))
        return fp8scope::cli::runGenerate(args);
    if (command == QLatin1String("ingest"))
        return fp8scope::cli::runIngest(args);
    if (command == QLatin1String("runs"))
        return fp8scope::cli::runRuns(args);
    if (command == QLatin1String("series"))
        return fp8scope::cli::runSeries(args);
    if (command == QLatin1String("heatmap"))
        return fp8scope::cli::runHeatmap(args);
    if (command == QLatin1String("recompute"))
        return fp8scope::cli::runRecompute(args);
    if (command == QLatin1String("triage"))
        return fp8scope::cli::runTriage(args);
    if (command == QLatin1String("compare"))
        return fp8scope::cli::runCompare(args);
    if (command == QLatin1String("demo"))
        return fp8scope::cli::runDemo(args);
    if (command == QLatin1String("report"))
        return fp8scope::cli::runReport(args);
    if (command == QLatin1String("--version")) {
        QTextStream(stdout) << "fp8scope-cli " << QCoreApplication::applicationVersion() << '\n';
        return 0;
    }
    err << "fp8scope-cli: unknown command '" << command << "'\n" << usage;
    return 2;
}

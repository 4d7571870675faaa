// fp8scope-cli: the headless front end. Every command shares its parsing, numerics and storage with the GUI
// through fp8scope_core.
#include "app/common/commandline.h"
#include "app/common/version.h"
#include "app/cudafactory.h"
#include "attemptscommand.h"
#include "auditcommand.h"
#include "blockscommand.h"
#include "democommand.h"
#include "generatecommand.h"
#include "reportcommand.h"
#include "statscommand.h"
#include "storecommands.h"
#include "triagecommand.h"
#include "watchcommand.h"

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
    QCoreApplication::setApplicationVersion(fp8scope::fp8scopeVersion());
    QStringList args = QCoreApplication::arguments();
    QTextStream err(stderr);
    const QString usage = fp8scope::cli::cliUsage();
    if (args.size() < 2) {
        err << usage;
        return 2;
    }
    if (args[1] == QLatin1String("--help") || args[1] == QLatin1String("-h")) {
        QTextStream(stdout) << usage;
        return 0;
    }
    if (args[1] == QLatin1String("--version")) {
        QTextStream(stdout) << fp8scope::versionReport(QStringLiteral("fp8scope-cli"), fp8scope::cudaVersions());
        return 0;
    }
    const QString command = args.takeAt(1);
    if (command == QLatin1String("stats"))
        return fp8scope::cli::runStats(args);
    if (command == QLatin1String("blocks"))
        return fp8scope::cli::runBlocks(args);
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
    if (command == QLatin1String("layers"))
        return fp8scope::cli::runLayers(args);
    if (command == QLatin1String("recompute"))
        return fp8scope::cli::runRecompute(args);
    if (command == QLatin1String("triage"))
        return fp8scope::cli::runTriage(args);
    if (command == QLatin1String("watch"))
        return fp8scope::cli::runWatch(args);
    if (command == QLatin1String("compare"))
        return fp8scope::cli::runCompare(args);
    if (command == QLatin1String("demo"))
        return fp8scope::cli::runDemo(args);
    if (command == QLatin1String("report"))
        return fp8scope::cli::runReport(args);
    if (command == QLatin1String("audit"))
        return fp8scope::cli::runAudit(args);
    if (command == QLatin1String("attempts"))
        return fp8scope::cli::runAttempts(args);
    err << "fp8scope-cli: unknown command '" << command << "'\n" << usage;
    return 2;
}

// fp8scope: the inspector window. Opens the folders named on the command line, or the demo pair.
#include "app/cudafactory.h"
#include "mainwindow.h"
#include "screenshotter.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QTextStream>

using namespace fp8scope;

int main(int argc, char **argv)
{
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("fp8scope"));
    QApplication::setApplicationName(QStringLiteral("fp8scope"));
    QApplication::setApplicationVersion(QStringLiteral(FP8SCOPE_VERSION));

    QCommandLineParser parser;
    parser.setApplicationDescription(QApplication::translate("main", "An inspector for FP8 training runs."));
    parser.addHelpOption();
    parser.addVersionOption();
    parser.addPositionalArgument(QStringLiteral("PATH"),
        QApplication::translate("main", "Run folders, or folders of runs, to open."), QStringLiteral("[PATH...]"));
    const QCommandLineOption demo(QStringLiteral("demo"),
        QApplication::translate("main", "Generate the demo BF16/FP8 run pair (once, into the cache) and open it."));
    const QCommandLineOption backend(QStringLiteral("backend"),
        QApplication::translate("main", "Where recomputation runs: auto, cpu or cuda."), QStringLiteral("name"),
        QStringLiteral("auto"));
    const QCommandLineOption screenshots(QStringLiteral("screenshots"),
        QApplication::translate("main", "Save screenshots of a few states into DIR, then quit."),
        QStringLiteral("DIR"));
    parser.addOptions({demo, backend, screenshots});
    parser.process(app);

    const auto choice = backendChoiceFromName(parser.value(backend));
    if (!choice) {
        QTextStream(stderr) << "fp8scope: --backend takes auto, cpu or cuda\n";
        return 2;
    }
    MainWindow window(*choice, cudaFactory());
    const QStringList paths = parser.positionalArguments();
    const auto open = [&window, &parser, &demo, paths] {
        if (parser.isSet(demo))
            window.openDemo();
        else if (!paths.isEmpty())
            window.openFolders(paths);
    };
    window.show();
    if (parser.isSet(screenshots)) {
        // The start page first, then what was asked for.
        auto *shooter = new Screenshotter(&window, parser.value(screenshots), open);
        QObject::connect(shooter, &Screenshotter::finished, &app, [](bool ok) { QApplication::exit(ok ? 0 : 1); });
    } else {
        open();
    }
    return app.exec();
}

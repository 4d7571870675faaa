// fp8scope: the inspector window. Opens the folders named on the command line, or the demo pair.
#include "app/common/commandline.h"
#include "app/common/version.h"
#include "app/cudafactory.h"
#include "icons.h"
#include "mainwindow.h"
#include "screenshotter.h"

#include <QApplication>
#include <QCommandLineParser>
#include <QTextStream>

#include <cstring>

using namespace fp8scope;

namespace {

QCommandLineOption versionOption()
{
    return QCommandLineOption({QStringLiteral("v"), QStringLiteral("version")},
        QStringLiteral("Print the version and the versions of what fp8scope runs on, and exit."));
}

void setUp(QCommandLineParser &parser)
{
    parser.addOption(cli::helpOption());
    parser.addOption(versionOption());
    cli::addToParser(parser, cli::windowCommandLine());
}

// --help and --version are answered without a display (and before Qt's own options are taken out of argv).
bool wantsTextOnly(int argc, char **argv)
{
    for (int i = 1; i < argc; ++i) {
        for (const char *word : {"-h", "--help", "-v", "--version"}) {
            if (std::strcmp(argv[i], word) == 0)
                return true;
        }
    }
    return false;
}

int answerInText(int argc, char **argv)
{
    QCoreApplication core(argc, argv);
    QCoreApplication::setApplicationName(QStringLiteral("fp8scope"));
    QCommandLineParser parser;
    setUp(parser);
    if (!parser.parse(QCoreApplication::arguments())) {
        QTextStream(stderr) << "fp8scope: " << parser.errorText() << '\n';
        return 2;
    }
    if (parser.isSet(QStringLiteral("help")))
        QTextStream(stdout) << parser.helpText();
    else
        QTextStream(stdout) << versionReport(QStringLiteral("fp8scope"), cudaVersions());
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    if (wantsTextOnly(argc, argv))
        return answerInText(argc, argv);
    QApplication app(argc, argv);
    QApplication::setOrganizationName(QStringLiteral("fp8scope"));
    QApplication::setApplicationName(QStringLiteral("fp8scope"));
    QApplication::setApplicationVersion(fp8scopeVersion());
    QApplication::setWindowIcon(applicationIcon());
    // Wayland matches the window to the installed desktop entry by this name.
    QGuiApplication::setDesktopFileName(QStringLiteral(FP8SCOPE_APP_ID));

    QCommandLineParser parser;
    setUp(parser);
    if (!parser.parse(QApplication::arguments())) {
        QTextStream(stderr) << "fp8scope: " << parser.errorText() << '\n';
        return 2;
    }
    const auto choice = backendChoiceFromName(parser.value(QStringLiteral("backend")));
    if (!choice) {
        QTextStream(stderr) << "fp8scope: --backend takes auto, cpu or cuda\n";
        return 2;
    }
    MainWindow window(*choice, cudaFactory());
    window.setCudaVersions(cudaVersions());
    const QStringList paths = parser.positionalArguments();
    const bool demo = parser.isSet(QStringLiteral("demo"));
    const auto open = [&window, demo, paths] {
        if (demo)
            window.openDemo();
        else if (!paths.isEmpty())
            window.openFolders(paths);
    };
    window.show();
    if (parser.isSet(QStringLiteral("screenshots"))) {
        // The start page first, then what was asked for.
        const auto tour = demo ? Screenshotter::Tour::Demo
            : paths.isEmpty()  ? Screenshotter::Tour::StartPage
                               : Screenshotter::Tour::Folder;
        auto *shooter = new Screenshotter(&window, parser.value(QStringLiteral("screenshots")), open, tour);
        QObject::connect(shooter, &Screenshotter::finished, &app, [](bool ok) { QApplication::exit(ok ? 0 : 1); });
    } else {
        open();
    }
    return app.exec();
}

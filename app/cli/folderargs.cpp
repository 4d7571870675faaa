#include "folderargs.h"

#include <QTextStream>

namespace fp8scope::cli {

int parseFolderArgs(QCommandLineParser &parser, const QStringList &args, const QString &what)
{
    parser.setApplicationDescription(what);
    parser.addHelpOption();
    parser.addPositionalArgument(QStringLiteral("folder"), QStringLiteral("run folder or workspace"));
    QTextStream err(stderr);
    if (!parser.parse(args)) {
        err << "fp8scope-cli: " << parser.errorText() << '\n';
        return 2;
    }
    if (parser.isSet(QStringLiteral("help"))) {
        QTextStream(stdout) << parser.helpText();
        return -1;
    }
    if (parser.positionalArguments().size() != 1) {
        err << "fp8scope-cli: expected one FOLDER\n";
        return 2;
    }
    return 0;
}

} // namespace fp8scope::cli

// fp8scope-docgen: a build-time tool (never installed) that writes what the package ships beside the
// executables from the sources they are built from: the man pages and the bash completion from the command-line
// descriptions (app/common/commandline.cpp), and the icon's PNG sizes from its SVG.
//   fp8scope-docgen man-cli OUT | man-window OUT | completion OUT | icon SVG SIZE OUT
#include "app/common/manpage.h"

#include <QFile>
#include <QGuiApplication>
#include <QImage>
#include <QPainter>
#include <QSaveFile>
#include <QSvgRenderer>
#include <QTextStream>

namespace {

int writeText(const QString &path, const QString &text)
{
    QSaveFile file(path);
    if (!file.open(QIODevice::WriteOnly) || file.write(text.toUtf8()) < 0 || !file.commit()) {
        QTextStream(stderr) << "fp8scope-docgen: cannot write " << path << ": " << file.errorString() << '\n';
        return 1;
    }
    return 0;
}

int renderIcon(const QString &svg, int size, const QString &out)
{
    QSvgRenderer renderer(svg);
    if (!renderer.isValid()) {
        QTextStream(stderr) << "fp8scope-docgen: " << svg << " is not a valid SVG\n";
        return 1;
    }
    QImage image(size, size, QImage::Format_ARGB32_Premultiplied);
    image.fill(Qt::transparent);
    QPainter painter(&image);
    painter.setRenderHint(QPainter::Antialiasing);
    renderer.render(&painter, QRectF(0, 0, size, size));
    painter.end();
    if (!image.save(out, "PNG")) {
        QTextStream(stderr) << "fp8scope-docgen: cannot write " << out << '\n';
        return 1;
    }
    return 0;
}

} // namespace

int main(int argc, char **argv)
{
    using namespace fp8scope::cli;
    QStringList args;
    for (int i = 1; i < argc; ++i)
        args << QString::fromLocal8Bit(argv[i]);
    if (args.size() == 2 && args[0] == QLatin1String("man-cli"))
        return writeText(args[1], cliManPage());
    if (args.size() == 2 && args[0] == QLatin1String("man-window"))
        return writeText(args[1], windowManPage());
    if (args.size() == 2 && args[0] == QLatin1String("completion"))
        return writeText(args[1], bashCompletion());
    if (args.size() == 4 && args[0] == QLatin1String("icon")) {
        // QPainter on an image needs a GUI application; no display is needed.
        qputenv("QT_QPA_PLATFORM", "offscreen");
        QGuiApplication app(argc, argv);
        bool ok = false;
        const int size = args[2].toInt(&ok);
        if (!ok || size < 1 || size > 4096) {
            QTextStream(stderr) << "fp8scope-docgen: icon SIZE is a number of pixels\n";
            return 2;
        }
        return renderIcon(args[1], size, args[3]);
    }
    QTextStream(stderr) << "usage: fp8scope-docgen man-cli OUT | man-window OUT | completion OUT | icon SVG SIZE OUT\n";
    return 2;
}

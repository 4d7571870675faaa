#include "icons.h"

#include <QFile>
#include <QPainter>
#include <QPixmap>
#include <QSvgRenderer>

// The resources are compiled into the static library fp8scope_shell; a static library's initialiser is only
// linked when something names it.
static void initIconResources()
{
    Q_INIT_RESOURCE(fp8scope);
}

namespace fp8scope {

namespace {

QIcon renderedIcon(const QString &path, std::initializer_list<int> sizes)
{
    initIconResources();
    QSvgRenderer renderer(path);
    QIcon icon;
    if (!renderer.isValid())
        return icon;
    for (int size : sizes) {
        QPixmap pixmap(size, size);
        pixmap.fill(Qt::transparent);
        QPainter painter(&pixmap);
        painter.setRenderHint(QPainter::Antialiasing);
        renderer.render(&painter, QRectF(0, 0, size, size));
        painter.end();
        icon.addPixmap(pixmap);
    }
    return icon;
}

} // namespace

QIcon applicationIcon()
{
    return renderedIcon(QStringLiteral(":/icons/fp8scope.svg"), {16, 22, 24, 32, 48, 64, 128, 256});
}

QIcon actionIcon(const QString &name)
{
    return renderedIcon(QStringLiteral(":/icons/actions/%1.svg").arg(name), {16, 22, 24, 32, 48});
}

} // namespace fp8scope

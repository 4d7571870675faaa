#include "folderscanner.h"

#include "importers.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QSet>

#include <algorithm>

namespace fp8scope {

FolderScan scanFolder(const QString &folder)
{
    FolderScan scan;
    const QDir root(folder);
    QDirIterator it(folder, QDir::Files | QDir::NoDotAndDotDot, QDirIterator::Subdirectories);
    QStringList paths;
    while (it.hasNext()) {
        const QString p = it.next();
        const QString rel = root.relativeFilePath(p);
        // Our own store and hidden folders are not part of the run.
        if (rel.split(QLatin1Char('/')).first().startsWith(QLatin1Char('.')))
            continue;
        paths << p;
    }
    std::sort(paths.begin(), paths.end());
    QSet<QString> topDirs;
    bool rootFiles = false;
    for (const QString &p : paths) {
        QFile f(p);
        const QByteArray head = f.open(QIODevice::ReadOnly) ? f.read(kHeadBytes) : QByteArray();
        const QString rel = root.relativeFilePath(p);
        Importer *imp = importerFor(QFileInfo(p).fileName(), head);
        if (!imp) {
            scan.unrecognised << rel;
            continue;
        }
        if (rel.contains(QLatin1Char('/')))
            topDirs.insert(rel.section(QLatin1Char('/'), 0, 0));
        else
            rootFiles = true;
        scan.files.push_back({rel, p, QString(), imp, head});
    }
    scan.workspace = !rootFiles && topDirs.size() >= 2;
    const QString single = QFileInfo(QDir(folder).absolutePath()).fileName();
    for (ScannedFile &f : scan.files)
        f.run = scan.workspace ? f.relativePath.section(QLatin1Char('/'), 0, 0) : single;
    return scan;
}

} // namespace fp8scope

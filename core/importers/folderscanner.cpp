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
    bool workspaceManifest = false;
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
        else if (imp->name() == QLatin1String("workspace-manifest"))
            workspaceManifest = true;
        else
            rootFiles = true;
        scan.files.push_back({rel, p, QString(), imp, head});
    }
    // A workspace manifest says so even for one run folder; files beside it at the root say otherwise.
    scan.workspace = !rootFiles && (topDirs.size() >= 2 || (workspaceManifest && !topDirs.isEmpty()));
    const QString single = QFileInfo(QDir(folder).absolutePath()).fileName();
    QStringList dirs(topDirs.begin(), topDirs.end());
    dirs.sort();
    for (ScannedFile &f : scan.files) {
        if (!scan.workspace)
            f.run = single;
        else if (f.relativePath.contains(QLatin1Char('/')))
            f.run = f.relativePath.section(QLatin1Char('/'), 0, 0);
        else
            f.run = dirs.front(); // the workspace manifest: it names its runs itself; this one exists anyway
    }
    return scan;
}

} // namespace fp8scope

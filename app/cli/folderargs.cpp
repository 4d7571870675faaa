#include "folderargs.h"

#include "core/session/foldersession.h"

#include <QTextStream>

namespace fp8scope::cli {

// Opens the folder's store and reads the folder as it is now first (files added or grown since the last ingest).
bool openAndIngest(const QString &folder, FolderSession *session, QTextStream &err)
{
    QString error;
    if (!session->open(folder, &error)) {
        err << "fp8scope-cli: " << error << '\n';
        return false;
    }
    for (const FolderSession::FolderIngest &f : session->ingest()) {
        for (const QString &e : f.report.errors)
            err << "fp8scope-cli: " << e << '\n';
    }
    return true;
}

QString nameOf(const Catalog &catalog, RunRef ref)
{
    const auto r = catalog.run(ref);
    return r ? r->name : QString();
}

} // namespace fp8scope::cli

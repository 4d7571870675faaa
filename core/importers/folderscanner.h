// Finds the files of a run folder that an importer recognises (by name and first bytes, at any depth) and
// groups them into runs: a folder whose recognised files all sit in two or more subfolders (or in subfolders
// beside an fp8scope-workspace.json) is a workspace of runs named after those subfolders; otherwise the
// folder is one run named after itself.
#pragma once

#include "importer.h"

#include <QStringList>

#include <vector>

namespace fp8scope {

struct ScannedFile {
    QString relativePath;
    QString absolutePath;
    QString run;
    Importer *importer = nullptr;
    QByteArray head; // first bytes, up to kHeadBytes
};

struct FolderScan {
    std::vector<ScannedFile> files;
    QStringList unrecognised; // relative paths
    bool workspace = false;
};

constexpr qint64 kHeadBytes = 4096;

FolderScan scanFolder(const QString &folder);

} // namespace fp8scope

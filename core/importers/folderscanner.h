// Finds the files of a run folder that an importer recognises (by name and first bytes, at any depth, through
// linked folders, compressed logs by what they decompress to) and groups them into runs. A folder whose
// recognised files all sit in two or more subfolders that hold the same kind of record (two training logs, two
// metrics tables; or in subfolders beside an fp8scope-workspace.json) is a group of runs, one per subfolder,
// unless those subfolders are all named as the parts of one run (logs/, tensorboard/, dumps/, rank_3/, ...); the rule
// applies again inside each run of a group, so a folder divides into the same runs whether it is opened alone or as
// part of a larger folder. Any other folder is one run. A run is named after its folder (for a run of a group, the
// deepest folder that holds all its files: group/run/... is "run"), or after its path from the opened folder where two
// runs' folders share a name.
#pragma once

#include "importer.h"

#include <QHash>
#include <QStringList>

#include <vector>

namespace fp8scope {

struct ScannedFile {
    QString relativePath;
    QString absolutePath;
    QString run;
    Importer *importer = nullptr;
    // A rank's statistics log whose lines repeat another's of its reduction group but for their timestamps (the
    // relative path of that one, read before it); found when ScanOptions::findRankCopies says so.
    QString sameAs;
    qint64 size = 0; // when scanned
    qint64 mtime = 0; // last modified when scanned, in ms since the epoch
};

struct FolderScan {
    std::vector<ScannedFile> files;
    QStringList unrecognised; // relative paths of files no importer reads
    // Files and folders that cannot be read at all, with why: names that are not valid UTF-8 (Qt cannot
    // open them), files that do not open (permissions).
    std::vector<std::pair<QString, QString>> unreadable;
    bool workspace = false; // the opened folder is a group of runs
    // The folder of each run, relative to the opened folder ("" for the opened folder itself), to its run.
    QHash<QString, QString> runOfFolder;
};

constexpr qint64 kHeadBytes = 4096;
// A table's header line is what recognises it: a CSV or JSONL head is read on to its first newline, up to
// this much (a W&B export with 150 columns has a header past 4 KiB).
constexpr qint64 kMaxHeaderLine = qint64(1) << 20;

struct ScanOptions {
    // Compare each rank's log with its group's first members (RankCopies): what an ingest needs, not a listing.
    bool findRankCopies = false;
};

FolderScan scanFolder(const QString &folder, const ScanOptions &options = {});

} // namespace fp8scope

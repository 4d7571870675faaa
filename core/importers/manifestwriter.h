// Writes what the user set for a run in the window into the run folder's fp8scope.json manifest (the file
// ManifestImporter reads), so that it survives a reopen, a rebuilt store and a copy of the folder. Fields
// the manifest has and the window does not set (notes written by hand, unknown keys) are kept.
#pragma once

#include <QString>

#include <optional>

namespace fp8scope {

struct RunManifest {
    QString name; // display name; "" for none (the folder's name)
    QString precision;
    QString recipe;
    QString baseline; // the baseline run's name; "" lets pairing choose
    QString inferencePrecision;
    QString notes;
    // As a baseline: the loss gap at the end its comparisons accept ("loss_gap_bar"), a number at least 0; "" for
    // none (the triage's default). Written as a number.
    QString lossGapBar = {};
};

// The folder of run `runName` inside the opened folder (the opened folder itself for a single run), found
// the way ingest groups files into runs; nullopt when no folder is that run's.
std::optional<QString> runFolderOf(const QString &openedFolder, const QString &runName);

// Where a run's settings are written and read: a manifest file (absolute path), and the key under its "runs" where
// it is a workspace manifest (fp8scope-workspace.json; "" for a run's own fp8scope.json).
struct ManifestPlace {
    QString file;
    QString key;
};
// The place of run `runName` of the opened folder: `known` (the manifest the ingest read its settings from,
// relative to the opened folder, and its key) where there is one; else the fp8scope.json of the folder that is the
// run's (`ownFolder` as the store has it, relative to the opened folder; else runFolderOf, which scans the folder);
// else, for a run no folder is alone (a W&B history export among several, a table's run column), the workspace
// manifest beside the files that wrote it (`filesFolder` as the store has it; else, for a history export, the
// scan's), keyed by the run. None when nothing says where its files are.
std::optional<ManifestPlace> runManifestPlace(const QString &openedFolder, const QString &runName,
    const QString &known = {}, const QString &knownKey = {}, const std::optional<QString> &ownFolder = {},
    const std::optional<QString> &filesFolder = {});

// Merges `manifest` into the place's manifest (created when missing): every field is written, an empty one as ""
// (which unsets it when read); written whole or not at all. False with *error (the file and why) otherwise, the
// file unchanged.
bool writeRunManifest(const ManifestPlace &place, const RunManifest &manifest, QString *error);
// Sets the attempt this run derives from ("parent": a run's name, core/analysis/attempts) in its manifest, keeping
// the rest; an empty parent is written as "" (the closest earlier attempt is taken again).
bool writeRunParent(const ManifestPlace &place, const QString &parent, QString *error);

} // namespace fp8scope

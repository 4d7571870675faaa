#include "manifestwriter.h"

#include <cmath>

#include "folderscanner.h"
#include "tableimporters.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QSaveFile>

#include <functional>

namespace fp8scope {

std::optional<QString> runFolderOf(const QString &openedFolder, const QString &runName)
{
    const FolderScan scan = scanFolder(openedFolder);
    for (auto it = scan.runOfFolder.begin(); it != scan.runOfFolder.end(); ++it) {
        if (it.value() == runName)
            return it.key().isEmpty() ? QDir(openedFolder).absolutePath()
                                      : QDir(openedFolder).absoluteFilePath(it.key());
    }
    return std::nullopt;
}

std::optional<ManifestPlace> runManifestPlace(const QString &openedFolder, const QString &runName, const QString &known,
    const QString &knownKey, const std::optional<QString> &ownFolder, const std::optional<QString> &filesFolder)
{
    if (!known.isEmpty())
        return ManifestPlace {QDir(openedFolder).absoluteFilePath(known), knownKey};
    if (ownFolder)
        return ManifestPlace {
            QDir(QDir(openedFolder).absoluteFilePath(*ownFolder)).filePath(QStringLiteral("fp8scope.json")), QString()};
    if (filesFolder)
        return ManifestPlace {
            QDir(QDir(openedFolder).absoluteFilePath(*filesFolder)).filePath(QStringLiteral("fp8scope-workspace.json")),
            runName};
    if (const std::optional<QString> dir = runFolderOf(openedFolder, runName))
        return ManifestPlace {QDir(*dir).filePath(QStringLiteral("fp8scope.json")), QString()};
    const FolderScan scan = scanFolder(openedFolder);
    for (const ScannedFile &f : scan.files) {
        if (runOfHistoryExport(f.absolutePath) == runName)
            return ManifestPlace {
                QFileInfo(f.absolutePath).absoluteDir().filePath(QStringLiteral("fp8scope-workspace.json")), runName};
    }
    return std::nullopt;
}

namespace {

// Reads the place's manifest (or nothing), applies `change` to the run's object, writes it whole (QSaveFile) or not
// at all.
bool editManifest(const ManifestPlace &place, const std::function<void(QJsonObject &)> &change, QString *error)
{
    const QString path = place.file;
    QJsonObject o;
    QFile existing(path);
    if (existing.exists()) {
        if (!existing.open(QIODevice::ReadOnly)) {
            *error = QStringLiteral("%1: %2").arg(path, existing.errorString());
            return false;
        }
        QJsonParseError parse;
        const QJsonDocument doc = QJsonDocument::fromJson(existing.readAll(), &parse);
        if (parse.error != QJsonParseError::NoError || !doc.isObject()) {
            // Never overwrite a file someone wrote by hand and got wrong: say where it is wrong.
            *error = QStringLiteral("%1: not a JSON object (offset %2: %3); fix or remove it first")
                         .arg(path)
                         .arg(parse.offset)
                         .arg(parse.error == QJsonParseError::NoError ? QStringLiteral("expected an object")
                                                                      : parse.errorString());
            return false;
        }
        o = doc.object();
    }
    if (!place.key.isEmpty() && o.contains(QStringLiteral("runs")) && !o.value(QStringLiteral("runs")).isObject()) {
        *error = QStringLiteral("%1: \"runs\" is not an object; fix or remove it first").arg(path);
        return false;
    }
    if (place.key.isEmpty()) {
        change(o);
    } else {
        QJsonObject runs = o.value(QStringLiteral("runs")).toObject();
        QJsonObject run = runs.value(place.key).toObject();
        change(run);
        runs.insert(place.key, run);
        o.insert(QStringLiteral("runs"), runs);
    }
    QSaveFile out(path);
    if (!out.open(QIODevice::WriteOnly) || out.write(QJsonDocument(o).toJson(QJsonDocument::Indented)) < 0
        || !out.commit()) {
        *error = QStringLiteral("%1: %2").arg(path, out.errorString());
        return false;
    }
    return true;
}

} // namespace

bool writeRunManifest(const ManifestPlace &place, const RunManifest &manifest, QString *error)
{
    return editManifest(
        place,
        [&manifest](QJsonObject &o) {
            const std::pair<const char *, const QString *> fields[] = {{"name", &manifest.name},
                {"precision", &manifest.precision}, {"recipe", &manifest.recipe}, {"baseline", &manifest.baseline},
                {"inference_precision", &manifest.inferencePrecision}, {"notes", &manifest.notes}};
            // Every field, an empty one as "": reading "" unsets what an earlier manifest had set.
            for (const auto &[key, value] : fields)
                o.insert(QLatin1String(key), value->trimmed());
            bool ok = false;
            const double bar = manifest.lossGapBar.trimmed().toDouble(&ok);
            if (ok && std::isfinite(bar) && bar >= 0)
                o.insert(QStringLiteral("loss_gap_bar"), bar);
            else
                o.insert(QStringLiteral("loss_gap_bar"), QString()); // read as unset
        },
        error);
}

bool writeRunParent(const ManifestPlace &place, const QString &parent, QString *error)
{
    return editManifest(
        place,
        [&parent](QJsonObject &o) {
            // "" unsets it when read (a key removed would leave what the store read before).
            o.insert(QStringLiteral("parent"), parent.trimmed());
        },
        error);
}

} // namespace fp8scope

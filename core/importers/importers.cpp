#include "importers.h"

#include <QDateTime>
#include <QFileInfo>

#include "jsonimporters.h"
#include "megatronlogimporter.h"
#include "mlflowimporters.h"
#include "otherimporters.h"
#include "tableimporters.h"
#include "tedebugimporter.h"
#include "tfeventsimporter.h"
#include "versionsimporter.h"
#include "wandbimporter.h"

namespace fp8scope {

const std::vector<std::unique_ptr<Importer>> &allImporters()
{
    // Order matters where recognisers overlap: the specific formats before the general ones.
    static const std::vector<std::unique_ptr<Importer>> list = [] {
        std::vector<std::unique_ptr<Importer>> l;
        l.push_back(std::make_unique<ManifestImporter>());
        l.push_back(std::make_unique<WorkspaceManifestImporter>());
        l.push_back(std::make_unique<TeDebugImporter>());
        l.push_back(std::make_unique<VersionsImporter>());
        l.push_back(std::make_unique<MegatronLogImporter>());
        l.push_back(std::make_unique<GoldenValuesImporter>());
        l.push_back(std::make_unique<LmEvalImporter>());
        l.push_back(std::make_unique<JsonConfigImporter>());
        l.push_back(std::make_unique<MlflowRunImporter>());
        l.push_back(std::make_unique<MlflowExperimentImporter>());
        l.push_back(std::make_unique<YamlConfigImporter>());
        l.push_back(std::make_unique<CsvImporter>());
        l.push_back(std::make_unique<JsonlImporter>());
        l.push_back(std::make_unique<TfEventsImporter>());
        l.push_back(std::make_unique<WandbImporter>());
        l.push_back(std::make_unique<MlflowDbImporter>());
        l.push_back(std::make_unique<TensorDumpImporter>());
        return l;
    }();
    return list;
}

void Importer::stamp(const QString &path, int64_t *size, int64_t *mtime) const
{
    const QFileInfo info(path);
    *size = info.size();
    *mtime = info.lastModified().toMSecsSinceEpoch();
}

Importer *importerFor(const QString &fileName, const QByteArray &head)
{
    for (const auto &i : allImporters()) {
        if (i->recognises(fileName, head))
            return i.get();
    }
    return nullptr;
}

} // namespace fp8scope

// Importers of whole-file JSON formats: Megatron golden values (list and dict layouts), lm-evaluation-harness
// results (v0.4 "acc,none" and v0.3 plain keys; stderr "N/A"), the fp8scope.json run manifest, and run
// configs in JSON (flattened to dotted keys).
#pragma once

#include "configlimits.h"
#include "importer.h"

class QFileInfo;
class QJsonObject;
class QJsonValue;

namespace fp8scope {

class GoldenValuesImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("golden-values"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

class LmEvalImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("lm-eval"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

// The inference setting of an lm-eval results document: its precision in fp8scope's words, from
// config.model_args (dtype=, quantization=fp8, kv_cache_dtype=fp8; a string or an object) or
// config.model_dtype, else from the file's name or its evaluation folder's name ("results_fp8.json"); a KV
// cache in another precision is added ("bf16 kv-fp8"). *settings says what it was read from.
QString inferenceSetting(const QJsonObject &root, const QFileInfo &file, QString *settings);

class ManifestImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("manifest"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

// fp8scope-workspace.json at the root of a folder of runs: {"runs": {"<run folder>": {<manifest fields>}}},
// e.g. pairing an FP8 run with its BF16 baseline. Its presence makes the folder a workspace.
class WorkspaceManifestImporter : public Importer
{
public:
    static constexpr const char *kFileName = "fp8scope-workspace.json";
    QString name() const override { return QStringLiteral("workspace-manifest"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

class JsonConfigImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("config-json"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

// Adds every scalar under `v` as a config entry with a dotted key (arrays as [i]).
// A number as few digits write it back exactly, the way Python and JSON writers print it (0.9, 0.0003, 1e-05,
// 4096), not 0.90000000000000002.
QString shortestNumber(double v);

void flattenConfig(const QString &prefix, const QJsonValue &v, IngestSink &sink, ConfigBudget &budget, int depth);
// The problems a spent budget leaves (too many keys, too deep).
void reportConfigBudget(const ConfigBudget &budget, IngestSink &sink);

} // namespace fp8scope

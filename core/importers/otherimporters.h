// Run configs in YAML (Megatron model_config.yaml, NeMo/Hydra configs; through yaml-cpp) and tensor dumps
// (HDF5 fp8scope-dump layout, safetensors, .npy, torch.save .pt including Transformer Engine's DumpTensors
// layout) into the dump index. Dumps are indexed, never copied.
#pragma once

#include "importer.h"

#include <QHash>
#include <QMutex>
#include <QStringList>

#include <utility>

namespace fp8scope {

// How deep a YAML text nests, counted from brackets and from the stack of indentations: yaml-cpp's parser recurses
// once per level (a few thousand '[' overflow the stack; it stops block nesting at 500 levels with "bad file"), so a
// text deeper than kMaxConfigDepth is refused before it is parsed.
int yamlNesting(const QByteArray &bytes);

class YamlConfigImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("config-yaml"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

class TensorDumpImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("tensor-dump"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;

private:
    // The layer names of a DumpTensors log folder's nvdlfw_inspect logs, read again when the logs change.
    QStringList layerNames(const QString &logDir);

    QMutex m_mutex;
    QHash<QString, std::pair<QString, QStringList>> m_layerNames; // log folder: signature, names
};

} // namespace fp8scope

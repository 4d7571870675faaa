// Run configs in YAML (Megatron model_config.yaml, NeMo/Hydra configs; through yaml-cpp) and tensor dumps
// (HDF5 fp8scope-dump layout, safetensors, .npy) into the dump index. Dumps are indexed, never copied.
#pragma once

#include "importer.h"

namespace fp8scope {

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
};

} // namespace fp8scope

// The package versions a run recorded: `pip freeze` output (`name==version`, as in pip_freeze.txt or
// requirements*.txt) and `pip list` tables (`Package  Version`), and, from any log, lines such as
// "transformer_engine version: 1.7.0" or "torch version 2.3.0" (versionFromLine()).
#pragma once

#include "importer.h"

#include <optional>
#include <utility>

namespace fp8scope {

class VersionsImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("versions"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

// A distribution name as pip compares them (lower case, runs of '-', '_' and '.' as one '-'), with the
// names FP8 stacks go by mapped to one: "pytorch" is torch, Transformer Engine's and NVIDIA's per-CUDA
// wheels (transformer_engine_cu12, nvidia-cudnn-cu12) are transformer-engine and cudnn.
QString normalizePackage(const QString &name);

// (package, version) when a log line states a framework's version ("Megatron-Core version 0.8.0",
// "TransformerEngine version: 1.7", "torch version = 2.3.0+cu121", "NeMo version 2.0.0").
std::optional<std::pair<QString, QString>> versionFromLine(QStringView line);

} // namespace fp8scope

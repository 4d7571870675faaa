// Megatron-LM / NeMo stdout training logs: ` iteration N/ M | key: value | ... |` lines (fields optional;
// a line whose every step was skipped has no `lm loss`) and `validation loss at iteration N | ...` lines.
// Everything else in the log is left alone.
#pragma once

#include "importer.h"

namespace fp8scope {

class MegatronLogImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("megatron-log"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    bool resumable() const override { return true; }
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

} // namespace fp8scope

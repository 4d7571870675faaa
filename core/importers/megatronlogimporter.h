// Megatron-LM / NeMo stdout training logs: ` iteration N/ M | key: value | ... |` lines (fields optional;
// a line whose every step was skipped has no `lm loss`) and `validation loss at iteration N | ...` lines.
// Everything else in the log is left alone.
#pragma once

#include "importer.h"

#include <optional>

namespace fp8scope {

class MegatronLogImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("megatron-log"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    bool resumable() const override { return true; }
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;

    // Where the log's training starts: the first iteration it prints, or the iteration of a checkpoint it
    // loaded before that, plus one; nullopt when its first kMaxStartSearch bytes print neither. What orders a
    // run's logs (a resumed job's log after the one it resumed).
    static std::optional<int64_t> firstStep(const QString &path);
    static constexpr qint64 kMaxStartSearch = qint64(16) << 20;
};

} // namespace fp8scope

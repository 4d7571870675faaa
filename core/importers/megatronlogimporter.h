// Megatron-LM / NeMo stdout training logs: ` iteration N/ M | key: value | ... |` lines (fields optional;
// a line whose every step was skipped has no `lm loss`) and `validation loss at iteration N | ...` lines.
// Everything else in the log is left alone.
#pragma once

#include "configlimits.h"
#include "importer.h"
#include "linereader.h"

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

// The lines of a Megatron log one at a time, with what one line leaves for the next (the arguments block, the last
// step printed): how MegatronLogImporter reads a file, and how a console another format keeps is read (W&B's
// output records).
class MegatronLines
{
public:
    // `from`: where the log's steps stood (a grown log read on, or the log before it in its stream).
    MegatronLines(IngestSink &sink, const StepPlacement &from);
    // False leaves an incomplete last line unread (it is handed over again, whole, later).
    bool handle(const TextLine &l);
    // Where the steps stand after the lines handled so far.
    void finish(StepPlacement *steps) const;

private:
    IngestSink &m_sink;
    bool m_inArguments = false;
    ConfigBudget m_budget; // an arguments block is a few hundred lines; a damaged log could make it endless
    bool m_saidTooMany = false;
    bool m_saidPlan = false;
    int64_t m_lastIteration = -1;
    bool m_continuing = false;
    std::optional<int64_t> m_loadedAt;
    // The first step of the current stretch of lines whose loss or grad norm was not finite or whose iterations
    // were all skipped (-1: the last line was healthy); carried across reads like the last step.
    int64_t m_badSince = -1;
};

} // namespace fp8scope

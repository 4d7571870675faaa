// Weights & Biases run logs (wandb/offline-run-<time>-<id>/run-<id>.wandb, and wandb/run-<...>/ of a synced run):
// the transaction log's records (core/importers/wandblog, W&B's Record messages in core/importers/wandb.proto).
// - history rows: each numeric key a series (source "wandb") at the row's `_step` (its HistoryStep, or the row's
//   number where the run logs no step), nested keys joined with '/', `_timestamp` as the points' wall time;
//   media, tables and histograms (a subtree with a `_type`) and text counted and said once, never series;
// - config (the run's and later updates): flattened as any JSON config (keys joined with '.'), so precision and
//   recipe are inferred from it; `_wandb` (W&B's own) left out;
// - summary: a key the program set in the summary itself (not the mirror of a history row wandb-core writes, which
//   carries the row's _step) and no history row logs is a series of its own (source "wandb-summary") at the last
//   step;
// - console (output_raw and output records): the chunks joined into lines, carriage-return redraws and terminal
//   colours taken out, read as a Megatron log is (its iteration lines, arguments and version lines count);
// - telemetry and environment: the Python, wandb, transformers and CUDA versions; the run's notes.
// The run's name is its folder's (the scanner names a W&B run folder by the run's name, wandbRunName). A log
// being written is read up to its last complete record and on from there at the next ingest; a damaged chunk
// is said at its offset and reading goes on at the next block.
#pragma once

#include "importer.h"

#include <QByteArray>

namespace fp8scope {

class WandbImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("wandb"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    bool resumable() const override { return true; }
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

// The run record of a .wandb log (the second record W&B writes, after its header), from the log's first bytes:
// what the folder scanner names a W&B run by (an offline run has no name when the user gave none: W&B's server
// names runs). Reads at most kMaxRunRecordSearch bytes.
LoggedRunName wandbRunName(const QString &path);
constexpr qint64 kMaxRunRecordSearch = qint64(1) << 20;

} // namespace fp8scope

// The logs of one stream, in the order they were written. A run's training can leave its steps in several
// logs: a resumed job's launcher log (`slurm-999.out`, then `slurm-1000.out`), a rank's statistics in a new
// timestamped file after a resume (`nvdlfw_inspect_globalrank-0.log`, then
// `nvdlfw_inspect_20260116_080000_globalrank-0.log`). Their names do not say their order; their content does.
// The ingest reads each log after the one before it in its stream and hands it where that one's steps ended
// (StepPlacement), so that a restart across them is seen and placed.
#pragma once

// Only core/query, core/session and core/recompute read or write a store (their targets link
// fp8scope_store, which defines this); everything above them goes through Catalog and FolderSession.
#ifndef FP8SCOPE_STORE_ACCESS
#error                                                                                                                 \
    "core/store is private to core: read runs through core/query's Catalog, write through core/session's FolderSession (docs/ARCHITECTURE.md)"
#endif

#include "core/importers/folderscanner.h"

#include <QHash>

#include <vector>

namespace fp8scope {

struct LogStreams {
    // The scan's files in the order to read them: every run's Megatron logs first (a restarted statistics
    // counter is placed at the resume points they give), each stream's logs in the order they were written,
    // everything else as the scan found it.
    std::vector<const ScannedFile *> order;
    // Each log that continues another's stream, to that one (relative paths).
    QHash<QString, QString> before;
};

// Megatron logs of a run are one stream, ordered by the first step each prints (or the checkpoint it
// loaded before that), then by when they were last written; a rank's statistics logs are one stream per
// name without its timestamp (`_YYYYMMDD_HHMMSS`), the one without a timestamp first, then by timestamp.
LogStreams orderLogStreams(const FolderScan &scan);

// The name of a statistics log without the timestamp of a resumed job's file ("" when it has none).
QString withoutTimestamp(const QString &relativePath, QString *timestamp);

} // namespace fp8scope

// Transformer Engine's DumpTensors layout: `<log_dir>/tensor_dumps/rank_<r>/iter_<%06d>/<layer>_<tensor>.pt`,
// the layer name sanitized (the characters / \ : * ? " < > | . and space became '_'). The true names are
// those the debug tool's own log assigned (`nvdlfw_inspect_logs/nvdlfw_inspect_globalrank-N.log`, lines
// "Assigned layer name: X" and "LAYER=X: ..."); a file name is mapped back through them.
#pragma once

#include <QString>
#include <QStringList>

#include <optional>

namespace fp8scope {

struct TeDumpPath {
    QString logDir; // the folder holding tensor_dumps/
    int rank = 0;
    qint64 iteration = -1;
    QString stem; // "<sanitized layer>_<tensor>"
};

// The parts of a DumpTensors file path; nothing for any other path.
std::optional<TeDumpPath> parseTeDumpPath(const QString &path);

// A layer name as DumpTensors puts it in a file name.
QString sanitizeDumpName(const QString &name);

// The layer names the nvdlfw_inspect logs of a log folder assign (in logDir/nvdlfw_inspect_logs and
// logDir/<rank folder>/nvdlfw_inspect_logs), longest first.
QStringList inspectLogLayerNames(const QString &logDir);
// What changes when those logs do (their names, sizes and times): when to read the names again.
QString inspectLogSignature(const QString &logDir);

struct ResolvedDumpName {
    QString layer;
    QString tensor; // "activation", "weight", "gradient", ... (empty when the stem has no known suffix)
    bool resolved = false; // the layer is a name the log assigned; else it is the sanitized one
};

// Splits a file stem into its layer (through the known names: the longest whose sanitized form is followed
// by "_<tensor>") and tensor; without a match, the stem less a known tensor suffix, unresolved.
ResolvedDumpName resolveDumpStem(const QString &stem, const QStringList &layers);

} // namespace fp8scope

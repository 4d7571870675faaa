// The importer interface: one implementation per input format (one file each), registered in
// importers.cpp. An importer reads one file, from the start or from where the last ingest stopped, and
// hands what it finds to an IngestSink (the run store, or a test's collector).
#pragma once

#include <QByteArray>
#include <QString>

#include <cmath>
#include <cstdint>
#include <vector>

namespace fp8scope {

// A series is keyed by run (the sink's current run) and these; empty strings mean "none".
struct SeriesKey {
    QString layer;
    QString tensor;
    QString stat;
    QString source;
    QString recipe;
};

struct EvalRecord {
    QString task;
    QString metric;
    double value = NAN;
    double stderrValue = NAN; // NaN when not given or "N/A"
    QString inference; // inference precision when known ("bf16", "fp8", "fp8 kv-fp8", ...)
    QString settings; // the inference settings it was read from ("dtype=bfloat16, kv_cache_dtype=fp8")
};

struct DumpRecord {
    QString dataset; // inside the file ("" for single-tensor files)
    QString layer;
    QString tensor;
    int64_t step = -1;
    QString dtype;
    QString shape; // e.g. "1024x4096"
};

class IngestSink
{
public:
    virtual ~IngestSink() = default;
    // Records after this call belong to the named run (a long CSV's run column); the scanner's run by default.
    virtual void useRun(const QString &name) = 0;
    // Records after this call belong to the run whose folder is `folder`, a subfolder of the file's own
    // folder (a workspace manifest names its runs so); false, with nothing changed, when that is no run's.
    virtual bool useRunFolder(const QString &folder)
    {
        useRun(folder);
        return true;
    }
    // Records after this call belong to the run of that name the store holds already (a workspace manifest names a
    // run of a table's run column so; read after the other files); false, with nothing changed, when none is.
    virtual bool useExistingRun(const QString &) { return false; }
    // A handle for the series `key` of the current run; importers cache it for repeated points.
    virtual int64_t series(const SeriesKey &key) = 0;
    virtual void point(int64_t series, int64_t step, double value, double wallTime = NAN) = 0;
    void point(const SeriesKey &key, int64_t step, double value, double wallTime = NAN)
    {
        point(series(key), step, value, wallTime);
    }
    virtual void eval(const EvalRecord &e) = 0;
    virtual void config(const QString &key, const QString &value) = 0;
    // A package version the run recorded (a pip freeze line, a "torch version: 2.3" log line); the package
    // name as its distribution spells it, normalized (lower case, runs of "-_." as one "-").
    virtual void version(const QString &package, const QString &version) = 0;
    // precision, recipe, baseline, inference_precision, notes, display_name, group (the logger's: a W&B group, an
    // MLflow experiment)
    virtual void runInfo(const QString &field, const QString &value) = 0;
    virtual void dump(const DumpRecord &d) = 0;
    // line is 1-based (0 when unknown), offset in bytes (-1 when unknown).
    virtual void problem(int64_t line, int64_t offset, const QString &message) = 0;
    // The steps the current run's training resumed from, ascending, as its Megatron logs say (the points of
    // its "rewind" series from the source "megatron-log"): where a restarted statistics counter is placed.
    virtual std::vector<int64_t> resumePoints() { return {}; }
};

// Where a log's steps stood at the end of a read: carried to the next read of a grown log, and from one log
// to the next of the same stream (a rank's statistics in a new file after a resume, a job's next launcher
// log), so that a step counter that starts again is seen, and placed after what came before.
struct StepPlacement {
    int64_t shift = 0; // added to the steps the log prints (a restarted counter placed after the earlier steps)
    int64_t lastPrinted = -1; // the last step as the log printed it; -1 before any
    int64_t lastPlaced = -1; // the last step as stored (printed + shift)
    int64_t stride = 0; // between the last two different steps printed (0 before two)
    int64_t segmentStart = -1; // the stored step where the current stretch of steps began
    // Set by the ingest for a log read from its start with the state of the log before it in its stream;
    // its first step then counts as a restart even when it equals the last step before.
    bool continuesEarlierLog = false;
    // A Megatron log: the first step of the stretch of non-finite or all-skipped lines it ended in (-1: none).
    int64_t badSince = -1;
    // A log of rows with steps of their own beside its console (W&B's history): the step of the last row read
    // (-1: none), where a row without a step goes next.
    int64_t lastRow = -1;
};

// Where a read stopped: the byte offset and line count of the end of the last complete record (of the
// content: a compressed file's decompressed bytes).
struct ReadPosition {
    int64_t offset = 0;
    int64_t line = 0;
    // The file ended in a line without its newline that was left for the next ingest (a file still being
    // written); the ingest then looks at the file again even when it has not changed.
    bool pendingTail = false;
    StepPlacement steps;
};

// The name a logger gave a run whose folder is its own (a W&B run, an MLflow file-store run), for the folder
// scanner to name the run by.
struct LoggedRunName {
    QString id; // the logger's id of the run ("" when unknown)
    QString name; // as the user named it ("" when not named)
};

class Importer
{
public:
    virtual ~Importer() = default;
    virtual QString name() const = 0;
    // Decides from the file name and its first bytes (up to 4 KiB).
    virtual bool recognises(const QString &fileName, const QByteArray &head) const = 0;
    // Line-based formats resume a grown file at the last position; others re-read the whole file.
    virtual bool resumable() const { return false; }
    virtual ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) = 0;
    // The size and modification time (ms since the epoch) the ingest tells a change of the file by: the file's
    // own, or what it is read with (a run folder read from its meta file).
    virtual void stamp(const QString &path, int64_t *size, int64_t *mtime) const;
};

} // namespace fp8scope

// Importers of per-step tables: CSV (wide: a step column and metric columns, as W&B history exports; long:
// with a run column, several runs in one file) and JSONL (one object per step, optional "run").
#pragma once

#include "importer.h"

namespace fp8scope {

class CsvImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("csv"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    bool resumable() const override { return true; }
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;

    // Splits one CSV record (RFC 4180 quotes); false on an unterminated quote.
    static bool splitRecord(const QString &line, QStringList *fields);
};

class JsonlImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("jsonl"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    bool resumable() const override { return true; }
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

// Column or key names that hold the step, in order of preference.
int stepColumn(const QStringList &names);
// W&B exports one run per history file: `history_<run id>.csv`. Several beside each other are several runs, each
// named by its file (the file's stem, returned); one alone beside a run's other files is that run's history (the
// folder's run: "" is returned, as for any other file).
QString runOfHistoryExport(const QString &path);

// Python's json.dumps (and W&B's history) writes NaN, Infinity and -Infinity bare, which JSON has no words for:
// outside strings they become the strings "NaN", "Infinity" and "-Infinity", for the reader to take as those
// numbers.
QByteArray quoteNonFinite(const QByteArray &json);

} // namespace fp8scope

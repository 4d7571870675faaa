// The triage report of a run against its baseline as a document (core/report/reportmodel.h): what was
// compared, what the triage engine found and on what evidence, what to try next, the user's reviews, the
// rules that decided, and where every input came from. Everything is read through the query layer and
// computed by the same code as the window's views (the comparison, the layer matrix, the metrics engine on
// tensor dumps, the block census), so the report says what the window shows. views/report paints it.
#pragma once

#include "reportmodel.h"

#include "core/query/catalog.h"

#include <QDateTime>

#include <functional>
#include <optional>

namespace fp8scope {

class MetricsBackend;

namespace report {

struct TriageReportOptions {
    QString version; // fp8scope's, on the title page and in every footer
    QDateTime made = QDateTime::currentDateTimeUtc();
    QString command; // the command that makes this report again (provenance)
    int curvePoints = 1200; // min/max buckets per line: a spike of one step stays visible
    int maxSuspects = 3; // suspects given their own curve and histogram
    bool hashFiles = true; // SHA-256 of every input file (read whole)
};

// progress(done, total, what) may return false to cancel (nullopt, *error "cancelled").
using Progress = std::function<bool(int done, int total, const QString &what)>;

// The report, or nullopt with *error. `backend` recomputes the histograms and the what-if of the suspects'
// nearest dumps (nullptr: the report says they were not computed).
std::optional<Document> buildTriageReport(const Catalog &catalog, RunRef baseline, RunRef run, MetricsBackend *backend,
    const TriageReportOptions &options, QString *error, const Progress &progress = {});

// The pair a report is about when none is named: the first run with a baseline, else the first two runs.
std::pair<RunRef, RunRef> defaultReportPair(const Catalog &catalog);

} // namespace report
} // namespace fp8scope

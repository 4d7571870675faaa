// The tables a comparison of two runs shows beside its findings: every config key and key-package version
// with both values and its class, and every evaluation both runs scored, with the gap against its standard
// error. The triage engine reads its config, version and eval findings off the same rows, so the window's
// tables and the findings never disagree.
#pragma once

#include "triage.h"

#include "core/query/catalog.h"

#include <vector>

namespace fp8scope::analysis {

struct ConfigRow {
    QString key;
    QString baseline; // "(unset)" where that run does not have it
    QString run;
    bool differs = false;
    bool version = false; // a package version, not a config key
    KeyClass keyClass = KeyClass::Other; // for a version: Suspect for the key packages, Incidental otherwise
};

// Every key of either run, differing ones first (suspect, other, incidental, expected), then by key; then the
// versions of packages both runs recorded. `haveBoth` is false when either run has no config at all (a
// difference then says nothing).
struct ConfigTable {
    std::vector<ConfigRow> rows;
    bool haveBoth = false;
};
ConfigTable configTable(const Catalog &catalog, RunRef baseline, RunRef run);
// "suspect", "expected for FP8", "incidental", "other", "context": how a differing key is read.
QString keyClassName(KeyClass c);

struct EvalRow {
    QString task;
    QString metric;
    QString inference; // the run's inference precision for this score
    double baseline = 0;
    double run = 0;
    double difference = 0; // run - baseline
    double standardError = 0; // of the difference: both standard errors combined (NaN: neither given)
    double z = 0; // difference / standard error: negative where the run is below the baseline, as the difference
    bool significant = false; // a drop of at least TriageOptions::evalSigmas standard errors (z <= -evalSigmas)
};
// One row per (task, metric, inference of the run) that both runs scored, in task order.
std::vector<EvalRow> evalTable(const Catalog &catalog, RunRef baseline, RunRef run, const TriageOptions &options = {});

} // namespace fp8scope::analysis

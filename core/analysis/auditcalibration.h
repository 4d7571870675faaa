// The checkpoint audit's calibration rule against a training run (docs/TRIAGE.md, "The inference checkpoint
// audit"): the amax the run's activations reached near its end (its statistics), and, where the run dumped a
// layer's activations, what the export's static input scale does to them: each such layer's dump nearest the
// end cast with that scale and with the run's own scaling, in one pass of the metrics engine (the recipe
// what-if's machinery: a static scale is a delayed recipe whose history holds the range it represents). The
// triage's gathering and `fp8scope-cli audit --run` both apply it (auditAgainstRun).
#pragma once

#include "core/audit/checkpointaudit.h"
#include "core/query/lateamax.h"

namespace fp8scope {

class Catalog;

struct RunCalibration {
    LateAmax late; // the statistics read (an empty statistic: none)
    int dumpsCast = 0; // the activation dumps cast with an input scale
    std::vector<Problem> problems; // dumps that could not be read
};

// Fills the dump figures of every layer with a static input scale whose training module `run` dumped the
// activation of (AuditLayer::dumpSaturatedPct, ...), then applies checkCalibration with the run's late amax.
// A dump is cast once while its file keeps its size and time (the live triage gathers a pair at every follow).
RunCalibration calibrateAgainstRun(const Catalog &catalog, RunRef run, const QString &runLabel, AuditResult &result);

// The rules that take the training run, one set on every path (the triage's gathering of a pair, `fp8scope-cli audit
// --run`): the layers its config says it trained in BF16 quantized in the export (checkTrainingPrecision with
// bf16TrainedLayers), then the calibration against its activations (calibrateAgainstRun).
RunCalibration auditAgainstRun(const Catalog &catalog, RunRef run, const QString &runLabel, AuditResult &result);

} // namespace fp8scope

// The largest |value| a run's tensors reached near the end of its training, per layer: what a static scale
// calibrated for inference must represent (the checkpoint audit's calibration rule, docs/TRIAGE.md).
#pragma once

#include "querytypes.h"

#include <QHash>
#include <QString>

namespace fp8scope {

class Catalog;

struct LateAmax {
    QHash<QString, double> byLayer; // layer (training name) -> the largest amax over the window
    QHash<QString, double> leastByLayer; // layer -> the least positive amax of a step of the window (its spread)
    QHash<QString, int> stepsByLayer; // layer -> the steps of the window it logged a finite amax at
    int64_t firstStep = 0; // the window: the last tenth of the steps logged, at least three of them
    int64_t lastStep = 0;
    QString statistic; // the statistic read ("cur_amax", ...); empty when the run logs none
};

// The amax of `tensor` ("activation", ...) per layer over the last tenth of the run's logged steps (at least
// its last three), from the first statistic of amax the run logs (Transformer Engine's cur_amax, else amax).
LateAmax lateAmax(const Catalog &catalog, RunRef run, const QString &tensor);

} // namespace fp8scope

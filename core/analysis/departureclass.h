// Early divergence or mid-run instability: what a departure of the loss is (docs/TRIAGE.md, "The verdict").
// Judged by whether the run tracked its baseline before it parted, not only by how far into the plan: a run
// that followed the baseline through the loss's initial fall (and past the learning-rate warm-up, where it is
// known) and then parts is mid-run, whatever the share of the planned steps; a run that never tracked, parts
// during the warm-up, or parts while the loss is still falling fast, is early.
#pragma once

#include "core/query/stepseries.h"

#include <QJsonObject>
#include <QString>

#include <cstdint>
#include <optional>

namespace fp8scope::analysis {

struct DepartureClassOptions {
    double earlyFraction = 0.10; // a departure from this share of the planned steps on is mid-run
    int minPointsBefore = 8; // fewer points before the departure: the run never tracked its baseline
    // The loss's initial fall is over when, in the second half of the way to the departure, it fell by no
    // more than this share of its whole fall from the start of the log to the departure.
    double stillFallingShare = 0.10;
    // ... and when, by the departure, the loss had made at least this share of its fall from the start of the
    // log to its lowest level (over the whole log: the baseline goes on after the run parts).
    double fallMade = 0.90;
};

struct DepartureClass {
    bool early = false;
    QString why; // the rule that decided, in words
    QJsonObject evidence; // fraction_of_plan, points_before, warmup_end, loss_start, loss_half_way, ...
};

// `loss` is the loss the fall is judged on (the baseline's at the aligned steps, or a run's own), `departure`
// the step the run parts at, `plannedSteps` its plan, `warmupEnd` the step its learning rate stops rising.
DepartureClass classifyDeparture(const StepSeries &loss, int64_t departure, int64_t plannedSteps,
    std::optional<int64_t> warmupEnd, const DepartureClassOptions &options = {});

// Where a learning rate stops rising: the first step it reaches 98 % of its highest value up to `until`;
// nullopt without two points.
std::optional<int64_t> warmupEndOf(const StepSeries &learningRate, int64_t until);

} // namespace fp8scope::analysis

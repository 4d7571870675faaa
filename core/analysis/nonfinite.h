// A run that blows up: where its loss stops being a number for good (the loss or grad norm not finite, or
// every iteration of a log interval skipped, from some step to the end of its log), the recoveries it needed
// before (rewinds after a blow-up), and where the first non-finite value came from across every rank, layer,
// tensor and statistic it logged. Pure functions over plain data; docs/TRIAGE.md, "Blow-ups and the first
// non-finite value".
#pragma once

#include "core/query/querytypes.h"
#include "core/query/stepseries.h"

#include <QJsonObject>
#include <QString>

#include <cstdint>
#include <optional>
#include <vector>

namespace fp8scope::analysis {

// Where the run's training stopped making progress, for good.
struct BlowUp {
    int64_t step = 0; // the first log interval of the stretch that runs to the end of the log
    std::optional<int64_t> lastHealthy; // the last interval before it whose loss was a number
    size_t intervals = 0; // the intervals in the stretch
    int64_t lastStep = 0; // the log's last interval
    bool lossNotFinite = false; // the loss is NaN or inf there (or was never made: every iteration skipped)
    bool gradNormNotFinite = false; // the grad norm is NaN or inf there
    QString what() const; // "the loss is not a number and the grad norm is not finite", ...
};

// `loss` as stored (a NaN where Megatron printed no loss for an interval whose iterations were all skipped),
// `gradNorm` as stored. The stretch is the longest run of intervals, to the log's last, in which every loss
// is not finite or the grad norm at the same step is not, of at least `minIntervals` (2: one last interval alone
// may be a transient the next line recovers from); nullopt otherwise.
std::optional<BlowUp> blowUpOf(const StepSeries *loss, const StepSeries *gradNorm, size_t minIntervals = 2);

// Whether a run scales its loss dynamically (FP16): its logged loss scale moves or stands above 1 (BF16 and FP8
// print 1.0). Such a run skips an overflowing step by design.
bool scalesLossDynamically(const StepSeries *lossScale);

// The step of the last point of `loss` before `until` that is not finite; nullopt when there is none.
std::optional<int64_t> lastNonFiniteBefore(const StepSeries &loss, int64_t until);

// Where the first non-finite value of a blow-up is looked for: from the blow-up's step less five of the loss's
// log intervals (a statistic may turn a log interval or two before the loss shows it), but not before the last
// transient non-finite loss before the blow-up (one the run came back from: a loss-scale warm-up's skips).
int64_t nonFiniteSearchFrom(const BlowUp &b, const StepSeries &loss);

// The tensors a step computes before the loss (forward: in layer order) and after it (backward: gradients, in
// reverse layer order).
bool isGradientTensor(const QString &tensor);

// The non-finite values in the order they came: by step; within a step, forward tensors in layer order, then
// gradients in reverse layer order, then run-level statistics (the grad norm, then the loss: an interval's loss
// is lost to the skipped update the gradients caused), each by rank.
std::vector<NonFinitePoint> orderNonFinite(std::vector<NonFinitePoint> points);

// What came before the first non-finite value in its own tensor: a statistic of it that rose over the
// intervals before (overflows%, cur_amax), or a loss-scale cut.
struct Precursor {
    QString stat; // "overflows%", "cur_amax", "loss scale"
    int64_t from = 0, to = 0; // the steps it moved between
    double before = 0, after = 0;
    QString text() const;
};
// A precursor in `s` (the points before `until`): the last finite value before it against the median of the
// earlier ones in the window; a rise of at least a quarter of the earlier level (and more than 0.01 for a
// percentage that stood at 0). A loss scale is a precursor when it fell.
std::optional<Precursor> precursorIn(const QString &stat, const StepSeries &s, int64_t from, int64_t until);

// How many recoveries a run needed: its "rewound blow-up" points (a log that went back after a stretch that blew
// up, each at the step the blow-up began, valued with the step it resumed from).
struct Recovery {
    int64_t blewUpAt = 0;
    int64_t resumedFrom = 0;
};
std::vector<Recovery> recoveriesOf(const std::optional<StepSeries> &rewoundBlowUps);

} // namespace fp8scope::analysis

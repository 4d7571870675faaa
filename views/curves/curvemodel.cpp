#include "curvemodel.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace fp8scope {

namespace {

// Linear interpolation of y(x) over sorted (x, y) pairs, extrapolating with the end segments.
double interpolate(const std::vector<std::pair<double, double>> &xy, double x)
{
    if (xy.size() < 2)
        return xy.empty() ? x : xy.front().second;
    auto it = std::lower_bound(xy.begin(), xy.end(), x, [](const auto &p, double v) { return p.first < v; });
    if (it == xy.begin())
        ++it;
    if (it == xy.end())
        --it;
    const auto &[x1, y1] = *it;
    const auto &[x0, y0] = *(it - 1);
    return x1 == x0 ? y0 : y0 + (y1 - y0) * (x - x0) / (x1 - x0);
}

} // namespace

const QString CurveModel::kTensorPrefix = QStringLiteral("tensor:");

QString CurveModel::axisName(XAxis axis)
{
    switch (axis) {
    case XAxis::Steps: return tr("step");
    case XAxis::Samples: return tr("consumed samples");
    case XAxis::Tokens: return tr("consumed tokens");
    }
    return {};
}

CurveModel::CurveModel(const CurveSource *source)
    : m_source(source)
{
}

void CurveModel::reloadMappings()
{
    m_samples.clear();
    m_samplesInverse.clear();
    m_tokens.clear();
    m_tokensInverse.clear();
    for (RunRef r : m_source->runs()) {
        m_samples[r] = m_source->stepSamples(r);
        m_tokens[r] = m_source->stepTokens(r);
        // The inverse mappings once here, not on every tooltip and click.
        for (auto [map, inverse] : {std::pair(&m_samples, &m_samplesInverse), std::pair(&m_tokens, &m_tokensInverse)}) {
            auto &out = (*inverse)[r];
            for (const auto &[step, n] : (*map)[r])
                out.emplace_back(n, step);
        }
    }
}

bool CurveModel::hasCountsFor(XAxis axis) const
{
    if (axis == XAxis::Steps)
        return true;
    for (const auto &[run, counts] : axis == XAxis::Samples ? m_samples : m_tokens) {
        if (counts.size() >= 2)
            return true;
    }
    return false;
}

const std::vector<std::pair<double, double>> *CurveModel::mapping(XAxis axis, RunRef run, bool inverse) const
{
    const auto *map = axis == XAxis::Samples ? (inverse ? &m_samplesInverse : &m_samples)
        : axis == XAxis::Tokens              ? (inverse ? &m_tokensInverse : &m_tokens)
                                             : nullptr;
    if (!map)
        return nullptr;
    const auto it = map->find(run);
    return it == map->end() || it->second.size() < 2 ? nullptr : &it->second;
}

double CurveModel::xOfStep(XAxis axis, RunRef run, double step) const
{
    const auto *map = mapping(axis, run, false);
    return map ? interpolate(*map, step) : step;
}

double CurveModel::stepOfX(XAxis axis, RunRef run, double x) const
{
    const auto *map = mapping(axis, run, true);
    return map ? interpolate(*map, x) : x;
}

CurveModel::Drawing CurveModel::fetch(const Request &q) const
{
    Drawing d;
    const bool tensorLevel = q.statistic.startsWith(kTensorPrefix);
    const QString stat = tensorLevel ? q.statistic.mid(kTensorPrefix.size()) : q.statistic;
    const bool noTensor = tensorLevel && (q.layer.isEmpty() || q.tensor.isEmpty());
    const bool bySamples = q.axis == XAxis::Samples;
    double lo = std::numeric_limits<double>::max(), hi = std::numeric_limits<double>::lowest();
    double extentLo = std::numeric_limits<double>::max(), extentHi = std::numeric_limits<double>::lowest();
    QStringList leftOut;
    // The steps a span of the axis covers for a run, and a margin, so lines run on past the edges while panning.
    const auto stepRange = [](double a, double b, PointRange *range) {
        const double margin = (b - a) * 0.05 + 1;
        range->from = int64_t(std::floor(a - margin));
        range->to = int64_t(std::ceil(b + margin));
    };
    for (RunRef r : stat.isEmpty() || noTensor ? std::vector<RunRef>() : m_source->runs()) {
        CurveSource::Request request {.stat = stat,
            .tensorLevel = tensorLevel,
            .layer = q.layer,
            .tensor = q.tensor,
            .source = tensorLevel ? QString() : q.dataSource,
            .range = {.resolution = q.resolution},
            .bySamples = bySamples};
        if (q.visible) {
            // In steps, or in samples for a series logged against them (by tokens: the steps the visible tokens
            // span).
            const auto [a, b] = *q.visible;
            if (q.axis == XAxis::Tokens)
                stepRange(stepOfX(q.axis, r, a), stepOfX(q.axis, r, b), &request.range);
            else
                stepRange(a, b, &request.range);
        }
        std::optional<CurveSource::Curve> curve = m_source->curve(r, request);
        if (curve && q.visible && !curve->xIsSamples && bySamples) {
            // A series against steps drawn by samples: ask again for the steps the visible samples span.
            stepRange(stepOfX(q.axis, r, q.visible->first), stepOfX(q.axis, r, q.visible->second), &request.range);
            request.bySamples = false;
            curve = m_source->curve(r, request);
        }
        if (!curve)
            continue;
        // No counts to place it by: left out, and said, not drawn at its steps. (A series logged against
        // samples is placed by tokens through its steps.)
        const auto *stepsOfSamples = mapping(XAxis::Samples, r, true);
        if (q.axis != XAxis::Steps && (!curve->xIsSamples || q.axis == XAxis::Tokens) && !mapping(q.axis, r, false)) {
            leftOut << m_source->runName(r);
            continue;
        }
        if (q.axis == XAxis::Tokens && curve->xIsSamples && !stepsOfSamples) {
            leftOut << m_source->runName(r);
            continue;
        }
        Curve c {.run = r, .series = curve->series, .name = curve->name};
        for (const SeriesPoint &p : curve->points) {
            c.bucketed = c.bucketed || p.count > 1;
            c.steps.push_back(double(p.step));
            c.values.push_back(p.count > 1 ? 0.5 * (p.min + p.max) : p.value);
            c.mins.push_back(p.min);
            c.maxs.push_back(p.max);
        }
        if (c.steps.empty())
            continue;
        if (curve->xIsSamples) {
            // Its steps are samples already: keep x (by samples), and give steps back where the run has the
            // mapping; by step, x is those steps.
            c.xs = c.steps;
            for (double &st : c.steps)
                st = stepsOfSamples ? interpolate(*stepsOfSamples, st) : st;
            if (!bySamples) {
                for (size_t i = 0; i < c.steps.size(); ++i)
                    c.xs[i] = xOfStep(q.axis, r, c.steps[i]);
            }
        } else {
            c.xs.resize(c.steps.size());
            for (size_t i = 0; i < c.steps.size(); ++i)
                c.xs[i] = xOfStep(q.axis, r, c.steps[i]);
        }
        lo = std::min(lo, c.xs.front());
        hi = std::max(hi, c.xs.back());
        // The series' whole extent, beyond the range fetched (the store knows its first and last step).
        extentLo = std::min(extentLo, c.xs.front());
        extentHi = std::max(extentHi, c.xs.back());
        if (c.series.points > 0 && c.series.lastStep >= c.series.firstStep) {
            // Placed as the points are: a series logged against samples counts samples, the others steps.
            const auto x = [&](int64_t at) {
                double step = double(at);
                if (curve->xIsSamples) {
                    if (bySamples)
                        return step;
                    step = stepsOfSamples ? interpolate(*stepsOfSamples, step) : step;
                }
                return xOfStep(q.axis, r, step);
            };
            extentLo = std::min(extentLo, x(c.series.firstStep));
            extentHi = std::max(extentHi, x(c.series.lastStep));
        }
        d.curves.push_back(std::move(c));
    }
    if (lo <= hi) {
        d.lo = lo;
        d.hi = hi;
    }
    if (extentLo <= extentHi) {
        d.extentLo = extentLo;
        d.extentHi = extentHi;
    }
    // Checkpoint tensors have no step (-1): with nothing else in view, the axis says so.
    d.checkpointOnly = lo == -1.0 && hi == -1.0 && q.axis == XAxis::Steps;
    d.xLabel = d.checkpointOnly ? tr("checkpoint (no step)") : axisName(q.axis);
    // The layer by its last four parts ("layers.9.mlp.linear_fc2"), so that the label fits the axis.
    const QString layer = q.layer.section(QLatin1Char('.'), -4);
    d.yLabel = tensorLevel && !q.tensor.isEmpty() ? tr("%1 of %2 %3").arg(stat, layer, q.tensor) : stat;
    if (noTensor) {
        d.message = tr("%1 is a statistic of one tensor: choose a tensor in the Layers panel\n"
                       "or click a cell of the heatmap.")
                        .arg(stat);
    } else if (d.curves.empty()) {
        d.message = !q.sourceHasStatistics || m_source->runs().empty() ? m_source->emptyText()
            : leftOut.isEmpty()                                        ? tr("No run shown has %1.").arg(stat)
                                                                       : QString();
    } else {
        bool allZero = true;
        for (const Curve &c : d.curves)
            allZero = allZero && std::all_of(c.maxs.begin(), c.maxs.end(), [](double v) { return v == 0.0; })
                && std::all_of(c.mins.begin(), c.mins.end(), [](double v) { return v == 0.0; });
        if (allZero)
            d.message = tr("Every value of %1 is 0 as logged. A log that prints four decimals\n"
                           "writes anything under 0.00005 as 0.0000: recompute from a dump to see it.")
                            .arg(stat);
    }
    d.note = leftOut.isEmpty() ? QString()
        : q.axis == XAxis::Tokens
        ? tr("Not drawn on the tokens axis (no consumed-tokens counts, nor samples and a sequence length): %1")
              .arg(leftOut.join(QStringLiteral(", ")))
        : tr("Not drawn on the samples axis (no consumed-samples counts): %1").arg(leftOut.join(QStringLiteral(", ")));
    return d;
}

} // namespace fp8scope

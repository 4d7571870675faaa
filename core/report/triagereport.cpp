#include "triagereport.h"

#include "core/analysis/attempts.h"
#include "core/formats/expertnames.h"

#include "core/analysis/comparisondata.h"
#include "core/analysis/storedwhatif.h"
#include "core/numerics/blockcensus.h"
#include "core/numerics/metricsengine.h"
#include "core/query/statnames.h"

#include <QCryptographicHash>
#include <QFile>
#include <QFileInfo>

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace fp8scope::report {

using analysis::Finding;
using analysis::Severity;
using analysis::Verdict;

namespace {

constexpr Rgb kBaselineColour = 0x1f77b4;
constexpr Rgb kRunColour = 0xd95f02;
constexpr Rgb kGrey = 0xa5a5a5;
constexpr Rgb kSuspectColours[] = {0xd95f02, 0x7570b3, 0x1b9e77, 0xe7298a};

QString num(double v, int significant = 6)
{
    if (std::isnan(v))
        return QStringLiteral("-");
    if (std::isinf(v))
        return v > 0 ? QStringLiteral("inf") : QStringLiteral("-inf");
    return QString::number(v, 'g', significant);
}

QString fixed(double v, int decimals)
{
    return std::isfinite(v) ? QString::number(v, 'f', decimals) : num(v);
}

QString bytes(int64_t n)
{
    if (n < 10 * 1024)
        return QStringLiteral("%1 B").arg(n);
    if (n < 10 * 1024 * 1024)
        return QStringLiteral("%1 KiB").arg(double(n) / 1024.0, 0, 'f', 1);
    return QStringLiteral("%1 MiB").arg(double(n) / (1024.0 * 1024.0), 0, 'f', 1);
}

Paragraph body(const QString &text)
{
    return {text, Paragraph::Body};
}

// A series as a line of at most `buckets` min/max pairs (every point when fewer): a one-step spike stays.
CurveFigure::Line line(
    const QString &name, Rgb colour, const std::vector<int64_t> &steps, const std::vector<double> &values, int buckets)
{
    CurveFigure::Line l;
    l.name = name;
    l.colour = colour;
    for (const SeriesPoint &p : bucketSeries(steps, values, {.resolution = buckets})) {
        const double x = 0.5 * double(p.step + p.lastStep);
        if (p.count <= 1) {
            l.x.push_back(double(p.step));
            l.y.push_back(p.value);
        } else {
            l.x.push_back(x);
            l.y.push_back(p.min);
            l.x.push_back(x);
            l.y.push_back(p.max);
        }
    }
    return l;
}

// Every k-th point of parallel arrays, at most `points` of them (the band: smooth by construction).
std::vector<size_t> thinned(size_t n, int points)
{
    std::vector<size_t> out;
    const size_t k = std::max<size_t>(1, n / size_t(std::max(1, points)));
    for (size_t i = 0; i < n; i += k)
        out.push_back(i);
    if (n > 0 && out.back() != n - 1)
        out.push_back(n - 1);
    return out;
}

QString runLabel(const Catalog &catalog, RunRef ref)
{
    const std::optional<Run> r = catalog.run(ref);
    return r ? r->label() : QStringLiteral("?");
}

// The overlay of the statistic of both runs with the baseline's band, the departure (or where the run blew up: `c`,
// the pair's comparison) and the spikes; and the difference run - baseline with the edge its running median must
// stay above.
void addComparisonFigures(std::vector<Block> &blocks, const ComparisonData &d, const analysis::Comparison &c,
    const Catalog &catalog, const TriageReportOptions &o)
{
    const analysis::StatComparison &s = d.statistic;
    if (!s.found || !s.baselinePoints || !s.runPoints) {
        blocks.push_back(body(QStringLiteral("The two runs do not both have %1: nothing to compare.").arg(d.stat)));
        return;
    }
    const QString base = runLabel(catalog, d.baseline), ours = runLabel(catalog, d.run);
    const analysis::Departure &dep = s.departure;
    const bool bySteps = s.axis == QLatin1String("step");
    // The run blew up (its blow-up finding): where its loss stopped being a number. Another statistic (the grad
    // norm) is only compared up to there: the skipped steps after it log none, or none that is a number.
    std::optional<int64_t> blowUp;
    for (const Finding &f : c.findings) {
        if (f.kind == analysis::FindingKind::RunBlowUp && f.step && !blowUp)
            blowUp = f.step;
    }
    CurveFigure overlay;
    overlay.xLabel = QStringLiteral("step");
    overlay.yLabel = d.stat;
    const analysis::Departure::Trace &t = dep.trace;
    if (bySteps && !d.bandLow.empty() && d.bandLow.size() == t.steps.size()) {
        CurveFigure::Band band;
        band.name = QStringLiteral("baseline's band (tolerance + noise)");
        band.colour = 0xbbbbbb;
        for (size_t i : thinned(t.steps.size(), o.curvePoints)) {
            band.x.push_back(double(t.steps[i]));
            band.low.push_back(d.bandLow[i]);
            band.high.push_back(d.bandHigh[i]);
        }
        overlay.bands.push_back(std::move(band));
    }
    overlay.lines.push_back(
        line(base, kBaselineColour, s.baselinePoints->steps, s.baselinePoints->values, o.curvePoints));
    overlay.lines.push_back(line(ours, kRunColour, s.runPoints->steps, s.runPoints->values, o.curvePoints));
    for (const auto &[report, colour] :
        {std::pair(&d.baselineSpikes, kBaselineColour), std::pair(&d.runSpikes, kRunColour)}) {
        for (const analysis::Spike &sp : report->spikes)
            overlay.markers.push_back({double(sp.step), sp.value, CurveFigure::Marker::Diamond, colour});
    }
    if (!overlay.markers.empty())
        overlay.markerLegend << QStringLiteral("diamonds: spikes (the run's colour)");
    // The run's points that are not a number (a blow-up's skipped intervals): marks along the bottom, never values.
    double lowest = INFINITY;
    for (double v : s.runPoints->values)
        lowest = std::isfinite(v) ? std::min(lowest, v) : lowest;
    size_t notFinite = 0;
    for (size_t i = 0; i < s.runPoints->size(); ++i) {
        if (!std::isfinite(s.runPoints->values[i]) && std::isfinite(lowest)) {
            if (notFinite++ % std::max<size_t>(1, s.runPoints->size() / size_t(std::max(o.curvePoints, 1))) == 0)
                overlay.markers.push_back(
                    {double(s.runPoints->steps[i]), lowest, CurveFigure::Marker::Cross, kRunColour});
        }
    }
    if (notFinite > 0)
        overlay.markerLegend << QStringLiteral("crosses: the run's loss is not a number (NaN, inf, or every "
                                               "iteration skipped)");
    if (dep.step && !(blowUp && *blowUp < *dep.step)) {
        overlay.marked = double(*dep.step);
        overlay.markedSpan = std::pair(double(dep.low), double(dep.high));
    } else if (blowUp) {
        overlay.marked = double(*blowUp);
    }
    QString caption = QStringLiteral("%1 of %2 and its baseline %3").arg(d.stat, ours, base);
    if (dep.step && !(blowUp && *blowUp < *dep.step))
        caption += QStringLiteral("; the red line is the departure at step %1, the shading its interval %2-%3")
                       .arg(*dep.step)
                       .arg(dep.low)
                       .arg(dep.high);
    else if (blowUp)
        caption += QStringLiteral("; the red line is where the run blows up, step %1").arg(*blowUp);
    blocks.push_back(Figure {caption + QLatin1Char('.'), overlay, 75});

    if (!t.difference.empty() && bySteps) {
        CurveFigure diff;
        diff.xLabel = QStringLiteral("step");
        diff.yLabel = QStringLiteral("%1, run - baseline").arg(d.stat);
        CurveFigure::Line raw = line(QStringLiteral("difference"), kRunColour, t.steps, t.difference, o.curvePoints);
        raw.faint = true;
        diff.lines.push_back(std::move(raw));
        if (t.smoothed.size() == t.steps.size())
            diff.lines.push_back(
                line(QStringLiteral("its running median"), kRunColour, t.steps, t.smoothed, o.curvePoints));
        if (t.edge.size() == t.steps.size()) {
            CurveFigure::Line edge
                = line(QStringLiteral("the edge (tolerance + noise band)"), kGrey, t.steps, t.edge, o.curvePoints);
            edge.dashed = true;
            diff.lines.push_back(std::move(edge));
        }
        diff.marked = overlay.marked;
        diff.markedSpan = overlay.markedSpan;
        blocks.push_back(Figure {QStringLiteral("The difference of %1, run - baseline, and the edge its running median "
                                                "must stay above for a departure.")
                                     .arg(d.stat),
            diff, 50});
    }
    const auto spikeLine = [&](const analysis::SpikeReport &r, const QString &name) {
        const auto recovered = std::count_if(
            r.spikes.begin(), r.spikes.end(), [](const analysis::Spike &sp) { return sp.recoveredAt.has_value(); });
        return QStringLiteral("%1: %2 spike(s) in %3 steps, %4 recovered")
            .arg(name)
            .arg(r.spikes.size())
            .arg(r.span)
            .arg(recovered);
    };
    QString text;
    if (blowUp && (!dep.step || *blowUp < *dep.step))
        text = d.stat == QLatin1String("lm loss")
            ? QStringLiteral("The run blows up at step %1: its %2 is not a number from there to the end of its log "
                             "(a gap, marked, never a value).")
                  .arg(*blowUp)
                  .arg(d.stat)
            : QStringLiteral("%1 is compared up to step %2, where the run blows up (its skipped steps log no %1 that "
                             "is a number after it).")
                  .arg(d.stat)
                  .arg(*blowUp);
    else if (dep.step)
        text = QStringLiteral("%1 departs at step %2 (between %3 and %4); at the end the run is %5 from the baseline.")
                   .arg(d.stat)
                   .arg(*dep.step)
                   .arg(dep.low)
                   .arg(dep.high)
                   .arg(num(dep.gapAtEnd, 4));
    else
        text = QStringLiteral("%1 stays within the baseline's band (tolerance + %2 sigmas of noise).")
                   .arg(d.stat)
                   .arg(num(s.options.noiseSigmas, 3));
    blocks.push_back(body(text + QLatin1Char(' ') + spikeLine(d.baselineSpikes, base) + QStringLiteral("; ")
        + spikeLine(d.runSpikes, ours) + QLatin1Char('.')));
}

QString reviewStateOf(const std::map<QString, FindingReview> &reviews, const Finding &f)
{
    const auto it = reviews.find(analysis::findingIdentity(f));
    return reviewStateName(it == reviews.end() ? ReviewState::Open : it->second.state);
}

// A reviewed finding as a reader knows it: its summary while the comparison still finds it, else its kind and
// what it was about (the store keys a review by the finding's identity, kind|layer|tensor|stat|key|task).
QString reviewedFinding(const QString &identity, const std::vector<Finding> &findings)
{
    for (const Finding &f : findings) {
        if (analysis::findingIdentity(f) == identity)
            return QStringLiteral("%1: %2").arg(analysis::findingKindName(f.kind), f.summary);
    }
    QStringList parts = identity.split(QLatin1Char('|'));
    const QString kind = parts.isEmpty() ? QString() : parts.takeFirst();
    parts.removeAll(QString());
    return parts.isEmpty() ? QStringLiteral("%1 (no longer found)").arg(kind)
                           : QStringLiteral("%1: %2 (no longer found)").arg(kind, parts.join(QStringLiteral(", ")));
}

Table findingsTable(const std::vector<Finding> &findings, size_t limit, const std::map<QString, FindingReview> &reviews)
{
    Table t;
    t.headers = {QStringLiteral("Severity"), QStringLiteral("Finding"), QStringLiteral("Step"),
        QStringLiteral("Summary"), QStringLiteral("Review")};
    t.numeric = {false, false, true, false, false};
    t.widths = {1.2, 2.2, 1, 8, 1.4};
    for (size_t i = 0; i < findings.size() && i < limit; ++i) {
        const Finding &f = findings[i];
        if (f.severity == Severity::Critical)
            t.highlighted.push_back(t.rows.size());
        t.rows.push_back({analysis::severityName(f.severity), analysis::findingKindName(f.kind),
            f.step ? QString::number(*f.step) : QString(), f.summary, reviewStateOf(reviews, f)});
    }
    return t;
}

QString sha256(const QString &path, QString *error)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        *error = f.errorString();
        return {};
    }
    QCryptographicHash h(QCryptographicHash::Sha256);
    if (!h.addData(&f)) {
        *error = QStringLiteral("read failed");
        return {};
    }
    return QString::fromLatin1(h.result().toHex());
}

// The layer section: suspects in the engine's order with their lead; the first suspect's statistic against the
// other layers; its heatmap with the suspects marked; each suspect's nearest dump against the format's range;
// the what-if of every recipe (with the block census) on the first suspect's dump.
bool addLayerSection(Document &doc, const Catalog &catalog, const analysis::Comparison &c, MetricsBackend *backend,
    const TriageReportOptions &o, const std::function<bool(const QString &)> &step)
{
    std::vector<const Finding *> suspects;
    for (const Finding &f : c.suspects)
        suspects.push_back(&f);
    if (suspects.empty())
        return true;
    Section s {QStringLiteral("Layer suspects"), {}};
    s.blocks.push_back(body(QStringLiteral(
        "The layers whose statistics moved, against the other layers' same statistic, before the loss departed, "
        "most suspect first: a statistic of damage (underflow, saturation, quantization error) before one of range "
        "or scale, then what had made half its change first; the lead is the departure minus the onset.")));
    Table t;
    t.headers = {QStringLiteral("Layer"), QStringLiteral("Tensor"), QStringLiteral("Statistic"),
        QStringLiteral("Onset"), QStringLiteral("Lead (steps)"), QStringLiteral("Severity")};
    t.numeric = {false, false, false, true, true, false};
    t.widths = {5, 1.6, 1.8, 1, 1.2, 1.2};
    for (const Finding *f : suspects) {
        const QString lead = f->step && c.departure ? QString::number(*c.departure - *f->step) : QString();
        if (f->severity == Severity::Critical)
            t.highlighted.push_back(t.rows.size());
        t.rows.push_back({f->layer, f->tensor, f->stat, f->step ? QString::number(*f->step) : QString(), lead,
            analysis::severityName(f->severity)});
    }
    s.blocks.push_back(t);

    const Finding &first = *suspects.front();
    // Each suspect's statistic (one figure per statistic and tensor kind, of the first few suspects) for every
    // layer of that tensor kind: the suspects of it in colour on top, the other layers grey.
    std::vector<const Finding *> figures;
    for (const Finding *f : suspects) {
        if (int(figures.size()) >= o.maxSuspects)
            break;
        if (std::none_of(figures.begin(), figures.end(),
                [&](const Finding *g) { return g->stat == f->stat && g->tensor == f->tensor; }))
            figures.push_back(f);
    }
    for (const Finding *lead : figures) {
        std::map<QString, size_t> suspectIndex;
        for (const Finding *f : suspects) {
            if (f->stat == lead->stat && f->tensor == lead->tensor && !suspectIndex.count(f->layer))
                suspectIndex.emplace(f->layer, suspectIndex.size());
        }
        CurveFigure layers;
        layers.xLabel = QStringLiteral("step");
        layers.yLabel = QStringLiteral("%1 of %2").arg(lead->stat, lead->tensor);
        std::vector<CurveFigure::Line> coloured;
        bool greyNamed = false;
        for (const LayerTensors &l : catalog.layerTensors({c.run})) {
            if (!l.tensors.contains(lead->tensor))
                continue;
            const std::optional<Series> series
                = catalog.chooseSeries(c.run, {.stat = lead->stat, .layer = l.layer, .tensor = lead->tensor});
            if (!series)
                continue;
            std::vector<int64_t> steps;
            std::vector<double> values;
            for (const SeriesPoint &p : catalog.points(*series)) {
                steps.push_back(p.step);
                values.push_back(p.value);
            }
            const auto it = suspectIndex.find(l.layer);
            if (it != suspectIndex.end()) {
                coloured.push_back(line(l.layer, kSuspectColours[it->second % 4], steps, values, o.curvePoints / 2));
            } else {
                CurveFigure::Line g = line(
                    greyNamed ? l.layer : QStringLiteral("the other layers"), kGrey, steps, values, o.curvePoints / 4);
                g.faint = true;
                g.legend = !greyNamed;
                greyNamed = true;
                layers.lines.push_back(std::move(g));
            }
        }
        for (CurveFigure::Line &l : coloured)
            layers.lines.push_back(std::move(l));
        if (lead->step)
            layers.marked = double(*lead->step);
        s.blocks.push_back(Figure {QStringLiteral("%1 of %2 of every layer: the suspects in colour, the other layers "
                                                  "grey; the line marks the onset of %3 (step %4).")
                                       .arg(lead->stat, lead->tensor, lead->layer)
                                       .arg(lead->step.value_or(0)),
            layers, 70});
    }

    // A row per GEMM, a mixture-of-experts GEMM's worst expert in its row, as the window opens it.
    const Heatmap h = catalog.matrix(c.run, {.stat = first.stat, .tensor = first.tensor, .experts = ExpertRows::Max});
    if (!h.layers.isEmpty() && !h.steps.empty()) {
        HeatmapFigure hf;
        hf.layers = h.layers;
        hf.steps = h.steps;
        hf.values = h.values;
        hf.scaleLabel = QStringLiteral("%1 of %2").arg(first.stat, first.tensor)
            + (h.expertReduction.isEmpty() ? QString() : QStringLiteral(", ") + h.expertReduction);
        for (const Finding *f : suspects) {
            // An expert's suspect marks its GEMM's row.
            const auto e = expertOf(f->layer);
            const QString row = e && h.layers.contains(e->gemm) ? e->gemm : f->layer;
            if (f->stat == first.stat && f->tensor == first.tensor)
                hf.flagged.emplace_back(row, f->step ? QStringLiteral("onset %1").arg(*f->step) : QString());
        }
        s.blocks.push_back(
            Figure {QStringLiteral("%1 of %2 over layers (rows, layer 0 on top) and steps, every cell as "
                                   "logged; the suspects' rows are marked with their onsets.")
                        .arg(first.stat, first.tensor),
                hf, std::clamp(30.0 + 2.2 * double(h.layers.size()), 60.0, 150.0)});
    }

    // Histograms of the suspects' nearest dumps, under the run's recipe, after its scaling.
    const std::optional<Run> runInfo = catalog.run(c.run);
    std::set<std::pair<QString, QString>> seen;
    int histograms = 0;
    for (const Finding *f : suspects) {
        if (histograms >= o.maxSuspects || !f->step || !seen.insert({f->layer, f->tensor}).second)
            continue;
        // The dump that shows the suspect's damage (the engine's choice for the first; the same rule for the
        // others).
        const std::optional<analysis::EvidenceDump> evidence = f == suspects.front() && c.evidence
            ? c.evidence
            : analysis::chooseEvidenceDump(catalog, c.run, *f, analysis::evidenceWindowEnd(c, *f->step));
        if (!evidence)
            continue;
        const Dump *dump = &evidence->dump;
        ++histograms;
        if (!backend) {
            s.blocks.push_back(
                body(QStringLiteral("The dump of %1 %2 at step %3 was not recomputed (no metrics backend).")
                         .arg(f->layer, f->tensor)
                         .arg(dump->record.step)));
            continue;
        }
        if (!step(QStringLiteral("histogram of %1").arg(f->layer)))
            return false;
        QString recipeError;
        const QString name
            = tensorRecipe(runInfo ? runInfo->recipe : QString(), f->tensor).section(QLatin1Char(':'), 0, 0);
        std::optional<Recipe> recipe
            = Recipe::parse(name.isEmpty() ? QStringLiteral("current") : name, std::nullopt, &recipeError);
        if (!recipe)
            recipe = Recipe::parse(QStringLiteral("current"), std::nullopt, &recipeError);
        Problem problem;
        auto reader = openTensor(dump->spec(), &problem);
        std::optional<std::vector<TensorMetrics>> m;
        if (reader) {
            recipe->amaxHistory = reader->amaxHistory();
            MetricsEngine engine(*backend);
            m = engine.compute(*reader, {*recipe}, &problem);
        }
        if (!m) {
            s.blocks.push_back(
                body(QStringLiteral("The dump %1 could not be read: %2").arg(dump->spec(), problem.toString())));
            continue;
        }
        const TensorMetrics &tm = m->front();
        HistogramFigure hist;
        for (int i = 0; i < fp8math::kHistBins; ++i) {
            if (tm.histScaled[size_t(i)] > 0) {
                hist.log2Bins.push_back(fp8math::histBinLog2(i));
                hist.counts.push_back(double(tm.histScaled[size_t(i)]));
            }
        }
        const fp8math::FormatSpec spec = fp8math::formatSpec(tm.format);
        hist.format = formatName(tm.format).toUpper();
        hist.minSubnormalLog2 = std::log2(double(spec.minSubnormal));
        hist.minNormalLog2 = std::log2(double(spec.minNormal));
        hist.maxLog2 = std::log2(double(spec.maxFinite));
        hist.note = QStringLiteral("underflow %1 %, saturation %2 %, MSE %3, SQNR %4 dB")
                        .arg(num(tm.underflowPct, 4), num(tm.saturationPct, 4), num(tm.mse, 4), fixed(tm.sqnrDb, 1));
        s.blocks.push_back(
            Figure {QStringLiteral("log2 |x| of %1 %2 at step %3 (%4), after %5 scaling, against %6's smallest "
                                   "subnormal, smallest normal and largest value: %7.")
                        .arg(f->layer, f->tensor)
                        .arg(dump->record.step)
                        .arg(evidence->why, tm.recipe, hist.format, hist.note),
                hist, 60});
    }
    doc.sections.push_back(std::move(s));

    // The what-if on the evidence dump, one pass of the metrics engine for every recipe.
    if (!first.step)
        return true;
    Section w {QStringLiteral("Recipe what-if"), {}};
    if (!c.evidence) {
        w.blocks.push_back(
            body(QStringLiteral("%1 %2 has no tensor dump to recompute a what-if on.").arg(first.layer, first.tensor)));
        doc.sections.push_back(std::move(w));
        return true;
    }
    const Dump &dump = c.evidence->dump;
    // The what-if the triage stored (the one its next steps read); computed now only where none is stored.
    std::optional<WhatIfResult> m = analysis::storedWhatIfOf(catalog, dump);
    if (!m && !backend) {
        w.blocks.push_back(body(
            QStringLiteral("Not computed (no metrics backend): `fp8scope-cli stats %1 --what-if`.").arg(dump.spec())));
        doc.sections.push_back(std::move(w));
        return true;
    }
    if (!step(QStringLiteral("what-if on %1").arg(first.layer)))
        return false;
    Problem problem;
    if (!m) {
        if (auto reader = openTensor(dump.spec(), &problem))
            m = computeWhatIf(*reader, analysis::whatIfCandidatesOf(catalog, dump), *backend, &problem);
    }
    if (!m) {
        w.blocks.push_back(
            body(QStringLiteral("The dump %1 could not be read: %2").arg(dump.spec(), problem.toString())));
        doc.sections.push_back(std::move(w));
        return true;
    }
    w.blocks.push_back(
        body(QStringLiteral("Every recipe this tensor could be trained in, on %1 %2 at step %3 (%4; `fp8scope-cli "
                            "stats %5 --what-if` prints the same). Damage: the share of the non-zero values flushed "
                            "to zero or saturated; mean relative error: |x - q| / |x| over the non-zero values, each "
                            "weighing alike. For block recipes, the census of their block scales: the "
                            "share of blocks with a saturated element (clipping), with a non-zero element quantized "
                            "to zero (underflowing), and with every one (flushed); a per-tensor recipe has none.")
                 .arg(first.layer, first.tensor)
                 .arg(dump.record.step)
                 .arg(c.evidence->why, dump.spec())));
    Table t2;
    t2.headers = {QStringLiteral("Recipe"), QStringLiteral("Format"), QStringLiteral("Damage % (1st)"),
        QStringLiteral("Mean rel. error % (2nd)"), QStringLiteral("Underflow %"), QStringLiteral("Saturated %"),
        QStringLiteral("MSE (3rd)"), QStringLiteral("SQNR dB"), QStringLiteral("Blocks"), QStringLiteral("Clipping %"),
        QStringLiteral("Underflowing %"), QStringLiteral("Flushed %")};
    t2.numeric = {false, false, true, true, true, true, true, true, true, true, true, true};
    t2.widths = {2.2, 1, 1.3, 1.5, 1.3, 1.3, 1.4, 1.1, 1, 1.2, 1.5, 1.1};
    for (const WhatIfRow &r : m->rows) {
        const TensorMetrics &tm = r.metrics;
        QStringList row {tm.recipe, formatName(tm.format), fixed(tm.damagePct, 4), fixed(tm.meanRelErrorPct, 3),
            fixed(tm.underflowPct, 4), fixed(tm.saturationPct, 4), num(tm.mse, 4), fixed(tm.sqnrDb, 2)};
        if (r.census)
            row << QString::number(r.census->blocks) << fixed(r.census->clippingPct(), 2)
                << fixed(r.census->underflowingPct(), 2) << fixed(r.census->flushedPct(), 2);
        else if (hasBlockScales(r.recipe))
            row << r.censusError << QString() << QString() << QString();
        else
            row << QStringLiteral("-") << QString() << QString() << QString(); // one scale: no blocks
        t2.rows.push_back(row);
    }
    if (m->best)
        t2.highlighted.push_back(*m->best);
    w.blocks.push_back(t2);
    // The block recipes whose blocks lost values: which blocks, where, and the same blocks with FP32 scales.
    for (const WhatIfRow &r : m->rows) {
        if (r.blocks && r.blocks->flagged > 0)
            w.blocks.push_back(body(QStringLiteral("%1: %2.").arg(r.metrics.recipe, r.blocks->sentence())));
    }
    if (m->best)
        w.blocks.push_back(body(QStringLiteral("The best FP8/FP4 recipe on this dump, highlighted: %1 (%2); chosen by "
                                               "%3.")
                                    .arg(m->rows[*m->best].metrics.recipe, formatName(m->rows[*m->best].metrics.format),
                                        whatIfCriterion())));
    doc.sections.push_back(std::move(w));
    return true;
}

// The audit of the inference checkpoint the run's folder holds (docs/TRIAGE.md): what was read, every finding, and
// a row a quantized layer, those with a finding first (a large model's ok layers are summed up in a line).
void addAuditSection(Document &doc, const AuditResult &a)
{
    Section s {QStringLiteral("Inference checkpoint"), {}};
    int quantized = 0;
    for (const AuditLayer &l : a.layers)
        quantized += l.quantized;
    s.blocks.push_back(
        body(QStringLiteral("The checkpoint %1 (%2 file(s); quantization config: %3): %4 layers, %5 of them "
                            "quantized, audited for missing, invalid and inverted scales, static input "
                            "scales against the run's activations, and modules quantized that the "
                            "config excludes; %6.")
                 .arg(a.checkpoint)
                 .arg(a.files.size())
                 .arg(a.config.method.isEmpty() ? QStringLiteral("none found") : a.config.method)
                 .arg(a.layers.size())
                 .arg(quantized)
                 .arg(a.findings.empty() ? QStringLiteral("nothing was found")
                                         : QStringLiteral("%1 finding(s)").arg(a.findings.size()))));
    for (const AuditFinding &f : a.findings)
        s.blocks.push_back(body(
            QStringLiteral("%1 (%2), %3%4: %5")
                .arg(auditKindName(f.kind), auditSeverityName(f.severity), f.layer,
                    f.trainingLayer.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(f.trainingLayer), f.evidence)));
    for (const Problem &p : a.problems)
        s.blocks.push_back(body(QStringLiteral("Not read: %1").arg(p.toString())));
    Table t;
    t.headers = {QStringLiteral("Layer"), QStringLiteral("Training layer"), QStringLiteral("Scale"),
        QStringLiteral("Scale min"), QStringLiteral("Scale max"), QStringLiteral("Amax"), QStringLiteral("Error"),
        QStringLiteral("Status")};
    t.numeric = {false, false, false, true, true, true, true, false};
    t.widths = {3.1, 3.1, 1.0, 1.15, 1.15, 1.15, 0.7, 1.35};
    const std::vector<const AuditLayer *> rows = auditRows(a);
    constexpr size_t kMaxRows = 60;
    for (size_t i = 0; i < rows.size() && i < kMaxRows; ++i) {
        const AuditLayer &l = *rows[i];
        if (!l.findings.isEmpty())
            t.highlighted.push_back(t.rows.size());
        t.rows.push_back({l.name, l.training ? l.training->text() : QStringLiteral("-"),
            l.scaleLayout.isEmpty() ? QStringLiteral("-") : l.scaleLayout, num(l.scaleMin, 3), num(l.scaleMax, 3),
            num(l.amax, 3), std::isnan(l.relError) ? QStringLiteral("-") : num(l.relError, 3), l.status()});
    }
    s.blocks.push_back(t);
    if (rows.size() > kMaxRows)
        s.blocks.push_back(body(QStringLiteral("%1 more quantized layers, all ok (fp8scope-cli audit lists them).")
                                    .arg(rows.size() - kMaxRows)));
    doc.sections.push_back(std::move(s));
}

// The baseline's attempts (core/analysis/attempts), when it has more than the one reported on: a table of each
// attempt's parent, what changed from it, its outcome and the candidate; every attempt's loss gap in one figure,
// the reported run and the candidate in colour over the others in grey.
void addAttemptsSection(Document &doc, const analysis::AttemptsResult &a, RunRef reported)
{
    using namespace analysis;
    Section s {QStringLiteral("Attempts"), {}};
    QStringList several;
    for (const Attempt &t : a.attempts) {
        if (t.severalAtOnce)
            several << QStringLiteral("%1 (%2)").arg(t.name, t.groupsFromParent.join(QStringLiteral(", ")));
    }
    s.blocks.push_back(body(
        QStringLiteral("Every FP8 run compared with %1, each against the attempt it derives from (its fp8scope.json's "
                       "parent, else the closest earlier attempt): what changed, grouped as one change each, and its "
                       "outcome. The final candidate: %2 (%3).%4")
            .arg(a.baselineName, a.candidate ? a.attempts[*a.candidate].name : QStringLiteral("none yet"),
                candidateRule(),
                several.isEmpty() ? QString()
                                  : QStringLiteral(" Several changes at once, which cannot be told apart: %1.")
                                        .arg(several.join(QStringLiteral("; "))))));
    Table t;
    t.headers = {QStringLiteral("Attempt"), QStringLiteral("Parent"), QStringLiteral("Changed"),
        QStringLiteral("Verdict"), QStringLiteral("Departure"), QStringLiteral("End gap"), QStringLiteral("Band"),
        QStringLiteral("Fixes parent"), QStringLiteral("Candidate")};
    t.numeric = {false, false, false, false, true, true, true, false, false};
    t.widths = {2.2, 1.8, 2.6, 1.9, 1.1, 1.0, 1.0, 1.1, 1.0};
    for (size_t i = 0; i < a.attempts.size(); ++i) {
        const Attempt &x = a.attempts[i];
        if (x.run == reported)
            t.highlighted.push_back(t.rows.size());
        t.rows.push_back({x.name, x.parentName.isEmpty() ? QStringLiteral("(baseline)") : x.parentName,
            (x.severalAtOnce ? QStringLiteral("several: ") : QString()) + x.groupsFromParent.join(QStringLiteral(", ")),
            verdictName(x.verdict) + comparabilityCaveat(x),
            x.departure ? QString::number(*x.departure) : QStringLiteral("-"), num(x.endGap, 3), num(x.endEdge, 3),
            x.fixesParent.isEmpty() ? QStringLiteral("-") : x.fixesParent,
            a.candidate == i ? QStringLiteral("yes") : QString()});
    }
    s.blocks.push_back(t);
    CurveFigure f;
    f.xLabel = QStringLiteral("step");
    f.yLabel = QStringLiteral("lm loss - baseline (smoothed)");
    bool greyNamed = false;
    for (size_t pass = 0; pass < 2; ++pass) {
        for (size_t i = 0; i < a.attempts.size(); ++i) {
            const Attempt &x = a.attempts[i];
            const bool inColour = x.run == reported || a.candidate == i;
            if (x.traceSteps.empty() || inColour != (pass == 1))
                continue;
            CurveFigure::Line l;
            l.name = inColour ? x.name : QStringLiteral("other attempts");
            l.colour = !inColour ? 0xaaaaaa : x.healthy() ? 0x1f77b4 : 0xc81e00;
            l.faint = !inColour;
            l.legend = inColour || !greyNamed;
            greyNamed = greyNamed || !inColour;
            l.x.assign(x.traceSteps.begin(), x.traceSteps.end());
            l.y = x.traceGap;
            f.lines.push_back(std::move(l));
        }
    }
    if (!f.lines.empty())
        s.blocks.push_back(Figure {QStringLiteral("Every attempt's loss difference to %1; the reported run and the "
                                                  "candidate in colour (red: not healthy).")
                                       .arg(a.baselineName),
            f, 70});
    doc.sections.push_back(std::move(s));
}

void addMethod(Document &doc, const analysis::Comparison &c, const analysis::TriageOptions &o)
{
    Section s {QStringLiteral("Method"), {}};
    const analysis::DepartureOptions &d = o.departure;
    s.blocks.push_back(body(QStringLiteral(
        "How the findings above were reached: the triage engine's rules (docs/TRIAGE.md) with the thresholds this "
        "report was made with.")));
    const auto rule = [&](const QString &name, const QString &text) {
        s.blocks.push_back(Paragraph {name, Paragraph::Strong});
        s.blocks.push_back(body(text));
    };
    rule(QStringLiteral("Alignment"),
        QStringLiteral("The runs are aligned on step, or on consumed samples or tokens when both logged them and their "
                       "rates per step differ by more than 1 %; Megatron's interval means are compared over the "
                       "sparser series' window."));
    rule(QStringLiteral("Departure"),
        QStringLiteral("The difference run - baseline is smoothed by a running median. Agreement is within %1 % of the "
                       "baseline or %2, plus a noise band of %3 sigmas of the smoothed difference (sigma from the "
                       "difference's first differences). The departure is the first step from which the running "
                       "median stays above that edge for %4 % of the points to the end; its interval is where 80 % and "
                       "98 % of the points from there on are above. Fewer than %5 aligned points give no verdict. The "
                       "grad norm is judged the same way with a tolerance of %6 %.")
            .arg(d.relativeTolerance * 100)
            .arg(d.absoluteTolerance)
            .arg(d.noiseSigmas)
            .arg(d.stayFraction * 100)
            .arg(d.minPoints)
            .arg(o.gradNormDeparture.relativeTolerance * 100));
    rule(QStringLiteral("Spikes"),
        QStringLiteral("A spike stands %1 noise sigmas and at least %2 % above the local level (the median of the "
                       "points before it); it has recovered when back within %3 sigmas. The run spikes more often "
                       "than its baseline when its count is significantly larger at a one-sided %4 (the conditional "
                       "binomial test of two Poisson rates over the steps each covers) and at least %5.")
            .arg(o.spikes.sigmas)
            .arg(o.spikes.relative * 100)
            .arg(o.spikes.recoverSigmas)
            .arg(o.spikeAlpha)
            .arg(o.minSpikes));
    rule(QStringLiteral("Layer signals"),
        QStringLiteral(
            "Each per-layer statistic that carries risk in a known direction (underflows%, overflows%, mse, "
            "cur_amax, dynamic_range, ...) is divided by the median change of the other layers' same "
            "statistic, so a drift all layers share cancels. Its onset is the first sustained change beyond "
            "%1 sigmas of its early noise and %2 % of its early level (the median of its first %3 % of "
            "points), held for %4 % of the points to the end. Suspects are ranked damage before range before "
            "scale, then by where half the change was made; an onset at or before the departure is a "
            "cause, after it a consequence.")
            .arg(o.onset.sigmas)
            .arg(o.onset.relative * 100)
            .arg(o.onset.earlyFraction * 100)
            .arg(o.onset.stayFraction * 100));
    rule(QStringLiteral("Evaluations"),
        QStringLiteral(
            "z = (run - baseline) / sqrt(se_baseline^2 + se_run^2) per task, metric and inference setting (negative: "
            "the run is below); a gap counts at z <= -%1, a notable drop below it at z <= -%2 (information).")
            .arg(o.evalSigmas)
            .arg(o.evalNotableSigmas));
    rule(QStringLiteral("Verdict"),
        QStringLiteral("In this order: early-divergence (the loss departs before %1 % of the planned steps: %2 here), "
                       "mid-run-instability (it departs later), loss-spikes (no departure, the run spikes "
                       "significantly more often), downstream-gap (no departure, no spikes, an evaluation gap), none.")
            .arg(o.earlyFraction * 100)
            .arg(c.plannedSteps));
    doc.sections.push_back(std::move(s));
}

} // namespace

std::pair<RunRef, RunRef> defaultReportPair(const Catalog &catalog)
{
    const std::vector<Run> runs = catalog.runs(false);
    for (const Run &r : runs) {
        const Pairing p = catalog.pairing(r.ref);
        if (p.baseline.isValid())
            return {p.baseline, r.ref};
    }
    if (runs.size() >= 2)
        return {runs[0].ref, runs[1].ref};
    if (runs.size() == 1)
        return {{}, runs[0].ref}; // one run: checked on its own
    return {};
}

std::optional<Document> buildTriageReport(const Catalog &catalog, RunRef baseline, RunRef run, MetricsBackend *backend,
    const TriageReportOptions &o, QString *error, const Progress &progress)
{
    // An invalid baseline: the run checked on its own (its findings, verdict and next steps; no comparison).
    const bool alone = !baseline.isValid();
    const std::optional<Run> ours = catalog.run(run);
    const std::optional<Run> base = alone && ours ? ours : catalog.run(baseline);
    if (!base || !ours) {
        *error = QStringLiteral("the run or its baseline is not in the store");
        return std::nullopt;
    }
    if (baseline == run) {
        *error = QStringLiteral("a run cannot be its own baseline");
        return std::nullopt;
    }
    std::vector<InputFile> files = alone ? std::vector<InputFile>() : catalog.inputFiles(baseline);
    for (const InputFile &f : catalog.inputFiles(run)) {
        if (std::none_of(files.begin(), files.end(), [&](const InputFile &g) { return g.path == f.path; }))
            files.push_back(f);
    }
    const int total = 4 + int(files.size());
    int done = 0;
    const auto step = [&](const QString &what) {
        if (progress && !progress(done++, total, what)) {
            *error = QStringLiteral("cancelled");
            return false;
        }
        return true;
    };
    if (!step(QStringLiteral("comparing")))
        return std::nullopt;
    const ComparisonData loss = computeComparison(catalog, baseline, run, {});
    const analysis::Comparison &c = loss.comparison;
    std::map<QString, FindingReview> reviews;
    for (const FindingReview &r : catalog.findingReviews(run, baseline))
        reviews[r.finding] = r;

    Document doc;
    doc.title = alone ? QStringLiteral("Triage report: %1 on its own").arg(ours->label())
                      : QStringLiteral("Triage report: %1 against %2").arg(ours->label(), base->label());
    doc.subtitle
        = QStringLiteral("fp8scope %1, %2").arg(o.version, o.made.toString(QStringLiteral("yyyy-MM-dd HH:mm 'UTC'")));
    doc.footer = alone ? QStringLiteral("fp8scope %1 — %2 on its own").arg(o.version, ours->label())
                       : QStringLiteral("fp8scope %1 — %2 against %3").arg(o.version, ours->label(), base->label());
    doc.author = QStringLiteral("fp8scope %1").arg(o.version);

    // Title page: the runs, the verdict in a sentence, the departure, the top findings.
    Table runs;
    runs.headers = {QStringLiteral("Role"), QStringLiteral("Run"), QStringLiteral("Precision"),
        QStringLiteral("Recipe"), QStringLiteral("Folder")};
    runs.widths = {1.2, 2.4, 1.2, 1.3, 6};
    for (const auto &[role, r] :
        {std::pair(QStringLiteral("baseline"), &*base), std::pair(QStringLiteral("run"), &*ours)}) {
        if (alone && role == QLatin1String("baseline"))
            continue;
        runs.rows.push_back({role, r->label(), r->precision.isEmpty() ? QStringLiteral("-") : r->precision,
            r->recipe.isEmpty() ? QStringLiteral("-") : r->recipe, r->folder + QLatin1Char('/') + r->name});
    }
    doc.titlePage.push_back(runs);
    QString verdict = QStringLiteral("Verdict: %1.").arg(analysis::verdictName(c.verdict));
    const Finding *departure = nullptr, *blowUp = nullptr;
    for (const Finding &f : c.findings) {
        if (f.kind == analysis::FindingKind::LossDeparture && !departure)
            departure = &f;
        if (f.kind == analysis::FindingKind::RunBlowUp && f.step && !blowUp)
            blowUp = &f;
    }
    doc.titlePage.push_back(Paragraph {verdict, Paragraph::Strong});
    const analysis::Departure &dep = loss.statistic.departure;
    if (!alone && blowUp && (!dep.step || *blowUp->step < *dep.step)) {
        doc.titlePage.push_back(body(QStringLiteral("Blow-up at step %1 of %2 planned: %3.")
                                         .arg(*blowUp->step)
                                         .arg(c.plannedSteps)
                                         .arg(blowUp->summary)));
    } else if (dep.step) {
        // The step first (what a reader looks for), then what the departure finding says of it and why it is
        // early or mid-run.
        doc.titlePage.push_back(body(QStringLiteral("Departure at step %1 (interval %2-%3) of %4 planned%5.")
                                         .arg(*dep.step)
                                         .arg(dep.low)
                                         .arg(dep.high)
                                         .arg(c.plannedSteps)
                                         .arg(departure ? QStringLiteral(": ") + departure->summary : QString())));
    } else if (alone) {
        const auto blowUp = std::find_if(c.findings.begin(), c.findings.end(),
            [](const Finding &f) { return f.kind == analysis::FindingKind::RunBlowUp; });
        doc.titlePage.push_back(body(blowUp != c.findings.end()
                ? QStringLiteral("Checked on its own (no baseline): %1.").arg(blowUp->summary)
                : QStringLiteral("Checked on its own (no baseline): the loss neither blows up nor rises for good.")));
    } else if (loss.statistic.found) {
        doc.titlePage.push_back(body(QStringLiteral("The losses agree: the run stays within the baseline's band.")));
    } else {
        doc.titlePage.push_back(body(QStringLiteral("The two runs have no loss in common to compare.")));
    }
    if (c.lead)
        doc.titlePage.push_back(
            body(QStringLiteral("The first layer signal comes %1 steps before the departure.").arg(*c.lead)));
    // The engine's comparability verdict, as the wizard and the CLI say it.
    if (!alone)
        doc.titlePage.push_back(body(c.comparability.text));
    if (!c.findings.empty()) {
        doc.titlePage.push_back(Paragraph {QStringLiteral("Top findings"), Paragraph::Strong});
        doc.titlePage.push_back(findingsTable(c.findings, 5, reviews));
    }
    doc.titlePage.push_back(Paragraph {QStringLiteral("Made %1 by fp8scope %2.")
                                           .arg(o.made.toString(QStringLiteral("yyyy-MM-dd HH:mm 'UTC'")), o.version),
        Paragraph::Note});

    // The loss, then the grad norm.
    Section lossSection {alone ? QStringLiteral("Loss") : QStringLiteral("Loss comparison"), {}};
    if (alone && loss.statistic.runPoints) {
        // The run's own loss, its spikes marked and where it leaves its course.
        CurveFigure curve;
        curve.xLabel = QStringLiteral("step");
        curve.yLabel = loss.stat;
        const StepSeries &p = *loss.statistic.runPoints;
        curve.lines.push_back(line(ours->label(), kRunColour, p.steps, p.values, o.curvePoints));
        for (const analysis::Spike &sp : loss.runSpikes.spikes)
            curve.markers.push_back({double(sp.step), sp.value, CurveFigure::Marker::Diamond, kRunColour});
        if (c.departure)
            curve.marked = double(*c.departure);
        lossSection.blocks.push_back(Figure {QStringLiteral("%1 of %2, its spikes marked%3.")
                                                 .arg(loss.stat, ours->label(),
                                                     c.departure ? QStringLiteral("; the line marks where it leaves "
                                                                                  "its course (step %1)")
                                                                       .arg(*c.departure)
                                                                 : QString()),
            curve, 70});
    } else {
        addComparisonFigures(lossSection.blocks, loss, c, catalog, o);
    }
    doc.sections.push_back(std::move(lossSection));
    if (!step(QStringLiteral("grad norm")))
        return std::nullopt;
    const ComparisonData grad = computeStatistic(catalog, baseline, run, QStringLiteral("grad norm"));
    if (grad.statistic.found) {
        Section g {QStringLiteral("Gradient norm"), {}};
        addComparisonFigures(g.blocks, grad, c, catalog, o);
        doc.sections.push_back(std::move(g));
    }

    // The evidence of the verdict's class.
    if (!addLayerSection(doc, catalog, c, backend, o, step))
        return std::nullopt;
    if (c.verdict == Verdict::LossSpikes) {
        Section s {QStringLiteral("Loss spikes"), {}};
        Table t;
        t.headers = {QStringLiteral("Run"), QStringLiteral("Step"), QStringLiteral("Peak"), QStringLiteral("Level"),
            QStringLiteral("Height (sigmas)"), QStringLiteral("Recovered at")};
        t.numeric = {false, true, true, true, true, true};
        std::vector<std::pair<int64_t, QStringList>> rows;
        for (const auto &[name, r] :
            {std::pair(base->label(), &loss.baselineSpikes), std::pair(ours->label(), &loss.runSpikes)})
            for (const analysis::Spike &sp : r->spikes)
                rows.push_back({sp.step,
                    {name, QString::number(sp.step), num(sp.value), num(sp.level), fixed(sp.height, 1),
                        sp.recoveredAt ? QString::number(*sp.recoveredAt) : QStringLiteral("never")}});
        std::stable_sort(rows.begin(), rows.end(), [](const auto &a, const auto &b) { return a.first < b.first; });
        for (auto &[st, row] : rows)
            t.rows.push_back(row);
        const auto rate = [](const analysis::SpikeReport &r) {
            return r.span > 0 ? 1000.0 * double(r.spikes.size()) / double(r.span) : 0.0;
        };
        s.blocks.push_back(
            body(QStringLiteral("%1 spikes %2 times per 1000 steps, its baseline %3 times.")
                     .arg(ours->label(), fixed(rate(loss.runSpikes), 2), fixed(rate(loss.baselineSpikes), 2))));
        s.blocks.push_back(t);
        doc.sections.push_back(std::move(s));
    }
    const std::vector<analysis::ConfigRow> &config = loss.config.rows;
    const bool anyDiffers
        = std::any_of(config.begin(), config.end(), [](const analysis::ConfigRow &r) { return r.differs; });
    if (anyDiffers || c.verdict == Verdict::EarlyDivergence) {
        Section s {QStringLiteral("Config and version differences"), {}};
        if (!loss.config.haveBoth)
            s.blocks.push_back(
                body(QStringLiteral("One of the runs has no config: their differences cannot be told.")));
        s.blocks.push_back(body(QStringLiteral("Every key and key-package version that differs, suspects first (a "
                                               "recently enabled feature or a version that moved is the usual cause of "
                                               "an early divergence).")));
        Table t;
        t.headers = {QStringLiteral("Key or package"), QStringLiteral("Baseline"), QStringLiteral("Run"),
            QStringLiteral("Class")};
        t.widths = {3.5, 2.5, 2.5, 1.6};
        for (const analysis::ConfigRow &r : config) {
            if (!r.differs)
                continue;
            if (r.keyClass == analysis::KeyClass::Suspect)
                t.highlighted.push_back(t.rows.size());
            t.rows.push_back({r.version ? QStringLiteral("%1 (version)").arg(r.key) : r.key, r.baseline, r.run,
                analysis::keyClassName(r.keyClass)});
        }
        s.blocks.push_back(t);
        doc.sections.push_back(std::move(s));
    }
    if (!loss.evals.empty()) {
        Section s {QStringLiteral("Evaluation"), {}};
        s.blocks.push_back(body(QStringLiteral("Every score both runs have, per inference precision of the run: the "
                                               "difference, its standard error (both runs' combined) and how many of "
                                               "them the run is below; significant drops highlighted.")));
        std::vector<const analysis::EvalRow *> rows;
        for (const analysis::EvalRow &e : loss.evals)
            rows.push_back(&e);
        std::stable_sort(rows.begin(), rows.end(),
            [](const analysis::EvalRow *a, const analysis::EvalRow *b) { return a->inference < b->inference; });
        Table t;
        t.headers = {QStringLiteral("Task"), QStringLiteral("Metric"), QStringLiteral("Inference"),
            QStringLiteral("Baseline"), QStringLiteral("Run"), QStringLiteral("Difference"),
            QStringLiteral("Std. error"), QStringLiteral("z"), QStringLiteral("Significant")};
        t.numeric = {false, false, false, true, true, true, true, true, false};
        t.widths = {2.4, 1.4, 1.4, 1.2, 1.2, 1.3, 1.2, 0.8, 1.2};
        for (const analysis::EvalRow *e : rows) {
            if (e->significant)
                t.highlighted.push_back(t.rows.size());
            t.rows.push_back({e->task, e->metric, e->inference.isEmpty() ? QStringLiteral("-") : e->inference,
                num(e->baseline, 4), num(e->run, 4), num(e->difference, 3), num(e->standardError, 3), fixed(e->z, 1),
                e->significant ? QStringLiteral("yes") : QString()});
        }
        s.blocks.push_back(t);
        for (const Finding &f : c.findings) {
            if (f.kind == analysis::FindingKind::InferencePrecision)
                s.blocks.push_back(body(f.summary));
        }
        doc.sections.push_back(std::move(s));
    }

    if (c.audit)
        addAuditSection(doc, *c.audit);
    // The path this run is one step of, when the baseline has other attempts.
    if (baseline.isValid()) {
        const analysis::AttemptsResult attempts = analysis::computeAttempts(catalog, baseline);
        if (attempts.attempts.size() > 1)
            addAttemptsSection(doc, attempts, run);
    }

    // All findings, what to try next (verbatim), the reviews.
    Section all {QStringLiteral("Findings"), {}};
    if (c.findings.empty())
        all.blocks.push_back(body(QStringLiteral("The engine found nothing to report.")));
    else
        all.blocks.push_back(findingsTable(c.findings, c.findings.size(), reviews));
    doc.sections.push_back(std::move(all));
    Section next {QStringLiteral("What to try next"), {}};
    int n = 0;
    for (const analysis::NextStep &ns : c.nextSteps) {
        next.blocks.push_back(Paragraph {QStringLiteral("%1. %2").arg(++n).arg(ns.what), Paragraph::Strong});
        next.blocks.push_back(Paragraph {ns.action, Paragraph::Verbatim});
        if (!ns.config.isEmpty())
            next.blocks.push_back(Paragraph {ns.config.trimmed(), Paragraph::Verbatim});
    }
    if (n == 0)
        next.blocks.push_back(body(c.verdict == Verdict::None
                ? QStringLiteral("Nothing to change: the verdict is healthy.")
                : QStringLiteral("Nothing left to change: the findings to act on were dismissed in the review.")));
    doc.sections.push_back(std::move(next));
    if (!reviews.empty()) {
        Section r {QStringLiteral("Review"), {}};
        r.blocks.push_back(body(QStringLiteral("The marks and notes given to the findings in the triage wizard.")));
        Table t;
        t.headers
            = {QStringLiteral("Finding"), QStringLiteral("Review"), QStringLiteral("Note"), QStringLiteral("Reviewed")};
        t.widths = {4, 1.3, 4, 2.2};
        for (const auto &[identity, review] : reviews)
            t.rows.push_back(
                {reviewedFinding(identity, c.findings), reviewStateName(review.state), review.note, review.reviewedAt});
        r.blocks.push_back(t);
        doc.sections.push_back(std::move(r));
    }
    addMethod(doc, c, {});

    // Provenance: every input file with its size and hash, the stores, the command.
    Section p {QStringLiteral("Provenance"), {}};
    Table ft;
    ft.headers = {QStringLiteral("File"), QStringLiteral("Read as"), QStringLiteral("Size"), QStringLiteral("SHA-256")};
    ft.numeric = {false, false, true, false};
    ft.widths = {4.5, 1.6, 1.1, 5.2};
    for (const InputFile &f : files) {
        if (!step(QStringLiteral("hashing %1").arg(f.file)))
            return std::nullopt;
        QString hashError;
        QString hash = o.hashFiles ? sha256(f.path, &hashError) : QStringLiteral("(not hashed)");
        if (hash.isEmpty())
            hash = QStringLiteral("unreadable: %1").arg(hashError);
        const QFileInfo info(f.path);
        QString size = bytes(info.exists() ? info.size() : f.size);
        if (info.exists() && info.size() != f.size)
            size += QStringLiteral(" (%1 when read)").arg(bytes(f.size));
        ft.rows.push_back({f.path, f.importer, size, hash});
    }
    p.blocks.push_back(body(QStringLiteral("Every file the two runs' data was read from, as it is now (the size when "
                                           "read, where it has changed since).")));
    p.blocks.push_back(ft);
    QStringList stores;
    for (const Catalog::StoreEntry &s : catalog.stores()) {
        if (s.serial == baseline.store || s.serial == run.store) {
            stores << catalog.storePath(s.serial);
        }
    }
    p.blocks.push_back(body(QStringLiteral("Store: %1").arg(stores.join(QStringLiteral(", ")))));
    p.blocks.push_back(body(QStringLiteral("Made again with:")));
    p.blocks.push_back(Paragraph {o.command, Paragraph::Verbatim});
    doc.sections.push_back(std::move(p));
    step(QStringLiteral("done"));
    return doc;
}

} // namespace fp8scope::report

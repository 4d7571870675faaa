#include "curvesource.h"

#include "views/workspace/workspace.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

namespace fp8scope {

WorkspaceCurveSource::WorkspaceCurveSource(Workspace *workspace, QObject *parent)
    : CurveSource(parent)
    , m_workspace(workspace)
{
    const auto forget = [this] {
        m_chosen.clear();
        m_events.clear();
        m_stepSamples.clear();
        m_stepTokens.clear();
    };
    connect(workspace, &Workspace::changed, this, [this, forget](Workspace::Parts parts, RunRef run) {
        if (parts & (Workspace::Loaded | Workspace::Closed | Workspace::Statistics))
            forget();
        if (parts & (Workspace::Loaded | Workspace::Closed))
            Q_EMIT statisticsChanged();
        if (parts & Workspace::Visibility)
            Q_EMIT curvesChanged();
        if (parts & Workspace::Statistics) {
            // A recompute can bring a statistic not listed yet (a checkpoint's first): list it; else redraw.
            for (const auto &[stat, tensor] : m_workspace->catalog().layerStatistics(run)) {
                if (!m_listedTensorStats.count(stat)) {
                    Q_EMIT statisticsChanged();
                    return;
                }
            }
            Q_EMIT curvesChanged();
        }
    });
}

std::vector<CurveSource::Statistic> WorkspaceCurveSource::statistics() const
{
    std::map<QString, QStringList> runLevel;
    std::set<QString> tensorLevel;
    const Catalog &catalog = m_workspace->catalog();
    for (const WorkspaceRun &r : m_workspace->runs()) {
        for (const StatisticInfo &s : catalog.runStatistics(r.run.ref)) {
            QStringList &sources = runLevel[s.stat];
            for (const QString &src : s.sources) {
                if (!sources.contains(src))
                    sources << src;
            }
        }
        for (const auto &[stat, tensor] : catalog.layerStatistics(r.run.ref))
            tensorLevel.insert(stat);
    }
    m_listedTensorStats = tensorLevel;
    std::vector<Statistic> out;
    for (const auto &[stat, sources] : runLevel)
        out.push_back({stat, false, sources});
    for (const QString &stat : tensorLevel)
        out.push_back({stat, true, {}});
    return out;
}

std::vector<RunRef> WorkspaceCurveSource::runs() const
{
    std::vector<RunRef> out;
    for (const WorkspaceRun &r : m_workspace->runs()) {
        if (r.visible)
            out.push_back(r.run.ref);
    }
    return out;
}

QString WorkspaceCurveSource::emptyText() const
{
    if (m_workspace->folders().isEmpty())
        return m_workspace->isLoading() ? tr("Reading...") : tr("No folder is open.");
    if (m_workspace->runCount() == 0)
        return tr("No run was found in %1.").arg(m_workspace->folders().join(QStringLiteral(", ")));
    if (runs().empty())
        return tr("Every run is hidden: tick one in the Runs panel.");
    // Runs without series: say what they hold instead.
    qsizetype evals = 0;
    QStringList names;
    for (const WorkspaceRun &r : m_workspace->runs()) {
        const qsizetype n = qsizetype(m_workspace->catalog().evals(r.run.ref).size());
        evals += n;
        if (n > 0)
            names << r.run.label();
    }
    if (evals > 0)
        return (evals == 1 ? tr("No training series to draw: one evaluation score (%2) is listed in the "
                                "Statistics panel.")
                           : tr("No training series to draw: %1 evaluation scores (%2) are listed in the "
                                "Statistics panel."))
            .arg(evals)
            .arg(names.join(QStringLiteral(", ")));
    return tr("The runs hold no series to draw.");
}

QString WorkspaceCurveSource::runName(RunRef run) const
{
    const WorkspaceRun *r = m_workspace->run(run);
    return r ? r->run.label() : QString();
}

QString WorkspaceCurveSource::legendName(RunRef run) const
{
    const WorkspaceRun *r = m_workspace->run(run);
    return r ? r->shortLabel : QString();
}

QColor WorkspaceCurveSource::runColour(RunRef run) const
{
    const WorkspaceRun *r = m_workspace->run(run);
    return r ? r->colour : QColor(Qt::gray);
}

Qt::PenStyle WorkspaceCurveSource::runLineStyle(RunRef run) const
{
    const WorkspaceRun *r = m_workspace->run(run);
    return r ? r->lineStyle : Qt::SolidLine;
}

std::optional<Series> WorkspaceCurveSource::chosen(RunRef run, const SeriesRequest &request) const
{
    const QString key = QString::number(run.store) + QLatin1Char(':') + QString::number(run.id) + QChar(0x1f)
        + request.stat + QChar(0x1f) + request.layer + QChar(0x1f) + request.tensor + QChar(0x1f) + request.source
        + QChar(0x1f) + request.recipe + (request.axis == SeriesAxis::Samples ? QStringLiteral("|samples") : QString());
    const auto it = m_chosen.find(key);
    if (it != m_chosen.end())
        return it->second;
    return m_chosen[key] = m_workspace->catalog().chooseSeries(run, request);
}

std::optional<CurveSource::Curve> WorkspaceCurveSource::curve(RunRef run, const Request &request) const
{
    const Catalog &catalog = m_workspace->catalog();
    SeriesRequest s {.stat = request.stat,
        .layer = request.tensorLevel ? request.layer : QString(),
        .tensor = request.tensorLevel ? request.tensor : QString(),
        .source = request.source};
    if (request.tensorLevel && (s.layer.isEmpty() || s.tensor.isEmpty()))
        return std::nullopt;
    std::optional<Series> pick;
    bool xIsSamples = false;
    if (request.bySamples && !request.tensorLevel) {
        // The series logged against consumed samples, where the run has one ("lm loss vs samples").
        SeriesRequest samples = s;
        samples.axis = SeriesAxis::Samples;
        pick = this->chosen(run, samples);
        if (!pick && !s.source.isEmpty()) {
            samples.source.clear();
            pick = this->chosen(run, samples);
        }
        xIsSamples = pick.has_value();
    }
    if (!pick)
        pick = this->chosen(run, s);
    if (!pick && !s.source.isEmpty()) {
        // A run without the chosen source shows its own choice.
        s.source.clear();
        pick = this->chosen(run, s);
    }
    if (!pick)
        return std::nullopt;
    Curve c;
    c.name = legendName(run) + (pick->recipe.isEmpty() ? QString() : tr(" (%1)").arg(pick->recipe));
    c.series = *pick;
    c.points = catalog.points(*pick, request.range);
    c.xIsSamples = xIsSamples;
    return c;
}

namespace {

// A point's range: a bucket's min and max, a single point's value.
double lowest(const SeriesPoint &p)
{
    return p.count > 1 ? p.min : p.value;
}

double highest(const SeriesPoint &p)
{
    return p.count > 1 ? p.max : p.value;
}

// The exact points of a long series where something may happen, without reading all of it: min/max buckets
// first, then exact reads of the buckets `suspect` picks (given a bucket and the one before it, or nullptr).
// Events are rare, so this reads a few thousand buckets and a few of them, not a million points.
template <typename Suspect>
std::vector<SeriesPoint> pointsWhere(const Catalog &catalog, const Series &series, Suspect suspect)
{
    constexpr int kBuckets = 2048;
    const std::vector<SeriesPoint> buckets = catalog.points(series, {.resolution = kBuckets});
    std::vector<SeriesPoint> out;
    for (size_t i = 0; i < buckets.size(); ++i) {
        const SeriesPoint &b = buckets[i];
        const SeriesPoint *before = i > 0 ? &buckets[i - 1] : nullptr;
        if (!suspect(b, before))
            continue;
        if (b.count <= 1) {
            // A single point, and the one before it (a change is seen against it).
            if (before && before->count <= 1 && (out.empty() || before->step > out.back().step))
                out.push_back(*before);
            out.push_back(b);
            continue;
        }
        // From the last point before the bucket, so that a change at its first point is seen.
        const int64_t from = before ? before->lastStep : b.step;
        for (const SeriesPoint &p : catalog.points(series, {.from = from, .to = b.lastStep})) {
            if (out.empty() || p.step > out.back().step)
                out.push_back(p);
        }
    }
    return out;
}

} // namespace

std::vector<CurveSource::Event> WorkspaceCurveSource::events(RunRef run) const
{
    const auto cached = m_events.find(run);
    if (cached != m_events.end())
        return cached->second;
    const Catalog &catalog = m_workspace->catalog();
    std::vector<Event> out;
    // Megatron logs counts per logging interval: a count above 0 is an event at the interval's step.
    const auto counted = [](const SeriesPoint &b, const SeriesPoint *) {
        return highest(b) > 0 || !std::isfinite(highest(b)) || !std::isfinite(lowest(b));
    };
    for (const auto &[stat, kind] : {std::pair(QStringLiteral("skipped iterations"), Event::Skipped),
             std::pair(QStringLiteral("nan iterations"), Event::NotFinite)}) {
        if (const auto series = catalog.chooseSeries(run, {.stat = stat})) {
            for (const SeriesPoint &p : pointsWhere(catalog, *series, counted)) {
                if (p.value > 0 || !std::isfinite(p.value))
                    out.push_back({p.step, kind, p.value});
            }
        }
    }
    // A cut of the loss scale: a bucket that changes inside, or starts below where the one before reached.
    const auto changes = [](const SeriesPoint &b, const SeriesPoint *before) {
        return lowest(b) < highest(b) || (before && lowest(b) < highest(*before));
    };
    if (const auto scale = catalog.chooseSeries(run, {.stat = QStringLiteral("loss scale")})) {
        // Between two refined stretches lie buckets that never dropped (flat, or grown): comparing across the
        // gap finds no cut that is not there.
        double before = NAN;
        for (const SeriesPoint &p : pointsWhere(catalog, *scale, changes)) {
            if (p.value < before)
                out.push_back({p.step, Event::LossScaleDrop, p.value});
            before = p.value;
        }
    }
    // A log that went back to an earlier step (a resume from a checkpoint): the importers keep each rewind as
    // a point of "rewind" at the step resumed from, its value the step the log had reached. The Megatron log's
    // and the statistics logs' (a restarted counter, placed after the earlier steps) are both drawn, a step
    // they share once.
    std::set<int64_t> restarts;
    for (const Series &rewind : catalog.candidates(run, {.stat = QStringLiteral("rewind")})) {
        for (const SeriesPoint &p : catalog.points(rewind)) {
            if (restarts.insert(p.step).second)
                out.push_back({p.step, Event::Restart, p.value});
        }
    }
    std::stable_sort(out.begin(), out.end(), [](const Event &a, const Event &b) { return a.step < b.step; });
    return m_events[run] = out;
}

std::vector<std::pair<double, double>> WorkspaceCurveSource::stepSamples(RunRef run) const
{
    const auto cached = m_stepSamples.find(run);
    if (cached != m_stepSamples.end())
        return cached->second;
    return m_stepSamples[run] = readStepSamples(run);
}

int64_t WorkspaceCurveSource::sequenceLength(const std::vector<ConfigEntry> &configs)
{
    // The key's last part, without dashes, in snake case: Megatron's arguments (seq_length), its command line
    // in a YAML (MODEL_ARGS.--seq-length), NeMo's and Hugging Face's (model.encoder_seq_length, max_seq_len).
    static const std::set<QString> names {QStringLiteral("seq_length"), QStringLiteral("seq_len"),
        QStringLiteral("max_seq_len"), QStringLiteral("max_seq_length"), QStringLiteral("sequence_length"),
        QStringLiteral("encoder_seq_length")};
    for (const ConfigEntry &c : configs) {
        QString key = c.key.section(QLatin1Char('.'), -1).toLower();
        while (key.startsWith(QLatin1Char('-')))
            key.remove(0, 1);
        key.replace(QLatin1Char('-'), QLatin1Char('_'));
        if (!names.count(key))
            continue;
        bool ok = false;
        const qlonglong n = c.value.trimmed().toLongLong(&ok);
        if (ok && n > 0)
            return n;
    }
    return 0;
}

std::vector<std::pair<double, double>> WorkspaceCurveSource::stepTokens(RunRef run) const
{
    const auto cached = m_stepTokens.find(run);
    if (cached != m_stepTokens.end())
        return cached->second;
    const Catalog &catalog = m_workspace->catalog();
    std::vector<std::pair<double, double>> out;
    if (const auto tokens = catalog.chooseSeries(run, {.stat = QStringLiteral("consumed tokens")})) {
        for (const SeriesPoint &p : catalog.points(*tokens))
            out.emplace_back(double(p.step), p.value);
    }
    if (out.size() < 2) {
        out.clear();
        if (const int64_t length = sequenceLength(catalog.configs(run)); length > 0) {
            for (const auto &[step, samples] : stepSamples(run))
                out.emplace_back(step, samples * double(length));
        }
    }
    if (out.size() < 2)
        out.clear();
    return m_stepTokens[run] = out;
}

std::vector<std::pair<double, double>> WorkspaceCurveSource::readStepSamples(RunRef run) const
{
    const Catalog &catalog = m_workspace->catalog();
    std::vector<std::pair<double, double>> out;
    if (const auto samples = catalog.chooseSeries(run, {.stat = QStringLiteral("consumed samples")})) {
        for (const SeriesPoint &p : catalog.points(*samples))
            out.emplace_back(double(p.step), p.value);
        if (out.size() >= 2)
            return out;
    }
    // TensorBoard logs a statistic twice, against steps and against samples, at the same points: their
    // points pair up into the mapping.
    out.clear();
    for (const StatisticInfo &s : catalog.runStatistics(run)) {
        if (!s.samplesAxis)
            continue;
        const auto bySteps = catalog.chooseSeries(run, {.stat = s.stat});
        const auto bySamples = catalog.chooseSeries(run, {.stat = s.stat, .axis = SeriesAxis::Samples});
        if (!bySteps || !bySamples || bySteps->points != bySamples->points || bySteps->points < 2)
            continue;
        const auto a = catalog.points(*bySteps);
        const auto b = catalog.points(*bySamples);
        for (size_t i = 0; i < a.size() && i < b.size(); ++i)
            out.emplace_back(double(a[i].step), double(b[i].step));
        return out;
    }
    // A run that logs its global batch size: each step consumes one batch, at the size logged at the end of
    // its interval (a batch-size ramp is a size per interval), from step 0.
    out.clear();
    if (const auto batch = catalog.chooseSeries(run, {.stat = QStringLiteral("batch size")})) {
        double samples = 0, before = 0;
        for (const SeriesPoint &p : catalog.points(*batch)) {
            if (!std::isfinite(p.value) || p.value <= 0 || double(p.step) < before)
                return {};
            samples += (double(p.step) - before) * p.value;
            before = double(p.step);
            out.emplace_back(double(p.step), samples);
        }
        if (out.size() >= 2)
            return out;
    }
    return {};
}

} // namespace fp8scope

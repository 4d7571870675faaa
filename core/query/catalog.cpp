#include "catalog.h"

#include "core/formats/expertnames.h"
#include "expertgroups.h"

#include "core/store/runstore.h"

#include "pairing.h"
#include "statnames.h"

#include <QDir>
#include <QFileInfo>
#include <QHash>
#include <QRegularExpression>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <map>
#include <set>
#include <tuple>
#include <unordered_map>

namespace fp8scope {

struct Catalog::Entry {
    quint64 serial = 0;
    QString folder;
    RunStore store;
    // What stepSeries() kept (setKeepPoints), by series id, and the store's dataRewrites() it was read under.
    struct Kept {
        int64_t rewrites = -1;
        std::unordered_map<int64_t, StepSeries> series;
    };
    mutable Kept kept;
};

namespace {

const QString kRecomputed = QStringLiteral("recomputed");

// A store error as a problem of the store's file.
ProblemEntry storeProblem(const QString &storePath, const QString &error)
{
    return {storePath, 0, -1, QStringLiteral("store: %1").arg(error), true};
}

Series toSeries(const SeriesInfo &s, quint64 serial)
{
    Series out {.id = s.id,
        .run = {serial, s.runId},
        .stat = s.key.stat,
        .sourceStat = s.key.stat,
        .layer = s.key.layer,
        .tensor = s.key.tensor,
        .source = s.key.source,
        .recipe = s.key.recipe,
        .points = s.points,
        .firstStep = s.firstStep,
        .lastStep = s.lastStep};
    if (s.key.layer.isEmpty() && s.key.tensor.isEmpty()) {
        const CanonicalStat c = canonicalStat(s.key.stat);
        out.stat = c.name;
        out.axis = c.axis;
    }
    return out;
}

// A manifest's loss_gap_bar: a number at least 0; none otherwise.
std::optional<double> barOf(const QString &text)
{
    bool ok = false;
    const double v = text.trimmed().toDouble(&ok);
    return ok && std::isfinite(v) && v >= 0 ? std::optional(v) : std::nullopt;
}

Run toRun(const RunInfo &r, quint64 serial, const QString &folder)
{
    return {.ref = {serial, r.id},
        .name = r.name,
        .displayName = r.displayName,
        .folder = folder,
        .precision = r.precision,
        .recipe = r.recipe,
        .manifestBaseline = r.baseline,
        .inferencePrecision = r.inferencePrecision,
        .notes = r.notes,
        .group = r.group,
        .lossGapBar = barOf(r.lossGapBar),
        .manifestParent = r.parent,
        .inferenceCheckpoint = r.inferenceCheckpoint,
        .inferenceReference = r.inferenceReference,
        .manifest = r.manifest,
        .manifestKey = r.manifestKey,
        .ownFolder = r.folder,
        .filesFolder = r.filesFolder,
        .seriesCount = r.seriesCount,
        .pointCount = r.pointCount};
}

// The one policy, as a total order (ids break what is left: they are unique): logged before recomputed; of
// recomputed ones, the run's own recipe first; then the most points; then source (natural order), the
// source's name for it, recipe.
void sortByPolicy(std::vector<Series> *series, const QString &ownRecipe)
{
    std::sort(series->begin(), series->end(), [&](const Series &a, const Series &b) {
        const auto rank = [&](const Series &s) {
            return std::make_tuple(
                s.isRecomputed() ? 1 : 0, s.isRecomputed() && s.recipe != ownRecipe ? 1 : 0, -s.points);
        };
        if (rank(a) != rank(b))
            return rank(a) < rank(b);
        if (a.source != b.source)
            return layerLess(a.source, b.source);
        if (a.sourceStat != b.sourceStat)
            return a.sourceStat < b.sourceStat;
        if (a.recipe != b.recipe)
            return a.recipe < b.recipe;
        return a.id < b.id;
    });
}

} // namespace

qsizetype Heatmap::nearestColumn(double step) const
{
    if (steps.empty())
        return -1;
    const auto it
        = std::lower_bound(steps.begin(), steps.end(), step, [](int64_t s, double v) { return double(s) < v; });
    if (it == steps.end())
        return qsizetype(steps.size()) - 1;
    if (it == steps.begin())
        return 0;
    const qsizetype i = it - steps.begin();
    return step - double(steps[size_t(i - 1)]) <= double(*it) - step ? i - 1 : i;
}

Catalog::Catalog() = default;
Catalog::~Catalog() = default;
Catalog::Catalog(Catalog &&) noexcept = default;
Catalog &Catalog::operator=(Catalog &&) noexcept = default;

quint64 Catalog::newStoreSerial()
{
    static std::atomic<quint64> next {1};
    return next.fetch_add(1);
}

bool Catalog::open(const QString &folder, quint64 serial, QString *error)
{
    auto e = std::make_unique<Entry>();
    e->serial = serial;
    e->folder = QFileInfo(folder).absoluteFilePath();
    if (!e->store.open(folder, error))
        return false;
    m_entries.push_back(std::move(e));
    setStoreErrorHandler(m_storeErrorHandler);
    refresh();
    return true;
}

void Catalog::setStoreErrorHandler(std::function<void(const ProblemEntry &problem)> handler)
{
    m_storeErrorHandler = std::move(handler);
    for (const auto &e : m_entries) {
        if (!m_storeErrorHandler) {
            e->store.setErrorHandler({});
            continue;
        }
        e->store.setErrorHandler([handler = m_storeErrorHandler, path = e->store.path()](
                                     const QString &error) { handler(storeProblem(path, error)); });
    }
}

void Catalog::close()
{
    m_entries.clear();
    refresh();
}

std::vector<Catalog::StoreEntry> Catalog::stores() const
{
    std::vector<StoreEntry> out;
    for (const auto &e : m_entries)
        out.push_back({e->serial, e->folder});
    return out;
}

const Catalog::Entry *Catalog::entry(quint64 serial) const
{
    for (const auto &e : m_entries) {
        if (e->serial == serial)
            return e.get();
    }
    return nullptr;
}

RunStore *Catalog::storeOf(quint64 serial)
{
    for (const auto &e : m_entries) {
        if (e->serial == serial)
            return &e->store;
    }
    return nullptr;
}

QString Catalog::storePath(quint64 serial) const
{
    const Entry *e = entry(serial);
    return e ? e->store.path() : QString();
}

int64_t Catalog::dataRewrites(quint64 serial) const
{
    const Entry *e = entry(serial);
    return e ? e->store.dataRewrites() : -1;
}

void Catalog::refresh()
{
    m_pairings.reset();
    m_pairedRuns.clear();
}

std::vector<Run> Catalog::runs(bool withCounts) const
{
    return listRuns(withCounts);
}

std::vector<Run> Catalog::listRuns(bool withCounts) const
{
    std::vector<Run> out;
    for (const auto &e : m_entries) {
        for (const RunInfo &r : e->store.runs(withCounts))
            out.push_back(toRun(r, e->serial, e->folder));
    }
    return out;
}

std::optional<Run> Catalog::run(RunRef ref) const
{
    const Entry *e = entry(ref.store);
    if (!e)
        return std::nullopt;
    const auto r = e->store.runInfo(ref.id);
    return r ? std::optional<Run>(toRun(*r, e->serial, e->folder)) : std::nullopt;
}

std::optional<Run> Catalog::findRun(const QString &name) const
{
    const std::vector<Run> all = listRuns(false);
    for (const Run &r : all) {
        if (r.name == name)
            return r;
    }
    for (const Run &r : all) {
        if (r.displayName == name || QFileInfo(r.folder).fileName() + QLatin1Char('/') + r.name == name)
            return r;
    }
    return std::nullopt;
}

Pairing Catalog::pairing(RunRef ref) const
{
    if (!m_pairings) {
        m_pairedRuns = listRuns(false);
        std::vector<PairingInput> inputs;
        for (const Run &r : m_pairedRuns) {
            PairingInput in {r, {}};
            for (const ConfigEntry &c : configs(r.ref))
                in.configs.emplace(c.key, c.value);
            inputs.push_back(std::move(in));
        }
        std::vector<Pairing> pairings;
        // The loss's steps, read only where a tie of baselines asks for them (once a run).
        std::vector<std::optional<std::pair<int64_t, int64_t>>> steps(inputs.size());
        const auto stepsOf = [&](size_t i) {
            if (!steps[i]) {
                const auto loss = chooseSeries(inputs[i].run.ref, {.stat = QStringLiteral("lm loss")});
                steps[i] = loss ? std::pair(loss->firstStep, loss->lastStep) : std::pair<int64_t, int64_t>(1, 0);
            }
            return *steps[i];
        };
        for (size_t i = 0; i < inputs.size(); ++i)
            pairings.push_back(pairRun(inputs, i, stepsOf));
        m_pairings = std::move(pairings);
    }
    for (size_t i = 0; i < m_pairedRuns.size(); ++i) {
        if (m_pairedRuns[i].ref == ref)
            return (*m_pairings)[i];
    }
    Pairing none;
    none.reason = QStringLiteral("not an open run");
    return none;
}

std::vector<Series> Catalog::series(RunRef ref) const
{
    std::vector<Series> out;
    if (const Entry *e = entry(ref.store)) {
        for (const SeriesInfo &s : e->store.series(ref.id))
            out.push_back(toSeries(s, e->serial));
    }
    return out;
}

std::vector<Series> Catalog::seriesAt(RunRef ref, const QString &layer, const QString &tensor) const
{
    std::vector<Series> out;
    if (const Entry *e = entry(ref.store)) {
        for (const SeriesInfo &s : e->store.seriesAt(ref.id, layer, tensor))
            out.push_back(toSeries(s, e->serial));
    }
    return out;
}

std::vector<StatisticInfo> Catalog::runStatistics(RunRef ref) const
{
    const Entry *e = entry(ref.store);
    if (!e)
        return {};
    std::map<QString, std::vector<Series>> byName;
    std::set<QString> samples;
    for (const SeriesInfo &s : e->store.seriesAt(ref.id, QString(), QString())) {
        Series series = toSeries(s, e->serial);
        if (series.axis == SeriesAxis::Samples)
            samples.insert(series.stat);
        else
            byName[series.stat].push_back(std::move(series));
    }
    std::vector<StatisticInfo> out;
    for (auto &[name, list] : byName) {
        // Sources in the policy's order: the first is the one shown when none is asked for.
        sortByPolicy(&list, QString());
        StatisticInfo info {.stat = name, .samplesAxis = samples.count(name) > 0};
        for (const Series &s : list) {
            if (!info.sources.contains(s.source))
                info.sources << s.source;
        }
        out.push_back(std::move(info));
    }
    return out;
}

std::vector<Series> Catalog::candidates(RunRef ref, const SeriesRequest &request) const
{
    std::vector<Series> out;
    const Entry *e = entry(ref.store);
    if (!e)
        return out;
    const bool runLevel = request.layer.isEmpty() && request.tensor.isEmpty();
    // A run-level request may name a statistic by any of its names: ask for its canonical one.
    const QString wanted = runLevel ? canonicalStat(request.stat).name : request.stat;
    for (const SeriesInfo &s : e->store.seriesAt(ref.id, request.layer, request.tensor)) {
        Series series = toSeries(s, e->serial);
        if (series.stat != wanted || series.axis != request.axis)
            continue;
        if ((!request.source.isEmpty() && series.source != request.source)
            || (!request.recipe.isEmpty() && series.recipe != request.recipe))
            continue;
        out.push_back(std::move(series));
    }
    QString ownRecipe;
    if (!out.empty() && std::any_of(out.begin(), out.end(), [](const Series &s) { return s.isRecomputed(); })) {
        if (const auto r = run(ref))
            ownRecipe = tensorRecipe(r->recipe, request.tensor);
    }
    sortByPolicy(&out, ownRecipe);
    return out;
}

std::optional<Series> Catalog::chooseSeries(RunRef ref, const SeriesRequest &request) const
{
    auto c = candidates(ref, request);
    if (c.empty())
        return std::nullopt;
    return std::move(c.front());
}

std::vector<SeriesPoint> Catalog::points(const Series &series, const PointRange &range) const
{
    const Entry *e = entry(series.run.store);
    return e ? e->store.points(series.id, range.from, range.to, range.resolution) : std::vector<SeriesPoint>();
}

namespace {

void appendPoints(const std::vector<SeriesPoint> &points, StepSeries *out)
{
    // Kept series grow by a batch at a time: exact reserves would copy them whole at every batch.
    if (out->steps.empty()) {
        out->steps.reserve(points.size());
        out->values.reserve(points.size());
    }
    for (const SeriesPoint &p : points) {
        out->steps.push_back(p.step);
        out->values.push_back(p.value);
    }
}

} // namespace

StepSeries Catalog::stepSeries(const Series &series) const
{
    const Entry *e = entry(series.run.store);
    if (!e)
        return {};
    constexpr int64_t kFirst = std::numeric_limits<int64_t>::min(), kLast = std::numeric_limits<int64_t>::max();
    if (m_keepPoints) {
        Entry::Kept &kept = e->kept;
        // Twice at most: a rewrite committed while the new points were read leaves the points kept of another
        // version than those after them.
        for (int attempt = 0; attempt < 2; ++attempt) {
            const int64_t before = e->store.dataRewrites();
            if (before < 0)
                break;
            if (before != kept.rewrites) {
                kept.series.clear();
                kept.rewrites = before;
            }
            StepSeries &k = kept.series[series.id];
            appendPoints(e->store.points(series.id, k.empty() ? kFirst : k.steps.back() + 1, kLast, 0), &k);
            // Fewer points than the series was listed with: not what was kept grown, whatever the count says.
            if (e->store.dataRewrites() == before && k.size() >= size_t(std::max<int64_t>(0, series.points)))
                return k;
            kept.series.erase(series.id);
        }
    }
    StepSeries out;
    appendPoints(e->store.points(series.id, kFirst, kLast, 0), &out);
    return out;
}

Catalog::ReadSnapshot::ReadSnapshot(const Catalog &catalog)
{
    for (const auto &e : catalog.m_entries) {
        if (e->store.beginRead())
            m_open.push_back(&e->store);
    }
}

Catalog::ReadSnapshot::~ReadSnapshot()
{
    for (const RunStore *s : m_open)
        s->endRead();
}

void Catalog::setKeepPoints(bool keep)
{
    m_keepPoints = keep;
    if (!keep) {
        for (const auto &e : m_entries)
            e->kept = {};
    }
}

std::optional<SeriesPoint> Catalog::valueAt(const Series &series, int64_t step) const
{
    const Entry *e = entry(series.run.store);
    return e ? e->store.valueAt(series.id, step) : std::nullopt;
}

std::vector<NonFinitePoint> Catalog::firstNonFinite(RunRef ref, int64_t from) const
{
    std::vector<NonFinitePoint> out;
    if (const Entry *e = entry(ref.store)) {
        for (const RunStore::NonFinite &n : e->store.firstNonFinite(ref.id, from))
            out.push_back({toSeries(n.series, e->serial), n.step, n.value});
    }
    return out;
}

std::vector<LayerTensors> Catalog::layerTensors(const std::vector<RunRef> &which) const
{
    QHash<QString, QStringList> tensors;
    for (const Run &r : listRuns(false)) {
        if (!which.empty() && std::find(which.begin(), which.end(), r.ref) == which.end())
            continue;
        const Entry *e = entry(r.ref.store);
        if (!e)
            continue;
        for (const auto &[layer, tensor] : e->store.layerTensors(r.ref.id)) {
            QStringList &list = tensors[layer];
            if (!tensor.isEmpty() && !tensor.endsWith(QLatin1String("_fp8")) && !list.contains(tensor))
                list << tensor;
        }
    }
    std::vector<LayerTensors> out;
    for (auto it = tensors.cbegin(); it != tensors.cend(); ++it) {
        QStringList t = it.value();
        t.sort();
        out.push_back({it.key(), t});
    }
    std::sort(out.begin(), out.end(),
        [](const LayerTensors &a, const LayerTensors &b) { return layerLess(a.layer, b.layer); });
    return out;
}

std::vector<std::pair<QString, QString>> Catalog::layerStatistics(RunRef ref) const
{
    const Entry *e = entry(ref.store);
    return e ? e->store.layerStatistics(ref.id) : std::vector<std::pair<QString, QString>>();
}

namespace {

// "0-3, 7": ranks as ranges.
QString rankList(std::vector<int> ranks)
{
    std::sort(ranks.begin(), ranks.end());
    QStringList parts;
    for (size_t i = 0; i < ranks.size();) {
        size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1)
            ++j;
        parts << (j == i ? QString::number(ranks[i]) : QStringLiteral("%1-%2").arg(ranks[i]).arg(ranks[j]));
        i = j + 1;
    }
    return parts.join(QStringLiteral(", "));
}

} // namespace

Heatmap Catalog::matrix(RunRef ref, const MatrixRequest &request) const
{
    Heatmap h = matrixOf(ref, request);
    groupExperts(&h, request);
    // What the statistic meant under the run's Transformer Engine version, said once beside it.
    const Entry *e = entry(ref.store);
    if (!e || h.layers.isEmpty() || h.source == kRecomputed)
        return h;
    QString te;
    for (const KeyValueRow &v : e->store.versions(ref.id)) {
        if (v.key == QLatin1String("transformer-engine")
            || (te.isEmpty() && v.key.startsWith(QLatin1String("transformer-engine"))))
            te = v.value;
    }
    if (te.isEmpty())
        return h;
    const auto r = run(ref);
    const bool severalRanks = h.sources.contains(kRanksMax) || !e->store.rankCopies(ref.id).empty();
    h.caveat = teStatisticCaveat(request.stat, h.recipe.isEmpty() && r ? r->recipe : h.recipe, te, severalRanks);
    return h;
}

Heatmap Catalog::matrixOf(RunRef ref, const MatrixRequest &request) const
{
    Heatmap h;
    const Entry *e = entry(ref.store);
    if (!e)
        return h;
    const std::vector<RunStore::LayerSource> sources = e->store.layerSources(ref.id, request.stat, request.tensor);
    // Layers per source (all its recipes); logged sources before recomputed ones (which cover a few dump
    // steps), then the one covering most layers, then by name.
    std::map<QString, int64_t> layersOf;
    for (const auto &s : sources)
        layersOf[s.source] = std::max(layersOf[s.source], s.layers);
    std::vector<QString> order;
    for (const auto &[source, layers] : layersOf)
        order.push_back(source);
    std::sort(order.begin(), order.end(), [&](const QString &a, const QString &b) {
        const auto rank = [&](const QString &s) { return std::make_pair(s == kRecomputed ? 1 : 0, -layersOf[s]); };
        if (rank(a) != rank(b))
            return rank(a) < rank(b);
        return layerLess(a, b);
    });
    for (const QString &s : order)
        h.sources << s;
    // Several ranks' logs: the union of their layers, as the max or the mean where they overlap, first.
    QStringList rankSources;
    for (const QString &s : order) {
        if (rankOfSource(s) >= 0)
            rankSources << s;
    }
    if (rankSources.size() >= 2) {
        h.sources.prepend(kRanksMean);
        h.sources.prepend(kRanksMax);
    }
    h.source = h.sources.contains(request.source) ? request.source : h.sources.value(0);
    if (h.source.isEmpty())
        return h;
    if (h.source == kRanksMax || h.source == kRanksMean) {
        acrossRanks(e->store, ref.id, request, rankSources, h.source == kRanksMax, &h);
        return h;
    }
    // One recipe: a layer recomputed under several has a series for each, and rows must not mix them.
    std::vector<std::pair<QString, int64_t>> recipes;
    for (const auto &s : sources) {
        if (s.source == h.source)
            recipes.emplace_back(s.recipe, s.layers);
    }
    std::sort(recipes.begin(), recipes.end(),
        [](const auto &a, const auto &b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    for (const auto &[recipe, n] : recipes)
        h.recipes << recipe;
    QString runRecipe;
    if (const auto r = run(ref))
        runRecipe = tensorRecipe(r->recipe, request.tensor);
    h.recipe = h.recipes.contains(request.recipe) ? request.recipe
        : h.recipes.contains(runRecipe)           ? runRecipe
                                                  : h.recipes.value(0);
    // A row per GEMM of grouped experts: the store's reduced rows where they are as fresh as the points, beside
    // the rows of the layers that are no experts'.
    if ((request.experts == ExpertRows::Max || request.experts == ExpertRows::Mean) && request.expertsOf.isEmpty()
        && h.source != kRecomputed) {
        if (const auto groups = e->store.expertRows(ref.id, request.stat, request.tensor, h.source, h.recipe)) {
            const std::vector<LayerRow> dense = e->store.layerRows(ref.id, request.stat, request.tensor, h.source,
                h.recipe, [](const QString &l) { return !expertOf(l).has_value(); });
            assembleGrouped(&h, dense, *groups, request.experts, rankOfSource(h.source));
            return h;
        }
    }
    const bool everyLayer = request.expertsOf.isEmpty();
    const std::vector<LayerRow> rows = e->store.layerRows(
        ref.id, request.stat, request.tensor, h.source, h.recipe,
        everyLayer ? std::function<bool(const QString &)>()
                   : [&](const QString &l) { return matrixKeepsLayer(l, request); });
    std::vector<int64_t> steps;
    for (const LayerRow &row : rows) {
        h.layers << row.layer;
        for (const auto &p : row.points)
            steps.push_back(p.first);
    }
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    h.steps = std::move(steps);
    h.values.assign(size_t(h.layers.size()) * h.steps.size(), NAN);
    for (size_t i = 0; i < rows.size(); ++i) {
        size_t col = 0;
        for (const auto &[step, value] : rows[i].points) {
            while (h.steps[col] < step)
                ++col; // both sorted
            if (!std::isfinite(value)) {
                h.nonFinite.push_back({qsizetype(i), col, value, rankOfSource(h.source)});
                continue;
            }
            h.values[i * h.steps.size() + col] = value;
        }
    }
    return h;
}

void Catalog::acrossRanks(const RunStore &store, int64_t runId, const MatrixRequest &request,
    const QStringList &rankSources, bool max, Heatmap *h)
{
    // Every rank's rows; a layer held by several ranks (a reduction group set to None, tensor parallel
    // shards) shows their max (with the rank it is from) or their mean.
    std::map<QString, std::map<int64_t, std::vector<std::pair<double, int>>>> cells; // layer -> step -> (value, rank)
    std::map<int, int> layersOfRank;
    for (const QString &source : rankSources) {
        const int rank = rankOfSource(source);
        const auto keep = request.expertsOf.isEmpty() ? std::function<bool(const QString &)>()
                                                      : [&](const QString &l) { return matrixKeepsLayer(l, request); };
        for (const LayerRow &row : store.layerRows(runId, request.stat, request.tensor, source, QString(), keep)) {
            ++layersOfRank[rank];
            auto &steps = cells[row.layer];
            for (const auto &[step, value] : row.points)
                steps[step].emplace_back(value, rank);
        }
    }
    std::vector<QString> layers;
    std::vector<int64_t> steps;
    bool overlap = false;
    for (const auto &[layer, bySteps] : cells) {
        layers.push_back(layer);
        for (const auto &[step, values] : bySteps) {
            steps.push_back(step);
            overlap = overlap || values.size() > 1;
        }
    }
    std::sort(layers.begin(), layers.end(), [](const QString &a, const QString &b) { return layerLess(a, b); });
    std::sort(steps.begin(), steps.end());
    steps.erase(std::unique(steps.begin(), steps.end()), steps.end());
    for (const QString &l : layers)
        h->layers << l;
    h->steps = steps;
    h->values.assign(layers.size() * steps.size(), NAN);
    h->ranks.assign(h->values.size(), -1);
    for (size_t y = 0; y < layers.size(); ++y) {
        const auto &bySteps = cells[layers[y]];
        size_t col = 0;
        for (const auto &[step, values] : bySteps) {
            while (steps[col] < step)
                ++col;
            double shown = NAN;
            int from = -1;
            // A value that is not finite on any rank makes the cell a mark (the lowest rank that logged one).
            const auto bad
                = std::find_if(values.begin(), values.end(), [](const auto &vr) { return !std::isfinite(vr.first); });
            if (bad != values.end()) {
                int rank = bad->second;
                double logged = bad->first;
                for (const auto &[v, r] : values) {
                    if (!std::isfinite(v) && r < rank) {
                        rank = r;
                        logged = v;
                    }
                }
                h->nonFinite.push_back({qsizetype(y), col, logged, rank});
                h->ranks[y * steps.size() + col] = rank;
                continue;
            }
            if (max) {
                for (const auto &[v, r] : values) {
                    if (std::isnan(shown) || v > shown) {
                        shown = v;
                        from = r;
                    }
                }
            } else {
                double sum = 0;
                for (const auto &[v, r] : values)
                    sum += v;
                shown = sum / double(values.size());
                from = values.size() == 1 ? values.front().second : -1;
            }
            h->values[y * steps.size() + col] = shown;
            h->ranks[y * steps.size() + col] = from;
        }
    }
    std::vector<int> logged;
    for (const auto &[rank, n] : layersOfRank)
        logged.push_back(rank);
    h->ranksNote = overlap
        ? QStringLiteral("ranks %1 log different values of the same layers: the %2 across them shown%3")
              .arg(rankList(logged), max ? QStringLiteral("max") : QStringLiteral("mean"),
                  max ? QStringLiteral(" (the rank it is from on hover)") : QString())
        : QStringLiteral("ranks %1 hold %2 layers between them: each layer from its rank")
              .arg(rankList(logged))
              .arg(layers.size());
    // Ranks whose logs are copies of another's (a reduction group) were read once.
    static const QRegularExpression rankRe(QStringLiteral("globalrank-(\\d+)"));
    const auto rankIn = [](const QString &path) {
        const auto m = rankRe.match(path);
        return m.hasMatch() ? m.captured(1) : QString();
    };
    std::map<QString, std::vector<int>> copies;
    for (const auto &[path, sameAs] : store.rankCopies(runId)) {
        if (const QString r = rankIn(path); !r.isEmpty())
            copies[sameAs].push_back(r.toInt());
    }
    for (const auto &[sameAs, ranks] : copies) {
        const QString r = rankIn(sameAs);
        h->ranksNote += QStringLiteral("; ranks %1 log the same lines as rank %2 (read once)")
                            .arg(rankList(ranks), r.isEmpty() ? sameAs : r);
    }
}

std::optional<Dump> Catalog::nearestDump(RunRef ref, const QString &layer, const QString &tensor, int64_t step) const
{
    std::optional<Dump> nearest;
    for (const Dump &d : dumps(ref)) {
        if (d.record.layer != layer || d.record.tensor != tensor || d.record.step < 0)
            continue;
        if (!nearest || std::abs(d.record.step - step) < std::abs(nearest->record.step - step))
            nearest = d;
    }
    return nearest;
}

std::vector<InputFile> Catalog::inputFiles(RunRef ref) const
{
    std::vector<InputFile> out;
    if (const Entry *e = entry(ref.store)) {
        const QDir folder(e->store.folder());
        for (const InputFileRow &r : e->store.inputFiles(ref.id))
            out.push_back({folder.absoluteFilePath(r.path), r.path, r.importer, r.size});
    }
    return out;
}

std::vector<Eval> Catalog::evals(RunRef ref) const
{
    std::vector<Eval> out;
    if (const Entry *e = entry(ref.store)) {
        for (const EvalRow &r : e->store.evals(ref.id))
            out.push_back({.task = r.eval.task,
                .metric = r.eval.metric,
                .value = r.eval.value,
                .stderrValue = r.eval.stderrValue,
                .inference = r.eval.inference,
                .settings = r.eval.settings,
                .file = r.file});
    }
    return out;
}

int64_t Catalog::dataGeneration(quint64 store) const
{
    const Entry *e = entry(store);
    return e ? e->store.dataGeneration() : -1;
}

namespace {

// Who a stored result's baseline is, as the run's store keeps it: its name, and its folder when it is in
// another store ("" for a run checked alone).
std::pair<QString, QString> baselineKeyOf(const Catalog &catalog, RunRef run, RunRef baseline)
{
    if (!baseline.isValid())
        return {};
    const auto b = catalog.run(baseline);
    if (!b)
        return {};
    QString folder;
    if (baseline.store != run.store) {
        for (const Catalog::StoreEntry &s : catalog.stores()) {
            if (s.serial == baseline.store)
                folder = s.folder;
        }
    }
    return {folder, b->name};
}

} // namespace

std::optional<StoredTriage> Catalog::storedTriage(RunRef run, RunRef baseline) const
{
    const Entry *e = entry(run.store);
    const auto [folder, name] = baselineKeyOf(*this, run, baseline);
    if (!e || (baseline.isValid() && name.isEmpty()))
        return std::nullopt;
    return e->store.triageResult(run.id, folder, name);
}

std::optional<StoredWhatIf> Catalog::storedWhatIf(RunRef run, const QString &dump, const QString &recipes) const
{
    const Entry *e = entry(run.store);
    return e ? e->store.whatIf(run.id, dump, recipes) : std::nullopt;
}

std::vector<StoredWhatIf> Catalog::storedWhatIfs(RunRef run) const
{
    const Entry *e = entry(run.store);
    return e ? e->store.whatIfs(run.id) : std::vector<StoredWhatIf> {};
}

bool Catalog::storeWhatIf(RunRef run, const StoredWhatIf &w, QString *error)
{
    RunStore *s = storeOf(run.store);
    if (!s) {
        *error = QStringLiteral("the run is not open");
        return false;
    }
    return s->storeWhatIf(run.id, w, error);
}

bool Catalog::storeTriage(RunRef run, RunRef baseline, const StoredTriage &result, QString *error)
{
    RunStore *s = storeOf(run.store);
    const auto [folder, name] = baselineKeyOf(*this, run, baseline);
    if (!s || (baseline.isValid() && name.isEmpty())) {
        *error = QStringLiteral("the run or its baseline is not open");
        return false;
    }
    StoredTriage keyed = result;
    keyed.baselineFolder = folder;
    keyed.baselineName = name;
    return s->storeTriageResult(run.id, keyed, error);
}

std::pair<QString, QString> Catalog::baselineKey(RunRef run, RunRef baseline) const
{
    return baselineKeyOf(*this, run, baseline);
}

std::vector<FindingReview> Catalog::findingReviews(RunRef run, RunRef baseline) const
{
    const Entry *e = entry(run.store);
    const auto [folder, name] = baselineKeyOf(*this, run, baseline);
    if (!e || (baseline.isValid() && name.isEmpty()))
        return {};
    return e->store.findingReviews(run.id, folder, name);
}

std::optional<CandidateChoice> Catalog::candidateChoice(RunRef baseline) const
{
    const Entry *e = entry(baseline.store);
    const std::optional<Run> r = run(baseline);
    if (!e || !r)
        return std::nullopt;
    return e->store.candidateChoice(r->name);
}

std::vector<ConfigEntry> Catalog::configs(RunRef ref) const
{
    std::vector<ConfigEntry> out;
    if (const Entry *e = entry(ref.store)) {
        for (const KeyValueRow &r : e->store.configs(ref.id))
            out.push_back({r.key, r.value, r.file});
    }
    return out;
}

std::vector<VersionEntry> Catalog::versions(RunRef ref) const
{
    std::vector<VersionEntry> out;
    if (const Entry *e = entry(ref.store)) {
        for (const KeyValueRow &r : e->store.versions(ref.id))
            out.push_back({r.key, r.value, r.file});
    }
    return out;
}

std::vector<Dump> Catalog::dumps(RunRef ref, bool withQuantized) const
{
    std::vector<Dump> out;
    if (const Entry *e = entry(ref.store)) {
        const QDir dir(e->folder);
        for (DumpRow &r : e->store.dumps(ref.id)) {
            if (!withQuantized && r.dump.tensor.endsWith(QLatin1String("_fp8")))
                continue;
            out.push_back({ref, r.file, dir.absoluteFilePath(r.file), std::move(r.dump)});
        }
    }
    return out;
}

std::vector<ProblemEntry> Catalog::problems() const
{
    std::vector<ProblemEntry> out;
    for (const auto &e : m_entries) {
        const QDir dir(e->folder);
        for (const ProblemRecord &p : e->store.problems())
            out.push_back({dir.absoluteFilePath(p.file), p.line, p.offset, p.message, false});
    }
    // After the reads above, so that a store whose problems could not be read says so too.
    for (const auto &e : m_entries) {
        for (const QString &error : e->store.errors())
            out.push_back(storeProblem(e->store.path(), error));
    }
    return out;
}

QStringList keyPackages()
{
    return {QStringLiteral("transformer-engine"), QStringLiteral("megatron-core"), QStringLiteral("nemo-toolkit"),
        QStringLiteral("torch"), QStringLiteral("cuda"), QStringLiteral("cudnn"), QStringLiteral("nccl"),
        QStringLiteral("flash-attn"), QStringLiteral("apex")};
}

QString keyVersionsText(const std::vector<VersionEntry> &versions)
{
    QStringList parts;
    for (const QString &package : keyPackages()) {
        for (const VersionEntry &v : versions) {
            if (v.package == package)
                parts << package + QLatin1Char(' ') + v.version;
        }
    }
    return parts.join(QStringLiteral(", "));
}

} // namespace fp8scope

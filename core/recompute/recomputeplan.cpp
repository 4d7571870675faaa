#include "recomputeplan.h"

#include "core/formats/dtype.h"
#include "core/store/runstore.h"

#include <QDataStream>
#include <QDir>
#include <QElapsedTimer>
#include <QHash>

#include <algorithm>
#include <map>
#include <new>

namespace fp8scope {

namespace {

// What the first statistic storedStatistics() names: a dump is stored under a recipe when its series has
// the dump's step.
const QString kProbeStat = QStringLiteral("underflows%");

bool isStored(const Catalog &catalog, RunRef run, const DumpRecord &d, const QStringList &labels)
{
    const std::vector<Series> series = catalog.seriesAt(run, d.layer, d.tensor);
    for (const QString &label : labels) {
        const auto s = std::find_if(series.begin(), series.end(),
            [&](const Series &x) { return x.isRecomputed() && x.recipe == label && x.stat == kProbeStat; });
        if (s == series.end())
            return false;
        const auto p = catalog.valueAt(*s, d.step);
        if (!p || p->step != d.step)
            return false;
    }
    return true;
}

constexpr quint32 kBroadcastMagic = 0x46385242; // "F8RB"
constexpr quint32 kResultMagic = 0x46385252; // "F8RR"

QDataStream &operator<<(QDataStream &s, const DumpRecord &d)
{
    return s << d.dataset << d.layer << d.tensor << qint64(d.step) << d.dtype << d.shape;
}

QDataStream &operator>>(QDataStream &s, DumpRecord &d)
{
    qint64 step = 0;
    s >> d.dataset >> d.layer >> d.tensor >> step >> d.dtype >> d.shape;
    d.step = step;
    return s;
}

} // namespace

std::vector<RecomputeItem> recomputeWork(
    const Catalog &catalog, const std::vector<Recipe> &recipes, bool missingOnly, int *alreadyStored)
{
    QStringList labels;
    for (const Recipe &r : recipes)
        labels << recomputedRecipeLabel(r);
    std::vector<RecomputeItem> out;
    int stored = 0;
    for (const Run &r : catalog.runs(false)) {
        QHash<QString, int64_t> sizes;
        for (const InputFile &f : catalog.inputFiles(r.ref))
            sizes.insert(f.file, f.size);
        std::vector<Dump> dumps = catalog.dumps(r.ref);
        std::stable_sort(dumps.begin(), dumps.end(), [](const Dump &a, const Dump &b) {
            return a.file != b.file ? a.file < b.file : a.record.dataset < b.record.dataset;
        });
        for (const Dump &d : dumps) {
            if (missingOnly && isStored(catalog, r.ref, d.record, labels)) {
                ++stored;
                continue;
            }
            out.push_back({{r.ref.id, d.file, d.record}, sizes.value(d.file, 0)});
        }
    }
    if (alreadyStored)
        *alreadyStored = stored;
    return out;
}

std::vector<std::vector<size_t>> splitByFile(const std::vector<RecomputeItem> &work, int ranks)
{
    ranks = std::max(1, ranks);
    std::vector<std::vector<size_t>> out(static_cast<size_t>(ranks));
    // (run, file) -> the indices of its dumps
    std::map<std::pair<int64_t, QString>, std::vector<size_t>> files;
    std::map<std::pair<int64_t, QString>, int64_t> bytes;
    for (size_t i = 0; i < work.size(); ++i) {
        const auto key = std::make_pair(work[i].ref.run, work[i].ref.file);
        files[key].push_back(i);
        bytes[key] = work[i].fileBytes;
    }
    std::vector<std::pair<int64_t, QString>> order;
    for (const auto &[key, members] : files)
        order.push_back(key);
    std::stable_sort(order.begin(), order.end(), [&](const auto &a, const auto &b) {
        if (bytes[a] != bytes[b])
            return bytes[a] > bytes[b];
        return a.second != b.second ? a.second < b.second : a.first < b.first;
    });
    std::vector<int64_t> load(size_t(ranks), 0);
    for (const auto &key : order) {
        const size_t rank = size_t(std::min_element(load.begin(), load.end()) - load.begin());
        load[rank] += std::max<int64_t>(1, bytes[key]);
        for (size_t i : files[key])
            out[rank].push_back(i);
    }
    for (auto &indices : out)
        std::sort(indices.begin(), indices.end());
    return out;
}

DumpResult computeDump(const QString &folder, MetricsBackend &backend, const DumpRef &ref,
    const std::vector<Recipe> &recipes, const MetricsEngine::Progress &progress, int readerThreads)
{
    DumpResult out;
    QElapsedTimer clock;
    clock.start();
    try {
        Problem problem;
        const QString path = QDir(folder).absoluteFilePath(ref.file);
        auto reader
            = openTensor(ref.dump.dataset.isEmpty() ? path : path + QLatin1Char(':') + ref.dump.dataset, &problem);
        if (!reader) {
            out.error = problem.toString();
            return out;
        }
        reader->setThreads(readerThreads);
        out.bytesRead = reader->info().numel * int64_t(dtypeSize(reader->info().storedDtype));
        std::vector<Recipe> rs = recipes;
        for (Recipe &r : rs)
            r.amaxHistory = reader->amaxHistory();
        MetricsEngine engine(backend);
        auto results = engine.compute(*reader, rs, &problem, progress);
        if (!results) {
            out.error = problem.toString();
            return out;
        }
        for (size_t k = 0; k < results->size(); ++k)
            out.recipes.emplace_back(recomputedRecipeLabel(rs[k]), storedStatistics((*results)[k]));
        out.metrics = std::move(*results);
    } catch (const std::bad_alloc &) {
        out.error = QStringLiteral("%1: out of memory while recomputing it").arg(ref.file);
    } catch (const std::exception &e) {
        out.error = QStringLiteral("%1: %2").arg(ref.file, QString::fromLocal8Bit(e.what()));
    }
    out.seconds = double(clock.nsecsElapsed()) * 1e-9;
    return out;
}

bool storeDumpResult(RunStore &store, const DumpRef &ref, const DumpResult &result, QString *error)
{
    if (!result.error.isEmpty()) {
        *error = result.error;
        return false;
    }
    return store.storeRecomputed(ref.run, ref.dump, result.recipes, error);
}

QByteArray encodeBroadcast(const RecomputeBroadcast &b)
{
    QByteArray out;
    QDataStream s(&out, QIODevice::WriteOnly);
    s.setVersion(QDataStream::Qt_6_0);
    s << kBroadcastMagic << b.folder << b.error << b.recipes << quint64(b.work.size());
    for (const RecomputeItem &w : b.work)
        s << qint64(w.ref.run) << w.ref.file << w.ref.dump << qint64(w.fileBytes);
    return out;
}

std::optional<RecomputeBroadcast> decodeBroadcast(const QByteArray &bytes)
{
    QDataStream s(bytes);
    s.setVersion(QDataStream::Qt_6_0);
    quint32 magic = 0;
    quint64 n = 0;
    RecomputeBroadcast b;
    s >> magic >> b.folder >> b.error >> b.recipes >> n;
    if (s.status() != QDataStream::Ok || magic != kBroadcastMagic || n > quint64(bytes.size()))
        return std::nullopt;
    b.work.resize(size_t(n));
    for (RecomputeItem &w : b.work) {
        qint64 run = 0, size = 0;
        s >> run >> w.ref.file >> w.ref.dump >> size;
        w.ref.run = run;
        w.fileBytes = size;
    }
    if (s.status() != QDataStream::Ok || !s.atEnd())
        return std::nullopt;
    return b;
}

QByteArray encodeResult(const DumpResult &r)
{
    QByteArray out;
    QDataStream s(&out, QIODevice::WriteOnly);
    s.setVersion(QDataStream::Qt_6_0);
    s.setFloatingPointPrecision(QDataStream::DoublePrecision);
    s << kResultMagic << quint32(r.index) << r.error << qint64(r.bytesRead) << r.seconds << quint32(r.recipes.size());
    for (const auto &[label, stats] : r.recipes) {
        s << label << quint32(stats.size());
        for (const auto &[name, value] : stats)
            s << name << value;
    }
    return out;
}

std::optional<DumpResult> decodeResult(const QByteArray &bytes)
{
    QDataStream s(bytes);
    s.setVersion(QDataStream::Qt_6_0);
    s.setFloatingPointPrecision(QDataStream::DoublePrecision);
    quint32 magic = 0, index = 0, recipes = 0;
    qint64 read = 0;
    DumpResult r;
    s >> magic >> index >> r.error >> read >> r.seconds >> recipes;
    if (s.status() != QDataStream::Ok || magic != kResultMagic || recipes > quint32(bytes.size()))
        return std::nullopt;
    r.index = index;
    r.bytesRead = read;
    for (quint32 k = 0; k < recipes && s.status() == QDataStream::Ok; ++k) {
        QString label;
        quint32 n = 0;
        s >> label >> n;
        if (n > quint32(bytes.size()))
            return std::nullopt;
        std::vector<std::pair<QString, double>> stats;
        for (quint32 i = 0; i < n && s.status() == QDataStream::Ok; ++i) {
            QString name;
            double value = 0;
            s >> name >> value;
            stats.emplace_back(name, value);
        }
        r.recipes.emplace_back(label, std::move(stats));
    }
    if (s.status() != QDataStream::Ok || !s.atEnd())
        return std::nullopt;
    return r;
}

} // namespace fp8scope

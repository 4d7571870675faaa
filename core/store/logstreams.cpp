#include "logstreams.h"

#include "core/importers/megatronlogimporter.h"

#include <QFileInfo>
#include <QRegularExpression>

#include <algorithm>
#include <limits>
#include <map>
#include <tuple>

namespace fp8scope {

QString withoutTimestamp(const QString &relativePath, QString *timestamp)
{
    // nvdlfw_inspect_20260116_080000_globalrank-0.log: a date and a time of day, digits only, in the name.
    static const QRegularExpression stamp(QStringLiteral("[_-](\\d{8})[_-]?(\\d{6})(?=[_.-])"));
    const qsizetype slash = relativePath.lastIndexOf(QLatin1Char('/'));
    const QRegularExpressionMatch m = stamp.match(relativePath, slash + 1);
    if (!m.hasMatch()) {
        timestamp->clear();
        return relativePath;
    }
    *timestamp = m.captured(1) + m.captured(2);
    return QString(relativePath).remove(m.capturedStart(0), m.capturedLength(0));
}

LogStreams orderLogStreams(const FolderScan &scan)
{
    LogStreams out;
    // Each stream's members in the scan's order; the stream of a file, by its key.
    std::map<QString, std::vector<const ScannedFile *>> streams;
    // Every file, with its stream's key ("" for none): 'M' and the run for a run's Megatron logs, 'T', the run
    // and the name without its timestamp for a rank's statistics logs.
    std::vector<std::pair<const ScannedFile *, QString>> keyed;
    for (const ScannedFile &f : scan.files) {
        QString key;
        const QString kind = f.importer->name();
        if (kind == QLatin1String("megatron-log")) {
            key = QLatin1Char('M') + f.run; // one stream per run
        } else if (kind == QLatin1String("te-debug")) {
            QString ignored;
            key = QLatin1Char('T') + f.run + QChar(0x1f) + withoutTimestamp(f.relativePath, &ignored);
        }
        keyed.emplace_back(&f, key);
        if (!key.isEmpty())
            streams[key].push_back(&f);
    }
    for (auto &[key, files] : streams) {
        if (files.size() < 2)
            continue;
        if (key.startsWith(QLatin1Char('M'))) {
            // By the first step each prints, then by when it was last written (two jobs from scratch), then
            // as the scan found them; a log that prints no step keeps its place among those of its time.
            std::vector<std::tuple<int64_t, int64_t, size_t>> sortKey(files.size());
            for (size_t i = 0; i < files.size(); ++i) {
                const auto first = MegatronLogImporter::firstStep(files[i]->absolutePath);
                sortKey[i] = {first.value_or(std::numeric_limits<int64_t>::max()),
                    QFileInfo(files[i]->absolutePath).lastModified().toMSecsSinceEpoch(), i};
            }
            std::vector<size_t> idx(files.size());
            for (size_t i = 0; i < idx.size(); ++i)
                idx[i] = i;
            std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return sortKey[a] < sortKey[b]; });
            std::vector<const ScannedFile *> sorted;
            for (size_t i : idx)
                sorted.push_back(files[i]);
            files = std::move(sorted);
        } else {
            // The log without a timestamp was the first job's; the others by their timestamps.
            std::stable_sort(files.begin(), files.end(), [](const ScannedFile *a, const ScannedFile *b) {
                QString ta, tb;
                withoutTimestamp(a->relativePath, &ta);
                withoutTimestamp(b->relativePath, &tb);
                return ta < tb;
            });
        }
        for (size_t i = 1; i < files.size(); ++i)
            out.before.insert(files[i]->relativePath, files[i - 1]->relativePath);
    }
    // Megatron logs first, stream by stream; then the rest in the scan's order, a stream's members taking the
    // places its members had, in the stream's order.
    for (const auto &[key, files] : streams) {
        if (key.startsWith(QLatin1Char('M')))
            out.order.insert(out.order.end(), files.begin(), files.end());
    }
    std::map<QString, size_t> taken;
    for (const auto &[f, key] : keyed) {
        if (key.isEmpty())
            out.order.push_back(f);
        else if (!key.startsWith(QLatin1Char('M')))
            out.order.push_back(streams[key][taken[key]++]);
    }
    // Workspace manifests last: they may name a run the other files make (a table's run column).
    std::stable_partition(out.order.begin(), out.order.end(),
        [](const ScannedFile *f) { return f->importer->name() != QLatin1String("workspace-manifest"); });
    return out;
}

} // namespace fp8scope

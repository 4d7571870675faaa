#include "rankcopies.h"

#include "compressedfile.h"

#include <QFile>
#include <QRegularExpression>

#include <cstring>

namespace fp8scope {

QString RankCopies::groupOf(const QString &relativePath)
{
    static const QRegularExpression rank(QStringLiteral("(globalrank-|rank[_-]?)\\d+"));
    if (compressionOf(relativePath) != Compression::None || !relativePath.contains(QLatin1String("rank")))
        return {};
    QString group = QString(relativePath).replace(rank, QStringLiteral("\\1#"));
    return group == relativePath ? QString() : group;
}

bool RankCopies::mayCopy(const QString &group, qint64 size) const
{
    if (group.isEmpty() || size <= 0 || size > kMaxCompared)
        return false;
    const auto it = m_groups.find(group);
    if (it == m_groups.end())
        return false;
    return std::any_of(it->begin(), it->end(), [&](const Reference &r) { return r.size == size; });
}

QString RankCopies::copyOf(const QString &group, const QByteArray &bytes)
{
    const auto it = m_groups.find(group);
    if (it == m_groups.end())
        return {};
    for (Reference &ref : *it) {
        if (ref.size != bytes.size())
            continue;
        if (!ref.loaded && !load(&ref))
            continue;
        if (ref.bytes.size() == bytes.size() && sameStatistics(bytes, ref))
            return ref.relativePath;
    }
    return {};
}

void RankCopies::addReference(const QString &group, const QString &path, const QString &relativePath, qint64 size)
{
    if (group.isEmpty())
        return;
    std::vector<Reference> &refs = m_groups[group];
    if (refs.size() < kMaxReferences)
        refs.push_back(Reference {path, relativePath, size, {}, {}, false});
}

bool RankCopies::load(Reference *ref)
{
    ref->loaded = true;
    QFile file(ref->path);
    if (!file.open(QIODevice::ReadOnly))
        return false;
    ref->bytes = file.readAll();
    const QByteArray &b = ref->bytes;
    for (qsizetype start = 0; start < b.size();) {
        qsizetype end = b.indexOf('\n', start);
        if (end < 0)
            end = b.size();
        // The statistic starts after the last " - " before "iteration="; other lines are compared whole.
        qsizetype payload = start;
        const QByteArrayView line(b.constData() + start, end - start);
        const qsizetype it = line.indexOf("iteration=");
        if (it > 0) {
            const qsizetype dash = QByteArrayView(line.data(), it).lastIndexOf(" - ");
            if (dash >= 0)
                payload = start + dash + 3;
        }
        ref->lines.emplace_back(end, payload);
        start = end + 1;
    }
    return true;
}

bool RankCopies::sameStatistics(const QByteArray &bytes, const Reference &ref)
{
    for (const auto &[end, payload] : ref.lines) {
        if ((end < bytes.size() && bytes[end] != '\n')
            || std::memcmp(bytes.constData() + payload, ref.bytes.constData() + payload, size_t(end - payload)) != 0)
            return false;
    }
    return true;
}

} // namespace fp8scope

// Rank logs that are copies of another rank's. Transformer Engine's debug tool reduces its statistics over a
// group of ranks (all ranks by default) and every member writes the same lines, each with its own timestamps:
// such a file is read once, as its group's first member, and the others are kept as its copies. The scan finds
// them (FolderScan::sameAs) while it reads each file's head: a file the size of a reference of its group is
// read whole once, and that one read both recognises it and compares it, so that 1000 ranks cost about a
// plain read of their bytes.
#pragma once

#include <QByteArray>
#include <QHash>
#include <QString>

#include <utility>
#include <vector>

namespace fp8scope {

class RankCopies
{
public:
    // The group of a file: its relative path with every rank number left out ("" for a file of no rank, or a
    // compressed one: its offsets are of what it decompresses to).
    static QString groupOf(const QString &relativePath);

    // Whether a reference of `group` has `size` bytes (the file is then read whole and compared).
    bool mayCopy(const QString &group, qint64 size) const;
    // The reference whose statistics `bytes` (a whole file of `group`) repeat; "" when none.
    QString copyOf(const QString &group, const QByteArray &bytes);
    // The file becomes a reference of its group (a rank that logs its own values, a pipeline stage's first),
    // while the group has fewer than kMaxReferences.
    void addReference(const QString &group, const QString &path, const QString &relativePath, qint64 size);

    static constexpr qint64 kMaxCompared = qint64(1) << 30;
    static constexpr size_t kMaxReferences = 16;

private:
    struct Reference {
        QString path;
        QString relativePath;
        qint64 size = 0; // on disk when it became a reference (a candidate of another size is no copy)
        QByteArray bytes;
        std::vector<std::pair<qsizetype, qsizetype>> lines; // each line's end and where its statistic starts
        bool loaded = false;
    };
    static bool load(Reference *ref);
    static bool sameStatistics(const QByteArray &bytes, const Reference &ref);
    QHash<QString, std::vector<Reference>> m_groups;
};

} // namespace fp8scope

#include "shortnames.h"

#include <QSet>

#include <algorithm>

namespace fp8scope {

namespace {

bool isSeparator(QChar c)
{
    return c == QLatin1Char('_') || c == QLatin1Char('-') || c == QLatin1Char('.') || c == QLatin1Char('/')
        || c.isSpace();
}

// The words of a name with the separator that follows each (the last has none), so that joined they are
// the name again.
QStringList words(const QString &name)
{
    QStringList out;
    int start = 0;
    for (int i = 0; i < name.size(); ++i) {
        if (isSeparator(name[i])) {
            out << name.mid(start, i + 1 - start);
            start = i + 1;
        }
    }
    if (start < name.size())
        out << name.mid(start);
    return out;
}

// The word without the separator it ends with.
QString bare(const QString &word)
{
    return !word.isEmpty() && isSeparator(word.back()) ? word.chopped(1) : word;
}

QString elided(const QString &name, int maxChars)
{
    if (maxChars <= 0 || name.size() <= maxChars)
        return name;
    const int keep = std::max(2, maxChars - 1);
    const int head = (keep + 1) / 2;
    return name.left(head) + QChar(0x2026) + name.right(keep - head);
}

} // namespace

QStringList distinctShortNames(const QStringList &names, int maxChars)
{
    QSet<QString> unique(names.begin(), names.end());
    if (unique.size() < 2)
        return names;
    std::vector<QStringList> split;
    split.reserve(size_t(names.size()));
    size_t fewest = SIZE_MAX;
    for (const QString &n : names) {
        split.push_back(words(n));
        fewest = std::min(fewest, size_t(split.back().size()));
    }
    // Words compare without their separators: "fp8_" at one name's start and "fp8" ending another are one word.
    const auto sharedAt = [&](auto wordAt) {
        const QString first = bare(wordAt(split[0]));
        return std::all_of(split.begin(), split.end(), [&](const QStringList &w) { return bare(wordAt(w)) == first; });
    };
    size_t prefix = 0;
    while (prefix < fewest && sharedAt([prefix](const QStringList &w) { return w[qsizetype(prefix)]; }))
        ++prefix;
    size_t suffix = 0;
    while (suffix < fewest - std::min(prefix, fewest)
        && sharedAt([suffix](const QStringList &w) { return w[w.size() - 1 - qsizetype(suffix)]; }))
        ++suffix;
    QStringList shortNames;
    for (const QStringList &w : split) {
        const qsizetype n = w.size();
        if (n == 0) { // an empty name (a run not open) stays empty
            shortNames << QString();
            continue;
        }
        qsizetype from = qsizetype(prefix), to = n - qsizetype(suffix); // [from, to)
        if (from >= to) { // all shared: its last word
            from = n - 1;
            to = n;
        }
        QString s;
        for (qsizetype i = from; i < to; ++i)
            s += w[i];
        shortNames << bare(s);
    }
    // Names that were apart must stay apart; those that were equal stay equal.
    const auto apart = [&](const QStringList &candidate) {
        for (qsizetype i = 0; i < names.size(); ++i)
            for (qsizetype j = i + 1; j < names.size(); ++j)
                if (names[i] != names[j] && candidate[i] == candidate[j])
                    return false;
        return true;
    };
    if (!apart(shortNames))
        shortNames = names;
    QStringList out = shortNames;
    for (qsizetype i = 0; i < out.size(); ++i) {
        const QString e = elided(shortNames[i], maxChars);
        if (e == shortNames[i])
            continue;
        QStringList trial = out;
        trial[i] = e;
        // Against the others' shortest forms: an elided name must differ from every other, whole or elided.
        bool clash = false;
        for (qsizetype j = 0; j < out.size() && !clash; ++j)
            clash = j != i && names[j] != names[i] && (elided(shortNames[j], maxChars) == e || shortNames[j] == e);
        if (!clash)
            out[i] = e;
    }
    return out;
}

} // namespace fp8scope

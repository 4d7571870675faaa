#include "layerorder.h"

namespace fp8scope {

namespace {

// The digit run of `s` at `i` without its leading zeros, and where it ends.
QStringView digitRun(const QString &s, qsizetype i, qsizetype *end)
{
    qsizetype e = i;
    while (e < s.size() && s.at(e).isDigit())
        ++e;
    *end = e;
    qsizetype first = i;
    while (first + 1 < e && s.at(first) == QLatin1Char('0'))
        ++first;
    return QStringView(s).mid(first, e - first);
}

// <0, 0, >0 in natural order (digit runs as numbers of any length); 0 for names equal as numbers.
int naturalCompare(const QString &a, const QString &b)
{
    qsizetype i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a.at(i).isDigit() && b.at(j).isDigit()) {
            qsizetype ie = 0, je = 0;
            const QStringView x = digitRun(a, i, &ie);
            const QStringView y = digitRun(b, j, &je);
            if (x.size() != y.size())
                return x.size() < y.size() ? -1 : 1;
            if (const int c = x.compare(y); c != 0)
                return c;
            i = ie;
            j = je;
        } else {
            if (a.at(i) != b.at(j))
                return a.at(i) < b.at(j) ? -1 : 1;
            ++i;
            ++j;
        }
    }
    const qsizetype ra = a.size() - i, rb = b.size() - j;
    return ra == rb ? 0 : ra < rb ? -1 : 1;
}

} // namespace

bool layerLess(const QString &a, const QString &b)
{
    const int c = naturalCompare(a, b);
    return c != 0 ? c < 0 : a < b;
}

} // namespace fp8scope

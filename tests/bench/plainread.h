// The reference the tensor read benchmarks measure against: a plain read of a file in pieces of the
// buffer's size, touching one byte of each piece so that nothing is optimised away.
#pragma once

#include <QFile>

#include <vector>

namespace fp8scope::bench {

inline double plainRead(const QString &path, std::vector<char> &buffer)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly))
        return 0;
    double s = 0;
    for (qint64 got; (got = f.read(buffer.data(), qint64(buffer.size()))) > 0;)
        s += double(buffer[size_t(got - 1)]);
    return s;
}

} // namespace fp8scope::bench

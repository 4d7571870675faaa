// An input error as a value: which file, where in it, and what was expected.
#pragma once

#include <QString>

namespace fp8scope {

struct Problem {
    QString file;
    qint64 offset = -1; // byte offset, or -1 when the problem is not at one place
    QString message;

    QString toString() const;
};

} // namespace fp8scope

#include "problem.h"

namespace fp8scope {

QString Problem::toString() const
{
    if (offset >= 0)
        return QStringLiteral("%1: offset %2: %3").arg(file).arg(offset).arg(message);
    return file.isEmpty() ? message : QStringLiteral("%1: %2").arg(file, message);
}

} // namespace fp8scope

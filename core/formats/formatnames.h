// The names users and files give the element formats ("e4m3", "e5m2fnuz", "e2m1", ...), both ways.
#pragma once

#include "fp8math.h"

#include <QString>

#include <optional>

namespace fp8scope {

using fp8math::Format;

QString formatName(Format f);
// Case-insensitive; "fp4" and "nvfp4" name E2M1.
std::optional<Format> formatFromName(const QString &name);

} // namespace fp8scope

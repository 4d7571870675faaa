// The run store's schema: the tables of every version and the migrations between them, run in order when a
// store is opened (docs/STORE.md documents the current version).
#pragma once

#include "database.h"

#include <QString>

namespace fp8scope::schema {

constexpr int kVersion = 11;

// Brings the store at `path` (open in `db`) to kVersion in one transaction; false with *error set when it
// cannot (a store newer than this fp8scope, a failed statement).
[[nodiscard]] bool migrate(Database &db, const QString &path, QString *error);

} // namespace fp8scope::schema

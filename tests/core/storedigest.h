// A digest of everything a run store holds, in a canonical order: equal stores have equal digests.
#pragma once

#include "core/store/runstore.h"
#include "storeaccess.h"

#include <QCryptographicHash>

namespace fp8scope::testing {

inline QByteArray storeDigest(RunStore &s)
{
    QCryptographicHash h(QCryptographicHash::Sha256);
    for (const char *sql :
        {"SELECT r.name, s.layer, s.tensor, s.stat, s.source, s.recipe, p.step, p.value FROM points p "
         "JOIN series s ON s.id=p.series_id JOIN runs r ON r.id=s.run_id "
         "ORDER BY r.name, s.stat, s.layer, s.tensor, s.source, s.recipe, p.step",
            "SELECT r.name, e.task, e.metric, e.inference, e.value, e.stderr FROM evals e JOIN runs r ON r.id=e.run_id "
            "ORDER BY 1, 2, 3, 4",
            "SELECT f.path, p.line, p.message FROM problems p JOIN files f ON f.id=p.file_id ORDER BY 1, 2, 3",
            "SELECT path, size, consumed, lines FROM files ORDER BY path"}) {
        Statement st = RunStoreTestAccess::db(s).prepare(sql);
        while (st.next()) {
            for (int c = 0; c < 8; ++c)
                h.addData(QByteArray(st.text(c).toUtf8() + '\x1f'));
        }
    }
    return h.result().toHex();
}

} // namespace fp8scope::testing

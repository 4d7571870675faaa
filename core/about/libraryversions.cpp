#include "libraryversions.h"

#include "core/numerics/cpukernels.h"

#include <H5public.h>
#include <google/protobuf/stubs/common.h>
#include <hwy/highway.h>
#include <libdeflate.h>
#include <sqlite3.h>
#include <zip.h>

#include <QtGlobal>

namespace fp8scope {

QList<ComponentVersion> libraryVersions()
{
    QList<ComponentVersion> list;
    const QString qtRuntime = QString::fromLatin1(qVersion());
    const QString qtBuilt = QStringLiteral(QT_VERSION_STR);
    list.append({QStringLiteral("Qt"),
        qtRuntime == qtBuilt ? qtRuntime : QStringLiteral("%1 (built against %2)").arg(qtRuntime, qtBuilt)});
    unsigned major = 0;
    unsigned minor = 0;
    unsigned release = 0;
    if (H5get_libversion(&major, &minor, &release) >= 0)
        list.append({QStringLiteral("HDF5"), QStringLiteral("%1.%2.%3").arg(major).arg(minor).arg(release)});
    list.append({QStringLiteral("SQLite"), QString::fromLatin1(sqlite3_libversion())});
    list.append({QStringLiteral("libzip"), QString::fromLatin1(zip_libzip_version())});
    list.append({QStringLiteral("libdeflate"), QStringLiteral(LIBDEFLATE_VERSION_STRING)});
    list.append({QStringLiteral("protobuf-lite"),
        QString::fromStdString(google::protobuf::internal::VersionString(GOOGLE_PROTOBUF_VERSION))});
    list.append({QStringLiteral("CPU kernels"),
        QStringLiteral("%1 (Highway %2.%3.%4)")
            .arg(QString::fromLatin1(cpukernels::simdTarget()))
            .arg(HWY_MAJOR)
            .arg(HWY_MINOR)
            .arg(HWY_PATCH)});
    return list;
}

} // namespace fp8scope

// What the MPI test and benchmark give mpirun: the permission to run as root (CI does) and shared memory
// between one machine's ranks without network probing.
#pragma once

#include <QProcessEnvironment>

namespace fp8scope::testing {

inline QProcessEnvironment mpiEnvironment()
{
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT"), QStringLiteral("1"));
    env.insert(QStringLiteral("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM"), QStringLiteral("1"));
    env.insert(QStringLiteral("OMPI_MCA_btl"), QStringLiteral("self,vader"));
    return env;
}

} // namespace fp8scope::testing

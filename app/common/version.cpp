#include "version.h"

#include "fp8scope_revision.h"

namespace fp8scope {

QString fp8scopeVersion()
{
    return QStringLiteral(FP8SCOPE_VERSION);
}

QString fp8scopeRevision()
{
    return QStringLiteral(FP8SCOPE_REVISION);
}

QString fp8scopeRevisionDate()
{
    return QStringLiteral(FP8SCOPE_REVISION_DATE);
}

QString versionLine(const QString &program)
{
    const QString revision = fp8scopeRevision();
    return program + QLatin1Char(' ') + fp8scopeVersion()
        + (revision.isEmpty() ? QString() : QStringLiteral(" (") + revision + QLatin1Char(')'));
}

QList<ComponentVersion> componentVersions(const QList<ComponentVersion> &cuda)
{
    return libraryVersions() + cuda;
}

QString versionReport(const QString &program, const QList<ComponentVersion> &cuda)
{
    QString text = versionLine(program) + QLatin1Char('\n');
    for (const ComponentVersion &c : componentVersions(cuda))
        text += QStringLiteral("  ") + c.component + QStringLiteral(": ") + c.version + QLatin1Char('\n');
    return text;
}

} // namespace fp8scope

#include "appsettings.h"

#include <QDir>

namespace fp8scope {

namespace {
const QString kRecent = QStringLiteral("recent/folders");
const QString kGeometry = QStringLiteral("window/geometry");
const QString kState = QStringLiteral("window/state");
const QString kStateVersion = QStringLiteral("window/stateVersion");
const QString kSmoothKind = QStringLiteral("curves/smoothing");
const QString kSmoothStrength = QStringLiteral("curves/smoothingStrength");
const QString kLogY = QStringLiteral("curves/logY");
const QString kLogColour = QStringLiteral("heatmap/logColour");
} // namespace

QStringList AppSettings::recentFolders() const
{
    return m_settings.value(kRecent).toStringList();
}

void AppSettings::addRecentFolder(const QString &folder)
{
    const QString path = QDir::cleanPath(folder);
    QStringList list = recentFolders();
    list.removeAll(path);
    list.prepend(path);
    while (list.size() > kMaxRecent)
        list.removeLast();
    m_settings.setValue(kRecent, list);
}

void AppSettings::clearRecentFolders()
{
    m_settings.remove(kRecent);
}

QByteArray AppSettings::windowGeometry() const
{
    return m_settings.value(kGeometry).toByteArray();
}

QByteArray AppSettings::windowState() const
{
    if (m_settings.value(kStateVersion).toInt() != kWindowStateVersion)
        return {};
    return m_settings.value(kState).toByteArray();
}

void AppSettings::setWindow(const QByteArray &geometry, const QByteArray &state)
{
    m_settings.setValue(kGeometry, geometry);
    m_settings.setValue(kState, state);
    m_settings.setValue(kStateVersion, kWindowStateVersion);
}

int AppSettings::smoothingKind() const
{
    return m_settings.value(kSmoothKind, 1).toInt();
}

double AppSettings::smoothingStrength() const
{
    return m_settings.value(kSmoothStrength, 0.6).toDouble();
}

void AppSettings::setSmoothing(int kind, double strength)
{
    m_settings.setValue(kSmoothKind, kind);
    m_settings.setValue(kSmoothStrength, strength);
}

bool AppSettings::curvesLogY() const
{
    return m_settings.value(kLogY, false).toBool();
}

void AppSettings::setCurvesLogY(bool on)
{
    m_settings.setValue(kLogY, on);
}

bool AppSettings::heatmapLogColour() const
{
    return m_settings.value(kLogColour, false).toBool();
}

void AppSettings::setHeatmapLogColour(bool on)
{
    m_settings.setValue(kLogColour, on);
}

QByteArray AppSettings::compareState() const
{
    return m_settings.value(QStringLiteral("compare/state")).toByteArray();
}

void AppSettings::setCompareState(const QByteArray &state)
{
    m_settings.setValue(QStringLiteral("compare/state"), state);
}

QStringList AppSettings::stackedStatistics() const
{
    return m_settings.value(QStringLiteral("curves/stacked")).toStringList();
}

void AppSettings::setStackedStatistics(const QStringList &statistics)
{
    m_settings.setValue(QStringLiteral("curves/stacked"), statistics);
}

} // namespace fp8scope

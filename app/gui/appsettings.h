// The GUI's settings in one typed place over QSettings: recent folders, the window's geometry and dock
// state (with a version, so a layout saved by an older build is ignored), and the views' options.
#pragma once

#include <QByteArray>
#include <QSettings>
#include <QStringList>

namespace fp8scope {

class AppSettings
{
public:
    static constexpr int kWindowStateVersion = 2; // 2: the views' controls in tool bars, smaller docks
    static constexpr int kMaxRecent = 10;

    QStringList recentFolders() const;
    // Moves (or adds) a folder to the front of the list.
    void addRecentFolder(const QString &folder);
    void clearRecentFolders();

    QByteArray windowGeometry() const;
    // The saved dock state, or empty when it was saved by another layout version.
    QByteArray windowState() const;
    void setWindow(const QByteArray &geometry, const QByteArray &state);

    int smoothingKind() const;
    double smoothingStrength() const;
    void setSmoothing(int kind, double strength);
    bool curvesLogY() const;
    void setCurvesLogY(bool on);
    bool heatmapLogColour() const;
    void setHeatmapLogColour(bool on);
    // The comparison view's splitters and statistic (CompareView::saveState).
    QByteArray compareState() const;
    void setCompareState(const QByteArray &state);
    // The statistics of the plots stacked beneath the Curves tab's first, top to bottom.
    QStringList stackedStatistics() const;
    void setStackedStatistics(const QStringList &statistics);

private:
    QSettings m_settings;
};

} // namespace fp8scope

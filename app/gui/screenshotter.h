// Drives the window through a few states and saves a PNG of each (tests/screenshots.sh, docs/): the start
// page (when `open` is given: it then opens the folders), the loaded workspace, the hottest heatmap cell
// selected with its histogram, the same tensor under MXFP8 and under a delayed scale, the heatmap with
// threshold colouring, and the comparison of the FP8 run with its baseline.
#pragma once

#include <QObject>
#include <QString>

class QDockWidget;
class QTimer;
class QWidget;

#include <functional>
#include <vector>

namespace fp8scope {

class MainWindow;

class Screenshotter : public QObject
{
    Q_OBJECT
public:
    // What is shown: the start page alone (nothing to open), the demo's every state, or a folder's (the window,
    // its hottest cell, the comparison and its layers where it has a pair, the triage's summary): the states
    // the folder has, each saved once ready (a minute at most), and the tour ends on every folder.
    enum class Tour { StartPage, Demo, Folder };
    // `open` opens what the window shows after the start page (nullptr: it is being opened already).
    Screenshotter(
        MainWindow *window, const QString &outDir, std::function<void()> open = nullptr, Tour tour = Tour::Demo);

Q_SIGNALS:
    void finished(bool ok);

private:
    void next();
    // Saves a picture of `what` (the main window when nullptr) as `name`.
    void save(const QString &name, QWidget *what = nullptr);
    // Saves `name` once ready() holds (or after a minute), then takes the next step.
    void saveWhen(std::function<bool()> ready, const QString &name, QWidget *what = nullptr);
    // Runs `then` once the histogram is no longer computing.
    void afterHistogram(std::function<void()> then);

    MainWindow *m_window;
    QString m_outDir;
    std::vector<std::function<void()>> m_steps;
    std::vector<QDockWidget *> m_hiddenDocks; // hidden for the comparison's shot
    QTimer *m_giveUp = nullptr; // the tour ends if the window never gets ready
    size_t m_at = 0;
    bool m_ok = true;
    bool m_started = false;
};

} // namespace fp8scope

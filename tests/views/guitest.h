// What the window's tests share: settings and caches of the test in its own folder, and a generated
// BF16/FP8 demo pair to open.
#pragma once

#include "core/demo/demogenerator.h"
#include "views/plotting/qcp.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>
#include <QTemporaryDir>
#include <QTest>
#include <QWidget>

namespace fp8scope::guitest {

// QSettings and the demo cache of this test process live in `tmp`, never in the user's.
inline void keepSettingsIn(const QTemporaryDir &tmp)
{
    qputenv("XDG_CONFIG_HOME", QFile::encodeName(tmp.filePath(QStringLiteral("config"))));
    qputenv("XDG_CACHE_HOME", QFile::encodeName(tmp.filePath(QStringLiteral("cache"))));
}

// Writes a file, making its folder.
inline bool writeFile(const QString &path, const QByteArray &bytes)
{
    QDir().mkpath(QFileInfo(path).absolutePath());
    QFile f(path);
    return f.open(QIODevice::WriteOnly) && f.write(bytes) == bytes.size();
}

inline bool generatePair(const QString &dir, int seed, int layers, int steps, DemoPlan *plan, QString *error)
{
    DemoOptions o;
    o.seed = seed;
    o.layers = layers;
    o.steps = steps;
    return generateDemo(dir, o, plan, error);
}

// FP8SCOPE_SHOT_DIR=DIR saves the window as it stands into DIR/WxH/name (tests/screenshots.sh: docs/GUI.md's
// pictures the GUI tests take: eight runs, stacked plots, a mixture-of-experts run).
inline void shoot(QWidget *window, const QString &name)
{
    const QString dir = qEnvironmentVariable("FP8SCOPE_SHOT_DIR");
    if (dir.isEmpty())
        return;
    QTest::qWait(300);
    for (QCustomPlot *p : window->findChildren<QCustomPlot *>())
        p->replot(QCustomPlot::rpImmediateRefresh);
    const QString sized = QStringLiteral("%1/%2x%3").arg(dir).arg(window->width()).arg(window->height());
    QDir().mkpath(sized);
    QVERIFY(window->grab().save(sized + QLatin1Char('/') + name));
}

} // namespace fp8scope::guitest

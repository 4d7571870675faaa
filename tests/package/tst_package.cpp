// The Debian package as Debian would check it, and as a user would run it: lintian reports no error (and warns
// only about what packaging/README.md lists), the desktop entry and the AppStream metadata validate, the MIME
// types resolve, apt resolves its dependencies, and the executables extracted from it (dpkg-deb -x) run:
// --version, demo and ingest from the CLI, the window's screenshots under Xvfb.
// Run by `cmake --workflow --preset package` after CPack wrote build/<preset>/package/fp8scope_*.deb; skips
// where no package was built.
#include "testmain.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QMimeDatabase>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

#include <memory>

namespace {

struct Result {
    int code = -1;
    QString out;
    QString err;
};

Result run(const QString &program, const QStringList &args, const QProcessEnvironment &env = {},
    const QString &workingDirectory = {}, int timeoutMs = 300000)
{
    QProcess p;
    if (!env.isEmpty())
        p.setProcessEnvironment(env);
    if (!workingDirectory.isEmpty())
        p.setWorkingDirectory(workingDirectory);
    p.start(program, args);
    Result r;
    if (!p.waitForFinished(timeoutMs)) {
        p.kill();
        p.waitForFinished();
        r.err = QStringLiteral("timed out or did not start: ") + program;
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

QString readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

QString tool(const char *name)
{
    return QStandardPaths::findExecutable(QString::fromLatin1(name));
}

} // namespace

class TestPackage : public QObject
{
    Q_OBJECT

    QString m_deb;
    std::unique_ptr<QTemporaryDir> m_root; // the package extracted
    QTemporaryDir m_home; // HOME and caches of the programs run from it

    QString root(const QString &path) const { return m_root->path() + QLatin1Char('/') + path; }

    // The programs see a clean user: their own HOME, no display, nothing of the build tree.
    QProcessEnvironment userEnvironment() const
    {
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        for (const char *name :
            {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "LD_LIBRARY_PATH", "XDG_CONFIG_HOME", "XDG_DATA_HOME"})
            env.remove(QString::fromLatin1(name));
        env.insert(QStringLiteral("HOME"), m_home.path());
        env.insert(QStringLiteral("XDG_CACHE_HOME"), m_home.path() + QStringLiteral("/cache"));
        env.insert(QStringLiteral("XDG_RUNTIME_DIR"), m_home.path());
        return env;
    }

private Q_SLOTS:
    void initTestCase()
    {
        const QDir dir(QStringLiteral(FP8SCOPE_PACKAGE_DIR));
        const QStringList debs
            = dir.entryList({QStringLiteral("fp8scope_" FP8SCOPE_PROJECT_VERSION "_*.deb")}, QDir::Files);
        if (debs.isEmpty())
            QSKIP("no package in " FP8SCOPE_PACKAGE_DIR ": cmake --workflow --preset package builds and checks it");
        QCOMPARE(debs.size(), 1);
        m_deb = dir.filePath(debs.front());
        // A package older than the executables it should hold is not the one to check.
        const QFileInfo cli(qEnvironmentVariable("FP8SCOPE_CLI"));
        QVERIFY2(!cli.exists() || QFileInfo(m_deb).lastModified() >= cli.lastModified(),
            qPrintable(m_deb + QStringLiteral(" is older than the fp8scope-cli it packages: run cpack again")));
        QVERIFY(m_home.isValid());
        m_root = std::make_unique<QTemporaryDir>();
        const Result x = run(QStringLiteral("dpkg-deb"), {QStringLiteral("-x"), m_deb, m_root->path()});
        QVERIFY2(x.code == 0, qPrintable(x.err));
    }

    void contentsAreComplete()
    {
        const QString id = QStringLiteral(FP8SCOPE_APP_ID);
        QStringList expected {QStringLiteral("usr/bin/fp8scope"), QStringLiteral("usr/bin/fp8scope-cli"),
            QStringLiteral("usr/share/man/man1/fp8scope.1.gz"), QStringLiteral("usr/share/man/man1/fp8scope-cli.1.gz"),
            QStringLiteral("usr/share/bash-completion/completions/fp8scope-cli"),
            QStringLiteral("usr/share/bash-completion/completions/fp8scope"),
            QStringLiteral("usr/share/applications/") + id + QStringLiteral(".desktop"),
            QStringLiteral("usr/share/metainfo/") + id + QStringLiteral(".metainfo.xml"),
            QStringLiteral("usr/share/mime/packages/") + id + QStringLiteral(".xml"),
            QStringLiteral("usr/share/icons/hicolor/scalable/apps/fp8scope.svg"),
            QStringLiteral("usr/share/doc/fp8scope/copyright"), QStringLiteral("usr/share/doc/fp8scope/changelog.gz"),
            QStringLiteral("usr/share/fp8scope/tools/pt2safetensors.py")};
        for (int size : {16, 22, 24, 32, 48, 64, 128, 256})
            expected << QStringLiteral("usr/share/icons/hicolor/%1x%1/apps/fp8scope.png").arg(size);
        for (const QString &path : expected)
            QVERIFY2(QFileInfo(root(path)).isFile(), qPrintable(path + QStringLiteral(" is not in the package")));
        QVERIFY(QFileInfo(root(QStringLiteral("usr/bin/fp8scope-cli"))).isExecutable());
        // Each PNG is the size its folder says.
        for (int size : {16, 48, 256}) {
            const QImage icon(root(QStringLiteral("usr/share/icons/hicolor/%1x%1/apps/fp8scope.png").arg(size)));
            QCOMPARE(icon.size(), QSize(size, size));
        }
        QVERIFY(readAll(root(QStringLiteral("usr/share/doc/fp8scope/copyright")))
                    .startsWith(
                        QStringLiteral("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/")));
        const Result page = run(QStringLiteral("gzip"),
            {QStringLiteral("-dc"), root(QStringLiteral("usr/share/man/man1/fp8scope-cli.1.gz"))});
        QCOMPARE(page.code, 0);
        QVERIFY(page.out.contains(QStringLiteral("\n.TH FP8SCOPE-CLI 1 ")));
        // The binaries are stripped: no debug sections travel.
        const Result sections
            = run(QStringLiteral("readelf"), {QStringLiteral("-S"), root(QStringLiteral("usr/bin/fp8scope"))});
        if (sections.code == 0)
            QVERIFY(!sections.out.contains(QStringLiteral(".debug_info")));
    }

    void lintianReportsNoErrors()
    {
        const QString lintian = tool("lintian");
        if (lintian.isEmpty())
            QSKIP("lintian is not installed (packaging/install-deps.sh installs it)");
        const Result r = run(lintian, {QStringLiteral("--tag-display-limit"), QStringLiteral("0"), m_deb});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        const QString known = readAll(QStringLiteral(FP8SCOPE_SOURCE_DIR "/packaging/README.md"));
        QVERIFY(!known.isEmpty());
        static const QRegularExpression tag(
            QStringLiteral("^([EW]): fp8scope[^:]*: (\\S+)"), QRegularExpression::MultilineOption);
        auto it = tag.globalMatch(r.out);
        while (it.hasNext()) {
            const QRegularExpressionMatch m = it.next();
            QVERIFY2(
                m.captured(1) != QLatin1String("E"), qPrintable(QStringLiteral("lintian error: ") + m.captured(0)));
            QVERIFY2(known.contains(QLatin1Char('`') + m.captured(2) + QLatin1Char('`')),
                qPrintable(QStringLiteral("a lintian warning packaging/README.md does not list: ") + m.captured(0)));
        }
    }

    void desktopEntryValidates()
    {
        const QString validate = tool("desktop-file-validate");
        if (validate.isEmpty())
            QSKIP("desktop-file-validate is not installed (desktop-file-utils)");
        const QString entry = root(QStringLiteral("usr/share/applications/" FP8SCOPE_APP_ID ".desktop"));
        const Result r = run(validate, {entry});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        QVERIFY2(!r.out.contains(QStringLiteral("error:")) && !r.out.contains(QStringLiteral("warning:")),
            qPrintable(r.out));
        const QString text = readAll(entry);
        QVERIFY(text.contains(QStringLiteral("\nExec=fp8scope %F\n")));
        QVERIFY(text.contains(QStringLiteral("\nIcon=fp8scope\n")));
        for (const char *type :
            {"inode/directory;", "application/x-fp8scope-run;", "application/x-fp8scope-workspace;"})
            QVERIFY2(text.contains(QString::fromLatin1(type)), type);
    }

    void appstreamValidates()
    {
        const QString appstream = tool("appstreamcli");
        if (appstream.isEmpty())
            QSKIP("appstreamcli is not installed (appstream)");
        const QString metainfo = root(QStringLiteral("usr/share/metainfo/" FP8SCOPE_APP_ID ".metainfo.xml"));
        const Result r = run(appstream, {QStringLiteral("validate"), QStringLiteral("--no-net"), metainfo});
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        const QString text = readAll(metainfo);
        QVERIFY(
            text.contains(QStringLiteral("<launchable type=\"desktop-id\">" FP8SCOPE_APP_ID ".desktop</launchable>")));
        QVERIFY(text.contains(QStringLiteral("<release version=\"" FP8SCOPE_PROJECT_VERSION "\"")));
        // Every screenshot it names is one docs/ has.
        static const QRegularExpression image(QStringLiteral("<image>[^<]*/([^/<]+\\.png)</image>"));
        int shots = 0;
        for (auto it = image.globalMatch(text); it.hasNext(); ++shots) {
            const QString name = it.next().captured(1);
            QVERIFY2(QFileInfo::exists(QStringLiteral(FP8SCOPE_SOURCE_DIR "/docs/screenshots/1920x1080/") + name),
                qPrintable(name));
        }
        QVERIFY(shots >= 1);
    }

    // The package's MIME types make a file manager see the manifests as fp8scope's (as update-mime-database
    // compiles them at install).
    void mimeTypesResolve()
    {
        const QString update = tool("update-mime-database");
        if (update.isEmpty())
            QSKIP("update-mime-database is not installed (shared-mime-info)");
        QTemporaryDir data;
        QVERIFY(QDir().mkpath(data.path() + QStringLiteral("/mime/packages")));
        QVERIFY(QFile::copy(root(QStringLiteral("usr/share/mime/packages/" FP8SCOPE_APP_ID ".xml")),
            data.path() + QStringLiteral("/mime/packages/fp8scope.xml")));
        const Result r = run(update, {data.path() + QStringLiteral("/mime")});
        QVERIFY2(r.code == 0, qPrintable(r.err));
        QVERIFY(QFileInfo::exists(data.path() + QStringLiteral("/mime/mime.cache")));
        // Nothing in this process has asked the MIME database before: it reads these directories now.
        qputenv("XDG_DATA_DIRS", (data.path() + QStringLiteral(":/usr/share")).toLocal8Bit());
        QTemporaryDir run;
        for (const char *name : {"fp8scope.json", "fp8scope-workspace.json", "other.json"}) {
            QFile f(run.filePath(QString::fromLatin1(name)));
            QVERIFY(f.open(QIODevice::WriteOnly));
            f.write("{}\n");
        }
        const QMimeDatabase db;
        QCOMPARE(db.mimeTypeForFile(run.filePath(QStringLiteral("fp8scope.json"))).name(),
            QStringLiteral("application/x-fp8scope-run"));
        QCOMPARE(db.mimeTypeForFile(run.filePath(QStringLiteral("fp8scope-workspace.json"))).name(),
            QStringLiteral("application/x-fp8scope-workspace"));
        QVERIFY(db.mimeTypeForName(QStringLiteral("application/x-fp8scope-run"))
                    .inherits(QStringLiteral("application/json")));
        QCOMPARE(
            db.mimeTypeForFile(run.filePath(QStringLiteral("other.json"))).name(), QStringLiteral("application/json"));
    }

    void dependenciesResolve()
    {
        const Result depends
            = run(QStringLiteral("dpkg-deb"), {QStringLiteral("-f"), m_deb, QStringLiteral("Depends")});
        QCOMPARE(depends.code, 0);
        // dpkg-shlibdeps found the libraries the executables link.
        for (const char *package : {"libqt6widgets6", "libqt6svg6", "libsqlite3-0", "libhdf5-", "libzip4", "libhwy1"})
            QVERIFY2(depends.out.contains(QString::fromLatin1(package)), qPrintable(depends.out));
        const Result simulate = run(QStringLiteral("apt-get"),
            {QStringLiteral("install"), QStringLiteral("--simulate"), QStringLiteral("-q"), m_deb});
        QVERIFY2(simulate.code == 0, qPrintable(simulate.out + simulate.err));
        QVERIFY2(simulate.out.contains(QStringLiteral("Inst fp8scope "))
                || simulate.out.contains(QStringLiteral("fp8scope is already")),
            qPrintable(simulate.out));
    }

    void extractedCliRuns()
    {
        const QString cli = root(QStringLiteral("usr/bin/fp8scope-cli"));
        const QProcessEnvironment env = userEnvironment();
        const Result version = run(cli, {QStringLiteral("--version")}, env);
        QVERIFY2(version.code == 0, qPrintable(version.err));
        QVERIFY2(
            version.out.startsWith(QStringLiteral("fp8scope-cli " FP8SCOPE_PROJECT_VERSION)), qPrintable(version.out));
        for (const char *component : {"  Qt: ", "  HDF5: ", "  SQLite: ", "  CPU kernels: ", "  CUDA "})
            QVERIFY2(version.out.contains(QString::fromLatin1(component)), qPrintable(version.out));
        const QString demo = m_home.path() + QStringLiteral("/demo");
        const Result written
            = run(cli, {QStringLiteral("demo"), demo, QStringLiteral("--steps"), QStringLiteral("600")}, env);
        QVERIFY2(written.code == 0, qPrintable(written.err));
        const Result ingested = run(cli, {QStringLiteral("ingest"), demo}, env);
        QVERIFY2(ingested.code == 0, qPrintable(ingested.out + ingested.err));
        const Result runs = run(cli, {QStringLiteral("runs"), demo, QStringLiteral("--json")}, env);
        QVERIFY2(runs.code == 0, qPrintable(runs.err));
        const QJsonArray list = QJsonDocument::fromJson(runs.out.toUtf8()).array();
        QCOMPARE(list.size(), 2);
        QVERIFY(QFileInfo::exists(demo + QStringLiteral("/.fp8scope/store.sqlite")));
        // The packaged man page knows every command the packaged CLI lists.
        const QString page = run(QStringLiteral("gzip"),
            {QStringLiteral("-dc"), root(QStringLiteral("usr/share/man/man1/fp8scope-cli.1.gz"))})
                                 .out;
        const QString usage = run(cli, {QStringLiteral("--help")}, env).out;
        static const QRegularExpression command(QStringLiteral("^  ([a-z]+) "), QRegularExpression::MultilineOption);
        int commands = 0;
        for (auto it = command.globalMatch(usage); it.hasNext(); ++commands) {
            const QString name = it.next().captured(1);
            QVERIFY2(page.contains(QStringLiteral("\n.SS ") + name + QLatin1Char('\n')), qPrintable(name));
        }
        QVERIFY(commands >= 11);
    }

    void extractedWindowTakesScreenshots()
    {
        const QString window = root(QStringLiteral("usr/bin/fp8scope"));
        const QProcessEnvironment env = userEnvironment();
        // Without a display, --version answers all the same.
        const Result version = run(window, {QStringLiteral("--version")}, env);
        QVERIFY2(version.code == 0, qPrintable(version.err));
        QVERIFY(version.out.startsWith(QStringLiteral("fp8scope " FP8SCOPE_PROJECT_VERSION)));
        const QString xvfb = tool("xvfb-run");
        if (xvfb.isEmpty())
            QSKIP("xvfb-run is not installed (xvfb)");
        const QString shots = m_home.path() + QStringLiteral("/shots");
        const Result r = run(xvfb,
            {QStringLiteral("-a"), QStringLiteral("-s"), QStringLiteral("-screen 0 1920x1080x24"), window,
                QStringLiteral("--demo"), QStringLiteral("--screenshots"), shots},
            env, {}, 600000);
        QVERIFY2(r.code == 0, qPrintable(r.out + r.err));
        const QFileInfoList pngs = QDir(shots).entryInfoList({QStringLiteral("*.png")}, QDir::Files, QDir::Name);
        QVERIFY2(pngs.size() >= 10, qPrintable(QString::number(pngs.size())));
        for (const QFileInfo &png : pngs) {
            const QImage image(png.filePath());
            QVERIFY2(image.width() >= 1024 && image.height() >= 600, qPrintable(png.fileName()));
        }
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestPackage)
#include "tst_package.moc"

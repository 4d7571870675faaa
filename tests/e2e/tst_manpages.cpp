// The man pages and the bash completion against what the programs themselves say: every command and option
// that `fp8scope-cli --help`, `fp8scope-cli COMMAND --help` and `fp8scope --help` list is in the man page (and
// nothing else), the completion offers them, and the values it offers are ones the parsers accept.
#include "app/common/commandline.h"
#include "app/common/manpage.h"
#include "app/common/version.h"
#include "core/demo/scenarios.h"
#include "core/formats/formatnames.h"
#include "core/numerics/backendselect.h"
#include "core/numerics/recipe.h"
#include "testmain.h"

#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QSet>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QtTest>

using namespace fp8scope;

namespace {

struct Result {
    int code = -1;
    QString out;
    QString err;
};

Result run(const QString &program, const QStringList &args, const QProcessEnvironment &env = {})
{
    QProcess p;
    if (!env.isEmpty())
        p.setProcessEnvironment(env);
    p.start(program, args);
    Result r;
    if (!p.waitForFinished(60000)) {
        p.kill();
        p.waitForFinished();
        return r;
    }
    r.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    r.out = QString::fromUtf8(p.readAllStandardOutput());
    r.err = QString::fromUtf8(p.readAllStandardError());
    return r;
}

QString cliExe()
{
    return qEnvironmentVariable("FP8SCOPE_CLI");
}

QString window()
{
    return qEnvironmentVariable("FP8SCOPE_WINDOW");
}

QString readFile(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

QString manPage(const QString &name)
{
    return readFile(QStringLiteral(FP8SCOPE_MAN_DIR "/") + name + QStringLiteral(".1"));
}

// The options a QCommandLineParser help text lists ("  -o, --output <file>  ..."), as "--name" and "-o".
QSet<QString> helpOptions(const QString &help)
{
    QSet<QString> names;
    bool inOptions = false;
    static const QRegularExpression line(QStringLiteral("^  (-[A-Za-z0-9?], )?(--[a-z0-9-]+)"));
    for (const QString &l : help.split(QLatin1Char('\n'))) {
        if (l.startsWith(QLatin1String("Options:"))) {
            inOptions = true;
            continue;
        }
        if (l.startsWith(QLatin1String("Arguments:")))
            break;
        const QRegularExpressionMatch m = line.match(l);
        if (inOptions && m.hasMatch()) {
            names << m.captured(2);
            if (!m.captured(1).isEmpty())
                names << m.captured(1).chopped(2);
        }
    }
    return names;
}

// The options a man page section names in bold: "\fB\-o\fR", "\fB\-\-recipe\fR".
QSet<QString> manOptions(const QString &section)
{
    QSet<QString> names;
    static const QRegularExpression one(QStringLiteral(R"(\\fB(\\-[A-Za-z0-9\\-]+)\\fR)"));
    const QStringList lines = section.split(QLatin1Char('\n'));
    for (int i = 1; i < lines.size(); ++i) {
        if (lines[i - 1] != QLatin1String(".TP"))
            continue;
        auto it = one.globalMatch(lines[i]);
        while (it.hasNext()) {
            QString name = it.next().captured(1);
            names << name.replace(QStringLiteral("\\-"), QStringLiteral("-"));
        }
    }
    return names;
}

// The text of a man page from the line ".SS name" (or ".SH name") to the next heading.
QString manSection(const QString &page, const QString &heading)
{
    const qsizetype start = page.indexOf(QLatin1Char('\n') + heading + QLatin1Char('\n'));
    if (start < 0)
        return {};
    static const QRegularExpression next(QStringLiteral("\n\\.S[SH] "));
    const qsizetype end = page.indexOf(next, start + 1);
    return page.mid(start + 1, end < 0 ? -1 : end - start - 1);
}

QStringList helpCommands(const QString &usage)
{
    QStringList names;
    bool inCommands = false;
    static const QRegularExpression line(QStringLiteral("^  ([a-z]+) "));
    for (const QString &l : usage.split(QLatin1Char('\n'))) {
        if (l == QLatin1String("commands:")) {
            inCommands = true;
            continue;
        }
        const QRegularExpressionMatch m = line.match(l);
        if (inCommands && m.hasMatch())
            names << m.captured(1);
    }
    return names;
}

// Completes `words` (the last one being completed) with the generated script, in a bash without the user's
// configuration; the candidates, one per line.
QStringList complete(const QString &script, const QStringList &words)
{
    QStringList quoted;
    for (const QString &w : words)
        quoted << QLatin1Char('\'') + QString(w).replace(QLatin1Char('\''), QStringLiteral("'\\''"))
                + QLatin1Char('\'');
    const QString function
        = words.front() == QLatin1String("fp8scope") ? QStringLiteral("_fp8scope") : QStringLiteral("_fp8scope_cli");
    const QString code
        = QStringLiteral("source '%1'; COMP_WORDS=(%2); COMP_CWORD=%3; %4; printf '%s\\n' \"${COMPREPLY[@]}\"")
              .arg(script, quoted.join(QLatin1Char(' ')))
              .arg(words.size() - 1)
              .arg(function);
    const Result r = run(
        QStringLiteral("bash"), {QStringLiteral("--norc"), QStringLiteral("--noprofile"), QStringLiteral("-c"), code});
    if (r.code != 0)
        return {QStringLiteral("bash failed: ") + r.err};
    QStringList out = r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
    out.sort();
    return out;
}

QStringList sorted(QSet<QString> set)
{
    QStringList list(set.begin(), set.end());
    list.sort();
    return list;
}

} // namespace

class TestManPages : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        QVERIFY2(QFileInfo(cliExe()).isExecutable(), "FP8SCOPE_CLI names no executable");
        QVERIFY2(!manPage(QStringLiteral("fp8scope-cli")).isEmpty(), FP8SCOPE_MAN_DIR "/fp8scope-cli.1 is missing");
        QVERIFY2(!manPage(QStringLiteral("fp8scope")).isEmpty(), FP8SCOPE_MAN_DIR "/fp8scope.1 is missing");
    }

    // The man page's COMMANDS are exactly the commands --help lists, in its order.
    void cliCommandsMatchHelp()
    {
        const Result help = run(cliExe(), {QStringLiteral("--help")});
        QCOMPARE(help.code, 0);
        const QStringList fromHelp = helpCommands(help.out);
        QVERIFY(fromHelp.size() >= 11);
        QStringList fromMan;
        static const QRegularExpression ss(QStringLiteral("^\\.SS (\\S+)$"), QRegularExpression::MultilineOption);
        auto it = ss.globalMatch(manPage(QStringLiteral("fp8scope-cli")));
        while (it.hasNext())
            fromMan << it.next().captured(1);
        QCOMPARE(fromMan, fromHelp);
        // The top-level options.
        const QSet<QString> top
            = manOptions(manSection(manPage(QStringLiteral("fp8scope-cli")), QStringLiteral(".SH OPTIONS")));
        QCOMPARE(
            sorted(top), (QStringList {QStringLiteral("--help"), QStringLiteral("--version"), QStringLiteral("-h")}));
    }

    // Each command's section lists exactly the options `COMMAND --help` prints.
    void cliOptionsMatchHelp()
    {
        const QString page = manPage(QStringLiteral("fp8scope-cli"));
        int checked = 0;
        for (const QString &command : helpCommands(run(cliExe(), {QStringLiteral("--help")}).out)) {
            const Result help = run(cliExe(), {command, QStringLiteral("--help")});
            QVERIFY2(help.code == 0, qPrintable(command + QStringLiteral(": ") + help.err));
            const QSet<QString> fromHelp = helpOptions(help.out);
            QVERIFY2(fromHelp.contains(QStringLiteral("--help")), qPrintable(command));
            const QSet<QString> fromMan = manOptions(manSection(page, QStringLiteral(".SS ") + command));
            QVERIFY2(fromMan == fromHelp,
                qPrintable(QStringLiteral("%1: man %2, --help %3")
                               .arg(command, sorted(fromMan).join(QLatin1Char(' ')),
                                   sorted(fromHelp).join(QLatin1Char(' ')))));
            ++checked;
        }
        QCOMPARE(checked, int(cli::cliCommands().size()));
    }

    void windowOptionsMatchHelp()
    {
        if (window().isEmpty())
            QSKIP("no fp8scope window in this build");
        // --help needs no display.
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.remove(QStringLiteral("DISPLAY"));
        env.remove(QStringLiteral("WAYLAND_DISPLAY"));
        env.remove(QStringLiteral("QT_QPA_PLATFORM"));
        const Result help = run(window(), {QStringLiteral("--help")}, env);
        QVERIFY2(help.code == 0, qPrintable(help.err));
        const QSet<QString> fromHelp = helpOptions(help.out);
        QVERIFY(fromHelp.contains(QStringLiteral("--demo")));
        const QSet<QString> fromMan
            = manOptions(manSection(manPage(QStringLiteral("fp8scope")), QStringLiteral(".SH OPTIONS")));
        QCOMPARE(sorted(fromMan), sorted(fromHelp));
        const Result version = run(window(), {QStringLiteral("--version")}, env);
        QCOMPARE(version.code, 0);
        QVERIFY2(version.out.startsWith(QStringLiteral("fp8scope ") + fp8scopeVersion()), qPrintable(version.out));
    }

    void versionsAreReported()
    {
        const Result r = run(cliExe(), {QStringLiteral("--version")});
        QCOMPARE(r.code, 0);
        const QStringList lines = r.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts);
        QCOMPARE(lines.front(), versionLine(QStringLiteral("fp8scope-cli")));
        for (const ComponentVersion &c : libraryVersions())
            QVERIFY2(lines.contains(QStringLiteral("  ") + c.component + QStringLiteral(": ") + c.version),
                qPrintable(r.out));
        QVERIFY2(r.out.contains(QStringLiteral("\n  CUDA ")), qPrintable(r.out));
        QVERIFY(r.out.contains(QStringLiteral("  Qt: ") + QString::fromLatin1(qVersion())));
        // Built from this checkout: the revision names its commit.
        if (QFileInfo::exists(QStringLiteral(FP8SCOPE_SOURCE_DIR "/.git")))
            QVERIFY2(!fp8scopeRevision().isEmpty(), "built from a git checkout but no revision was stamped");
    }

    // groff reads both pages without a warning (as lintian's man check does).
    void pagesRenderCleanly()
    {
        const QString groff = QStandardPaths::findExecutable(QStringLiteral("groff"));
        if (groff.isEmpty())
            QSKIP("groff is not installed");
        for (const QString &name : {QStringLiteral("fp8scope"), QStringLiteral("fp8scope-cli")}) {
            const Result r = run(groff,
                {QStringLiteral("-man"), QStringLiteral("-Tutf8"), QStringLiteral("-ww"), QStringLiteral("-z"),
                    QStringLiteral(FP8SCOPE_MAN_DIR "/") + name + QStringLiteral(".1")});
            QCOMPARE(r.code, 0);
            QVERIFY2(r.err.isEmpty(), qPrintable(name + QStringLiteral(": ") + r.err));
        }
    }

    void completionOffersCommandsAndOptions()
    {
        const QString script = QStringLiteral(FP8SCOPE_COMPLETION);
        QVERIFY(QFileInfo::exists(script));
        QCOMPARE(complete(script, {QStringLiteral("fp8scope-cli"), QStringLiteral("st")}),
            QStringList {QStringLiteral("stats")});
        QStringList commands = helpCommands(run(cliExe(), {QStringLiteral("--help")}).out);
        commands << QStringLiteral("--help") << QStringLiteral("--version");
        commands.sort();
        QCOMPARE(complete(script, {QStringLiteral("fp8scope-cli"), QString()}), commands);
        for (const cli::CommandSpec &c : cli::cliCommands()) {
            QSet<QString> longOnly;
            for (const QString &o : helpOptions(run(cliExe(), {c.name, QStringLiteral("--help")}).out)) {
                if (o.startsWith(QLatin1String("--")))
                    longOnly << o;
            }
            QCOMPARE(
                complete(script, {QStringLiteral("fp8scope-cli"), c.name, QStringLiteral("--")}), sorted(longOnly));
        }
        QCOMPARE(complete(script,
                     {QStringLiteral("fp8scope-cli"), QStringLiteral("recompute"), QStringLiteral("x"),
                         QStringLiteral("--backend"), QString()}),
            (QStringList {QStringLiteral("auto"), QStringLiteral("cpu"), QStringLiteral("cuda")}));
        QCOMPARE(complete(script,
                     {QStringLiteral("fp8scope-cli"), QStringLiteral("demo"), QStringLiteral("d"),
                         QStringLiteral("--scenario"), QStringLiteral("mid")}),
            QStringList {QStringLiteral("mid-run-instability")});
        // A value typed by hand gets no candidates.
        QCOMPARE(complete(script,
                     {QStringLiteral("fp8scope-cli"), QStringLiteral("series"), QStringLiteral("x"),
                         QStringLiteral("--stat"), QStringLiteral("lm")}),
            QStringList());
        QCOMPARE(complete(script, {QStringLiteral("fp8scope"), QStringLiteral("--ba")}),
            QStringList {QStringLiteral("--backend")});
        // A folder argument completes folders only.
        QTemporaryDir dir;
        QVERIFY(QDir(dir.path()).mkdir(QStringLiteral("runA")));
        QFile file(dir.filePath(QStringLiteral("runB.txt")));
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.close();
        QCOMPARE(complete(script,
                     {QStringLiteral("fp8scope-cli"), QStringLiteral("ingest"), dir.path() + QStringLiteral("/run")}),
            QStringList {dir.path() + QStringLiteral("/runA")});
    }

    // What the completion and the man page offer as values, the parsers accept.
    void offeredValuesParse()
    {
        int recipes = 0;
        for (const cli::CommandSpec &c : cli::cliCommands()) {
            for (const cli::OptionSpec &o : c.options) {
                for (const QString &v : o.choices + o.suggestions) {
                    const QString name = o.names.back();
                    QString error;
                    if (name == QLatin1String("recipe")) {
                        QVERIFY2(Recipe::parse(v, std::nullopt, &error).has_value(),
                            qPrintable(v + QStringLiteral(": ") + error));
                        ++recipes;
                    } else if (name == QLatin1String("format")) {
                        QVERIFY2(formatFromName(v).has_value(), qPrintable(v));
                    } else if (name == QLatin1String("scenario")) {
                        QVERIFY2(scenarioFromName(v).has_value(), qPrintable(v));
                    } else if (name == QLatin1String("backend")) {
                        QVERIFY2(backendChoiceFromName(v).has_value(), qPrintable(v));
                    }
                }
            }
        }
        QVERIFY(recipes >= 12);
    }

    void roffEscaping()
    {
        QCOMPARE(cli::roffEscape(QStringLiteral(".fp8scope")), QStringLiteral("\\&.fp8scope"));
        QCOMPARE(cli::roffEscape(QStringLiteral("'quoted'")), QStringLiteral("\\&'quoted'"));
        QCOMPARE(cli::roffEscape(QStringLiteral("a\\b")), QStringLiteral("a\\eb"));
        QCOMPARE(cli::roffEscape(QStringLiteral("--what-if"), true), QStringLiteral("\\-\\-what\\-if"));
        QCOMPARE(cli::roffEscape(QStringLiteral("mid-run")), QStringLiteral("mid-run"));
    }

    // A usage error names the command and what it expected.
    void usageErrors()
    {
        const Result none = run(cliExe(), {QStringLiteral("ingest")});
        QCOMPARE(none.code, 2);
        QVERIFY2(none.err.contains(QStringLiteral("fp8scope-cli ingest: expected one FOLDER")), qPrintable(none.err));
        const Result two = run(cliExe(), {QStringLiteral("stats"), QStringLiteral("a"), QStringLiteral("b")});
        QCOMPARE(two.code, 2);
        QVERIFY2(two.err.contains(QStringLiteral("expected one FILE[:DATASET], got 2 arguments")), qPrintable(two.err));
        const Result bad = run(cliExe(), {QStringLiteral("runs"), QStringLiteral("x"), QStringLiteral("--nope")});
        QCOMPARE(bad.code, 2);
        QVERIFY2(bad.err.contains(QStringLiteral("fp8scope-cli runs: Unknown option 'nope'")), qPrintable(bad.err));
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestManPages)
#include "tst_manpages.moc"

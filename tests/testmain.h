// A Qt Test main that leaves out the functions FP8SCOPE_TEST_EXCLUDE names (comma-separated). CTest runs
// each function that can skip (it needs ../shared, the test Python or the CUDA headers) as a test of its
// own, reported as skipped when it skips, and the rest of the executable as another (tests/CMakeLists.txt,
// SKIPPABLE). Functions named on the command line run as Qt Test runs them.
#pragma once

#include <QCoreApplication>
#include <QMetaMethod>
#include <QStringList>
#include <QTest>

namespace fp8scope::testing {

template <class T> int runTests(int argc, char **argv)
{
    T tests;
    QStringList args;
    for (int i = 0; i < argc; ++i)
        args << QString::fromLocal8Bit(argv[i]);
    const QStringList exclude
        = qEnvironmentVariable("FP8SCOPE_TEST_EXCLUDE").split(QLatin1Char(','), Qt::SkipEmptyParts);
    if (!exclude.isEmpty() && args.size() == 1) {
        const QMetaObject *mo = tests.metaObject();
        for (int i = mo->methodOffset(); i < mo->methodCount(); ++i) {
            const QMetaMethod m = mo->method(i);
            const QString name = QString::fromLatin1(m.name());
            // Qt Test runs the private slots without parameters; the fixtures run by themselves.
            if (m.methodType() != QMetaMethod::Slot || m.access() != QMetaMethod::Private || m.parameterCount() != 0
                || name.endsWith(QLatin1String("_data")) || exclude.contains(name)
                || QStringList {QStringLiteral("initTestCase"), QStringLiteral("cleanupTestCase"),
                    QStringLiteral("init"), QStringLiteral("cleanup")}
                       .contains(name))
                continue;
            args << name;
        }
    }
    return QTest::qExec(&tests, args);
}

} // namespace fp8scope::testing

#define FP8SCOPE_TEST_APPLESS_MAIN(TestObject)                                                                         \
    int main(int argc, char **argv)                                                                                    \
    {                                                                                                                  \
        QTEST_SET_MAIN_SOURCE_PATH                                                                                     \
        return fp8scope::testing::runTests<TestObject>(argc, argv);                                                    \
    }

#define FP8SCOPE_TEST_GUILESS_MAIN(TestObject)                                                                         \
    int main(int argc, char **argv)                                                                                    \
    {                                                                                                                  \
        QCoreApplication app(argc, argv);                                                                              \
        app.setAttribute(Qt::AA_Use96Dpi, true);                                                                       \
        QTEST_SET_MAIN_SOURCE_PATH                                                                                     \
        return fp8scope::testing::runTests<TestObject>(argc, argv);                                                    \
    }

#ifdef QT_WIDGETS_LIB
#include <QApplication>
#include <QTextStream>

namespace fp8scope::testing {

// A plot painted into nothing (QCustomPlot's "inactive painter", QPainter's "engine == 0") fails a GUI test's run:
// the handler names the test function it came in, and the executable exits with a failure.
inline int &painterWarnings()
{
    static int count = 0;
    return count;
}

inline QtMessageHandler &previousHandler()
{
    static QtMessageHandler handler = nullptr;
    return handler;
}

inline void failOnPainterWarnings(QtMsgType type, const QMessageLogContext &context, const QString &message)
{
    if (type == QtWarningMsg
        && (message.contains(QLatin1String("inactive painter"))
            || message.contains(QLatin1String("Paint device returned engine == 0")))) {
        if (++painterWarnings() <= 5)
            QTextStream(stderr) << "FAIL: a painter warning in " << QTest::currentTestFunction() << ": " << message
                                << '\n';
    }
    if (QtMessageHandler previous = previousHandler())
        previous(type, context, message);
}

template <class T> int runGuiTests(int argc, char **argv)
{
    previousHandler() = qInstallMessageHandler(failOnPainterWarnings);
    const int result = runTests<T>(argc, argv);
    if (painterWarnings() > 0) {
        QTextStream(stderr) << "FAIL: " << painterWarnings() << " painter warnings (plots painted at no size)\n";
        return result == 0 ? 1 : result;
    }
    return result;
}

} // namespace fp8scope::testing

#define FP8SCOPE_TEST_GUI_MAIN(TestObject)                                                                             \
    int main(int argc, char **argv)                                                                                    \
    {                                                                                                                  \
        QApplication app(argc, argv);                                                                                  \
        app.setAttribute(Qt::AA_Use96Dpi, true);                                                                       \
        QTEST_SET_MAIN_SOURCE_PATH                                                                                     \
        return fp8scope::testing::runGuiTests<TestObject>(argc, argv);                                                 \
    }
#endif

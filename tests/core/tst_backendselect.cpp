// Backend selection and its reasons, with stand-in CUDA factories (no device is needed).
#include "core/numerics/backendselect.h"
#include "core/numerics/cpubackend.h"

#include <QTest>

using namespace fp8scope;

namespace {

std::unique_ptr<MetricsBackend> noDevice(QString *reason, int)
{
    *reason = QStringLiteral("no CUDA device found");
    return nullptr;
}

// Stands in for a working device backend.
std::unique_ptr<MetricsBackend> fakeDevice(QString *, int threads)
{
    class Fake : public CpuBackend
    {
    public:
        using CpuBackend::CpuBackend;
        QString name() const override { return QStringLiteral("CUDA: Fake GPU"); }
    };
    return std::make_unique<Fake>(threads);
}

} // namespace

class TestBackendSelect : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void names();
    void autoFallsBackWithReason();
    void autoUsesDevice();
    void cudaRequiredIsAnError();
    void cpuNeverAsksForDevice();
};

void TestBackendSelect::names()
{
    QCOMPARE(backendChoiceFromName(QStringLiteral("auto")), BackendChoice::Auto);
    QCOMPARE(backendChoiceFromName(QStringLiteral("cpu")), BackendChoice::Cpu);
    QCOMPARE(backendChoiceFromName(QStringLiteral("cuda")), BackendChoice::Cuda);
    QVERIFY(!backendChoiceFromName(QStringLiteral("gpu")));
}

void TestBackendSelect::autoFallsBackWithReason()
{
    const BackendSelection s = selectBackend(BackendChoice::Auto, 1, &noDevice);
    QVERIFY(s.backend);
    QVERIFY(s.error.isEmpty());
    QCOMPARE(s.status, QStringLiteral("CPU: no CUDA device found"));
    QVERIFY(s.backend->name().startsWith(QStringLiteral("CPU (")));
    QVERIFY(s.backend->name().endsWith(QStringLiteral(": no CUDA device found")));
    const BackendSelection none = selectBackend(BackendChoice::Auto, 1, nullptr);
    QCOMPARE(none.status, QStringLiteral("CPU: this build has no CUDA backend"));
}

void TestBackendSelect::autoUsesDevice()
{
    const BackendSelection s = selectBackend(BackendChoice::Auto, 1, &fakeDevice);
    QVERIFY(s.backend);
    QCOMPARE(s.status, QStringLiteral("CUDA: Fake GPU"));
}

void TestBackendSelect::cudaRequiredIsAnError()
{
    const BackendSelection s = selectBackend(BackendChoice::Cuda, 1, &noDevice);
    QVERIFY(!s.backend);
    QCOMPARE(s.error, QStringLiteral("CUDA backend unavailable: no CUDA device found"));
}

void TestBackendSelect::cpuNeverAsksForDevice()
{
    const BackendSelection s = selectBackend(BackendChoice::Cpu, 3, &fakeDevice);
    QVERIFY(s.backend);
    QVERIFY(s.status.startsWith(QStringLiteral("CPU (")));
    QVERIFY(s.status.contains(QStringLiteral("3 threads")));
}

QTEST_APPLESS_MAIN(TestBackendSelect)
#include "tst_backendselect.moc"

// The CUDA backend against the CPU backend on the same chunks: every recipe and input dtype, sizes 0, 1,
// 31, 33, 4097 and a non-square 2-D shape, data with zeros, subnormals, NaN, inf and outliers. Integer
// counts and histograms must be identical, sums equal to 1e-9 relative. Skips without a CUDA device.
#include "core/numerics/cpubackend.h"
#include "core/numerics/metricsengine.h"
#include "gpu/cudabackend.h"
#include "testdata.h"

#include <QTest>

using namespace fp8scope;
using namespace fp8scope::testdata;

Q_DECLARE_METATYPE(DType)

class TestCudaBackend : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void matchesCpu_data();
    void matchesCpu();
    void largerThanOnePiece();

private:
    std::unique_ptr<CudaBackend> m_cuda;
    QString m_reason;
};

void TestCudaBackend::initTestCase()
{
    m_cuda = CudaBackend::create(&m_reason, 2);
    if (!m_cuda)
        QSKIP(qPrintable(QStringLiteral("no CUDA backend here: %1").arg(m_reason)));
    qInfo("device: %s", qPrintable(m_cuda->name()));
}

void TestCudaBackend::matchesCpu_data()
{
    QTest::addColumn<QString>("recipe");
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<qint64>("rows");
    QTest::addColumn<qint64>("cols");
    const QStringList recipes {QStringLiteral("delayed"), QStringLiteral("current"), QStringLiteral("current-pow2"),
        QStringLiteral("mxfp8"), QStringLiteral("mxfp8-ocp"), QStringLiteral("mxfp8-col"), QStringLiteral("block1x128"),
        QStringLiteral("block128x128"), QStringLiteral("block1x128-fp32"), QStringLiteral("nvfp4"),
        QStringLiteral("bf16")};
    const std::vector<std::pair<qint64, qint64>> shapes {
        {1, 0}, {1, 1}, {1, 31}, {1, 33}, {1, 4097}, {129, 257}, {300, 160}};
    for (const QString &r : recipes) {
        for (DType d : {DType::F32, DType::BF16, DType::F16, DType::F8E4M3, DType::F8E5M2}) {
            for (const auto &[rows, cols] : shapes) {
                const QString name = QStringLiteral("%1/%2/%3x%4").arg(r, dtypeName(d)).arg(rows).arg(cols);
                QTest::newRow(qPrintable(name)) << r << d << rows << cols;
            }
        }
    }
}

namespace {

void compareSums(const fp8math::MetricSums &g, const fp8math::MetricSums &c)
{
    QCOMPARE(g.numel, c.numel);
    QCOMPARE(g.zeros, c.zeros);
    QCOMPARE(g.nans, c.nans);
    QCOMPARE(g.infs, c.infs);
    QCOMPARE(g.nonzeroQ, c.nonzeroQ);
    QCOMPARE(g.saturated, c.saturated);
    QCOMPARE(g.amax, c.amax);
    QCOMPARE(g.aminNonzero, c.aminNonzero);
    QCOMPARE(g.blocks, c.blocks);
    QCOMPARE(g.zeroAmaxBlocks, c.zeroAmaxBlocks);
    QCOMPARE(g.scaleInvMin, c.scaleInvMin);
    QCOMPARE(g.scaleInvMax, c.scaleInvMax);
    for (int b = 0; b < fp8math::kHistBins; ++b) {
        QCOMPARE(g.histIn[b], c.histIn[b]);
        QCOMPARE(g.histScaled[b], c.histScaled[b]);
    }
    const std::pair<double, double> sums[]
        = {{g.sum, c.sum}, {g.sumSq, c.sumSq}, {g.sumCube, c.sumCube}, {g.sumQuad, c.sumQuad}, {g.errSq, c.errSq},
            {g.dotXQ, c.dotXQ}, {g.sumQSq, c.sumQSq}, {g.log2ScaleInvSum, c.log2ScaleInvSum}};
    for (const auto &[a, b] : sums)
        QVERIFY2(close(a, b, 1e-9), qPrintable(QStringLiteral("%1 vs %2").arg(a, 0, 'g', 17).arg(b, 0, 'g', 17)));
}

} // namespace

void TestCudaBackend::matchesCpu()
{
    QFETCH(QString, recipe);
    QFETCH(DType, dtype);
    QFETCH(qint64, rows);
    QFETCH(qint64, cols);
    QString error;
    auto r = Recipe::parse(recipe, std::nullopt, &error);
    QVERIFY2(r, qPrintable(error));
    r->amaxHistory = {3.0f, 900.0f, 2.0f};
    std::vector<float> widened;
    const QByteArray bytes = encode(makeData(size_t(rows * cols), uint32_t(rows * cols * 13 + 5)), dtype, &widened);
    const ChunkView chunk {dtype, bytes.constData(), rows, cols};
    CpuBackend cpu(2);
    const float amaxCpu = cpu.amax(chunk);
    QCOMPARE(m_cuda->amax(chunk), amaxCpu);
    const fp8math::QuantPlan plan = MetricsEngine::planFor(*r, amaxCpu);
    fp8math::MetricSums c, g;
    cpu.accumulate(chunk, plan, c);
    m_cuda->accumulate(chunk, plan, g);
    QVERIFY2(!m_cuda->fellBack(), qPrintable(m_cuda->name()));
    compareSums(g, c);
}

void TestCudaBackend::largerThanOnePiece()
{
    // 40 MiB of float32 in 128-row bands: several 16 MiB pieces through both device buffers.
    const qint64 rows = 1280, cols = 8192;
    std::vector<float> widened;
    const QByteArray bytes = encode(makeData(size_t(rows * cols), 99), DType::F32, &widened);
    const ChunkView chunk {DType::F32, bytes.constData(), rows, cols};
    CpuBackend cpu(2);
    QString error;
    for (const char *name : {"current", "mxfp8", "block128x128", "mxfp8-col"}) {
        const Recipe r = *Recipe::parse(QString::fromLatin1(name), std::nullopt, &error);
        const fp8math::QuantPlan plan = MetricsEngine::planFor(r, cpu.amax(chunk));
        fp8math::MetricSums c, g;
        cpu.accumulate(chunk, plan, c);
        m_cuda->accumulate(chunk, plan, g);
        compareSums(g, c);
    }
}

QTEST_GUILESS_MAIN(TestCudaBackend)
#include "tst_cudabackend.moc"

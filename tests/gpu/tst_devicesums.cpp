// The device's accumulators folded into the host's (addDeviceSums), without a device: the fold is host code
// compiled with the CUDA kernels, and a field it dropped would go unnoticed wherever no GPU runs the
// backend's tests.
#include "core/numerics/scalarkernels.h"
#include "gpu/metricskernels.h"
#include "testdata.h"

#include <QTest>

#include <algorithm>
#include <iterator>

using namespace fp8scope;

namespace {

// What the kernels would leave in DeviceSums after accumulating `m`'s elements.
struct HostToDevice {
    void add(unsigned long long &into, int64_t from) { into += (unsigned long long)from; }
    void add(double &into, double from) { into += from; }
    void max(unsigned &intoBits, double from) { intoBits = fp8math::floatBits(float(from)); }
    void min(unsigned &intoBits, double from) { intoBits = fp8math::floatBits(float(from)); }
};

gpu::DeviceSums onDevice(const fp8math::MetricSums &m)
{
    gpu::DeviceSums d = gpu::emptyDeviceSums();
    HostToDevice op;
    fp8math::forEachField(d, m, op);
    for (int b = 0; b < fp8math::kHistBins; ++b) {
        d.histIn[b] = (unsigned long long)m.histIn[b];
        d.histScaled[b] = (unsigned long long)m.histScaled[b];
    }
    return d;
}

// Counts the fields of two MetricSums that differ (bit for bit: the fold adds in the same order as merge).
struct Differ {
    int fields = 0;
    template <class T> void add(const T &a, const T &b) { fields += a == b ? 0 : 1; }
    template <class T> void max(const T &a, const T &b) { add(a, b); }
    template <class T> void min(const T &a, const T &b) { add(a, b); }
};

int differences(const fp8math::MetricSums &a, const fp8math::MetricSums &b)
{
    Differ op;
    fp8math::forEachField(a, b, op);
    const bool histSame = std::equal(std::begin(a.histIn), std::end(a.histIn), std::begin(b.histIn))
        && std::equal(std::begin(a.histScaled), std::end(a.histScaled), std::begin(b.histScaled));
    return op.fields + (histSame ? 0 : 1);
}

fp8math::MetricSums blockSums(const std::vector<float> &x, size_t rows)
{
    fp8math::QuantPlan plan;
    plan.mode = fp8math::ScaleMode::RowBlocks;
    plan.blockCols = 32;
    fp8math::MetricSums m;
    fp8math::scalarAccumulateRowBlocks(x.data(), 64, rows, plan, m);
    return m;
}

} // namespace

class TestDeviceSums : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void emptyIsNeutral();
    void foldEqualsMerge();
};

void TestDeviceSums::emptyIsNeutral()
{
    const fp8math::MetricSums m = blockSums(testdata::makeData(64 * 16, 3), 16);
    fp8math::MetricSums folded = m;
    gpu::addDeviceSums(gpu::emptyDeviceSums(), folded);
    QCOMPARE(differences(folded, m), 0);
    // And a fold of nothing into nothing keeps the minimums at +inf, not at zero.
    fp8math::MetricSums none;
    gpu::addDeviceSums(gpu::emptyDeviceSums(), none);
    QCOMPARE(none.aminNonzero, double(INFINITY));
    QCOMPARE(none.scaleInvMin, double(INFINITY));
}

void TestDeviceSums::foldEqualsMerge()
{
    const fp8math::MetricSums first = blockSums(testdata::makeData(64 * 16, 5), 16);
    const fp8math::MetricSums second = blockSums(testdata::makeData(64 * 16, 6), 16);
    QVERIFY(second.blocks > 0 && second.nans > 0 && second.amax > first.amax / 1e6);
    fp8math::MetricSums merged = first;
    merged.merge(second);
    fp8math::MetricSums folded = first;
    gpu::addDeviceSums(onDevice(second), folded);
    QCOMPARE(differences(folded, merged), 0);
    QVERIFY(differences(folded, first) > 0);
}

QTEST_GUILESS_MAIN(TestDeviceSums)
#include "tst_devicesums.moc"

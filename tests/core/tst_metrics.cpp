// The fused metrics pass (engine + CPU backend) against the double-precision reference in reference.h, for
// every recipe, the three input dtypes, odd 1-D sizes and 2-D shapes, on data with zeros, subnormals, NaN,
// inf and huge outliers; plus invariance to thread count and chunking.
#include "core/numerics/blockcensus.h"
#include "core/numerics/cpubackend.h"
#include "core/numerics/cpukernels.h"
#include "core/numerics/metricsengine.h"
#include "core/numerics/scalarkernels.h"
#include "core/tensors/fp8decode.h"
#include "memoryreader.h"
#include "reference.h"
#include "testdata.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QScopeGuard>
#include <QTest>

#include <cmath>
#include <random>
#include <set>

using namespace fp8scope;
using namespace fp8scope::testdata;

Q_DECLARE_METATYPE(fp8scope::DType)
Q_DECLARE_METATYPE(std::vector<int64_t>)

class TestMetrics : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void againstReference_data();
    void againstReference();
    void threadsAndChunksAgree();
    void sameBitsWithAnyThreadCount();
    void residentTensorIsReadOnce();
    void nanOnlyAndEmpty();
    void kernelsMatchScalarDefinition();
    void blockKernelsMatchScalarDefinition_data();
    void blockKernelsMatchScalarDefinition();
    void everySimdTargetMatchesScalarDefinition();
    void patternPassMatchesFusedPass();
    void delayedScaleSource();
    void fp8InputDecoded();
    void blockCensusCountsWhatTheFusedPassCounts();
    void blockCensusByHand();
    void everyFieldVisitedOnce();
};

void TestMetrics::againstReference_data()
{
    QTest::addColumn<QString>("recipe");
    QTest::addColumn<QString>("format");
    QTest::addColumn<DType>("dtype");
    QTest::addColumn<std::vector<int64_t>>("shape");
    const QStringList recipes {QStringLiteral("delayed:margin=1"), QStringLiteral("current"),
        QStringLiteral("current-pow2"), QStringLiteral("mxfp8"), QStringLiteral("mxfp8-ocp"),
        QStringLiteral("mxfp8-col"), QStringLiteral("mxfp8-col-ocp"), QStringLiteral("block1x128"),
        QStringLiteral("block128x128"), QStringLiteral("block1x128-fp32"), QStringLiteral("nvfp4"),
        QStringLiteral("bf16")};
    const std::vector<std::vector<int64_t>> shapes {{0}, {1}, {31}, {33}, {4097}, {129, 257}, {256, 160}};
    for (const QString &r : recipes) {
        QStringList formats {QString()};
        if (r != QLatin1String("nvfp4") && r != QLatin1String("bf16"))
            formats = {QStringLiteral("e4m3"), QStringLiteral("e5m2")};
        if (r == QLatin1String("current"))
            formats << QStringLiteral("e4m3fnuz") << QStringLiteral("e5m2fnuz");
        for (const QString &f : formats) {
            for (DType d : {DType::F32, DType::BF16, DType::F16}) {
                for (const auto &s : shapes) {
                    QStringList dims;
                    for (int64_t v : s)
                        dims << QString::number(v);
                    const QString name = r + QLatin1Char('/') + (f.isEmpty() ? QStringLiteral("default") : f)
                        + QLatin1Char('/') + dtypeName(d) + QLatin1Char('/') + dims.join(QLatin1Char('x'));
                    QTest::newRow(qPrintable(name)) << r << f << d << s;
                }
            }
        }
    }
}

void TestMetrics::againstReference()
{
    QFETCH(QString, recipe);
    QFETCH(QString, format);
    QFETCH(DType, dtype);
    QFETCH(std::vector<int64_t>, shape);
    QString error;
    auto r = Recipe::parse(recipe, format.isEmpty() ? std::nullopt : formatFromName(format), &error);
    QVERIFY2(r, qPrintable(error));
    r->amaxHistory = {3.0f, 900.0f, 2.0f};
    int64_t n = 1;
    for (int64_t d : shape)
        n *= d;
    std::vector<float> widened;
    const QByteArray bytes = encode(makeData(size_t(n), uint32_t(n * 7 + 1)), dtype, &widened);
    MemoryReader reader(dtype, shape, bytes);
    CpuBackend backend(2);
    MetricsEngine engine(backend);
    Problem problem;
    const auto out = engine.compute(reader, {*r}, &problem);
    QVERIFY(out);
    const TensorMetrics &m = out->front();
    const int64_t rows = shape.size() > 1 ? shape[0] : 1;
    const reference::Result ref = reference::compute(widened, rows, shape.back(), *r);

    QCOMPARE(m.numel, ref.numel);
    QCOMPARE(m.zeros, ref.zeros);
    QCOMPARE(m.nans, ref.nans);
    QCOMPARE(m.infs, ref.infs);
    QCOMPARE(m.nonzeroQ, ref.nonzeroQ);
    QCOMPARE(m.saturated, ref.saturated);
    QCOMPARE(m.amax, ref.amax);
    QVERIFY(close(m.aminNonzero, std::isinf(ref.aminNonzero) ? NAN : ref.aminNonzero, 0));
    QVERIFY(close(m.underflowPct, ref.underflowPct, 1e-12));
    QVERIFY(close(m.saturationPct, ref.saturationPct, 1e-12));
    QVERIFY2(std::fabs(m.mean - ref.mean) <= 1e-9 * (std::fabs(ref.mean) + ref.std)
            || (std::isnan(m.mean) && std::isnan(ref.mean)),
        qPrintable(QStringLiteral("mean %1 vs %2").arg(m.mean).arg(ref.mean)));
    QVERIFY2(close(m.std, ref.std, 1e-9), qPrintable(QStringLiteral("std %1 vs %2").arg(m.std).arg(ref.std)));
    QVERIFY2(close(m.excessKurtosis, ref.kurtosis, 1e-6),
        qPrintable(QStringLiteral("kurtosis %1 vs %2").arg(m.excessKurtosis).arg(ref.kurtosis)));
    QVERIFY2(close(m.mse, ref.mse, 1e-9), qPrintable(QStringLiteral("mse %1 vs %2").arg(m.mse).arg(ref.mse)));
    QVERIFY2(
        close(m.cosine, ref.cosine, 1e-9), qPrintable(QStringLiteral("cos %1 vs %2").arg(m.cosine).arg(ref.cosine)));
    QVERIFY2(
        close(m.sqnrDb, ref.sqnrDb, 1e-9), qPrintable(QStringLiteral("sqnr %1 vs %2").arg(m.sqnrDb).arg(ref.sqnrDb)));
    QVERIFY(close(m.relativeError, ref.relativeError, 1e-9));
    if (ref.blocks > 0 || m.blocks > 0) {
        QCOMPARE(m.blocks, ref.blocks);
        QCOMPARE(m.scaleInvMin, ref.scaleInvMin);
        QCOMPARE(m.scaleInvMax, ref.scaleInvMax);
    } else if (r->kind != RecipeKind::Bf16 && n > 0) {
        QCOMPARE(m.scaleInvMin, ref.scaleInvMin);
    }
    for (int b = 0; b < fp8math::kHistBins; ++b) {
        const int log2 = fp8math::histBinLog2(b);
        const auto in = ref.histIn.find(log2);
        const auto sc = ref.histScaled.find(log2);
        QCOMPARE(m.histIn[size_t(b)], in == ref.histIn.end() ? 0 : in->second);
        QCOMPARE(m.histScaled[size_t(b)], sc == ref.histScaled.end() ? 0 : sc->second);
    }
}

void TestMetrics::threadsAndChunksAgree()
{
    const std::vector<int64_t> shape {1000, 384};
    std::vector<float> widened;
    const QByteArray bytes = encode(makeData(384000, 3), DType::BF16, &widened);
    QString error;
    std::vector<Recipe> recipes = Recipe::whatIfSet();
    std::vector<std::vector<TensorMetrics>> runs;
    for (auto [threads, chunk] :
        {std::pair {1, int64_t(64) << 20}, std::pair {2, int64_t(64) << 20}, std::pair {2, int64_t(1)}}) {
        MemoryReader reader(DType::BF16, shape, bytes);
        CpuBackend backend(threads);
        MetricsEngine engine(backend, chunk);
        Problem problem;
        auto out = engine.compute(reader, recipes, &problem);
        QVERIFY(out);
        runs.push_back(*out);
    }
    for (size_t i = 0; i < recipes.size(); ++i) {
        for (size_t k = 1; k < runs.size(); ++k) {
            QCOMPARE(runs[k][i].nonzeroQ, runs[0][i].nonzeroQ);
            QCOMPARE(runs[k][i].saturated, runs[0][i].saturated);
            QCOMPARE(runs[k][i].blocks, runs[0][i].blocks);
            QCOMPARE(runs[k][i].histScaled, runs[0][i].histScaled);
            QVERIFY(close(runs[k][i].mse, runs[0][i].mse, 1e-12));
        }
    }
}

namespace {

// The first field in which two sums differ by even one bit, or an empty string.
QString firstDifference(const fp8math::MetricSums &a, const fp8math::MetricSums &b)
{
    const auto same = [](double x, double y) { return x == y || (std::isnan(x) && std::isnan(y)); };
    const std::pair<const char *, bool> fields[] = {{"numel", a.numel == b.numel}, {"zeros", a.zeros == b.zeros},
        {"nans", a.nans == b.nans}, {"infs", a.infs == b.infs}, {"nonzeroQ", a.nonzeroQ == b.nonzeroQ},
        {"saturated", a.saturated == b.saturated}, {"amax", same(a.amax, b.amax)},
        {"aminNonzero", same(a.aminNonzero, b.aminNonzero)}, {"sum", same(a.sum, b.sum)},
        {"sumSq", same(a.sumSq, b.sumSq)}, {"sumCube", same(a.sumCube, b.sumCube)},
        {"sumQuad", same(a.sumQuad, b.sumQuad)}, {"errSq", same(a.errSq, b.errSq)}, {"dotXQ", same(a.dotXQ, b.dotXQ)},
        {"sumQSq", same(a.sumQSq, b.sumQSq)}, {"histIn", std::equal(a.histIn, a.histIn + fp8math::kHistBins, b.histIn)},
        {"histScaled", std::equal(a.histScaled, a.histScaled + fp8math::kHistBins, b.histScaled)},
        {"blocks", a.blocks == b.blocks}, {"zeroAmaxBlocks", a.zeroAmaxBlocks == b.zeroAmaxBlocks},
        {"scaleInvMin", same(a.scaleInvMin, b.scaleInvMin)}, {"scaleInvMax", same(a.scaleInvMax, b.scaleInvMax)},
        {"log2ScaleInvSum", same(a.log2ScaleInvSum, b.log2ScaleInvSum)}};
    for (const auto &[name, equal] : fields) {
        if (!equal)
            return QString::fromLatin1(name);
    }
    return {};
}

} // namespace

// The backend cuts a chunk into pieces that do not depend on the thread count and merges their sums in
// order: 1, 2 and 3 threads give the same bits, for every recipe of the what-if set, on a chunk of several
// pieces (per-tensor float32 runs 3 pieces, 1x32 blocks of float16 too; 128x128 tiles 5 bands).
void TestMetrics::sameBitsWithAnyThreadCount()
{
    const int64_t rows = 600;
    const int64_t cols = 5120;
    const std::vector<float> x = makeData(size_t(rows * cols), 17);
    for (DType dtype : {DType::F32, DType::F16}) {
        std::vector<float> widened;
        const QByteArray bytes = encode(x, dtype, &widened);
        const ChunkView view {dtype, bytes.constData(), rows, cols};
        float amax = 0.0f;
        for (float v : widened)
            amax = std::isfinite(v) ? std::max(amax, std::fabs(v)) : amax;
        for (const Recipe &recipe : Recipe::whatIfSet()) {
            const fp8math::QuantPlan plan = MetricsEngine::planFor(recipe, amax);
            std::vector<fp8math::MetricSums> results;
            for (int threads : {1, 2, 3}) {
                CpuBackend backend(threads);
                QCOMPARE(backend.amax(view), amax);
                fp8math::MetricSums m;
                backend.accumulate(view, plan, m);
                results.push_back(m);
            }
            QCOMPARE(results[0].numel, rows * cols);
            for (size_t k = 1; k < results.size(); ++k) {
                const QString diff = firstDifference(results[0], results[k]);
                QVERIFY2(diff.isEmpty(),
                    qPrintable(QStringLiteral("%1 on %2: %3 differs between 1 and %4 threads")
                                   .arg(recipe.name(), dtypeName(dtype), diff)
                                   .arg(k + 1)));
            }
        }
    }
}

namespace {

// Counts the elements the engine reads.
class CountingReader : public MemoryReader
{
public:
    using MemoryReader::MemoryReader;
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override
    {
        elementsRead += count;
        return MemoryReader::read(first, count, dst, problem);
    }
    int64_t elementsRead = 0;
};

} // namespace

// Two passes (the amax and the fused pass of float32; the pattern and the fused pass of bfloat16) over a
// tensor within the resident budget read it from the reader once, in several chunks; over the budget, once
// per pass. The metrics are the same bits either way.
void TestMetrics::residentTensorIsReadOnce()
{
    const int64_t rows = 700;
    const int64_t cols = 384;
    const std::vector<Recipe> recipes {*Recipe::parse(QStringLiteral("current"), std::nullopt, nullptr),
        *Recipe::parse(QStringLiteral("mxfp8"), std::nullopt, nullptr),
        *Recipe::parse(QStringLiteral("nvfp4"), std::nullopt, nullptr)};
    for (DType dtype : {DType::F32, DType::BF16}) {
        std::vector<float> widened;
        const QByteArray bytes = encode(makeData(size_t(rows * cols), 23), dtype, &widened);
        const int64_t chunkBytes = 128 * cols * dtypeSize(dtype); // 6 chunks
        std::vector<std::vector<TensorMetrics>> results;
        for (int64_t residentBytes : {int64_t(256) << 20, int64_t(1) << 10}) {
            CountingReader reader(dtype, {rows, cols}, bytes);
            CpuBackend backend(2);
            MetricsEngine engine(backend, chunkBytes, residentBytes);
            Problem problem;
            auto out = engine.compute(reader, recipes, &problem);
            QVERIFY2(out, qPrintable(problem.toString()));
            QCOMPARE(reader.elementsRead, (residentBytes > 1024 ? 1 : 2) * rows * cols);
            results.push_back(*out);
        }
        for (size_t i = 0; i < recipes.size(); ++i) {
            const TensorMetrics &a = results[0][i];
            const TensorMetrics &b = results[1][i];
            QCOMPARE(a.numel, rows * cols);
            QVERIFY(a.mse == b.mse && a.amax == b.amax && a.sqnrDb == b.sqnrDb && a.mean == b.mean);
            QCOMPARE(a.nonzeroQ, b.nonzeroQ);
            QCOMPARE(a.histScaled, b.histScaled);
        }
    }
}

void TestMetrics::nanOnlyAndEmpty()
{
    std::vector<float> nans(100, NAN);
    MemoryReader reader(DType::F32, {100}, QByteArray(reinterpret_cast<const char *>(nans.data()), 400));
    CpuBackend backend(2);
    MetricsEngine engine(backend);
    Problem problem;
    QString error;
    const auto out
        = engine.compute(reader, {*Recipe::parse(QStringLiteral("current"), std::nullopt, &error)}, &problem);
    QVERIFY(out);
    QCOMPARE(out->front().nans, 100);
    QCOMPARE(out->front().underflowPct, 0.0);
    QVERIFY(std::isnan(out->front().mse));
    QCOMPARE(out->front().scale, 1.0); // amax 0 keeps scale 1
    MemoryReader empty(DType::F32, {0, 16}, QByteArray());
    const auto none = engine.compute(empty, Recipe::whatIfSet(), &problem);
    QVERIFY(none);
    QCOMPARE(none->front().numel, 0);
    QVERIFY(std::isnan(none->front().underflowPct));
}

void TestMetrics::kernelsMatchScalarDefinition()
{
    // The vector kernel against the element-wise definition, on the raw sums (same order-free counts).
    std::vector<float> x = makeData(10007, 11);
    // Rounding edges of every element format: exact ties, one ulp either side, the largest and smallest
    // mantissas, for binades from far below the subnormal range to beyond the largest finite value.
    for (uint32_t e = 80; e < 175; ++e) {
        for (uint32_t shift : {16u, 20u, 21u, 22u}) {
            for (uint32_t j = 0; j < 8; ++j) {
                for (int d : {-1, 0, 1}) {
                    const uint32_t man = ((j << shift) + (1u << (shift - 1)) + uint32_t(d)) & 0x7FFFFFu;
                    x.push_back(fp8math::bitsFloat((e << 23) | man));
                    x.push_back(-fp8math::bitsFloat((e << 23) | man));
                }
            }
        }
        x.push_back(fp8math::bitsFloat(e << 23));
        x.push_back(fp8math::bitsFloat((e << 23) | 0x7FFFFFu));
    }
    for (fp8math::Format f : {fp8math::Format::E4M3, fp8math::Format::E5M2, fp8math::Format::E4M3FNUZ,
             fp8math::Format::E5M2FNUZ, fp8math::Format::E2M1, fp8math::Format::BF16}) {
        fp8math::MetricSums a, b;
        cpukernels::KernelScratch scratch;
        for (float scale : {1.0f, 3.5f}) {
            cpukernels::accumulateUniform(
                x.data(), cpukernels::Input::F32, x.size(), scale, 1.0f / scale, f, a, scratch);
            fp8math::scalarAccumulateUniform(x.data(), x.size(), scale, 1.0f / scale, f, b);
        }
        scratch.flushInto(a);
        QCOMPARE(a.nonzeroQ, b.nonzeroQ);
        QCOMPARE(a.saturated, b.saturated);
        QCOMPARE(a.zeros, b.zeros);
        QCOMPARE(a.amax, b.amax);
        QCOMPARE(a.numel, b.numel);
        QVERIFY(close(a.errSq, b.errSq, 1e-12));
        QVERIFY(close(a.sumQSq, b.sumQSq, 1e-12));
        QVERIFY(close(a.dotXQ, b.dotXQ, 1e-12));
        QVERIFY(close(a.sum, b.sum, 1e-12));
        QVERIFY2(close(a.relErr, b.relErr, 1e-12),
            qPrintable(QStringLiteral("relErr %1 vs %2").arg(a.relErr, 0, 'g', 17).arg(b.relErr, 0, 'g', 17)));
        QVERIFY(b.relErr > 0);
        for (int i = 0; i < fp8math::kHistBins; ++i) {
            QCOMPARE(a.histIn[i], b.histIn[i]);
            QCOMPARE(a.histScaled[i], b.histScaled[i]);
        }
    }
}

void TestMetrics::blockKernelsMatchScalarDefinition_data()
{
    QTest::addColumn<int>("rule");
    QTest::addColumn<int>("blockRows");
    QTest::addColumn<int>("blockCols");
    QTest::addColumn<int>("format");
    const std::vector<std::pair<fp8math::BlockRule, const char *>> rules {{fp8math::BlockRule::AmaxExact, "exact"},
        {fp8math::BlockRule::AmaxPow2, "pow2"}, {fp8math::BlockRule::MxTe, "mx-te"},
        {fp8math::BlockRule::MxOcp, "mx-ocp"}};
    const std::vector<std::pair<int, int>> blocks {{1, 16}, {1, 32}, {1, 128}, {32, 1}, {4, 128}, {128, 128}};
    for (const auto &[rule, name] : rules) {
        for (const auto &[br, bc] : blocks) {
            for (fp8math::Format f : {fp8math::Format::E4M3, fp8math::Format::E5M2, fp8math::Format::BF16}) {
                QTest::newRow(qPrintable(
                    QStringLiteral("%1/%2x%3/format%4").arg(QLatin1String(name)).arg(br).arg(bc).arg(int(f))))
                    << int(rule) << br << bc << int(f);
            }
        }
    }
    QTest::newRow("nvfp4/1x16") << int(fp8math::BlockRule::Nvfp4) << 1 << 16 << int(fp8math::Format::E2M1);
}

namespace {

cpukernels::Input kernelInput(DType dtype)
{
    return dtype == DType::F32 ? cpukernels::Input::F32
                               : (dtype == DType::BF16 ? cpukernels::Input::BF16 : cpukernels::Input::F16);
}

// The vector block kernel under `plan` against the scalar definition on x (rows x rowLen) stored as float32,
// bfloat16 and float16 and read as such.
void checkBlockKernels(const fp8math::QuantPlan &plan, const std::vector<float> &x, size_t rowLen, size_t rows)
{
    for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
        std::vector<float> widened;
        const QByteArray bytes = encode(x, dtype, &widened);
        const cpukernels::Input in = kernelInput(dtype);
        fp8math::MetricSums a, b;
        cpukernels::KernelScratch scratch;
        std::vector<float> colScratch(2 * rowLen);
        if (plan.mode == fp8math::ScaleMode::RowBlocks) {
            cpukernels::accumulateRowBlocks(bytes.constData(), in, rowLen, rows, plan, a, scratch);
            fp8math::scalarAccumulateRowBlocks(widened.data(), rowLen, rows, plan, b);
        } else {
            cpukernels::accumulateTiles(bytes.constData(), in, rowLen, rows, plan, a, scratch);
            fp8math::scalarAccumulateTiles(
                widened.data(), rowLen, rows, plan, b, colScratch.data(), colScratch.data() + rowLen);
        }
        scratch.flushInto(a);
        const auto where = qScopeGuard([&] {
            if (QTest::currentTestFailed())
                qWarning("input %s", qPrintable(dtypeName(dtype)));
        });
        QCOMPARE(a.numel, b.numel);
        QCOMPARE(a.nonzeroQ, b.nonzeroQ);
        QCOMPARE(a.saturated, b.saturated);
        QCOMPARE(a.zeros, b.zeros);
        QCOMPARE(a.nans, b.nans);
        QCOMPARE(a.infs, b.infs);
        QCOMPARE(a.amax, b.amax);
        QCOMPARE(a.aminNonzero, b.aminNonzero);
        QCOMPARE(a.blocks, b.blocks);
        QCOMPARE(a.zeroAmaxBlocks, b.zeroAmaxBlocks);
        QCOMPARE(a.scaleInvMin, b.scaleInvMin);
        QCOMPARE(a.scaleInvMax, b.scaleInvMax);
        QVERIFY2(std::fabs(a.log2ScaleInvSum - b.log2ScaleInvSum) <= 1e-12 * std::fabs(b.log2ScaleInvSum) + 1e-9,
            qPrintable(QStringLiteral("log2 sum %1 vs %2").arg(a.log2ScaleInvSum).arg(b.log2ScaleInvSum)));
        // The sums differ only in order; the scalar one adds thousands of tiny terms to a huge outlier's one
        // by one, so it is itself off by about 1e-12 relative.
        QVERIFY2(close(a.errSq, b.errSq, 1e-10),
            qPrintable(QStringLiteral("errSq %1 vs %2 (%3)")
                           .arg(a.errSq, 0, 'g', 17)
                           .arg(b.errSq, 0, 'g', 17)
                           .arg(dtypeName(dtype))));
        QVERIFY(close(a.sumQSq, b.sumQSq, 1e-10));
        QVERIFY(close(a.dotXQ, b.dotXQ, 1e-10));
        QVERIFY(close(a.sumQuad, b.sumQuad, 1e-10));
        QVERIFY2(close(a.relErr, b.relErr, 1e-10),
            qPrintable(QStringLiteral("relErr %1 vs %2").arg(a.relErr, 0, 'g', 17).arg(b.relErr, 0, 'g', 17)));
        for (int i = 0; i < fp8math::kHistBins; ++i) {
            QCOMPARE(a.histIn[i], b.histIn[i]);
            QCOMPARE(a.histScaled[i], b.histScaled[i]);
        }
    }
}

fp8math::QuantPlan blockPlan(fp8math::BlockRule rule, int blockRows, int blockCols, fp8math::Format format)
{
    fp8math::QuantPlan plan;
    plan.rule = rule;
    plan.format = format;
    plan.blockRows = blockRows;
    plan.blockCols = blockCols;
    plan.mode = blockRows == 1 ? fp8math::ScaleMode::RowBlocks : fp8math::ScaleMode::TileBlocks;
    plan.globalEncode = fp8math::nvfp4GlobalEncodeScale(300.0f);
    return plan;
}

// Data for the block kernels: rows long enough for whole vectors of blocks, several strips (the tile
// kernel's unit of work) and a short block at the end; zeros, NaN, inf, subnormals and whole blocks of zeros.
std::vector<float> blockData(int blockRows, int blockCols, size_t *rowLen, size_t *rows)
{
    *rowLen = std::max<size_t>(size_t(blockCols) * 37 + 13, 1100);
    *rows = size_t(blockRows) * 2 + (blockRows > 1 ? 3 : 0);
    std::vector<float> x = makeData(*rowLen * *rows, 7);
    for (size_t i = 0; i < std::min<size_t>(x.size(), 2 * size_t(blockCols)); ++i)
        x[i] = 0.0f;
    return x;
}

// Keeps the kernels' dispatch on one SIMD target for its lifetime.
struct PinnedTarget {
    explicit PinnedTarget(int64_t target) { cpukernels::pinSimdTargetForTest(target); }
    ~PinnedTarget() { cpukernels::pinSimdTargetForTest(0); }
};

} // namespace

void TestMetrics::blockKernelsMatchScalarDefinition()
{
    // The vector block kernels, reading float32, bfloat16 and float16 directly, against the scalar
    // definition on the same values widened to float32.
    QFETCH(int, rule);
    QFETCH(int, blockRows);
    QFETCH(int, blockCols);
    QFETCH(int, format);
    size_t rowLen = 0, rows = 0;
    const std::vector<float> x = blockData(blockRows, blockCols, &rowLen, &rows);
    checkBlockKernels(
        blockPlan(fp8math::BlockRule(rule), blockRows, blockCols, fp8math::Format(format)), x, rowLen, rows);
}

void TestMetrics::everySimdTargetMatchesScalarDefinition()
{
    // Users' CPUs pick other targets than this machine's (AVX2 on many desktops, SSE4, the one-lane
    // baseline): pin the dispatch to each target compiled in that this CPU runs, and compare the per-tensor
    // kernel, the amax pass and every kind of block kernel with the scalar definition.
    const std::vector<int64_t> targets = cpukernels::simdTargets();
    QVERIFY(!targets.empty());
    std::vector<float> flat = makeData(10007, 13);
    for (int64_t target : targets) {
        PinnedTarget pin(target);
        QCOMPARE(QByteArray(cpukernels::simdTarget()), QByteArray(cpukernels::simdTargetName(target)));
        for (DType dtype : {DType::F32, DType::BF16, DType::F16}) {
            std::vector<float> widened;
            const QByteArray bytes = encode(flat, dtype, &widened);
            const cpukernels::Input in = kernelInput(dtype);
            for (fp8math::Format f : {fp8math::Format::E4M3, fp8math::Format::E5M2, fp8math::Format::BF16}) {
                fp8math::MetricSums a, b;
                cpukernels::KernelScratch scratch;
                cpukernels::accumulateUniform(bytes.constData(), in, widened.size(), 3.5f, 1.0f / 3.5f, f, a, scratch);
                scratch.flushInto(a);
                fp8math::scalarAccumulateUniform(widened.data(), widened.size(), 3.5f, 1.0f / 3.5f, f, b);
                QCOMPARE(a.nonzeroQ, b.nonzeroQ);
                QCOMPARE(a.saturated, b.saturated);
                QCOMPARE(a.nans, b.nans);
                QCOMPARE(a.infs, b.infs);
                QCOMPARE(a.amax, b.amax);
                QVERIFY(close(a.errSq, b.errSq, 1e-10));
                QVERIFY(close(a.relErr, b.relErr, 1e-10));
                for (int i = 0; i < fp8math::kHistBins; ++i)
                    QCOMPARE(a.histScaled[i], b.histScaled[i]);
            }
            QCOMPARE(double(cpukernels::amaxAbs(bytes.constData(), in, widened.size())),
                double(fp8math::scalarAmax(widened.data(), widened.size())));
        }
        const struct {
            fp8math::BlockRule rule;
            int rows, cols;
            fp8math::Format format;
        } cases[] = {{fp8math::BlockRule::MxTe, 1, 32, fp8math::Format::E4M3},
            {fp8math::BlockRule::MxOcp, 32, 1, fp8math::Format::E5M2},
            {fp8math::BlockRule::AmaxPow2, 1, 128, fp8math::Format::E4M3},
            {fp8math::BlockRule::AmaxExact, 128, 128, fp8math::Format::E4M3},
            {fp8math::BlockRule::Nvfp4, 1, 16, fp8math::Format::E2M1}};
        for (const auto &c : cases) {
            size_t rowLen = 0, rows = 0;
            const std::vector<float> x = blockData(c.rows, c.cols, &rowLen, &rows);
            checkBlockKernels(blockPlan(c.rule, c.rows, c.cols, c.format), x, rowLen, rows);
            if (QTest::currentTestFailed()) {
                qWarning("failed on SIMD target %s, blocks %dx%d, rule %d", cpukernels::simdTargetName(target), c.rows,
                    c.cols, int(c.rule));
                return;
            }
        }
    }
}

namespace {

// CPU backends that leave the engine's pattern pass aside (the fused pass serves every recipe, as on a
// backend that does not count patterns), or take it with the interface's default host counting.
class NoPatternBackend : public CpuBackend
{
public:
    using CpuBackend::CpuBackend;
    bool countsPatterns(DType) const override { return false; }
};

class DefaultPatternBackend : public CpuBackend
{
public:
    using CpuBackend::CpuBackend;
    void countPatterns(const ChunkView &chunk, PatternCounts &counts) override
    {
        MetricsBackend::countPatterns(chunk, counts);
    }
};

} // namespace

void TestMetrics::patternPassMatchesFusedPass()
{
    // 16-bit tensors: the what-if set (per-tensor recipes with and without the tensor amax, block recipes,
    // NVFP4's global scale from the amax) through the pattern pass, with the CPU backend's threaded counting
    // and with the interface's default one, against the fused pass alone; several chunks.
    const std::vector<int64_t> shape {384, 256};
    for (DType dtype : {DType::BF16, DType::F16}) {
        std::vector<float> widened;
        const QByteArray bytes = encode(makeData(384 * 256, 5), dtype, &widened);
        std::vector<Recipe> recipes = Recipe::whatIfSet();
        QString error;
        recipes.push_back(*Recipe::parse(QStringLiteral("current-pow2"), std::nullopt, &error));
        recipes.push_back(*Recipe::parse(QStringLiteral("bf16"), std::nullopt, &error));
        std::vector<std::vector<TensorMetrics>> runs;
        CpuBackend threaded(2);
        DefaultPatternBackend host(2);
        NoPatternBackend fused(2);
        for (MetricsBackend *backend : std::initializer_list<MetricsBackend *> {&threaded, &host, &fused}) {
            MemoryReader reader(dtype, shape, bytes);
            MetricsEngine engine(*backend, int64_t(128) * 256 * 2);
            Problem problem;
            int64_t lastDone = 0, lastTotal = 0;
            auto out = engine.compute(reader, recipes, &problem, [&](int64_t done, int64_t total) {
                lastDone = done;
                lastTotal = total;
                return true;
            });
            QVERIFY(out);
            QCOMPARE(lastDone, lastTotal); // progress ends at its total, whichever passes ran
            runs.push_back(*out);
        }
        QVERIFY(threaded.countsPatterns(dtype));
        QVERIFY(!threaded.countsPatterns(DType::F32));
        for (size_t i = 0; i < recipes.size(); ++i) {
            const TensorMetrics &want = runs[2][i];
            for (size_t k = 0; k < 2; ++k) {
                const TensorMetrics &got = runs[k][i];
                QCOMPARE(got.numel, want.numel);
                QCOMPARE(got.zeros, want.zeros);
                QCOMPARE(got.nans, want.nans);
                QCOMPARE(got.infs, want.infs);
                QCOMPARE(got.nonzeroQ, want.nonzeroQ);
                QCOMPARE(got.saturated, want.saturated);
                QCOMPARE(got.amax, want.amax);
                QCOMPARE(got.scale, want.scale);
                QCOMPARE(got.blocks, want.blocks);
                QCOMPARE(got.histIn, want.histIn);
                QCOMPARE(got.histScaled, want.histScaled);
                QVERIFY2(close(got.mse, want.mse, 1e-12),
                    qPrintable(QStringLiteral("%1: mse %2 vs %3").arg(recipes[i].name()).arg(got.mse).arg(want.mse)));
                QVERIFY(close(got.cosine, want.cosine, 1e-12));
                QVERIFY(close(got.std, want.std, 1e-12));
            }
        }
    }
}

QTEST_APPLESS_MAIN(TestMetrics)
void TestMetrics::delayedScaleSource()
{
    Recipe r = *Recipe::parse(QStringLiteral("delayed:history=2,margin=1"), std::nullopt, nullptr);
    r.previousScale = 3.0f;
    QCOMPARE(r.delayedScale(), 3.0f);
    QVERIFY2(r.delayedScaleSource().startsWith(QLatin1String("no amax history")), qPrintable(r.delayedScaleSource()));
    QVERIFY(r.delayedScaleSource().contains(QLatin1String("previous scale 3 is kept")));
    // Only the newest two entries count: the 100 is outside the history length.
    r.amaxHistory = {4.0f, 8.0f, 100.0f};
    QCOMPARE(r.delayedScale(), 448.0f / 8.0f / 2.0f);
    QCOMPARE(r.delayedScaleSource(), QStringLiteral("amax 8 (max of the newest 2 of 3 history entries), margin 1"));
    r.reduce = AmaxReduce::MostRecent;
    QCOMPARE(r.delayedScale(), 448.0f / 4.0f / 2.0f);
    QCOMPARE(r.delayedScaleSource(), QStringLiteral("amax 4 (newest of 3 history entries), margin 1"));
    // A zero newest amax cannot form a scale, even when it equals nothing else in the history.
    r.amaxHistory = {0.0f, 8.0f};
    QCOMPARE(r.delayedScale(), 3.0f);
    QVERIFY2(r.delayedScaleSource().contains(QLatin1String("cannot form a scale: the previous scale 3 is kept")),
        qPrintable(r.delayedScaleSource()));
    // A previous scale that equals the formed one is still a formed scale.
    r.amaxHistory = {56.0f};
    r.previousScale = 4.0f;
    QCOMPARE(r.delayedScale(), 4.0f);
    QVERIFY2(!r.delayedScaleSource().contains(QLatin1String("kept")), qPrintable(r.delayedScaleSource()));
}

void TestMetrics::fp8InputDecoded()
{
    // FP8 codes with a decode scale reach the engine as their values, and the results say how they were
    // decoded.
    QByteArray codes;
    for (int i = 0; i < 256; ++i)
        codes.append(char(i == 0x7F || i == 0xFF ? 0 : i));
    Fp8ScaledReader scaled(std::make_unique<MemoryReader>(DType::F8E4M3, std::vector<int64_t> {4, 64}, codes),
        Fp8DecodeScale::perTensor(0.5f, QStringLiteral("a test"), 4, 64));
    scaled.setDecoding(QStringLiteral("E4M3 codes x scale_inv 0.5 from a test"));
    CpuBackend backend(1);
    MetricsEngine engine(backend);
    Problem p;
    const auto results = engine.compute(scaled, {*Recipe::parse(QStringLiteral("current"), std::nullopt, nullptr)}, &p);
    QVERIFY2(results, qPrintable(p.toString()));
    QCOMPARE(results->front().amax, 224.0); // 448 x 0.5
    QCOMPARE(results->front().zeros, qint64(4)); // codes 0x00, 0x80 and the two NaN codes replaced by 0
    QCOMPARE(results->front().decoding, QStringLiteral("E4M3 codes x scale_inv 0.5 from a test"));
    // The codes themselves: amax 448, nothing to say.
    MemoryReader raw(DType::F8E4M3, {4, 64}, codes);
    const auto plain = engine.compute(raw, {*Recipe::parse(QStringLiteral("current"), std::nullopt, nullptr)}, &p);
    QVERIFY(plain);
    QCOMPARE(plain->front().amax, 448.0);
    QVERIFY(plain->front().decoding.isEmpty());
}

// The census judges every block with the scalar kernel: over the what-if set's block recipes, on 2-D and
// 1-D tensors of the three input dtypes with zeros, subnormals, NaN, inf and outliers, its blocks and totals
// are the fused pass's exact counts, its classes hold together, and a per-tensor recipe is refused.
void TestMetrics::blockCensusCountsWhatTheFusedPassCounts()
{
    for (const auto &[dtype, shape] :
        {std::pair {DType::BF16, std::vector<int64_t> {300, 384}}, std::pair {DType::F32, std::vector<int64_t> {4099}},
            std::pair {DType::F16, std::vector<int64_t> {130, 96}}}) {
        int64_t n = 1;
        for (int64_t d : shape)
            n *= d;
        std::vector<float> widened;
        const QByteArray bytes = encode(makeData(size_t(n), 11), dtype, &widened);
        int blockRecipes = 0;
        for (const Recipe &recipe : Recipe::whatIfSet()) {
            MemoryReader reader(dtype, shape, bytes);
            Problem problem;
            const auto census = blockCensus(reader, recipe, &problem);
            if (!hasBlockScales(recipe)) {
                QVERIFY(!census);
                QVERIFY2(problem.toString().contains(QStringLiteral("no blocks")), qPrintable(problem.toString()));
                continue;
            }
            ++blockRecipes;
            QVERIFY2(census, qPrintable(problem.toString()));
            MemoryReader again(dtype, shape, bytes);
            CpuBackend backend(2);
            MetricsEngine engine(backend);
            const auto metrics = engine.compute(again, {recipe}, &problem);
            QVERIFY(metrics);
            const TensorMetrics &m = metrics->front();
            const QString what = recipe.name() + QLatin1Char(' ') + dtypeName(dtype);
            QVERIFY2(census->blocks == m.blocks && census->blocks > 0, qPrintable(what));
            QVERIFY2(census->zeroBlocks == m.zeroAmaxBlocks, qPrintable(what));
            QVERIFY2(census->saturatedElements == m.saturated, qPrintable(what));
            QVERIFY2(census->underflowedElements == (m.numel - m.zeros) - m.nonzeroQ, qPrintable(what));
            int64_t binned = 0;
            for (const auto &[log2, blocks] : census->scaleLog2) {
                QVERIFY(blocks > 0);
                QVERIFY2(std::ldexp(1.0, log2) <= m.scaleInvMax && std::ldexp(1.0, log2 + 1) > m.scaleInvMin,
                    qPrintable(what));
                binned += blocks;
            }
            QCOMPARE(binned + census->zeroScaleBlocks, census->blocks);
            QVERIFY(census->flushedBlocks <= census->underflowingBlocks);
            QVERIFY(census->clippingBlocks <= census->blocks && census->zeroBlocks <= census->blocks);
            // A block clips when one of its elements saturates: some do iff some element does.
            QCOMPARE(census->clippingBlocks > 0, m.saturated > 0);
            QCOMPARE(census->underflowingBlocks > 0, census->underflowedElements > 0);
            const QJsonObject json = census->toJson();
            QCOMPARE(json.value(QStringLiteral("clipping_blocks")).toDouble(), double(census->clippingBlocks));
            QCOMPARE(json.value(QStringLiteral("scale_inv_binades")).toArray().size(), int(census->scaleLog2.size()));
        }
        QCOMPARE(blockRecipes, 11); // MXFP8 1x32, OCP, 32x1, 1x128, 128x128 in E4M3 and E5M2; NVFP4
    }
}

// Blocks whose fate is known by hand. MXFP8 1x32 in E4M3: under the OCP rule a block of amax 480 takes the
// scale 2^(8 - 8) = 1 and its 480 saturates (448 is E4M3's largest); Transformer Engine's rounding takes
// 2^-1 and keeps it. A block of 1.0 and 2^-20 loses the small value under both (the scale is 2^8 or 2^7;
// 2^-12 and 2^-13 are below E4M3's smallest subnormal 2^-9); a block of zeros is a zero block.
void TestMetrics::blockCensusByHand()
{
    std::vector<float> x(96, 0.0f);
    x[0] = 480.0f;
    x[1] = 3.0f;
    x[32] = 1.0f;
    x[33] = std::ldexp(1.0f, -20);
    const QByteArray bytes(reinterpret_cast<const char *>(x.data()), int(x.size() * sizeof(float)));
    QString error;
    for (const auto &[name, clipping] : {std::pair {"mxfp8-ocp", 1}, std::pair {"mxfp8", 0}}) {
        MemoryReader reader(DType::F32, {96}, bytes);
        Problem problem;
        const auto census
            = blockCensus(reader, *Recipe::parse(QLatin1String(name), fp8math::Format::E4M3, &error), &problem);
        QVERIFY2(census, qPrintable(problem.toString()));
        QCOMPARE(census->blocks, int64_t(3));
        QCOMPARE(census->zeroBlocks, int64_t(1));
        QCOMPARE(census->clippingBlocks, int64_t(clipping));
        QCOMPARE(census->saturatedElements, int64_t(clipping));
        QCOMPARE(census->underflowingBlocks, int64_t(1));
        QCOMPARE(census->underflowedElements, int64_t(1));
        QCOMPARE(census->flushedBlocks, int64_t(0));
        QVERIFY(std::abs(census->clippingPct() - clipping * 100.0 / 3) < 1e-12);
    }
    // A block of nothing but values far below the others' scale is flushed whole by NVFP4: its E4M3 block
    // scale (amax / 6 over a global scale set by the tensor amax 2^20) rounds to zero.
    std::vector<float> y(32, std::ldexp(1.0f, -20));
    y[0] = std::ldexp(1.0f, 20);
    const QByteArray ybytes(reinterpret_cast<const char *>(y.data()), int(y.size() * sizeof(float)));
    MemoryReader reader(DType::F32, {32}, ybytes);
    Problem problem;
    const auto census = blockCensus(reader, *Recipe::parse(QStringLiteral("nvfp4"), std::nullopt, &error), &problem);
    QVERIFY2(census, qPrintable(problem.toString()));
    QCOMPARE(census->blocks, int64_t(2));
    QCOMPARE(census->flushedBlocks, int64_t(1));
    QCOMPARE(census->underflowingBlocks, int64_t(2)); // the first block's 15 small values are lost as well
    QCOMPARE(census->underflowedElements, int64_t(31));
}

namespace {

// Where forEachField goes in a structure, and how often.
struct Visit {
    const char *base = nullptr;
    std::set<std::ptrdiff_t> offsets;
    size_t bytes = 0;
    int repeats = 0;
    void see(const void *field, size_t size)
    {
        if (!offsets.insert(static_cast<const char *>(field) - base).second)
            ++repeats;
        bytes += size;
    }
    template <class T> void add(T &into, const T &) { see(&into, sizeof(T)); }
    template <class T> void max(T &into, const T &) { see(&into, sizeof(T)); }
    template <class T> void min(T &into, const T &) { see(&into, sizeof(T)); }
};

} // namespace

void TestMetrics::everyFieldVisitedOnce()
{
    // forEachField is what every merge, fold to the host and block reduction runs over: a field of
    // MetricFields it left out would be dropped by all of them. Each field must be visited once, and together
    // they must fill the structure (its fields are all 8 bytes here, so there is no padding).
    fp8math::MetricFields<int64_t, double, double> fields;
    Visit visit;
    visit.base = reinterpret_cast<const char *>(&fields);
    fp8math::forEachField(fields, fields, visit);
    QCOMPARE(visit.repeats, 0);
    QCOMPARE(visit.bytes, sizeof(fields));

    // Merging splits of the data gives what one pass over all of it gives, extremes included.
    const std::vector<float> x = makeData(4096, 17);
    fp8math::QuantPlan plan;
    plan.mode = fp8math::ScaleMode::RowBlocks;
    plan.blockCols = 32;
    fp8math::MetricSums whole, first, second;
    fp8math::scalarAccumulateRowBlocks(x.data(), 64, 64, plan, whole);
    fp8math::scalarAccumulateRowBlocks(x.data(), 64, 32, plan, first);
    fp8math::scalarAccumulateRowBlocks(x.data() + 32 * 64, 64, 32, plan, second);
    first.merge(second);
    QCOMPARE(first.numel, whole.numel);
    QCOMPARE(first.nans, whole.nans);
    QCOMPARE(first.amax, whole.amax);
    QCOMPARE(first.aminNonzero, whole.aminNonzero);
    QCOMPARE(first.blocks, whole.blocks);
    QCOMPARE(first.scaleInvMin, whole.scaleInvMin);
    QCOMPARE(first.scaleInvMax, whole.scaleInvMax);
    QVERIFY(close(first.sumSq, whole.sumSq, 1e-12));
    QVERIFY(close(first.log2ScaleInvSum, whole.log2ScaleInvSum, 1e-12));
    QVERIFY(std::equal(std::begin(first.histScaled), std::end(first.histScaled), std::begin(whole.histScaled)));
}

#include "tst_metrics.moc"

// The block map (core/numerics/blockmap): every block's statistics against the scalar definition
// (fp8math::scalarBlockStats) for every block recipe and input type, totals against the census, and tensors
// with planted block problems: one outlier block that flushes its neighbours under E8M0, a band of tiny rows
// that per-tensor scaling flushes and block scales keep, a band NVFP4's global scale flushes.
#include "core/numerics/blockcensus.h"
#include "core/numerics/blockmap.h"
#include "core/numerics/cpubackend.h"
#include "core/numerics/scalarkernels.h"
#include "core/numerics/whatif.h"
#include "memoryreader.h"
#include "testmain.h"

#include <QJsonArray>
#include <QtTest>

#include <random>

using namespace fp8scope;

namespace {

Recipe recipe(const QString &name);
Recipe recipe(const char *name)
{
    return recipe(QString::fromLatin1(name));
}

Recipe recipe(const QString &name)
{
    QString error;
    const std::optional<Recipe> r = Recipe::parse(name, std::nullopt, &error);
    if (!r)
        qFatal("%s", qPrintable(error));
    return *r;
}

QByteArray bf16Bytes(const std::vector<float> &v)
{
    QByteArray b(qsizetype(v.size() * 2), Qt::Uninitialized);
    for (size_t i = 0; i < v.size(); ++i) {
        const uint32_t bits = fp8math::floatBits(v[i]);
        // round to nearest even, as torch casts
        const uint32_t r = (bits + 0x7FFFu + ((bits >> 16) & 1u)) >> 16;
        const uint16_t h = (bits & 0x7FFFFFFFu) > 0x7F800000u ? uint16_t(0x7FC0) : uint16_t(r);
        std::memcpy(b.data() + i * 2, &h, 2);
    }
    return b;
}

std::vector<float> fromBf16(const QByteArray &b)
{
    std::vector<float> v(size_t(b.size() / 2));
    for (size_t i = 0; i < v.size(); ++i) {
        uint16_t h;
        std::memcpy(&h, b.constData() + i * 2, 2);
        v[i] = fp8math::bitsFloat(uint32_t(h) << 16);
    }
    return v;
}

std::vector<float> gaussian(size_t n, unsigned seed, float sigma = 1.0f)
{
    std::mt19937 gen(seed);
    std::normal_distribution<float> d(0.0f, sigma);
    std::vector<float> v(n);
    for (float &x : v)
        x = d(gen);
    return v;
}

// The map by the scalar definition, block by block, from the tensor's float32 values.
BlockMap referenceMap(const std::vector<float> &x, int64_t rows, int64_t cols, const Recipe &r)
{
    const float tensorAmax = fp8math::scalarAmax(x.data(), x.size());
    const fp8math::QuantPlan plan = MetricsEngine::planFor(r, tensorAmax);
    BlockMap m;
    m.rows = rows;
    m.cols = cols;
    m.blockRows = plan.mode == fp8math::ScaleMode::TileBlocks ? plan.blockRows : 1;
    m.blockCols = plan.blockCols;
    m.gridRows = (rows + m.blockRows - 1) / m.blockRows;
    m.gridCols = (cols + m.blockCols - 1) / m.blockCols;
    const size_t n = size_t(m.blocks());
    std::vector<float> dec(n), amax(n), rel(n);
    std::vector<uint32_t> nz(n), lost(n), sat(n);
    const fp8math::BlockStatsOut out {dec.data(), amax.data(), nz.data(), lost.data(), sat.data(), rel.data()};
    for (int64_t b = 0; b < m.blocks(); ++b) {
        const int64_t r0 = m.firstRow(b), c0 = m.firstCol(b);
        const int64_t nr = std::min(m.blockRows, rows - r0), nc = std::min(m.blockCols, cols - c0);
        const float *p = x.data() + r0 * cols + c0;
        float a = 0.0f;
        for (int64_t i = 0; i < nr; ++i)
            a = std::max(a, fp8math::scalarAmax(p + i * cols, size_t(nc)));
        fp8math::scalarBlockStats(
            p, size_t(cols), size_t(nr), size_t(nc), a, fp8math::blockScaleFor(a, plan), plan.format, out, size_t(b));
    }
    m.scale = dec;
    m.amax = amax;
    m.nonzero.assign(nz.begin(), nz.end());
    m.lost.assign(lost.begin(), lost.end());
    m.saturated.assign(sat.begin(), sat.end());
    m.relErrSum = rel;
    return m;
}

std::optional<BlockMap> mapOf(
    DType dtype, int64_t rows, int64_t cols, const QByteArray &bytes, const Recipe &r, int threads = 2)
{
    MemoryReader reader(dtype, {rows, cols}, bytes);
    Problem problem;
    std::optional<BlockMap> m = computeBlockMap(reader, r, &problem, threads);
    if (!m)
        qWarning("%s", qPrintable(problem.message));
    return m;
}

} // namespace

class TestBlockMap : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void agreesWithTheScalarDefinition_data()
    {
        QTest::addColumn<QString>("recipe");
        QTest::addColumn<int>("dtype");
        for (const char *r :
            {"mxfp8", "mxfp8-ocp", "mxfp8-col", "nvfp4", "block1x128", "block128x128", "block1x128-fp32"}) {
            QTest::addRow("%s bf16", r) << QString::fromLatin1(r) << int(DType::BF16);
            QTest::addRow("%s f32", r) << QString::fromLatin1(r) << int(DType::F32);
        }
        QTest::addRow("mxfp8 f16") << QStringLiteral("mxfp8") << int(DType::F16);
        QTest::addRow("mxfp8 e5m2 bf16") << QStringLiteral("mxfp8:e5m2") << int(DType::BF16);
    }

    // Every block of a tensor with zeros, subnormals, inf and NaN, wide dynamic range and a short last block
    // per row (cols not a multiple of the block), under 1 and 2 threads, equals the scalar definition: counts,
    // scales and amaxes exactly, relative errors to float32 rounding.
    void agreesWithTheScalarDefinition()
    {
        QFETCH(QString, recipe);
        QFETCH(int, dtype);
        const qsizetype colon = recipe.indexOf(QLatin1Char(':'));
        Recipe r = ::recipe(colon < 0 ? recipe : recipe.left(colon));
        if (colon >= 0)
            r.format = fp8math::Format::E5M2;
        const int64_t rows = 300, cols = 1000 + 8; // 1008: 31.5 blocks of 32, 7.9 of 128
        std::vector<float> x = gaussian(size_t(rows * cols), 7);
        for (int64_t i = 0; i < rows * cols; ++i)
            x[size_t(i)] *= std::ldexp(1.0f, int(i % 41) - 20);
        x[5] = 0.0f;
        x[77] = std::numeric_limits<float>::infinity();
        x[300] = std::nanf("");
        x[1500] = 1e-39f;
        for (int64_t c = 0; c < cols; ++c)
            x[size_t(200 * cols + c)] = 0.0f; // a row of zeros
        QByteArray bytes;
        std::vector<float> values;
        if (DType(dtype) == DType::BF16) {
            bytes = bf16Bytes(x);
            values = fromBf16(bytes);
        } else if (DType(dtype) == DType::F16) {
            bytes.resize(qsizetype(x.size() * 2));
            values.resize(x.size());
            for (size_t i = 0; i < x.size(); ++i) {
                const qfloat16 h(std::clamp(x[i], -60000.0f, 60000.0f));
                std::memcpy(bytes.data() + i * 2, &h, 2);
                values[i] = float(h);
            }
        } else {
            bytes = QByteArray(reinterpret_cast<const char *>(x.data()), qsizetype(x.size() * 4));
            values = x;
        }
        const BlockMap ref = referenceMap(values, rows, cols, r);
        for (int threads : {1, 2}) {
            const std::optional<BlockMap> m = mapOf(DType(dtype), rows, cols, bytes, r, threads);
            QVERIFY(m);
            QCOMPARE(m->gridRows, ref.gridRows);
            QCOMPARE(m->gridCols, ref.gridCols);
            for (int64_t b = 0; b < ref.blocks(); ++b) {
                const size_t i = size_t(b);
                if (m->scale[i] != ref.scale[i] || m->amax[i] != ref.amax[i] || m->nonzero[i] != ref.nonzero[i]
                    || m->lost[i] != ref.lost[i] || m->saturated[i] != ref.saturated[i]
                    || std::abs(m->relErrSum[i] - ref.relErrSum[i]) > 1e-5f * std::max(1.0f, ref.relErrSum[i]))
                    QFAIL(qPrintable(QStringLiteral("block %1 (threads %2): scale %3/%4 amax %5/%6 nonzero %7/%8 lost "
                                                    "%9/%10 saturated %11/%12 rel %13/%14")
                                         .arg(b)
                                         .arg(threads)
                                         .arg(double(m->scale[i]))
                                         .arg(double(ref.scale[i]))
                                         .arg(double(m->amax[i]))
                                         .arg(double(ref.amax[i]))
                                         .arg(m->nonzero[i])
                                         .arg(ref.nonzero[i])
                                         .arg(m->lost[i])
                                         .arg(ref.lost[i])
                                         .arg(m->saturated[i])
                                         .arg(ref.saturated[i])
                                         .arg(double(m->relErrSum[i]))
                                         .arg(double(ref.relErrSum[i]))));
            }
        }
        // The census counts the same blocks as the scalar definition does.
        MemoryReader reader(DType(dtype), {rows, cols}, bytes);
        Problem problem;
        const std::optional<BlockCensus> census = blockCensus(reader, r, &problem);
        QVERIFY2(census, qPrintable(problem.message));
        int64_t clipping = 0, underflowing = 0, lost = 0, saturated = 0;
        for (int64_t b = 0; b < ref.blocks(); ++b) {
            clipping += ref.saturated[size_t(b)] > 0;
            underflowing += ref.lost[size_t(b)] > 0;
            lost += int64_t(ref.lost[size_t(b)]);
            saturated += int64_t(ref.saturated[size_t(b)]);
        }
        QCOMPARE(census->blocks, ref.blocks());
        QCOMPARE(census->clippingBlocks, clipping);
        QCOMPARE(census->underflowingBlocks, underflowing);
        QCOMPARE(census->underflowedElements, lost);
        QCOMPARE(census->saturatedElements, saturated);
    }

    // One value 10^4 times its neighbours' scale in one 1x32 block: under E8M0 scales its block's other
    // values flush to zero; that block is ranked first, alone flagged, the pattern isolated; healthy blocks
    // of the same tensor are not flagged.
    void outlierBlockRankedFirst()
    {
        const int64_t rows = 256, cols = 1024;
        std::vector<float> x = gaussian(size_t(rows * cols), 11, 0.01f);
        x[size_t(37 * cols + 300)] = 5000.0f;
        for (const char *name : {"mxfp8", "mxfp8-ocp"}) {
            const std::optional<BlockMap> m = mapOf(DType::BF16, rows, cols, bf16Bytes(x), recipe(name));
            QVERIFY(m);
            const std::vector<int64_t> worst = m->ranked(3);
            QCOMPARE(worst.front(), 37 * m->gridCols + 300 / 32);
            QVERIFY(m->flagged(worst.front()));
            QVERIFY(m->underflowPct(worst.front()) > 50.0);
            QCOMPARE(m->flaggedCount(), int64_t(1));
            QCOMPARE(m->pattern(), BlockPattern::Isolated);
            QVERIFY(m->patternText().contains(QLatin1String("isolated")));
            QVERIFY(m->patternText().contains(QLatin1String("block (37, 9)")));
            // The E8M0 exponent of the outlier's block: 2^ceil(log2(5000/448)) = 2^4 under TE's rounding.
            if (QLatin1String(name) == QLatin1String("mxfp8"))
                QCOMPARE(m->scaleExponent(worst.front()), std::optional<int>(4));
            const QJsonObject json = m->toJson(2);
            QCOMPARE(json.value(QLatin1String("pattern")).toString(), QStringLiteral("isolated"));
            QCOMPARE(json.value(QLatin1String("worst")).toArray().size(), 2);
            QCOMPARE(
                json.value(QLatin1String("worst")).toArray().at(0).toObject().value(QLatin1String("row")).toInt(), 37);
        }
        // The same tensor under per-tensor current scaling: one block, and the outlier's scale flushes most of
        // the tensor.
        const std::optional<BlockMap> current = mapOf(DType::BF16, rows, cols, bf16Bytes(x), recipe("current"));
        QVERIFY(current);
        QCOMPARE(current->blocks(), int64_t(1));
        QCOMPARE(current->blockShape(), QStringLiteral("256x1024"));
        QVERIFY(current->underflowPct(0) > 50.0);
        QVERIFY(current->flagged(0));
    }

    // A band of 32 rows 10^-9 times the rest: per-tensor scaling flushes them all, 1x32 E8M0 blocks keep them
    // (nothing flagged), and NVFP4's E4M3 block scales under its FP32 global scale flush them: a row band.
    void bandOfTinyRows()
    {
        const int64_t rows = 512, cols = 1024;
        std::vector<float> x = gaussian(size_t(rows * cols), 5);
        for (int64_t r = 100; r < 132; ++r) {
            for (int64_t c = 0; c < cols; ++c)
                x[size_t(r * cols + c)] *= 1e-9f;
        }
        const QByteArray bytes = bf16Bytes(x);
        const std::optional<BlockMap> current = mapOf(DType::BF16, rows, cols, bytes, recipe("current"));
        QVERIFY(current);
        QVERIFY(current->underflowPct(0) > 6.0); // the band's 32 of 512 rows, at least

        const std::optional<BlockMap> mx = mapOf(DType::BF16, rows, cols, bytes, recipe("mxfp8"));
        QVERIFY(mx);
        QCOMPARE(mx->flaggedCount(), int64_t(0));
        QCOMPARE(mx->pattern(), BlockPattern::None);
        for (int64_t b = 0; b < mx->blocks(); ++b)
            QCOMPARE(mx->lost[size_t(b)] <= 1, true);

        const std::optional<BlockMap> nv = mapOf(DType::BF16, rows, cols, bytes, recipe("nvfp4"));
        QVERIFY(nv);
        std::vector<int64_t> band;
        QCOMPARE(nv->pattern(&band), BlockPattern::RowBand);
        QCOMPARE(band.front(), int64_t(100));
        QCOMPARE(band.back(), int64_t(131));
        for (int64_t b : nv->ranked(nv->gridCols * 32)) {
            const int64_t row = b / nv->gridCols;
            QVERIFY2(row >= 100 && row < 132, qPrintable(QString::number(row)));
            QCOMPARE(nv->underflowPct(b), 100.0);
        }
        QVERIFY(nv->patternText().contains(QLatin1String("block rows 100-131")));
    }

    // The what-if of block recipes carries each one's block evidence (the census counted from the same map),
    // stored and read back alike; a per-tensor recipe has none.
    void whatIfCarriesBlockEvidence()
    {
        const int64_t rows = 128, cols = 512;
        std::vector<float> x = gaussian(size_t(rows * cols), 11, 0.01f);
        x[size_t(37 * cols + 300)] = 5000.0f;
        MemoryReader reader(DType::BF16, {rows, cols}, bf16Bytes(x));
        CpuBackend backend(1);
        Problem problem;
        const std::optional<WhatIfResult> w
            = computeWhatIf(reader, {recipe("current"), recipe("mxfp8"), recipe("nvfp4")}, backend, &problem);
        QVERIFY2(w, qPrintable(problem.message));
        QVERIFY(!w->rows[0].blocks);
        const WhatIfRow &mx = w->rows[1];
        QVERIFY(mx.blocks && mx.census);
        QCOMPARE(mx.blocks->flagged, int64_t(1));
        QCOMPARE(mx.blocks->pattern, QStringLiteral("isolated"));
        QCOMPARE(mx.blocks->worst.at(0).toObject().value(QLatin1String("row")).toInt(), 37);
        QVERIFY(mx.blocks->fp32); // flagged blocks: the same blocks with FP32 scales
        QCOMPARE(mx.blocks->fp32Recipe, QStringLiteral("block1x32-fp32"));
        QCOMPARE(mx.census->underflowingBlocks >= 1, true);
        QString error;
        const std::optional<WhatIfResult> back = whatIfFromJson(whatIfToJson(*w), &error);
        QVERIFY2(back, qPrintable(error));
        QVERIFY(back->rows[1].blocks);
        QCOMPARE(back->rows[1].blocks->sentence(), mx.blocks->sentence());
        QCOMPARE(back->rows[2].blocks->pattern, w->rows[2].blocks->pattern);
        QVERIFY(whatIfIsCurrent(*back));
        // A what-if stored before block evidence existed is not current (it is computed again).
        QJsonObject old = whatIfToJson(*w);
        QJsonArray stored = old.value(QLatin1String("rows")).toArray();
        for (qsizetype i = 0; i < stored.size(); ++i) {
            QJsonObject row = stored.at(i).toObject();
            row.remove(QLatin1String("block_evidence"));
            stored.replace(i, row);
        }
        old.insert(QLatin1String("rows"), stored);
        const std::optional<WhatIfResult> stale = whatIfFromJson(old, &error);
        QVERIFY(stale && !whatIfIsCurrent(*stale));
    }

    // The values of one block, read back for its histogram.
    void valuesOfOneBlock()
    {
        const int64_t rows = 64, cols = 256;
        const std::vector<float> x = fromBf16(bf16Bytes(gaussian(size_t(rows * cols), 3)));
        const QByteArray bytes = bf16Bytes(x);
        MemoryReader reader(DType::BF16, {rows, cols}, bytes);
        Problem problem;
        const std::optional<BlockMap> m = computeBlockMap(reader, recipe("block128x128"), &problem, 1);
        QVERIFY(m);
        QCOMPARE(m->gridRows, int64_t(1));
        QCOMPARE(m->gridCols, int64_t(2));
        const std::optional<std::vector<float>> v = blockValues(reader, *m, 1, &problem);
        QVERIFY(v);
        QCOMPARE(v->size(), size_t(64 * 128));
        QCOMPARE(v->at(0), x[128]);
        QCOMPARE(v->at(128), x[size_t(cols + 128)]);
        QCOMPARE(v->back(), x.back());
        QVERIFY(!blockValues(reader, *m, 2, &problem));
        QVERIFY(problem.message.contains(QLatin1String("not in the map")));
    }

    // The what-if per block: the FP32-scaled counterpart of each recipe, and the two maps compared.
    void fp32ScalesOnTheSameBlocks()
    {
        QCOMPARE(fp32ScaledCounterpart(recipe("mxfp8"))->name(), QStringLiteral("block1x32-fp32"));
        QCOMPARE(fp32ScaledCounterpart(recipe("mxfp8-col"))->name(), QStringLiteral("block32x1-fp32"));
        QCOMPARE(fp32ScaledCounterpart(recipe("nvfp4"))->name(), QStringLiteral("block1x16-fp32"));
        QCOMPARE(fp32ScaledCounterpart(recipe("nvfp4"))->format, fp8math::Format::E2M1);
        QVERIFY(!fp32ScaledCounterpart(recipe("current")));
        // Counterparts parse back; block shapes are powers of two up to 128 (no tile crosses a chunk).
        QString error;
        QCOMPARE(Recipe::parse(QStringLiteral("block1x32-fp32"), std::nullopt, &error)->blockCols, 32);
        QVERIFY(Recipe::parse(QStringLiteral("block1x128"), std::nullopt, &error)->pow2);
        QVERIFY(!Recipe::parse(QStringLiteral("block3x5"), std::nullopt, &error));
        QVERIFY(error.contains(QLatin1String("powers of two")));
        QVERIFY(!Recipe::parse(QStringLiteral("block256x1"), std::nullopt, &error));
        QVERIFY(!Recipe::parse(QStringLiteral("block1x128-fp16"), std::nullopt, &error));
        QVERIFY(!fp32ScaledCounterpart(recipe("block1x128-fp32")));

        // Blocks whose amax is just above 448: E8M0 (rounded up) puts it at 226, a binade lower than an FP32
        // scale would, and their other values (2^-18 of the amax) at 0.00086, under half E4M3's smallest
        // subnormal (2^-9): flushed. An FP32 scale puts them at 0.0017, which rounds to 2^-9: kept.
        const int64_t rows = 64, cols = 256;
        std::vector<float> x(size_t(rows * cols));
        for (size_t i = 0; i < x.size(); ++i)
            x[i] = (i % 32 == 0 ? 1.01f * 448.0f : 1.01f * 448.0f * std::exp2(-18.0f)) * (i % 2 ? -1.0f : 1.0f);
        const QByteArray bytes = bf16Bytes(x);
        const std::optional<BlockMap> mx = mapOf(DType::BF16, rows, cols, bytes, recipe("mxfp8"));
        const std::optional<BlockMap> fp32
            = mapOf(DType::BF16, rows, cols, bytes, *fp32ScaledCounterpart(recipe("mxfp8")));
        QVERIFY(mx && fp32);
        const BlockScaleWhatIf w = compareBlockScales(*mx, *fp32);
        QCOMPARE(w.flagged, mx->blocks());
        QCOMPARE(w.flaggedWithFp32, int64_t(0));
        QCOMPARE(w.repaired, mx->blocks());
        QVERIFY(w.meanRelErrorWithFp32 < 0.5 * w.meanRelError);
        QVERIFY(w.text().contains(QLatin1String("with FP32 scales on the same blocks")));
    }

    // A field's name round-trips; a 1-D tensor is one row of blocks.
    void fieldsAndOneDimension()
    {
        for (BlockField f :
            {BlockField::Scale, BlockField::Amax, BlockField::Underflow, BlockField::Saturated, BlockField::RelError})
            QCOMPARE(blockFieldFromName(blockFieldName(f)), std::optional<BlockField>(f));
        QVERIFY(!blockFieldFromName(QStringLiteral("mse")));
        const std::vector<float> x = gaussian(1000, 9);
        MemoryReader reader(DType::F32, {1000}, QByteArray(reinterpret_cast<const char *>(x.data()), 4000));
        Problem problem;
        const std::optional<BlockMap> m = computeBlockMap(reader, recipe("mxfp8"), &problem, 2);
        QVERIFY(m);
        QCOMPARE(m->gridRows, int64_t(1));
        QCOMPARE(m->gridCols, int64_t(32)); // 31 blocks of 32 and one of 8
        QCOMPARE(m->elements(31), int64_t(8));
        const BlockMap ref = referenceMap(x, 1, 1000, recipe("mxfp8"));
        QCOMPARE(m->nonzero, ref.nonzero);
        QCOMPARE(m->scale, ref.scale);
        // An empty tensor has no blocks: said, under a block recipe and a per-tensor one alike.
        for (const char *name : {"mxfp8", "current"}) {
            MemoryReader empty(DType::BF16, {0, 32}, QByteArray());
            QVERIFY(!computeBlockMap(empty, recipe(name), &problem, 1));
            QVERIFY2(problem.message.contains(QLatin1String("empty")), qPrintable(problem.message));
        }
        // A map is not read against another tensor.
        MemoryReader other(DType::F32, {10}, QByteArray(40, 0));
        QVERIFY(!blockValues(other, *m, 31, &problem));
    }
};

FP8SCOPE_TEST_APPLESS_MAIN(TestBlockMap)
#include "tst_blockmap.moc"

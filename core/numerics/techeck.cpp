#include "techeck.h"

#include "core/formats/fp8math.h"
#include "core/numerics/metricsengine.h"
#include "core/numerics/scalarkernels.h"
#include "core/tensors/torchfile.h"

#include <QJsonArray>
#include <QLocale>

#include <cmath>
#include <cstring>

namespace fp8scope {

using namespace fp8math;

namespace {

constexpr size_t kDifferencesKept = 50;

QString dims(const std::vector<int64_t> &shape)
{
    QStringList d;
    for (int64_t v : shape)
        d << QString::number(v);
    return d.join(QLatin1Char('x'));
}

// A buffer's bytes, row-major; false with *why when its view is not contiguous.
bool readBuffer(TorchArchive &archive, const TorchEntry &e, QByteArray *out, QString *why)
{
    int64_t expect = 1;
    for (size_t i = e.shape.size(); i-- > 0;) {
        if (e.shape[i] > 1 && e.stride[i] != expect) {
            *why = QStringLiteral("%1 is not stored contiguously").arg(e.name);
            return false;
        }
        expect *= e.shape[i];
    }
    out->resize(qsizetype(expect * e.elementSize));
    Problem p;
    if (!archive.readStorage(e.storageKey, e.storageOffset * e.elementSize, out->size(), out->data(), &p)) {
        *why = p.message;
        return false;
    }
    return true;
}

// One copy as stored: its codes and its scale grid, each possibly transposed against the copy's view.
struct StoredCopy {
    QString copy;
    bool transposed = false; // the view is the tensor's transpose
    QByteArray data;
    bool dataTransposed = false; // data holds the view's transpose (MXFP8's column-wise copy)
    bool packed = false; // two FP4 codes a byte, the first in the low nibble
    QByteArray scale;
    enum class ScaleType { E8M0, E4M3, F32 } scaleType = ScaleType::F32;
    bool scaleTransposed = false; // the grid is stored block column by block row
    int64_t scaleStoredCols = 1;
    float teGlobalDecode = 1.0f; // NVFP4: from the amax TE stored
};

int ordinal(uint32_t code, Format f)
{
    const uint32_t sign = formatSpec(f).signBit;
    const int mag = int(code & ~sign);
    return (code & sign) ? -mag : mag;
}

class CopyComparer
{
public:
    CopyComparer(const std::vector<float> &view, int64_t rows, int64_t cols, const Recipe &recipe, float tensorAmax)
        : m_view(view)
        , m_rows(rows)
        , m_cols(cols)
        , m_recipe(recipe)
        , m_plan(MetricsEngine::planFor(recipe, tensorAmax))
    {
    }

    // Float8Tensor: one scale, TE's (its delayed scale cannot be formed from the dump); the current
    // scaling's scale where TE's scale_inv is its reciprocal, bit for bit.
    void setTensorScale(float encode, float decode, bool compared)
    {
        m_plan.tensorScale = encode;
        m_plan.tensorScaleInv = decode;
        m_tensorScaleCompared = compared;
    }

    TeCopyCheck compare(const StoredCopy &s) const
    {
        TeCopyCheck c;
        c.copy = s.copy;
        c.transposed = s.transposed;
        c.rows = m_rows;
        c.cols = m_cols;
        const bool tensorMode = m_plan.mode == ScaleMode::Tensor;
        c.blockRows = tensorMode ? m_rows : (m_plan.mode == ScaleMode::TileBlocks ? m_plan.blockRows : 1);
        c.blockCols = tensorMode ? m_cols : m_plan.blockCols;
        const int64_t gridRows = (m_rows + c.blockRows - 1) / c.blockRows;
        const int64_t gridCols = (m_cols + c.blockCols - 1) / c.blockCols;
        c.blocks = gridRows * gridCols;
        const Format f = m_recipe.format;
        BlockMap &map = c.map;
        map.recipe = m_recipe;
        map.setGrid(m_rows, m_cols, c.blockRows, c.blockCols);
        map.globalDecode = s.scaleType == StoredCopy::ScaleType::E4M3 ? s.teGlobalDecode : 0.0f;
        const float fmax = formatSpec(f).maxFinite;
        for (int64_t br = 0; br < gridRows; ++br) {
            for (int64_t bc = 0; bc < gridCols; ++bc) {
                const int64_t r0 = br * c.blockRows, c0 = bc * c.blockCols;
                const int64_t nr = std::min(c.blockRows, m_rows - r0), nc = std::min(c.blockCols, m_cols - c0);
                float amax = 0.0f;
                for (int64_t r = r0; r < r0 + nr; ++r)
                    amax = std::max(amax, scalarAmax(m_view.data() + r * m_cols + c0, size_t(nc)));
                BlockScale ref {m_plan.tensorScale, m_plan.tensorScaleInv};
                bool differs = false;
                const size_t block = size_t(br * gridCols + bc);
                map.amax[block] = amax;
                // TE's decode scale of the block, for its map (Float8Tensor: its one scale_inv).
                const double teDecode = tensorMode ? double(m_plan.tensorScaleInv) : scaleAt(s, br, bc, amax, false).te;
                map.scale[block] = float(teDecode);
                double blockRel = 0.0; // in double: Float8Tensor's one block is the whole tensor
                if (!tensorMode || m_tensorScaleCompared) {
                    if (!tensorMode)
                        ref = blockScaleFor(amax, m_plan);
                    ++c.scalesCompared;
                    const auto [te, refValue, by, same] = scaleAt(s, br, bc, amax, tensorMode);
                    if (!same) {
                        differs = true;
                        ++c.scalesDiffering;
                        if (std::isfinite(by))
                            c.maxScaleBinades = std::max(c.maxScaleBinades, std::abs(by));
                        if (c.differences.size() < kDifferencesKept)
                            c.differences.push_back({TeDifference::Kind::Scale, br, bc, te, refValue, by});
                    }
                }
                for (int64_t r = r0; r < r0 + nr; ++r) {
                    for (int64_t col = c0; col < c0 + nc; ++col) {
                        const float x = m_view[size_t(r * m_cols + col)];
                        const uint32_t refCode = castToCode(x * ref.encode, f);
                        const uint32_t teCode = codeAt(s, r, col);
                        ++c.codes;
                        const float ax = std::fabs(x);
                        if (ax > 0.0f && ax <= kFloatMax) {
                            const double q = double(decodeCode(teCode, f)) * teDecode;
                            ++map.nonzero[block];
                            map.lost[block] += q == 0.0 ? 1 : 0;
                            blockRel += std::fabs(double(x) - q) / double(ax);
                        }
                        map.saturated[block] += double(ax) > double(fmax) * teDecode ? 1 : 0;
                        if (teCode == refCode)
                            continue;
                        differs = true;
                        ++c.codesDiffering;
                        const int steps = ordinal(teCode, f) - ordinal(refCode, f);
                        c.maxCodeSteps = std::max(c.maxCodeSteps, std::abs(steps));
                        if (c.differences.size() < kDifferencesKept)
                            c.differences.push_back(
                                {TeDifference::Kind::Code, r, col, double(decodeCode(teCode, f)) * ref.decode,
                                    double(decodeCode(refCode, f)) * ref.decode, double(steps)});
                    }
                }
                map.relErrSum[block] = float(blockRel);
                c.blocksDiffering += differs ? 1 : 0;
            }
        }
        return c;
    }

private:
    uint32_t codeAt(const StoredCopy &s, int64_t r, int64_t c) const
    {
        const auto *d = reinterpret_cast<const uint8_t *>(s.data.constData());
        if (s.packed) {
            const uint8_t b = d[r * ((m_cols + 1) / 2) + c / 2];
            return (c % 2 == 0) ? (b & 0xFu) : (b >> 4);
        }
        return s.dataTransposed ? d[c * m_rows + r] : d[r * m_cols + c];
    }

    struct ScaleFound {
        double te;
        double reference;
        double by;
        bool same;
    };

    ScaleFound scaleAt(const StoredCopy &s, int64_t br, int64_t bc, float amax, bool tensorMode) const
    {
        const int64_t index
            = tensorMode ? 0 : (s.scaleTransposed ? bc * s.scaleStoredCols + br : br * s.scaleStoredCols + bc);
        const char *p = s.scale.constData();
        switch (s.scaleType) {
        case StoredCopy::ScaleType::E8M0: {
            const uint32_t te = uint8_t(p[index]);
            const uint32_t ref = mxScaleCode(amax, m_recipe.format, m_recipe.ocpRule);
            return {double(e8m0ToFloat(te)), double(e8m0ToFloat(ref)), double(int(te) - int(ref)), te == ref};
        }
        case StoredCopy::ScaleType::E4M3: {
            const uint32_t te = uint8_t(p[index]);
            const float blockDecode = amax * (1.0f / 6.0f);
            const uint32_t ref = castToCode(blockDecode * m_plan.globalEncode, Format::E4M3);
            const double teValue = double(decodeCode(te, Format::E4M3)) * s.teGlobalDecode;
            const double refValue = double(decodeCode(ref, Format::E4M3)) / m_plan.globalEncode;
            const double by = teValue > 0 && refValue > 0 ? std::log2(teValue / refValue) : NAN;
            return {teValue, refValue, by, te == ref};
        }
        case StoredCopy::ScaleType::F32: {
            float te = 0.0f;
            std::memcpy(&te, p + index * 4, 4);
            const float ref = tensorMode ? m_plan.tensorScaleInv : blockScaleFor(amax, m_plan).decode;
            const double by = te > 0 && ref > 0 ? std::log2(double(te) / double(ref)) : NAN;
            return {double(te), double(ref), by, floatBits(te) == floatBits(ref)};
        }
        }
        return {0, 0, 0, true};
    }

    const std::vector<float> &m_view;
    int64_t m_rows;
    int64_t m_cols;
    Recipe m_recipe;
    QuantPlan m_plan;
    bool m_tensorScaleCompared = true;
};

// The tensor's 2-D view (or its transpose) as float32.
std::vector<float> transposed(const std::vector<float> &x, int64_t rows, int64_t cols)
{
    std::vector<float> t(x.size());
    for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c)
            t[size_t(c * rows + r)] = x[size_t(r * cols + c)];
    return t;
}

QString highPrecisionSibling(const QString &entry)
{
    const qsizetype dot = entry.lastIndexOf(QLatin1Char('.'));
    return dot < 0 ? QStringLiteral("high_precision") : entry.left(dot + 1) + QStringLiteral("high_precision");
}

const TeQuantized *findQuantized(const TorchContents &contents, const QString &entry)
{
    for (const TeQuantized &q : contents.quantized) {
        if (entry.isEmpty() || q.name == entry)
            return &q;
    }
    return nullptr;
}

// The rows and columns of the 2-D view of a shape.
std::pair<int64_t, int64_t> view2D(const std::vector<int64_t> &shape)
{
    TensorInfo info;
    info.shape = shape;
    finishTensorInfo(info);
    return {std::max<int64_t>(info.rows, 1), info.rows > 1 ? info.cols : info.numel};
}

std::optional<Recipe> recipeOf(const TeQuantized &q, TorchArchive &archive, QString *why)
{
    Recipe r;
    r.format = q.element == DType::F8E5M2 ? Format::E5M2 : (q.element == DType::F4E2M1 ? Format::E2M1 : Format::E4M3);
    if (q.teClass == QLatin1String("Float8Tensor")) {
        r.kind = RecipeKind::Current;
    } else if (q.teClass == QLatin1String("MXFP8Tensor")) {
        r.kind = RecipeKind::MxFp8;
        r.blockCols = 32;
    } else if (q.teClass == QLatin1String("NVFP4Tensor")) {
        if (q.element != DType::F4E2M1) {
            *why = QStringLiteral("an NVFP4Tensor whose fp4_dtype is not Transformer Engine's kFloat4E2M1 (10)");
            return std::nullopt;
        }
        r.kind = RecipeKind::NvFp4;
    } else if (q.teClass == QLatin1String("Float8BlockwiseQTensor")) {
        r.kind = RecipeKind::Block;
        const bool rowwise = q.rowwiseScale >= 0;
        const TorchEntry &s = archive.contents().buffers[size_t(rowwise ? q.rowwiseScale : q.columnwiseScale)];
        const auto [m, k] = view2D(q.shape);
        // The column-wise copy's scales are those of the transpose's view.
        const std::optional<TeBlockwiseLayout> layout
            = teBlockwiseLayout(s.shape, rowwise ? m : k, rowwise ? k : m, q.is2D);
        if (!layout) {
            *why = QStringLiteral("its scale_inv %1 fits none, or more than one, of Transformer Engine's block layouts "
                                  "for a %2x%3 view")
                       .arg(dims(s.shape))
                       .arg(rowwise ? m : k)
                       .arg(rowwise ? k : m);
            return std::nullopt;
        }
        r.blockRows = layout->twoD ? 128 : 1;
        r.blockCols = 128;
        // Power-of-two scales where every scale of the grid is one (the padding is not read).
        QByteArray bytes;
        if (!readBuffer(archive, s, &bytes, why))
            return std::nullopt;
        const int64_t vr = rowwise ? m : k, vc = rowwise ? k : m;
        const int64_t gr = (vr + r.blockRows - 1) / r.blockRows, gc = (vc + 127) / 128;
        const int64_t storedCols = s.shape.size() == 2 ? s.shape[1] : 1;
        bool pow2 = true;
        for (int64_t i = 0; i < gr && pow2; ++i) {
            for (int64_t j = 0; j < gc && pow2; ++j) {
                const int64_t at = layout->transposed ? j * storedCols + i : i * storedCols + j;
                float v = 0.0f;
                std::memcpy(&v, bytes.constData() + at * 4, 4);
                pow2 = v == 0.0f || (floatBits(v) & 0x7FFFFFu) == 0;
            }
        }
        r.pow2 = pow2;
    } else {
        *why = QStringLiteral("%1 is not compared").arg(q.teClass);
        return std::nullopt;
    }
    return r;
}

} // namespace

QJsonObject TeDifference::toJson() const
{
    const char *k = kind == Kind::Scale ? "scale" : (kind == Kind::Code ? "code" : "amax");
    const QString where = kind == Kind::Code ? QStringLiteral("element") : QStringLiteral("block");
    return {{QStringLiteral("kind"), QLatin1String(k)}, {QStringLiteral("at"), where},
        {QStringLiteral("row"), double(row)}, {QStringLiteral("col"), double(col)}, {QStringLiteral("te"), te},
        {QStringLiteral("reference"), reference},
        {QStringLiteral("by"), std::isfinite(by) ? QJsonValue(by) : QJsonValue()}};
}

QJsonObject TeCopyCheck::toJson() const
{
    QJsonArray diffs;
    for (const TeDifference &d : differences)
        diffs.append(d.toJson());
    return {{QStringLiteral("copy"), copy}, {QStringLiteral("transposed"), transposed},
        {QStringLiteral("view"), QJsonArray {double(rows), double(cols)}},
        {QStringLiteral("block"), QStringLiteral("%1x%2").arg(blockRows).arg(blockCols)},
        {QStringLiteral("blocks"), double(blocks)}, {QStringLiteral("scales_compared"), double(scalesCompared)},
        {QStringLiteral("scales_differing"), double(scalesDiffering)}, {QStringLiteral("codes"), double(codes)},
        {QStringLiteral("codes_differing"), double(codesDiffering)},
        {QStringLiteral("blocks_differing"), double(blocksDiffering)}, {QStringLiteral("max_code_steps"), maxCodeSteps},
        {QStringLiteral("max_scale_binades"), maxScaleBinades}, {QStringLiteral("equal"), equal()},
        {QStringLiteral("differences"), diffs}, {QStringLiteral("te_map"), map.toJson(5)}};
}

bool TeCheck::equal() const
{
    for (const TeCopyCheck &c : copies) {
        if (!c.equal())
            return false;
    }
    for (const TeDifference &d : tensorScale) {
        if (d.te != d.reference)
            return false;
    }
    return true;
}

QString TeCheck::summary() const
{
    const QLocale c = QLocale::c();
    QStringList parts;
    for (const TeDifference &d : tensorScale) {
        if (d.te != d.reference)
            parts << QStringLiteral("the %1 amax TE stored is %2, the tensor's is %3")
                         .arg(d.row == 0 ? QStringLiteral("row-wise") : QStringLiteral("column-wise"),
                             QString::number(d.te, 'g', 6), QString::number(d.reference, 'g', 6));
    }
    for (const TeCopyCheck &k : copies) {
        if (k.equal()) {
            parts << QStringLiteral("%1 equal (%2 scales, %3 codes)")
                         .arg(k.copy, c.toString(qlonglong(k.scalesCompared)), c.toString(qlonglong(k.codes)));
            continue;
        }
        QStringList what;
        if (k.scalesDiffering)
            what << QStringLiteral("%1 of %2 scales differ (by up to %3 binades)")
                        .arg(c.toString(qlonglong(k.scalesDiffering)), c.toString(qlonglong(k.scalesCompared)))
                        .arg(k.maxScaleBinades, 0, 'g', 3);
        if (k.codesDiffering)
            what << QStringLiteral("%1 of %2 codes differ (by up to %3 steps)")
                        .arg(c.toString(qlonglong(k.codesDiffering)), c.toString(qlonglong(k.codes)))
                        .arg(k.maxCodeSteps);
        QString first;
        if (!k.differences.empty()) {
            const TeDifference &d = k.differences.front();
            first = d.kind == TeDifference::Kind::Scale
                ? QStringLiteral("; first at block (%1, %2)").arg(d.row).arg(d.col)
                : QStringLiteral("; first at element (%1, %2)").arg(d.row).arg(d.col);
        }
        parts << QStringLiteral("%1: %2 in %3 %4%5")
                     .arg(k.copy, what.join(QStringLiteral(", ")), c.toString(qlonglong(k.blocksDiffering)),
                         k.blocksDiffering == 1 ? QStringLiteral("block") : QStringLiteral("blocks"), first);
        if (k.map.flaggedCount() > 0)
            parts << QStringLiteral("as TE quantized the %1 copy: %2").arg(k.copy, k.map.patternText());
    }
    return QStringLiteral("%1 against %2 of %3: %4")
        .arg(teClass, recipe.name(), highPrecision, parts.join(QStringLiteral("; ")));
}

QJsonObject TeCheck::toJson(int top) const
{
    QJsonArray c;
    for (TeCopyCheck copy : copies) {
        if (top >= 0 && copy.differences.size() > size_t(top))
            copy.differences.resize(size_t(top));
        c.append(copy.toJson());
    }
    QJsonArray amax;
    for (const TeDifference &d : tensorScale)
        amax.append(QJsonObject {
            {QStringLiteral("copy"), d.row == 0 ? QStringLiteral("rowwise") : QStringLiteral("columnwise")},
            {QStringLiteral("te"), d.te}, {QStringLiteral("tensor"), d.reference},
            {QStringLiteral("equal"), d.te == d.reference}});
    return {{QStringLiteral("file"), file}, {QStringLiteral("entry"), entry},
        {QStringLiteral("high_precision"), highPrecision}, {QStringLiteral("class"), teClass},
        {QStringLiteral("reference_recipe"), recipe.name()}, {QStringLiteral("format"), formatName(recipe.format)},
        {QStringLiteral("shape"), QJsonArray {double(rows), double(cols)}}, {QStringLiteral("equal"), equal()},
        {QStringLiteral("tensor_amax"), amax}, {QStringLiteral("copies"), c},
        {QStringLiteral("notes"), QJsonArray::fromStringList(notes)}, {QStringLiteral("summary"), summary()}};
}

QStringList teQuantizedEntries(const QString &file, Problem *problem)
{
    std::unique_ptr<TorchArchive> archive = TorchArchive::open(file, problem);
    if (!archive)
        return {};
    QStringList out;
    for (const TeQuantized &q : archive->contents().quantized)
        out << q.name;
    return out;
}

std::optional<Recipe> teRecipe(const QString &file, const QString &entry, Problem *problem)
{
    std::unique_ptr<TorchArchive> archive = TorchArchive::open(file, problem);
    if (!archive)
        return std::nullopt;
    const TeQuantized *q = findQuantized(archive->contents(), entry);
    if (!q) {
        *problem = {file, -1,
            QStringLiteral("no Transformer Engine quantized tensor%1")
                .arg(entry.isEmpty() ? QString() : QStringLiteral(" '%1'").arg(entry))};
        return std::nullopt;
    }
    QString why;
    std::optional<Recipe> r = recipeOf(*q, *archive, &why);
    if (!r)
        *problem = {file, -1, QStringLiteral("%1: %2").arg(q->name, why)};
    return r;
}

std::optional<TeCheck> checkTeQuantized(const QString &file, const QString &entry, Problem *problem)
{
    std::unique_ptr<TorchArchive> archive = TorchArchive::open(file, problem);
    if (!archive)
        return std::nullopt;
    const TorchContents &contents = archive->contents();
    const TeQuantized *q = findQuantized(contents, entry);
    const auto fail = [&](const QString &why) {
        *problem = {file, -1, why};
        return std::nullopt;
    };
    if (!q) {
        for (const TorchRefusal &r : contents.refused) {
            if (entry.isEmpty() ? r.name.endsWith(QLatin1String("quantized")) : r.name == entry)
                return fail(QStringLiteral("'%1' is not compared: %2").arg(r.name, r.why));
        }
        return fail(QStringLiteral("no Transformer Engine quantized tensor%1 in the file")
                        .arg(entry.isEmpty() ? QString() : QStringLiteral(" '%1'").arg(entry)));
    }
    TeCheck check;
    check.file = file;
    check.entry = q->name;
    check.teClass = q->teClass;
    check.highPrecision = highPrecisionSibling(q->name);
    if (q->swizzledScales)
        return fail(QStringLiteral("%1 (%2): its scales are in the GEMM's swizzled layout, which is not compared")
                        .arg(q->name, q->teClass));
    if (q->rowScaled || q->fourOverSix)
        return fail(
            QStringLiteral("%1: NVFP4 with %2 is not compared (one FP32 tensor scale and E4M3 1x16 block "
                           "scales are)")
                .arg(q->name,
                    q->rowScaled ? QStringLiteral("a scale per row") : QStringLiteral("4-over-6 block scaling")));
    QString why;
    const std::optional<Recipe> recipe = recipeOf(*q, *archive, &why);
    if (!recipe)
        return fail(QStringLiteral("%1: %2").arg(q->name, why));
    check.recipe = *recipe;

    // The high-precision tensor, whole, as float32.
    std::unique_ptr<TensorReader> hp = TorchReader::open(file, check.highPrecision, problem);
    if (!hp) {
        problem->message
            = QStringLiteral("%1 has no high_precision tensor to compare with: %2").arg(q->name, problem->message);
        return std::nullopt;
    }
    TensorInfo logical;
    logical.shape = q->shape;
    finishTensorInfo(logical);
    const TensorInfo &info = hp->info();
    if (info.numel != logical.numel || info.cols != logical.cols)
        return fail(
            QStringLiteral("%1 is %2, its high_precision tensor %3").arg(q->name, dims(q->shape), dims(info.shape)));
    const int64_t rows = std::max<int64_t>(info.rows, 1);
    const int64_t cols = info.rows > 1 ? info.cols : info.numel;
    check.rows = rows;
    check.cols = cols;
    if (rows * cols == 0)
        return fail(QStringLiteral("%1 is empty (%2): nothing to compare").arg(q->name, dims(q->shape)));
    if (rows * cols > (int64_t(1) << 31))
        return fail(QStringLiteral("%1: a tensor of %2 elements is more than the check reads at once")
                        .arg(q->name)
                        .arg(rows * cols));
    std::vector<float> x(size_t(rows * cols));
    {
        std::vector<char> raw(size_t(rows * cols * dtypeSize(info.dtype)));
        if (!hp->read(0, rows * cols, raw.data(), problem))
            return std::nullopt;
        widenToFloat(raw.data(), info.dtype, x.size(), x.data());
    }
    const float tensorAmax = scalarAmax(x.data(), x.size());
    const bool fp4 = q->element == DType::F4E2M1;

    // Each copy: its view, the shapes its buffers must have, where its codes and scales sit.
    struct CopyPlan {
        QString copy;
        int data, scale, amax;
        bool transposed; // the view is the tensor's transpose
        bool dataTransposed;
        bool scaleTransposed;
    };
    std::vector<CopyPlan> plans;
    const bool mx = q->teClass == QLatin1String("MXFP8Tensor");
    const bool blockwise = q->teClass == QLatin1String("Float8BlockwiseQTensor");
    const bool oneD = blockwise && recipe->blockRows == 1;
    if (q->rowwiseData >= 0 && q->rowwiseScale >= 0)
        plans.push_back(
            {QStringLiteral("rowwise"), q->rowwiseData, q->rowwiseScale, q->amaxRowwise, false, false, oneD});
    if (q->columnwiseData >= 0 && q->columnwiseScale >= 0)
        plans.push_back({QStringLiteral("columnwise"), q->columnwiseData, q->columnwiseScale, q->amaxColumnwise, true,
            mx, oneD || mx});
    std::vector<float> xt;
    for (const CopyPlan &p : plans) {
        const TorchEntry &data = contents.buffers[size_t(p.data)];
        const TorchEntry &scale = contents.buffers[size_t(p.scale)];
        const int64_t vr = p.transposed ? cols : rows; // the view quantized row-wise
        const int64_t vc = p.transposed ? rows : cols;
        StoredCopy s;
        s.copy = p.copy;
        s.transposed = p.transposed;
        s.dataTransposed = p.dataTransposed;
        s.packed = fp4;
        s.scaleTransposed = p.scaleTransposed;
        // The codes: bytes of the view's shape (MXFP8's column-wise copy: the tensor's), FP4 packed two a byte.
        const int64_t dr = p.dataTransposed ? vc : vr;
        const int64_t dc = p.dataTransposed ? vr : vc;
        TensorInfo di;
        di.shape = data.shape;
        finishTensorInfo(di);
        const int64_t storedCols = fp4 ? (dc + 1) / 2 : dc;
        if (data.elementSize != 1 || di.numel != dr * storedCols || (di.rows > 1 && di.cols != storedCols))
            return fail(QStringLiteral("%1's %2 data is %3 %4, not the %5x%6 bytes a %7x%8 %9 needs")
                            .arg(q->name, p.copy, data.dtypeName, dims(data.shape))
                            .arg(dr)
                            .arg(storedCols)
                            .arg(vr)
                            .arg(vc)
                            .arg(p.transposed ? QStringLiteral("transpose") : QStringLiteral("tensor")));
        if (!readBuffer(*archive, data, &s.data, &why) || !readBuffer(*archive, scale, &s.scale, &why))
            return fail(why);
        // The scales: one float32 (Float8Tensor), or a grid covering the view's blocks, possibly padded.
        const Recipe &r = *recipe;
        const int64_t br = r.kind == RecipeKind::Block ? r.blockRows : 1;
        const int64_t bc = r.kind == RecipeKind::NvFp4 ? 16 : (r.kind == RecipeKind::Current ? vc : r.blockCols);
        const int64_t gr = r.kind == RecipeKind::Current ? 1 : (vr + br - 1) / br;
        const int64_t gc = (vc + bc - 1) / bc;
        const int64_t needRows = p.scaleTransposed ? gc : gr;
        const int64_t needCols = p.scaleTransposed ? gr : gc;
        s.scaleType
            = mx ? StoredCopy::ScaleType::E8M0 : (fp4 ? StoredCopy::ScaleType::E4M3 : StoredCopy::ScaleType::F32);
        const int wantSize = s.scaleType == StoredCopy::ScaleType::F32 ? 4 : 1;
        const bool grid = r.kind != RecipeKind::Current;
        const bool fits = scale.elementSize == wantSize
            && (grid ? scale.shape.size() == 2 && scale.shape[0] >= needRows && scale.shape[1] >= needCols
                     : s.scale.size() == 4);
        if (!fits)
            return fail(QStringLiteral("%1's %2 scale_inv is %3 %4: it does not cover the %5x%6 grid of %7x%8 blocks "
                                       "a %9x%10 view needs%11")
                            .arg(q->name, p.copy, scale.dtypeName, dims(scale.shape))
                            .arg(needRows)
                            .arg(needCols)
                            .arg(br)
                            .arg(bc)
                            .arg(vr)
                            .arg(vc)
                            .arg(p.scaleTransposed ? QStringLiteral(" (stored transposed)") : QString()));
        s.scaleStoredCols = grid ? scale.shape[1] : 1;

        CopyComparer comparer(
            p.transposed ? (xt.empty() ? (xt = transposed(x, rows, cols)) : xt) : x, vr, vc, r, tensorAmax);
        if (fp4) {
            // The FP32 tensor scale TE used comes from the amax it stored beside the copy.
            float teAmax = tensorAmax;
            if (p.amax >= 0) {
                QByteArray a;
                const TorchEntry &ae = contents.buffers[size_t(p.amax)];
                if (!readBuffer(*archive, ae, &a, &why))
                    return fail(why);
                if (ae.elementSize != 4 || a.size() != 4)
                    return fail(QStringLiteral("%1's %2 amax is %3 %4, not one float32")
                                    .arg(q->name, p.copy, ae.dtypeName, dims(ae.shape)));
                std::memcpy(&teAmax, a.constData(), 4);
                check.tensorScale.push_back({TeDifference::Kind::Amax, p.transposed ? 1 : 0, 0, double(teAmax),
                    double(tensorAmax), tensorAmax > 0 ? double(teAmax) / double(tensorAmax) - 1.0 : NAN});
            }
            s.teGlobalDecode = 1.0f / nvfp4GlobalEncodeScale(teAmax);
        }
        if (r.kind == RecipeKind::Current) {
            float teDecode = 0.0f;
            std::memcpy(&teDecode, s.scale.constData(), 4);
            const float fmax = formatSpec(r.format).maxFinite;
            const float current = amaxScale(fmax, tensorAmax, false);
            const bool isCurrent = floatBits(1.0f / current) == floatBits(teDecode);
            comparer.setTensorScale(isCurrent ? current : 1.0f / teDecode, teDecode, false);
            if (check.notes.isEmpty())
                check.notes << (isCurrent
                        ? QStringLiteral(
                            "scale_inv %1 is current scaling's for this tensor (%2 / amax %3): codes compared under it")
                              .arg(double(teDecode), 0, 'g', 6)
                              .arg(double(fmax))
                              .arg(double(tensorAmax), 0, 'g', 6)
                        : QStringLiteral(
                            "scale_inv %1 is not current scaling's for this tensor (%2): delayed scaling's comes from "
                            "an amax history the dump does not hold; codes compared under TE's scale")
                              .arg(double(teDecode), 0, 'g', 6)
                              .arg(double(1.0f / current), 0, 'g', 6));
        }
        check.copies.push_back(comparer.compare(s));
        check.copies.back().map.tensor = q->name + QLatin1Char('.') + p.copy;
    }
    if (check.copies.empty())
        return fail(QStringLiteral("%1 holds no copy with both its data and its scale_inv").arg(q->name));
    return check;
}

} // namespace fp8scope

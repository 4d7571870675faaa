#include "fp8decode.h"

#include "core/formats/fp8math.h"

#include <QSet>

#include <algorithm>

namespace fp8scope {

namespace {

int64_t ceilDiv(int64_t a, int64_t b)
{
    return (a + b - 1) / b;
}

// The block length along a dimension of n elements that a grid of g scales implies.
std::optional<int64_t> blockLength(int64_t n, int64_t g)
{
    if (g == 1)
        return std::max<int64_t>(n, 1);
    if (g == n)
        return 1;
    for (int64_t b : {128, 32, 16, 64, 256, 512}) {
        if (ceilDiv(n, b) == g)
            return b;
    }
    return std::nullopt;
}

const char *const kScaleSuffixes[] = {"_scale_inv", ".scale_inv", "_scale"};

} // namespace

QStringList decodeScaleNames(const QString &name)
{
    QStringList out;
    for (const char *suffix : kScaleSuffixes)
        out << name + QLatin1String(suffix);
    return out;
}

QString decodeScaleOwner(const QString &name)
{
    for (const char *suffix : kScaleSuffixes) {
        const QLatin1String s(suffix);
        if (name.size() > s.size() && name.endsWith(s))
            return name.chopped(s.size());
    }
    return {};
}

bool isQuantizationParameter(const QString &name)
{
    static const QSet<QString> parameters {QStringLiteral("input_scale"), QStringLiteral("output_scale"),
        QStringLiteral("k_scale"), QStringLiteral("v_scale"), QStringLiteral("q_scale"), QStringLiteral("prob_scale"),
        QStringLiteral("weight_scale_2"), QStringLiteral("weight_global_scale"), QStringLiteral("input_global_scale"),
        QStringLiteral("weight_zero_point"), QStringLiteral("input_zero_point")};
    return parameters.contains(name.section(QLatin1Char('.'), -1));
}

Fp8DecodeScale Fp8DecodeScale::perTensor(float value, const QString &source, int64_t rows, int64_t cols)
{
    Fp8DecodeScale s;
    s.source = source;
    s.blockRows = std::max<int64_t>(rows, 1);
    s.blockCols = std::max<int64_t>(cols, 1);
    s.values = {value};
    return s;
}

QString Fp8DecodeScale::shapeText(int64_t rows, int64_t cols) const
{
    if (gridRows == 1 && gridCols == 1)
        return QStringLiteral("per tensor");
    if (blockRows == 1 && blockCols >= cols && gridCols == 1 && rows > 1)
        return QStringLiteral("per row");
    if (blockCols == 1 && blockRows >= rows && gridRows == 1 && cols > 1)
        return QStringLiteral("per column");
    return QStringLiteral("%1x%2 blocks").arg(blockRows).arg(blockCols);
}

std::optional<std::pair<int64_t, int64_t>> scaleBlockShape(
    int64_t rows, int64_t cols, int64_t gridRows, int64_t gridCols)
{
    const auto br = blockLength(rows, gridRows);
    const auto bc = blockLength(cols, gridCols);
    if (!br || !bc)
        return std::nullopt;
    return std::make_pair(*br, *bc);
}

std::optional<std::pair<int64_t, int64_t>> recipeBlockShape(const QString &recipe)
{
    const QString r = recipe.trimmed().toLower();
    if (r == QLatin1String("mxfp8") || r == QLatin1String("mxfp8-ocp"))
        return std::make_pair(int64_t(1), int64_t(32));
    if (r == QLatin1String("mxfp8-col") || r == QLatin1String("mxfp8-col-ocp"))
        return std::make_pair(int64_t(32), int64_t(1));
    if (r == QLatin1String("block1x128"))
        return std::make_pair(int64_t(1), int64_t(128));
    if (r.startsWith(QLatin1String("block128x128")))
        return std::make_pair(int64_t(128), int64_t(128));
    return std::nullopt;
}

std::optional<Fp8DecodeScale> scaleFromList(std::vector<float> values, const std::vector<int64_t> &dims, int64_t rows,
    int64_t cols, const QString &recipe, const QString &source, QString *why)
{
    const int64_t n = int64_t(values.size());
    if (n == 0) {
        *why = QStringLiteral("%1 is empty").arg(source);
        return std::nullopt;
    }
    Fp8DecodeScale s;
    s.source = source;
    if (n == 1) {
        s = Fp8DecodeScale::perTensor(values.front(), source, rows, cols);
        return s;
    }
    std::optional<std::pair<int64_t, int64_t>> block;
    if (dims.size() == 2) {
        block = scaleBlockShape(rows, cols, dims[0], dims[1]);
        if (!block) {
            *why = QStringLiteral("%1 is a %2x%3 grid, which no block shape fits on the %4x%5 tensor")
                       .arg(source)
                       .arg(dims[0])
                       .arg(dims[1])
                       .arg(rows)
                       .arg(cols);
            return std::nullopt;
        }
    } else if (const auto shape = recipeBlockShape(recipe)) {
        const int64_t need
            = ceilDiv(std::max<int64_t>(rows, 1), shape->first) * ceilDiv(std::max<int64_t>(cols, 1), shape->second);
        if (need != n) {
            *why = QStringLiteral("%1 holds %2 values; the %3x%4 blocks of recipe '%5' need %6")
                       .arg(source)
                       .arg(n)
                       .arg(shape->first)
                       .arg(shape->second)
                       .arg(recipe)
                       .arg(need);
            return std::nullopt;
        }
        block = shape;
    } else if (n == rows) {
        block = std::make_pair(int64_t(1), std::max<int64_t>(cols, 1));
    } else {
        *why = QStringLiteral("%1 holds %2 values, and no recipe says which blocks of the %3x%4 tensor they scale")
                   .arg(source)
                   .arg(n)
                   .arg(rows)
                   .arg(cols);
        return std::nullopt;
    }
    s.blockRows = std::min(block->first, std::max<int64_t>(rows, 1));
    s.blockCols = std::min(block->second, std::max<int64_t>(cols, 1));
    s.gridRows = ceilDiv(std::max<int64_t>(rows, 1), s.blockRows);
    s.gridCols = ceilDiv(std::max<int64_t>(cols, 1), s.blockCols);
    if (s.gridRows * s.gridCols != n) {
        *why = QStringLiteral("%1 holds %2 values for a %3x%4 grid").arg(source).arg(n).arg(s.gridRows).arg(s.gridCols);
        return std::nullopt;
    }
    s.values = std::move(values);
    return s;
}

Fp8ScaledReader::Fp8ScaledReader(std::unique_ptr<TensorReader> codes, Fp8DecodeScale scale)
    : m_codes(std::move(codes))
    , m_scale(std::move(scale))
{
    m_info = m_codes->info();
    const auto format = m_info.dtype == DType::F8E5M2 ? fp8math::Format::E5M2 : fp8math::Format::E4M3;
    for (uint32_t code = 0; code < 256; ++code)
        m_lut[code] = fp8math::decodeCode(code, format);
    m_info.dtype = DType::F32;
}

bool Fp8ScaledReader::read(int64_t first, int64_t count, void *dst, Problem *problem)
{
    m_buffer.resize(size_t(std::max<int64_t>(count, 0)));
    if (!m_codes->read(first, count, m_buffer.data(), problem))
        return false;
    float *out = static_cast<float *>(dst);
    const int64_t cols = std::max<int64_t>(m_info.cols, 1);
    const int64_t br = m_scale.blockRows;
    const int64_t bc = m_scale.blockCols;
    for (int64_t i = 0; i < count;) {
        const int64_t row = (first + i) / cols;
        const int64_t col = (first + i) % cols;
        const int64_t inRow = std::min(count - i, cols - col);
        const float *rowScales = m_scale.values.data() + size_t(row / br) * size_t(m_scale.gridCols);
        // Runs of one block within the row.
        for (int64_t k = 0; k < inRow;) {
            const int64_t c = col + k;
            const int64_t end = std::min(inRow, (c / bc + 1) * bc - col);
            const float s = rowScales[c / bc];
            for (; k < end; ++k)
                out[i + k] = m_lut[m_buffer[size_t(i + k)]] * s;
        }
        i += inRow;
    }
    return true;
}

} // namespace fp8scope

#include "fp4packed.h"

#include "core/formats/fp8math.h"

#include <algorithm>

namespace fp8scope {

std::unique_ptr<Fp4PackedReader> Fp4PackedReader::open(TensorInfo info, int64_t codesOffset, int64_t scalesOffset,
    int64_t block, const std::array<float, 256> &scaleValues, const QString &decoding, Problem *problem)
{
    auto r = std::unique_ptr<Fp4PackedReader>(new Fp4PackedReader);
    r->m_file.setFileName(info.file);
    if (!r->m_file.open(QIODevice::ReadOnly)) {
        *problem = {info.file, -1, r->m_file.errorString()};
        return nullptr;
    }
    info.dtype = DType::F32;
    info.storedDtype = DType::F4E2M1;
    info.decoding = decoding;
    r->m_info = std::move(info);
    r->m_codesOffset = codesOffset;
    r->m_scalesOffset = scalesOffset;
    r->m_block = std::max<int64_t>(block, 1);
    r->m_blocksPerRow = (std::max<int64_t>(r->m_info.cols, 1) + r->m_block - 1) / r->m_block;
    r->m_scaleValues = scaleValues;
    for (uint32_t code = 0; code < 16; ++code)
        r->m_lut[code] = fp8math::decodeCode(code, fp8math::Format::E2M1);
    return r;
}

bool Fp4PackedReader::readBytes(int64_t offset, int64_t bytes, QByteArray *into, Problem *problem)
{
    into->resize(qsizetype(bytes));
    if (!m_file.seek(offset) || m_file.read(into->data(), bytes) != bytes) {
        *problem = {m_info.file, offset, QStringLiteral("short read of %1 bytes").arg(bytes)};
        return false;
    }
    return true;
}

bool Fp4PackedReader::read(int64_t first, int64_t count, void *dst, Problem *problem)
{
    if (count <= 0)
        return true;
    const int64_t cols = std::max<int64_t>(m_info.cols, 1);
    auto blockOf = [&](int64_t e) { return (e / cols) * m_blocksPerRow + (e % cols) / m_block; };
    // Rows hold an even number of elements, so a byte never spans two rows; the blocks of a range are
    // consecutive in the row-major grid.
    const int64_t firstByte = first / 2;
    const int64_t firstBlock = blockOf(first);
    if (!readBytes(m_codesOffset + firstByte, (first + count + 1) / 2 - firstByte, &m_codes, problem)
        || !readBytes(m_scalesOffset + firstBlock, blockOf(first + count - 1) - firstBlock + 1, &m_scales, problem))
        return false;
    const auto *packed = reinterpret_cast<const uint8_t *>(m_codes.constData());
    const auto *scales = reinterpret_cast<const uint8_t *>(m_scales.constData());
    float *out = static_cast<float *>(dst);
    for (int64_t i = 0; i < count; ++i) {
        const int64_t e = first + i;
        const uint8_t byte = packed[e / 2 - firstByte];
        const uint32_t code = (e & 1) ? uint32_t(byte >> 4) : uint32_t(byte & 0x0F);
        out[i] = m_lut[code] * m_scaleValues[scales[blockOf(e) - firstBlock]];
    }
    return true;
}

} // namespace fp8scope

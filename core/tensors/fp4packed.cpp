#include "fp4packed.h"

#include "core/numerics/fp8math.h"

#include <algorithm>

namespace fp8scope {

std::unique_ptr<Fp4PackedReader> Fp4PackedReader::open(TensorInfo info, int64_t dataOffset, int64_t block,
    std::vector<float> blockScales, const QString &decoding, Problem *problem)
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
    r->m_dataOffset = dataOffset;
    r->m_block = std::max<int64_t>(block, 1);
    r->m_blocksPerRow = (std::max<int64_t>(r->m_info.cols, 1) + r->m_block - 1) / r->m_block;
    r->m_scales = std::move(blockScales);
    for (uint32_t code = 0; code < 16; ++code)
        r->m_lut[code] = fp8math::decodeCode(code, fp8math::Format::E2M1);
    return r;
}

bool Fp4PackedReader::read(int64_t first, int64_t count, void *dst, Problem *problem)
{
    if (count <= 0)
        return true;
    // Rows hold an even number of elements, so a byte never spans two rows.
    const int64_t firstByte = first / 2;
    const int64_t bytes = (first + count + 1) / 2 - firstByte;
    m_buffer.resize(qsizetype(bytes));
    const qint64 offset = m_dataOffset + firstByte;
    if (!m_file.seek(offset) || m_file.read(m_buffer.data(), bytes) != bytes) {
        *problem = {m_info.file, offset, QStringLiteral("short read of %1 bytes").arg(bytes)};
        return false;
    }
    const auto *packed = reinterpret_cast<const uint8_t *>(m_buffer.constData());
    float *out = static_cast<float *>(dst);
    const int64_t cols = std::max<int64_t>(m_info.cols, 1);
    for (int64_t i = 0; i < count; ++i) {
        const int64_t e = first + i;
        const uint8_t byte = packed[e / 2 - firstByte];
        const uint32_t code = (e & 1) ? uint32_t(byte >> 4) : uint32_t(byte & 0x0F);
        const float scale = m_scales[size_t((e / cols) * m_blocksPerRow + (e % cols) / m_block)];
        out[i] = m_lut[code] * scale;
    }
    return true;
}

} // namespace fp8scope

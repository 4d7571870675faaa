// FP4 (E2M1) weights as quantized checkpoints store them: two codes to a byte, the first in the low nibble,
// each block of consecutive elements along a row with a decode scale of its own (one byte: E4M3 or E8M0),
// and for NVFP4 one more scale for the whole tensor. Fp4PackedReader hands out the values those codes stand
// for, as float32, the way an inference kernel dequantizes: code value x (block scale x global scale).
#pragma once

#include "tensorreader.h"

#include <QFile>

#include <array>

namespace fp8scope {

class Fp4PackedReader : public TensorReader
{
public:
    // `info` holds the tensor's name, file and shape in FP4 elements (the last dimension even); the codes
    // start at byte `codesOffset` of the file, the grid of info.rows x ceil(cols / block) scale bytes at
    // `scalesOffset`. `scaleValues` maps a scale byte to its float32 multiplier, the global scale folded in.
    // The scales are read with the codes they scale, so memory stays that of the range read.
    static std::unique_ptr<Fp4PackedReader> open(TensorInfo info, int64_t codesOffset, int64_t scalesOffset,
        int64_t block, const std::array<float, 256> &scaleValues, const QString &decoding, Problem *problem);
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override;

private:
    bool readBytes(int64_t offset, int64_t bytes, QByteArray *into, Problem *problem);

    QFile m_file;
    int64_t m_codesOffset = 0;
    int64_t m_scalesOffset = 0;
    int64_t m_block = 16;
    int64_t m_blocksPerRow = 1;
    std::array<float, 256> m_scaleValues {};
    float m_lut[16] = {};
    QByteArray m_codes;
    QByteArray m_scales;
};

} // namespace fp8scope

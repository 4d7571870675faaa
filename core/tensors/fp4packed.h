// FP4 (E2M1) weights as quantized checkpoints store them: two codes to a byte, the first in the low nibble,
// each block of consecutive elements along a row with a decode scale of its own, and for NVFP4 one more
// scale for the whole tensor. Fp4PackedReader hands out the values those codes stand for, as float32, the
// way an inference kernel dequantizes: code value x (block scale x global scale).
#pragma once

#include "tensorreader.h"

#include <QFile>

namespace fp8scope {

class Fp4PackedReader : public TensorReader
{
public:
    // `info` holds the tensor's name, file and shape in FP4 elements (the last dimension even); the codes
    // start at byte `dataOffset` of the file. `blockScales` is a grid of info.rows x ceil(cols / block)
    // float32 multipliers, the global scale already folded in. `decoding` says how, for TensorInfo.
    static std::unique_ptr<Fp4PackedReader> open(TensorInfo info, int64_t dataOffset, int64_t block,
        std::vector<float> blockScales, const QString &decoding, Problem *problem);
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override;

private:
    QFile m_file;
    int64_t m_dataOffset = 0;
    int64_t m_block = 16;
    int64_t m_blocksPerRow = 1;
    std::vector<float> m_scales;
    float m_lut[16] = {};
    QByteArray m_buffer;
};

} // namespace fp8scope

// FP8 tensors are stored as codes; the values they stand for are the codes times the decode scale
// (scale_inv) the training run or the exporter kept beside them: one for the whole tensor, one per row, or
// one per block (MXFP8 1x32, DeepSeek-style 128x128 weight blocks). openTensor() finds that scale where the
// formats keep it and hands out the values, so that statistics are in the units of the model; a tensor
// without one is read as its codes, and TensorInfo::decoding says which of the two happened.
#pragma once

#include "tensorreader.h"

#include <optional>
#include <utility>

namespace fp8scope {

// Decode scales over the row-major 2-D view of a tensor: a grid of gridRows x gridCols values, each for a
// block of blockRows x blockCols elements (the blocks at the ends may be cut short).
struct Fp8DecodeScale {
    QString source; // where the values came from, for messages
    int64_t blockRows = 1;
    int64_t blockCols = 1;
    int64_t gridRows = 1;
    int64_t gridCols = 1;
    std::vector<float> values; // gridRows x gridCols, row-major

    // One scale for a rows x cols tensor.
    static Fp8DecodeScale perTensor(float value, const QString &source, int64_t rows, int64_t cols);
    // "per tensor", "per row", "128x128 blocks", ...
    QString shapeText(int64_t rows, int64_t cols) const;
};

// The block shape a gridRows x gridCols grid of scales covers on a rows x cols tensor: the whole dimension
// (a grid of 1), one element (a grid as long as the dimension), or blocks of 16, 32, 64, 128, 256 or 512
// that divide it into the grid, rounding up. Nothing when no block size fits.
std::optional<std::pair<int64_t, int64_t>> scaleBlockShape(
    int64_t rows, int64_t cols, int64_t gridRows, int64_t gridCols);

// Block shape of a recipe name as fp8scope and the dump layout's `recipe` attribute spell them (mxfp8:
// 1x32, mxfp8-col: 32x1, block1x128, block128x128); nothing for per-tensor and unknown recipes.
std::optional<std::pair<int64_t, int64_t>> recipeBlockShape(const QString &recipe);

// Scales given as a flat list of `count` values for a rows x cols tensor: one value, one per row, or one per
// block of the recipe's block shape. Sets *why and returns nothing when the count fits none of them.
std::optional<Fp8DecodeScale> scaleFromList(std::vector<float> values, const std::vector<int64_t> &dims, int64_t rows,
    int64_t cols, const QString &recipe, const QString &source, QString *why);

// Names a tensor of decode scales for NAME has in the checkpoints fp8scope reads, in the order they are
// looked for: NAME_scale_inv and NAME.scale_inv (DeepSeek-V3), NAME_scale (compressed-tensors, ModelOpt: a
// multiplier of the codes too).
QStringList decodeScaleNames(const QString &name);
// The NAME whose decode scales a tensor of that name would hold; empty for any other name.
QString decodeScaleOwner(const QString &name);
// Tensors of a quantized checkpoint that parameterise its quantization rather than hold model values:
// activation and KV-cache scales (input_scale, k_scale, v_scale), second-level and global scales
// (weight_scale_2, weight_global_scale, input_global_scale) and zero points, as compressed-tensors, ModelOpt
// and vLLM name them. The dump index leaves them out, as it does decode scales.
bool isQuantizationParameter(const QString &name);

// Reads the values of an FP8 tensor as float32: each code's value times its block's decode scale, as an
// inference kernel dequantizes (a float32 product).
class Fp8ScaledReader : public TensorReader
{
public:
    Fp8ScaledReader(std::unique_ptr<TensorReader> codes, Fp8DecodeScale scale);
    int64_t alignment() const override { return m_codes->alignment(); }
    bool read(int64_t first, int64_t count, void *dst, Problem *problem) override;
    std::vector<float> amaxHistory() const override { return m_codes->amaxHistory(); }
    void setThreads(int threads) override { m_codes->setThreads(threads); }
    const Fp8DecodeScale &scale() const { return m_scale; }

private:
    std::unique_ptr<TensorReader> m_codes;
    Fp8DecodeScale m_scale;
    float m_lut[256] = {};
    std::vector<uint8_t> m_buffer;
};

} // namespace fp8scope

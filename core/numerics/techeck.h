// Did Transformer Engine quantize as the format says? A DumpTensors file (tensor_dumps/rank_R/iter_N/
// LAYER_TENSOR.pt: {"high_precision": ..., "quantized": ...}) holds both the tensor and what TE's kernel made of
// it: Float8Tensor, MXFP8Tensor, Float8BlockwiseQTensor or NVFP4Tensor, row-wise and column-wise copies with
// their scale_inv. Each copy's scales and codes are compared, bit for bit, with the reference quantization
// (docs/NUMERICS.md) of the high-precision tensor: equal, or the blocks and elements where they differ and by
// how much (binades of a scale, steps of a code). A TE version or kernel bug shows here and nowhere in the logs.
#pragma once

#include "core/numerics/blockmap.h"
#include "core/numerics/recipe.h"
#include "core/tensors/problem.h"

#include <QJsonObject>
#include <QStringList>

#include <optional>
#include <vector>

namespace fp8scope {

struct TeDifference {
    enum class Kind : uint8_t { Scale, Code, Amax };
    Kind kind = Kind::Code;
    int64_t row = 0; // the element (a code) or the block (a scale) in the copy's view
    int64_t col = 0;
    double te = 0.0; // the decoded value TE stored, and the reference's
    double reference = 0.0;
    double by = 0.0; // code steps (signed), binades of a scale (log2 te / reference), or a relative amax error
    QJsonObject toJson() const;
};

// One copy (row-wise, column-wise) compared. Its view is the tensor's 2-D view or its transpose, quantized
// row-wise in blocks of blockRows x blockCols.
struct TeCopyCheck {
    QString copy; // "rowwise", "columnwise"
    bool transposed = false; // the view is the tensor's transpose
    int64_t rows = 0;
    int64_t cols = 0;
    int64_t blockRows = 1;
    int64_t blockCols = 1;
    int64_t blocks = 0;
    int64_t scalesCompared = 0; // Float8Tensor's delayed scale is not compared (its history is not in the dump)
    int64_t scalesDiffering = 0;
    int64_t codes = 0;
    int64_t codesDiffering = 0;
    int64_t blocksDiffering = 0; // a block whose scale or any code differs
    int maxCodeSteps = 0;
    double maxScaleBinades = 0.0;
    std::vector<TeDifference> differences; // the first ones in the view's order (scales of a block first)
    // The block map of what TE made of the copy's view: its scales, and its codes against the high-precision
    // values (flushed, saturated, relative error), so that a wrong scale shows where it does damage.
    BlockMap map;
    bool equal() const { return scalesDiffering == 0 && codesDiffering == 0; }
    QJsonObject toJson() const;
};

struct TeCheck {
    QString file;
    QString entry; // the quantized entry
    QString highPrecision; // the entry it was compared with
    QString teClass;
    Recipe recipe; // the reference quantization's recipe
    int64_t rows = 0;
    int64_t cols = 0;
    std::vector<TeCopyCheck> copies;
    std::vector<TeDifference> tensorScale; // NVFP4: each copy's stored amax against the tensor's
    QStringList notes; // how the scale was judged (Float8Tensor), what is not compared
    bool equal() const;
    // "MXFP8Tensor quantized as MXFP8 (TE rounding) says: rowwise equal (…), columnwise 3 codes differ ..."
    QString summary() const;
    QJsonObject toJson(int top) const;
};

// The recipe a TE quantized class stands for (Float8Tensor: current scaling; MXFP8Tensor: mxfp8;
// Float8BlockwiseQTensor: block1x128 or block128x128, -fp32 unless its scales are powers of two; NVFP4Tensor:
// nvfp4), in the element format it stores.
std::optional<Recipe> teRecipe(const QString &file, const QString &entry, Problem *problem);

// The quantized entries of a torch.save file that a check can compare (with a high_precision sibling).
QStringList teQuantizedEntries(const QString &file, Problem *problem);

// Compares `entry` (empty: the file's first quantized entry) with its high_precision sibling. nullopt with
// *problem when the file, a buffer or the tensor cannot be read, or a buffer does not have the shape its class
// gives it (a scale tensor of the wrong shape, data that does not cover the tensor).
std::optional<TeCheck> checkTeQuantized(const QString &file, const QString &entry, Problem *problem);

} // namespace fp8scope

// A scaling recipe as a user names it ("delayed:margin=1", "mxfp8-ocp", "nvfp4", ...): what the training
// run did, or what fp8scope should try instead.
#pragma once

#include "core/formats/formatnames.h"

#include <QString>

#include <optional>
#include <vector>

namespace fp8scope {

enum class RecipeKind : uint8_t { Delayed, Current, MxFp8, Block, NvFp4, Bf16 };
enum class AmaxReduce : uint8_t { Max, MostRecent };

struct Recipe {
    RecipeKind kind = RecipeKind::Current;
    Format format = Format::E4M3;
    // delayed
    int margin = 0;
    int historyLength = 1024;
    AmaxReduce reduce = AmaxReduce::Max;
    std::vector<float> amaxHistory; // newest first, as Transformer Engine stores it
    float previousScale = 1.0f;
    // current and block
    bool pow2 = false;
    // MXFP8
    bool ocpRule = false;
    // MXFP8 column-wise (32x1) and block scaling (1x128, 128x128)
    int blockRows = 1;
    int blockCols = 1;

    // Canonical text, which parse() reads back: e.g. "mxfp8-col-ocp", "delayed:margin=1,history=16".
    QString name() const;
    bool needsTensorAmax() const { return kind == RecipeKind::Current || kind == RecipeKind::NvFp4; }

    // Parses a recipe name and applies the element format (nullopt keeps the recipe's default: E4M3, or
    // E2M1 for nvfp4, BF16 for bf16).
    static std::optional<Recipe> parse(const QString &text, std::optional<Format> format, QString *error);

    // Every recipe/format combination the "what if" table compares.
    static std::vector<Recipe> whatIfSet();

    // The delayed-scaling scale from the amax history (keeps previousScale when it cannot be formed).
    float delayedScale() const;
    // How delayedScale() was formed, in a sentence for users: the history used and its reduced amax, or why
    // the previous scale was kept (no history at all, as at a run's first step; a zero, NaN or inf amax).
    QString delayedScaleSource() const;
};

} // namespace fp8scope

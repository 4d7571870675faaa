#include "runinference.h"

#include <QStringList>

#include <tuple>
#include <utility>
#include <vector>

namespace fp8scope {

QString recipeNamed(const QString &value)
{
    const QString v = value.section(QLatin1Char('.'), -1).toLower();
    if (v.isEmpty() || v == QLatin1String("null") || v == QLatin1String("none"))
        return {};
    if (v.contains(QLatin1String("delayed")))
        return QStringLiteral("delayed");
    if (v.contains(QLatin1String("currentscaling")) || v == QLatin1String("tensorwise")
        || v == QLatin1String("current"))
        return QStringLiteral("current");
    if (v.contains(QLatin1String("mxfp8")))
        return QStringLiteral("mxfp8");
    if (v.contains(QLatin1String("nvfp4")))
        return QStringLiteral("nvfp4");
    // Float8BlockScaling: 1x128 blocks for activations and gradients, 128x128 for weights.
    if (v.contains(QLatin1String("float8blockscaling")) || v == QLatin1String("blockwise"))
        return QStringLiteral("blockwise");
    return value.section(QLatin1Char('.'), -1);
}

namespace {

bool isOn(const QString &value)
{
    const QString v = value.trimmed().toLower();
    return v == QLatin1String("true") || v == QLatin1String("1") || v == QLatin1String("yes");
}

// A value that names something: not empty, null, None, False or 0 (Megatron's arguments block prints None
// and False for flags that are off).
bool isSet(const QString &value)
{
    const QString v = value.trimmed().toLower();
    return !v.isEmpty() && v != QLatin1String("null") && v != QLatin1String("none") && v != QLatin1String("false")
        && v != QLatin1String("0") && v != QLatin1String("~");
}

bool update(Database &db, const char *sql, const QString &value, int64_t id, QString *error)
{
    Statement u = db.prepare(sql, error);
    if (u.bind(1, value).bind(2, id).exec())
        return true;
    *error = u.error();
    return false;
}

// The precision a run's name says (its words split at anything not a letter or a digit: "tp2_fp8_sp",
// "llama-mxfp8", "bf16-baseline"), when exactly one precision is named; "" otherwise.
QString precisionFromName(const QString &name)
{
    static const QStringList words {QStringLiteral("bf16"), QStringLiteral("fp16"), QStringLiteral("fp32"),
        QStringLiteral("fp8"), QStringLiteral("mxfp8"), QStringLiteral("nvfp4")};
    QString found;
    QString word;
    const QString lower = name.toLower() + QLatin1Char(' ');
    for (const QChar c : lower) {
        if (c.isLetterOrNumber()) {
            word += c;
            continue;
        }
        if (words.contains(word)) {
            if (!found.isEmpty() && found != word)
                return {};
            found = word;
        }
        word.clear();
    }
    return found;
}

} // namespace

bool inferRunsFromConfigs(Database &db, QString *error)
{
    // Runs without a manifest: the training precision and scaling recipe from the flags their configs
    // record. An FP8 run whose config names no recipe but sets an amax history ran delayed scaling,
    // Megatron's and NeMo's default.
    Statement runs = db.prepare("SELECT id, COALESCE(precision, ''), COALESCE(recipe, ''), name FROM runs WHERE "
                                "precision IS NULL OR precision='' OR recipe IS NULL OR recipe=''",
        error);
    std::vector<std::tuple<int64_t, QString, QString, QString>> todo;
    while (runs.next())
        todo.emplace_back(runs.int64(0), runs.text(1), runs.text(2), runs.text(3));
    if (runs.failed()) {
        *error = runs.error();
        return false;
    }
    Statement configs = db.prepare("SELECT key, value FROM configs WHERE run_id=? ORDER BY key", error);
    for (const auto &[id, storedPrecision, storedRecipe, name] : todo) {
        // An FP8 run also sets --bf16 (the precision of what FP8 does not cover): FP8 wins over BF16, and BF16
        // over FP16, whatever order the keys come in.
        bool fp8 = false, bf16 = false, fp16 = false;
        QString recipe;
        bool amaxHistory = false;
        configs.bind(1, id);
        while (configs.next()) {
            const QString key = configs.text(0);
            const QString value = configs.text(1);
            QString k = key.section(QLatin1Char('.'), -1).toLower();
            if (k.endsWith(QLatin1String("/text_summary"))) // TensorBoard's run arguments
                k.chop(13);
            // --fp8-format (Megatron flags), fp8_format (NeMo), fp8 (Megatron's arguments block: e4m3 or
            // hybrid when on, None when off; NeMo's fp8: true).
            const bool fp8Key = k.contains(QLatin1String("fp8-format")) || k.contains(QLatin1String("fp8_format"))
                || k == QLatin1String("--fp8") || k == QLatin1String("fp8");
            fp8 = fp8 || (fp8Key && isSet(value));
            bf16 = bf16 || ((k == QLatin1String("--bf16") || k == QLatin1String("bf16")) && isOn(value));
            fp16 = fp16 || ((k == QLatin1String("--fp16") || k == QLatin1String("fp16")) && isOn(value));
            if (k == QLatin1String("--fp8-recipe") || k == QLatin1String("fp8_recipe"))
                recipe = recipeNamed(value);
            // A "precision" key (a W&B or MLflow run's config, Lightning's trainer.precision: "bf16-mixed",
            // "16-mixed", "transformer-engine"): the precision it names.
            if (k == QLatin1String("precision")) {
                const QString v = value.trimmed().toLower();
                fp8 = fp8 || v.startsWith(QLatin1String("fp8")) || v.startsWith(QLatin1String("mxfp8"))
                    || v.startsWith(QLatin1String("nvfp4")) || v.startsWith(QLatin1String("transformer-engine"));
                bf16 = bf16 || v.startsWith(QLatin1String("bf16"));
                fp16 = fp16 || v == QLatin1String("fp16") || v == QLatin1String("16")
                    || v.startsWith(QLatin1String("16-")) || v.startsWith(QLatin1String("fp16-"));
                if (recipe.isEmpty() && (v.startsWith(QLatin1String("mxfp8")) || v.startsWith(QLatin1String("nvfp4"))))
                    recipe = v.left(5);
            }
            if ((k.contains(QLatin1String("amax-history-len")) || k.contains(QLatin1String("amax_history_len")))
                && isSet(value))
                amaxHistory = true;
        }
        if (configs.failed()) {
            *error = configs.error();
            return false;
        }
        configs.reset();
        // Nothing in the configs: the run's name, when it names one precision.
        const QString precision = fp8 ? QStringLiteral("fp8")
            : bf16                    ? QStringLiteral("bf16")
            : fp16                    ? QStringLiteral("fp16")
                                      : precisionFromName(name);
        const QString runPrecision = storedPrecision.isEmpty() ? precision : storedPrecision;
        if (recipe.isEmpty() && amaxHistory && runPrecision == QLatin1String("fp8"))
            recipe = QStringLiteral("delayed");
        // MXFP8 and NVFP4 name their recipe with their precision.
        if (recipe.isEmpty() && (runPrecision == QLatin1String("mxfp8") || runPrecision == QLatin1String("nvfp4")))
            recipe = runPrecision;
        if (storedPrecision.isEmpty() && !precision.isEmpty()
            && !update(db, "UPDATE runs SET precision=? WHERE id=?", precision, id, error))
            return false;
        if (storedRecipe.isEmpty() && !recipe.isEmpty()
            && !update(db, "UPDATE runs SET recipe=? WHERE id=?", recipe, id, error))
            return false;
    }
    return true;
}

} // namespace fp8scope

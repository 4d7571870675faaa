#include "precisionmap.h"

#include "catalog.h"

#include <QRegularExpression>

#include <functional>

#include <algorithm>
#include <map>
#include <set>

namespace fp8scope {

namespace {

const QStringList kGemms {QStringLiteral("fprop"), QStringLiteral("dgrad"), QStringLiteral("wgrad")};

bool truthy(const QString &v)
{
    const QString t = v.trimmed().toLower();
    return t == QLatin1String("true") || t == QLatin1String("1") || t == QLatin1String("yes");
}

// A Megatron argument however a config spells it: "--first-last-layers-bf16", "model.first_last_layers_bf16".
QString argumentName(const QString &key)
{
    QString k = key.section(QLatin1Char('.'), -1);
    while (k.startsWith(QLatin1Char('-')))
        k.remove(0, 1);
    return k.replace(QLatin1Char('-'), QLatin1Char('_')).toLower();
}

// The transformer layer a module is in ("decoder.layers.11.mlp.linear_fc2" -> 11), -1 when none.
int transformerLayer(const QString &layer)
{
    static const QRegularExpression re(QStringLiteral(R"((?:^|\.)(?:layers?|blocks?|h)\.(\d+)(?:\.|$))"));
    const auto m = re.match(layer);
    return m.hasMatch() ? m.captured(1).toInt() : -1;
}

struct Override {
    std::function<bool(const QString &layer)> matches;
    PrecisionSpan span;
};

// Megatron's first and last layers in BF16.
void megatronFlags(const std::map<QString, QString> &args, int deepest, std::vector<Override> *out)
{
    const auto value = [&](const char *name) {
        const auto it = args.find(QLatin1String(name));
        return it == args.end() ? QString() : it->second;
    };
    if (!truthy(value("first_last_layers_bf16")))
        return;
    bool ok = false;
    int layers = value("num_layers").toInt(&ok);
    if (!ok || layers <= 0)
        layers = deepest + 1;
    // The defaults of megatron/core/transformer/transformer_config.py: one at each end.
    int start = value("num_layers_at_start_in_bf16").toInt(&ok);
    if (!ok)
        start = 1;
    int end = value("num_layers_at_end_in_bf16").toInt(&ok);
    if (!ok)
        end = 1;
    const QString source = QStringLiteral("Megatron --first-last-layers-bf16: layers 0-%1 and %2-%3 of %4 in BF16")
                               .arg(start - 1)
                               .arg(layers - end)
                               .arg(layers - 1)
                               .arg(layers);
    out->push_back({[=](const QString &layer) {
                        const int i = transformerLayer(layer);
                        return i >= 0 && (i < start || i >= layers - end);
                    },
        {.precision = QStringLiteral("bf16"), .gemms = kGemms, .source = source}});
}

// A Transformer Engine debug config's sections: (file, section) -> key below the section -> value.
using Sections = std::map<std::pair<QString, QString>, std::map<QString, QString>>;

QStringList listOf(const std::map<QString, QString> &keys, const QString &prefix)
{
    QStringList out;
    for (const auto &[k, v] : keys) {
        if (k == prefix || (k.startsWith(prefix + QLatin1Char('[')) && k.endsWith(QLatin1Char(']'))))
            out << v;
    }
    return out;
}

// AutoswitchGemm as one section of a debug config sets it: its layers and its thresholds.
struct Autoswitch {
    std::function<bool(const QString &)> matches;
    std::map<QString, double> thresholds; // "underflow_pct", "mse"
};

void teDebugConfig(const Sections &sections, std::vector<Override> *out, std::vector<Autoswitch> *autoswitch)
{
    static const QStringList layerFeatures {
        QStringLiteral("DisableQuantizationLayer"), QStringLiteral("DisableFP8Layer")};
    static const QStringList gemmFeatures {QStringLiteral("DisableQuantizationGEMM"), QStringLiteral("DisableFP8GEMM")};
    for (const auto &section : sections) {
        // Named, not bound: lambdas below capture them (clang before 16 cannot capture a structured binding).
        const std::pair<QString, QString> &where = section.first;
        const std::map<QString, QString> &keys = section.second;
        const auto get = [&](const QString &k) {
            const auto it = keys.find(k);
            return it == keys.end() ? QString() : it->second;
        };
        if (keys.count(QStringLiteral("enabled")) && !truthy(get(QStringLiteral("enabled"))))
            continue;
        // Which layers: a pattern matched from the start of the name (re.match), or names containing a type.
        const QString pattern = get(QStringLiteral("layers.layer_name_regex_pattern"));
        const QStringList types = listOf(keys, QStringLiteral("layers.layer_types"));
        if (pattern.isEmpty() && types.isEmpty())
            continue;
        const QRegularExpression re(QStringLiteral("\\A(?:%1)").arg(pattern));
        const auto matches = [=](const QString &layer) {
            if (!pattern.isEmpty() && re.isValid() && re.match(layer).hasMatch())
                return true;
            return std::any_of(types.begin(), types.end(), [&](const QString &t) { return layer.contains(t); });
        };
        // A feature under the transformer_engine namespace or none.
        const auto feature = [&](const QString &name) -> QString {
            for (const QString &ns : {QStringLiteral("transformer_engine."), QString()}) {
                const QString base = ns + name + QLatin1Char('.');
                for (const auto &[k, v] : keys) {
                    if (k.startsWith(base))
                        return base;
                }
            }
            return {};
        };
        const QString file = where.first.section(QLatin1Char('/'), -1);
        for (const QString &f : layerFeatures) {
            const QString base = feature(f);
            if (base.isEmpty()
                || (keys.count(base + QStringLiteral("enabled")) && !truthy(get(base + QStringLiteral("enabled")))))
                continue;
            out->push_back({matches,
                {.precision = QStringLiteral("bf16"),
                    .gemms = kGemms,
                    .source = QStringLiteral("Transformer Engine debug config %1, section %2: %3")
                                  .arg(file, where.second, f)}});
        }
        for (const QString &f : gemmFeatures) {
            const QString base = feature(f);
            if (base.isEmpty()
                || (keys.count(base + QStringLiteral("enabled")) && !truthy(get(base + QStringLiteral("enabled")))))
                continue;
            QStringList gemms = listOf(keys, base + QStringLiteral("gemms"));
            for (const auto &[k, v] : keys) {
                if (k.startsWith(base + QStringLiteral("gemms_struct[")) && k.endsWith(QLatin1String("].gemm")))
                    gemms << v;
            }
            gemms.removeIf([](const QString &g) { return !kGemms.contains(g); });
            if (gemms.isEmpty())
                continue;
            out->push_back({matches,
                {.precision = QStringLiteral("bf16"),
                    .gemms = gemms,
                    .source = QStringLiteral("Transformer Engine debug config %1, section %2: %3 (%4)")
                                  .arg(file, where.second, f, gemms.join(QStringLiteral(", ")))}});
        }
        // AutoswitchGemm: its thresholds, for the statistics it logs.
        const QString sw = feature(QStringLiteral("AutoswitchGemm"));
        if (!sw.isEmpty()
            && (!keys.count(sw + QStringLiteral("enabled")) || truthy(get(sw + QStringLiteral("enabled"))))) {
            bool ok = false;
            Autoswitch a {matches, {}};
            if (const double u = get(sw + QStringLiteral("underflow_threshold_pct")).toDouble(&ok); ok)
                a.thresholds[QStringLiteral("underflow_pct")] = u;
            if (const double m = get(sw + QStringLiteral("mse_threshold")).toDouble(&ok); ok)
                a.thresholds[QStringLiteral("mse")] = m;
            if (!a.thresholds.empty())
                autoswitch->push_back(a);
        }
    }
}

// Megatron's --te-precision-config-file: matchers in the order the file lists them, configs by name.
void tePrecisionConfig(const std::vector<ConfigEntry> &configs, const QString &runPrecision, std::vector<Override> *out)
{
    std::map<QString, std::map<QString, QString>> byFile; // file -> key -> value
    std::map<QString, QStringList> matcherOrder;
    for (const ConfigEntry &c : configs) {
        if (!c.key.startsWith(QLatin1String("matchers.")) && !c.key.startsWith(QLatin1String("configs.")))
            continue;
        byFile[c.file][c.key] = c.value;
        if (c.key.startsWith(QLatin1String("matchers."))) {
            const QString m = c.key.section(QLatin1Char('.'), 1, 1);
            if (!matcherOrder[c.file].contains(m))
                matcherOrder[c.file] << m;
        }
    }
    for (const auto &entry : byFile) {
        const QString &file = entry.first;
        const std::map<QString, QString> &keys = entry.second;
        const auto get = [&](const QString &k) {
            const auto it = keys.find(k);
            return it == keys.end() ? QString() : it->second;
        };
        // Each matcher's precision; the first enabled one that matches decides (a later override in the list of
        // overrides must not win over it: one override decides them all).
        struct Matcher {
            QRegularExpression glob;
            QString name, config, precision, recipe;
        };
        std::vector<Matcher> matchers;
        for (const QString &m : matcherOrder[file]) {
            const QString base = QStringLiteral("matchers.") + m + QLatin1Char('.');
            if (keys.count(base + QStringLiteral("enabled")) && !truthy(get(base + QStringLiteral("enabled"))))
                continue;
            const QString type = get(base + QStringLiteral("type"));
            if (!type.isEmpty() && type != QLatin1String("glob"))
                continue;
            const QString config = get(base + QStringLiteral("config"));
            const QString fp8 = get(QStringLiteral("configs.%1.training_recipe.fp8_quantization_recipe").arg(config));
            const QString fp4 = get(QStringLiteral("configs.%1.training_recipe.fp4_quantization_recipe").arg(config));
            const QString recipe = fp8.isEmpty() ? fp4 : fp8;
            // fnmatch's glob, whole name (module names have no '/').
            Matcher x;
            x.glob = QRegularExpression(
                QRegularExpression::wildcardToRegularExpression(get(base + QStringLiteral("pattern"))));
            x.name = m;
            x.config = config;
            x.precision = recipe.isEmpty() ? QStringLiteral("bf16")
                : fp8.isEmpty()            ? QStringLiteral("nvfp4")
                                           : runPrecision;
            x.recipe = recipe;
            matchers.push_back(x);
        }
        if (matchers.empty())
            continue;
        const QString fileName = file.section(QLatin1Char('/'), -1);
        for (const Matcher &m : matchers) {
            out->push_back({[matchers, name = m.name](const QString &layer) {
                                for (const Matcher &x : matchers) {
                                    if (x.glob.match(layer).hasMatch())
                                        return x.name == name;
                                }
                                return false;
                            },
                {.precision = m.precision,
                    .recipe = m.recipe,
                    .gemms = kGemms,
                    .source = QStringLiteral("Megatron --te-precision-config-file %1: matcher %2, config %3")
                                  .arg(fileName, m.name, m.config)}});
        }
    }
}

} // namespace

const LayerPrecision *PrecisionMap::find(const QString &layer) const
{
    const auto it = index.constFind(layer);
    return it == index.cend() ? nullptr : &layers[size_t(*it)];
}

const PrecisionSpan *PrecisionMap::at(const QString &layer, int64_t step) const
{
    const LayerPrecision *l = find(layer);
    if (!l)
        return nullptr;
    const PrecisionSpan *out = nullptr;
    for (const PrecisionSpan &s : l->spans) {
        if (s.holds(step) && s.gemms.size() == kGemms.size())
            out = &s;
    }
    return out;
}

bool PrecisionMap::highPrecision(const QString &layer, int64_t step) const
{
    const LayerPrecision *l = find(layer);
    if (!l || precision.isEmpty() || precision == QLatin1String("bf16") || precision == QLatin1String("fp16")
        || precision == QLatin1String("fp32"))
        return false;
    // Each GEMM's precision at the step: the last span that holds it says.
    std::map<QString, QString> of;
    for (const PrecisionSpan &s : l->spans) {
        if (!s.holds(step))
            continue;
        for (const QString &g : s.gemms)
            of[g] = s.precision;
    }
    return std::all_of(kGemms.begin(), kGemms.end(), [&](const QString &g) { return of[g] == QLatin1String("bf16"); });
}

bool PrecisionMap::highPrecisionThroughout(const QString &layer) const
{
    const LayerPrecision *l = find(layer);
    if (!l)
        return false;
    // Whole-run spans decide it; an automatic switch holds some steps only.
    std::map<QString, QString> of;
    for (const PrecisionSpan &s : l->spans) {
        if (!s.wholeRun())
            continue;
        for (const QString &g : s.gemms)
            of[g] = s.precision;
    }
    return !precision.isEmpty() && precision != QLatin1String("bf16")
        && std::all_of(kGemms.begin(), kGemms.end(), [&](const QString &g) { return of[g] == QLatin1String("bf16"); });
}

PrecisionMap precisionMap(const Catalog &catalog, RunRef run)
{
    PrecisionMap map;
    const auto r = catalog.run(run);
    if (!r)
        return map;
    map.precision = r->precision;
    map.recipe = r->recipe;
    std::vector<QString> layers;
    int deepest = -1;
    for (const LayerTensors &lt : catalog.layerTensors({run})) {
        layers.push_back(lt.layer);
        deepest = std::max(deepest, transformerLayer(lt.layer));
    }
    const std::vector<ConfigEntry> configs = catalog.configs(run);
    std::map<QString, QString> args;
    Sections sections;
    static const QRegularExpression featureKey(QStringLiteral(
        R"(^([^.]+)\.((?:transformer_engine\.)?(?:DisableQuantizationLayer|DisableFP8Layer|DisableQuantizationGEMM|DisableFP8GEMM|AutoswitchGemm)\..+|layers\..+|enabled)$)"));
    // Megatron's arguments as its log's arguments block or a command line writes them (no dots: "num_layers",
    // "--first-last-layers-bf16") before a nested config's keys of the same last name (a vision tower's
    // num_layers must not decide which layers are first and last).
    for (const bool nested : {false, true}) {
        for (const ConfigEntry &c : configs) {
            if (c.key.contains(QLatin1Char('.')) == nested)
                args.emplace(argumentName(c.key), c.value);
        }
    }
    for (const ConfigEntry &c : configs) {
        if (const auto m = featureKey.match(c.key); m.hasMatch())
            sections[{c.file, m.captured(1)}][m.captured(2)] = c.value;
    }
    // Sections with a feature this map reads (a section's `enabled` and `layers` alone say nothing).
    for (auto it = sections.begin(); it != sections.end();) {
        const bool feature = std::any_of(it->second.begin(), it->second.end(), [](const auto &kv) {
            return !kv.first.startsWith(QLatin1String("layers.")) && kv.first != QLatin1String("enabled");
        });
        it = feature ? std::next(it) : sections.erase(it);
    }
    std::vector<Override> overrides;
    // The per-module recipes first: they override a module's precision only where it is quantized, so Megatron's
    // first and last layers in BF16 stay so (TransformerEngineMixedPrecision.md) and come after them.
    tePrecisionConfig(configs, r->precision, &overrides);
    megatronFlags(args, deepest, &overrides);
    std::vector<Autoswitch> autoswitch;
    teDebugConfig(sections, &overrides, &autoswitch);
    const QString own = r->precision.isEmpty() ? QStringLiteral("unknown") : r->precision;
    for (const QString &layer : layers) {
        LayerPrecision lp {layer, {}};
        lp.spans.push_back({.precision = own,
            .recipe = r->recipe,
            .gemms = kGemms,
            .source = QStringLiteral("the run's precision and recipe")});
        for (const Override &o : overrides) {
            if (o.matches(layer))
                lp.spans.push_back(o.span);
        }
        map.index.insert(layer, qsizetype(map.layers.size()));
        map.layers.push_back(std::move(lp));
    }
    // AutoswitchGemm's statistics: a GEMM switched to high precision at the steps one passes its threshold.
    bool autoswitchSeries = false;
    static const QRegularExpression switchStat(QStringLiteral(R"(^(fprop|dgrad|wgrad)_(underflow_pct|mse)$)"));
    for (const Series &s : catalog.series(run)) {
        const auto m = switchStat.match(s.stat);
        if (s.layer.isEmpty() || !m.hasMatch())
            continue;
        autoswitchSeries = true;
        // The section that sets AutoswitchGemm for this layer (each layer belongs to one section).
        const auto section = std::find_if(autoswitch.begin(), autoswitch.end(),
            [&](const Autoswitch &a) { return a.matches(s.layer) && a.thresholds.count(m.captured(2)); });
        if (section == autoswitch.end())
            continue;
        const auto threshold = section->thresholds.find(m.captured(2));
        const auto at = map.index.constFind(s.layer);
        if (at == map.index.cend())
            continue;
        LayerPrecision *lp = &map.layers[size_t(*at)];
        std::optional<PrecisionSpan> open;
        const auto close = [&](int64_t to) {
            if (open) {
                open->to = to;
                lp->spans.push_back(*open);
                open.reset();
            }
        };
        int64_t last = 0;
        for (const SeriesPoint &p : catalog.points(s)) {
            if (p.value > threshold->second) {
                if (!open)
                    open = PrecisionSpan {.from = p.step,
                        .precision = QStringLiteral("bf16"),
                        .gemms = {m.captured(1)},
                        .source = QStringLiteral("AutoswitchGemm: %1 %2 %3 passed %4 at step %5")
                                      .arg(m.captured(1), s.tensor, m.captured(2))
                                      .arg(threshold->second)
                                      .arg(p.step),
                        .automatic = true};
            } else {
                close(last);
            }
            last = p.step;
        }
        close(std::numeric_limits<int64_t>::max());
    }
    if (autoswitchSeries && autoswitch.empty())
        map.notes << QStringLiteral("AutoswitchGemm statistics without the thresholds of its config (its debug "
                                    "YAML in the run's folder): the switches are not known");
    return map;
}

} // namespace fp8scope

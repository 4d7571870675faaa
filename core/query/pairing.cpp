#include "pairing.h"

#include <QRegularExpression>

#include <algorithm>
#include <limits>

namespace fp8scope {

namespace {

const QStringList &baselineWords()
{
    static const QStringList w {QStringLiteral("bf16"), QStringLiteral("bfloat16"), QStringLiteral("fp16"),
        QStringLiteral("fp32"), QStringLiteral("float32"), QStringLiteral("baseline")};
    return w;
}

const QStringList &lowPrecisionWords()
{
    static const QStringList w {QStringLiteral("fp8"), QStringLiteral("mxfp8"), QStringLiteral("nvfp4"),
        QStringLiteral("fp4"), QStringLiteral("mxfp4"), QStringLiteral("float8")};
    return w;
}

QStringList nameWords(const QString &name)
{
    static const QRegularExpression sep(QStringLiteral("[^a-z0-9]+"));
    return name.toLower().split(sep, Qt::SkipEmptyParts);
}

// The name without its precision words: what a baseline and its FP8 twin share.
QString stem(const QString &name)
{
    QStringList kept;
    for (const QString &w : nameWords(name)) {
        if (!baselineWords().contains(w) && !lowPrecisionWords().contains(w))
            kept << w;
    }
    return kept.join(QLatin1Char('_'));
}

int commonPrefix(const QString &a, const QString &b)
{
    int n = 0;
    while (n < a.size() && n < b.size() && a[n] == b[n])
        ++n;
    return n;
}

QString runWord(const Run &r)
{
    return r.precision.isEmpty() ? QStringLiteral("baseline") : r.precision.toUpper();
}

} // namespace

PrecisionClass precisionClass(const QString &precision, const QString &name)
{
    const QString p = precision.trimmed().toLower();
    if (!p.isEmpty()) {
        if (baselineWords().contains(p) || p == QLatin1String("float16") || p == QLatin1String("half"))
            return PrecisionClass::Baseline;
        if (p.startsWith(QLatin1String("fp8")) || p.startsWith(QLatin1String("mxfp"))
            || p.startsWith(QLatin1String("nvfp")) || p.startsWith(QLatin1String("fp4"))
            || p.startsWith(QLatin1String("float8")))
            return PrecisionClass::LowPrecision;
        return PrecisionClass::Unknown;
    }
    bool low = false, base = false;
    for (const QString &w : nameWords(name)) {
        low = low || lowPrecisionWords().contains(w);
        base = base || baselineWords().contains(w);
    }
    if (low != base)
        return low ? PrecisionClass::LowPrecision : PrecisionClass::Baseline;
    return PrecisionClass::Unknown;
}

bool isPairingNeutralKey(const QString &key)
{
    static const QRegularExpression sep(QStringLiteral("[^a-z0-9]+"));
    const QStringList words = key.section(QLatin1Char('.'), -1).toLower().split(sep, Qt::SkipEmptyParts);
    // Precision, recipe and FP8 settings: what the two runs are meant to differ in.
    static const QStringList precision {QStringLiteral("fp8"), QStringLiteral("fp4"), QStringLiteral("bf16"),
        QStringLiteral("fp16"), QStringLiteral("fp32"), QStringLiteral("precision"), QStringLiteral("recipe"),
        QStringLiteral("amax"), QStringLiteral("dtype"), QStringLiteral("quant"), QStringLiteral("mxfp8"),
        QStringLiteral("nvfp4")};
    // Where a run writes and what it is called: they differ between any two runs.
    static const QStringList runSpecific {QStringLiteral("save"), QStringLiteral("load"), QStringLiteral("dir"),
        QStringLiteral("path"), QStringLiteral("name"), QStringLiteral("wandb"), QStringLiteral("tensorboard"),
        QStringLiteral("log"), QStringLiteral("checkpoint"), QStringLiteral("output"), QStringLiteral("timestamp"),
        QStringLiteral("date"), QStringLiteral("job"), QStringLiteral("host"), QStringLiteral("exp")};
    for (const QString &w : words) {
        for (const QString &p : precision) {
            if (w.startsWith(p))
                return true;
        }
        if (runSpecific.contains(w))
            return true;
    }
    return false;
}

int configDifferences(const std::map<QString, QString> &a, const std::map<QString, QString> &b)
{
    int n = 0;
    auto i = a.begin();
    auto j = b.begin();
    while (i != a.end() || j != b.end()) {
        if (j == b.end() || (i != a.end() && i->first < j->first)) {
            n += isPairingNeutralKey(i->first) ? 0 : 1;
            ++i;
        } else if (i == a.end() || j->first < i->first) {
            n += isPairingNeutralKey(j->first) ? 0 : 1;
            ++j;
        } else {
            n += i->second != j->second && !isPairingNeutralKey(i->first) ? 1 : 0;
            ++i;
            ++j;
        }
    }
    return n;
}

QString basisName(Pairing::Basis basis)
{
    switch (basis) {
    case Pairing::Basis::None: return QStringLiteral("none");
    case Pairing::Basis::Manifest: return QStringLiteral("manifest");
    case Pairing::Basis::OnlyBaseline: return QStringLiteral("only-baseline");
    case Pairing::Basis::Config: return QStringLiteral("config");
    case Pairing::Basis::Steps: return QStringLiteral("steps");
    case Pairing::Basis::Name: return QStringLiteral("name");
    case Pairing::Basis::Group: return QStringLiteral("group");
    }
    return {};
}

Pairing pairRun(const std::vector<PairingInput> &runs, size_t index,
    const std::function<std::pair<int64_t, int64_t>(size_t)> &stepsOf)
{
    const Run &run = runs[index].run;
    Pairing p;
    if (!run.manifestBaseline.isEmpty()) {
        // The run folder's name, in the same store first (names are unique there), then a display name, then
        // another opened folder.
        const Run *found = nullptr;
        for (int pass = 0; pass < 3 && !found; ++pass) {
            for (size_t i = 0; i < runs.size() && !found; ++i) {
                const Run &r = runs[i].run;
                if (i == index)
                    continue;
                const bool match = pass == 0 ? r.ref.store == run.ref.store && r.name == run.manifestBaseline
                    : pass == 1              ? r.displayName == run.manifestBaseline
                                             : r.name == run.manifestBaseline;
                if (match)
                    found = &r;
            }
        }
        if (!found) {
            p.reason = QStringLiteral("its manifest names the baseline '%1', which is not among the open runs")
                           .arg(run.manifestBaseline);
            return p;
        }
        p.baseline = found->ref;
        p.basis = Pairing::Basis::Manifest;
        p.reason = QStringLiteral("its manifest names %1").arg(found->label());
        return p;
    }
    const PrecisionClass own = precisionClass(run.precision, run.name);
    if (own == PrecisionClass::Baseline) {
        p.reason = run.precision.isEmpty()
            ? QStringLiteral("its name marks it a high-precision run: it is a baseline, not compared with one")
            : QStringLiteral("trained in %1: it is a baseline, not compared with one").arg(runWord(run));
        return p;
    }
    if (own == PrecisionClass::Unknown) {
        p.reason = run.precision.isEmpty()
            ? QStringLiteral("its precision is unknown (no manifest, config flag or name says)")
            : QStringLiteral("its precision '%1' is neither a baseline's nor a low precision").arg(run.precision);
        return p;
    }
    std::vector<size_t> candidates;
    for (size_t i = 0; i < runs.size(); ++i) {
        if (i != index && precisionClass(runs[i].run.precision, runs[i].run.name) == PrecisionClass::Baseline)
            candidates.push_back(i);
    }
    if (candidates.empty()) {
        p.reason = QStringLiteral("no BF16 (or other high-precision) run is open");
        return p;
    }
    if (candidates.size() == 1) {
        const Run &b = runs[candidates.front()].run;
        p.baseline = b.ref;
        p.basis = Pairing::Basis::OnlyBaseline;
        p.reason = QStringLiteral("the only %1 run open").arg(runWord(b));
        return p;
    }
    // Several: those of the run's group (a W&B group, an MLflow experiment: the runs its logger kept together),
    // where some are and some are not.
    if (!run.group.isEmpty()) {
        std::vector<size_t> same;
        for (size_t c : candidates) {
            if (runs[c].run.group == run.group)
                same.push_back(c);
        }
        if (same.size() == 1) {
            const Run &b = runs[same.front()].run;
            p.baseline = b.ref;
            p.basis = Pairing::Basis::Group;
            p.reason = QStringLiteral("of %1 high-precision runs, the only one of its group %2")
                           .arg(candidates.size())
                           .arg(run.group);
            return p;
        }
        if (!same.empty())
            candidates = same;
    }
    // Several: the config that differs least, when the run and some candidate have one.
    if (!runs[index].configs.empty()) {
        constexpr int kNone = std::numeric_limits<int>::max();
        std::vector<int> score(candidates.size(), kNone);
        for (size_t c = 0; c < candidates.size(); ++c) {
            if (!runs[candidates[c]].configs.empty())
                score[c] = configDifferences(runs[index].configs, runs[candidates[c]].configs);
        }
        const int best = *std::min_element(score.begin(), score.end());
        if (best != kNone) {
            std::vector<size_t> tied;
            int next = kNone;
            for (size_t c = 0; c < candidates.size(); ++c) {
                if (score[c] == best)
                    tied.push_back(candidates[c]);
                else
                    next = std::min(next, score[c]);
            }
            if (tied.size() == 1) {
                const Run &b = runs[tied.front()].run;
                p.baseline = b.ref;
                p.basis = Pairing::Basis::Config;
                p.configDifferences = best;
                p.reason = next == kNone
                    ? QStringLiteral(
                        "of %1 high-precision runs, the only one with a config to compare (%2 keys differ)")
                          .arg(candidates.size())
                          .arg(best)
                    : QStringLiteral("of %1 high-precision runs, its config differs least: %2 keys (next: %3)")
                          .arg(candidates.size())
                          .arg(best)
                          .arg(next);
                return p;
            }
            candidates = tied;
        }
    }
    // Steps: the candidates whose loss covers the most of the run's steps (within a tenth of the best); a short
    // retest beside the full-length baseline is not comparable.
    const auto steps = [&](size_t i) { return stepsOf ? stepsOf(i) : std::pair(runs[i].firstStep, runs[i].lastStep); };
    // Plain names, not a structured binding: the lambda below captures them.
    const std::pair<int64_t, int64_t> ownSteps
        = candidates.size() > 1 ? steps(index) : std::pair<int64_t, int64_t>(1, 0);
    const int64_t ownFirst = ownSteps.first, ownLast = ownSteps.second;
    if (candidates.size() > 1 && ownFirst <= ownLast) {
        const auto overlap = [&](size_t c) {
            const auto [first, last] = steps(c);
            const int64_t lo = std::max(ownFirst, first);
            const int64_t hi = std::min(ownLast, last);
            return first <= last && hi >= lo ? hi - lo + 1 : int64_t(0);
        };
        int64_t best = 0;
        for (size_t c : candidates)
            best = std::max(best, overlap(c));
        std::vector<size_t> kept;
        int64_t next = 0;
        for (size_t c : candidates) {
            if (best > 0 && 10 * overlap(c) >= 9 * best)
                kept.push_back(c);
            else
                next = std::max(next, overlap(c));
        }
        if (kept.size() == 1) {
            const Run &b = runs[kept.front()].run;
            p.baseline = b.ref;
            p.basis = Pairing::Basis::Steps;
            p.reason = QStringLiteral("of %1 high-precision runs that fit equally, its loss covers the most of this "
                                      "run's steps: %2 of %3 (next: %4)")
                           .arg(candidates.size())
                           .arg(best)
                           .arg(ownLast - ownFirst + 1)
                           .arg(next);
            return p;
        }
        if (!kept.empty())
            candidates = kept;
    }
    // Names: the longest shared stem once precision words are gone ("gpt_7b_fp8" and "gpt_7b_bf16").
    const QString own_stem = stem(run.name);
    int best = -1;
    std::vector<size_t> tied;
    for (size_t c : candidates) {
        const QString s = stem(runs[c].run.name);
        const int score = s == own_stem ? 1 << 20 : commonPrefix(s, own_stem);
        if (score > best) {
            best = score;
            tied = {c};
        } else if (score == best) {
            tied.push_back(c);
        }
    }
    const Run &b = runs[tied.front()].run;
    p.baseline = b.ref;
    p.basis = Pairing::Basis::Name;
    p.reason = tied.size() == 1
        ? (best == 1 << 20 ? QStringLiteral("its name is %1's but for the precision").arg(b.name)
                           : QStringLiteral("its name shares the most with %1's").arg(b.name))
        : QStringLiteral("%1 high-precision runs fit equally; %2 is the first by name").arg(tied.size()).arg(b.name);
    return p;
}

} // namespace fp8scope

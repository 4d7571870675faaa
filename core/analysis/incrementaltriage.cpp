#include "incrementaltriage.h"

#include <QCryptographicHash>

namespace fp8scope::analysis {

namespace {

void add(QCryptographicHash &h, const QString &s)
{
    const QByteArray utf8 = s.toUtf8();
    const qint64 n = utf8.size();
    h.addData(QByteArrayView(reinterpret_cast<const char *>(&n), sizeof n));
    h.addData(utf8);
}

void add(QCryptographicHash &h, int64_t v)
{
    h.addData(QByteArrayView(reinterpret_cast<const char *>(&v), sizeof v));
}

} // namespace

IncrementalTriage::IncrementalTriage(const TriageOptions &options)
    : m_options(options)
{
}

QByteArray IncrementalTriage::fingerprint(const Catalog &catalog, RunRef run)
{
    const std::optional<Run> r = catalog.run(run);
    if (!r)
        return {};
    QCryptographicHash h(QCryptographicHash::Sha1);
    for (const QString *s :
        {&r->name, &r->displayName, &r->precision, &r->recipe, &r->manifestBaseline, &r->inferencePrecision, &r->notes})
        add(h, *s);
    if (const int64_t rewrites = catalog.dataRewrites(run.store); rewrites != -1)
        add(h, rewrites);
    for (const InputFile &f : catalog.inputFiles(run)) {
        add(h, f.file);
        add(h, f.size);
    }
    for (const Series &s : catalog.series(run)) {
        add(h, s.id);
        add(h, s.points);
        add(h, s.firstStep);
        add(h, s.lastStep);
    }
    return h.result();
}

IncrementalTriage::Kept *IncrementalTriage::find(
    const Catalog &catalog, RunRef baseline, RunRef run, std::map<RunRef, QByteArray> *prints, bool *fresh)
{
    const auto of = [&](RunRef r) -> const QByteArray & {
        auto it = prints->find(r);
        if (it == prints->end())
            it = prints->emplace(r, fingerprint(catalog, r)).first;
        return it->second;
    };
    QByteArray print = of(run);
    if (baseline.isValid())
        print += of(baseline);
    Kept &k = m_kept[{baseline, run}];
    *fresh = k.fingerprint.isEmpty() || k.fingerprint != print;
    k.fingerprint = print;
    if (*fresh)
        ++m_computed;
    else
        ++m_reused;
    return &k;
}

Comparison IncrementalTriage::compare(const Catalog &catalog, RunRef baseline, RunRef run)
{
    m_computed = m_reused = 0;
    const Catalog::ReadSnapshot snapshot(catalog);
    std::map<RunRef, QByteArray> prints;
    bool fresh = false;
    Kept *k = find(catalog, baseline, run, &prints, &fresh);
    if (fresh)
        k->comparison = compareRuns(catalog, baseline, run, m_options);
    return k->comparison;
}

TriageResult IncrementalTriage::update(const Catalog &catalog)
{
    m_computed = m_reused = 0;
    const Catalog::ReadSnapshot snapshot(catalog);
    TriageResult out;
    std::map<std::pair<RunRef, RunRef>, Kept> kept;
    std::map<RunRef, QByteArray> prints;
    for (const TriageTarget &t : triageTargets(catalog)) {
        bool fresh = false;
        Kept *k = find(catalog, t.baseline, t.run, &prints, &fresh);
        if (t.baseline.isValid()) {
            if (fresh)
                k->comparison = compareRuns(catalog, t.baseline, t.run, m_options);
            out.comparisons.push_back(k->comparison);
        } else {
            if (fresh)
                k->check = checkRun(catalog, t.run, m_options);
            out.runs.push_back(k->check);
        }
        kept.insert(m_kept.extract({t.baseline, t.run}));
    }
    // Pairs no longer triaged (a run gone, paired anew) are forgotten.
    m_kept = std::move(kept);
    return out;
}

void IncrementalTriage::clear()
{
    m_kept.clear();
    m_computed = m_reused = 0;
}

} // namespace fp8scope::analysis

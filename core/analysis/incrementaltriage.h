// The triage of runs still being written, evaluated again after each batch of new data (the window's live
// triage, `fp8scope-cli watch`): a pair whose runs' data did not change since the last evaluation keeps its
// result; a pair that changed is triaged again, and with a catalog that keeps its points
// (Catalog::setKeepPoints) that reads only the points written since. What stays proportional to a changed
// run's length is the analysis of its series (the peers and the onsets); docs/PERFORMANCE.md has the figures.
#pragma once

#include "triage.h"

#include <QByteArray>

#include <map>
#include <utility>

namespace fp8scope::analysis {

class IncrementalTriage
{
public:
    explicit IncrementalTriage(const TriageOptions &options = {.live = true});

    const TriageOptions &options() const { return m_options; }
    // triage(catalog, options()) as of now, the pairs that did not change taken from the last evaluation. It
    // reads one state of the stores (Catalog::ReadSnapshot), whatever an ingest commits meanwhile.
    TriageResult update(const Catalog &catalog);
    // compareRuns(catalog, baseline, run, options()) the same way.
    Comparison compare(const Catalog &catalog, RunRef baseline, RunRef run);
    // What the last update() or compare() computed anew and what it took as it was.
    int computed() const { return m_computed; }
    int reused() const { return m_reused; }
    // Forgets every result (folders opened anew).
    void clear();

    // Everything a run's triage reads, as one value that changes when any of it does: the run's attributes,
    // its files and their sizes, its series with their point counts and last steps, and how often its store
    // had data replaced or removed (RunStore::dataRewrites). Empty for a run the catalog does not have.
    static QByteArray fingerprint(const Catalog &catalog, RunRef run);

private:
    struct Kept {
        QByteArray fingerprint; // the run's and the baseline's
        Comparison comparison;
        RunCheck check;
    };
    // The pair's entry, fresh when its fingerprint moved; `prints` holds each run's fingerprint of this
    // evaluation (a baseline is in several targets).
    Kept *find(const Catalog &catalog, RunRef baseline, RunRef run, std::map<RunRef, QByteArray> *prints, bool *fresh);

    TriageOptions m_options;
    std::map<std::pair<RunRef, RunRef>, Kept> m_kept; // (baseline, run); baseline invalid: checked alone
    int m_computed = 0, m_reused = 0;
};

} // namespace fp8scope::analysis

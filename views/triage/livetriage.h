// The triage engine over the workspace's followed runs: after new data (at most once per interval, never two
// evaluations at once) it triages every pair again as a live run (TriageOptions::live) on the query queue,
// and tells of each warning or critical finding it has not told of, and again of one whose severity rose.
// What was there when the folders were opened is not news: the first evaluation after an open records it
// silently (the triage wizard and the status bar's offer show it).
//
// Each evaluation, once per batch of new data rather than once per line, goes through an
// analysis::IncrementalTriage: pairs whose runs did not change keep their results, and those that did read
// only the points written since (the workspace's query catalog keeps them while following). What one costs
// on a long run is in docs/PERFORMANCE.md.
#pragma once

#include "core/analysis/incrementaltriage.h"

#include <QElapsedTimer>
#include <QHash>
#include <QObject>

#include <memory>
#include <vector>

class QTimer;

namespace fp8scope {

class Workspace;

class LiveTriage : public QObject
{
    Q_OBJECT
public:
    struct Notice {
        RunRef baseline;
        RunRef run;
        QString runName, baselineName;
        analysis::Finding finding;
        int64_t newestStep = -1; // the run's newest step when it was found
        // "critical layer-signal in layers.3.mlp.fc1 ...: since step 3250, 270 steps before the newest".
        QString text() const;
    };

    explicit LiveTriage(Workspace *workspace, QObject *parent = nullptr);

    // At most one evaluation per interval (default 1 s).
    void setMinIntervalMs(int ms);
    void setEnabled(bool on);
    bool isEnabled() const { return m_enabled; }
    bool isEvaluating() const { return m_ticket != 0; }
    int evaluations() const { return m_evaluations; }
    // Of the pairs the evaluations triaged, those computed anew and those whose runs had not changed.
    int pairsComputed() const { return m_computed; }
    int pairsReused() const { return m_reused; }
    // Every notice told since the folders were opened, oldest first.
    const std::vector<Notice> &notices() const { return m_notices; }

Q_SIGNALS:
    // notices()[index] is new.
    void noticed(int index);
    void evaluated();

private:
    void schedule();
    void evaluate();
    void take(const std::vector<analysis::Comparison> &comparisons, bool tell);

    Workspace *m_workspace;
    QTimer *m_timer;
    QElapsedTimer m_since;
    QString m_slot;
    quint64 m_ticket = 0;
    bool m_again = false; // new data came while evaluating
    bool m_primed = false; // the silent first evaluation is done
    bool m_enabled = true;
    int m_minIntervalMs = 1000;
    int m_evaluations = 0;
    int m_computed = 0, m_reused = 0;
    std::shared_ptr<analysis::IncrementalTriage> m_engine; // replaced when folders are opened anew
    quint64 m_generation = 0; // moves when folders are opened anew: older results are dropped
    QHash<QString, int> m_told; // a finding's identity within its pair, and the severity it was told at
    std::vector<Notice> m_notices;
};

} // namespace fp8scope

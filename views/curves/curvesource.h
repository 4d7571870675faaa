// Where a curve view gets what it draws: the statistics it can show, the runs it draws, and for one run and
// request the points of one curve (served at screen resolution). The workspace's source reads the stores
// through the query layer, choosing the series with the query layer's one policy; a comparison hands the
// same view a source of differences (run - baseline), so the ordinary view draws them.
#pragma once

#include "core/query/querytypes.h"

#include <QColor>
#include <QObject>

#include <map>
#include <optional>
#include <set>
#include <utility>
#include <vector>

namespace fp8scope {

class Workspace;

class CurveSource : public QObject
{
    Q_OBJECT
public:
    using QObject::QObject;

    struct Statistic {
        QString stat; // canonical
        bool tensorLevel = false; // a statistic of the selected layer's tensor
        QStringList sources; // the sources holding it (a picker offers them when there are several)
    };
    struct Request {
        QString stat;
        bool tensorLevel = false;
        QString layer; // for tensor statistics
        QString tensor;
        QString source; // "" lets the query layer choose
        PointRange range; // steps, or consumed samples when bySamples
        bool bySamples = false; // x is consumed samples
    };
    struct Curve {
        QString name; // for the legend
        Series series; // the series it draws
        std::vector<SeriesPoint> points;
        bool xIsSamples = false; // the points' steps are consumed samples ("... vs samples" series)
    };

    // What happened at a step of a run that a reader of its curves must see: iterations skipped (an
    // overflowing gradient), iterations with NaN or Inf, the loss scale cut, a restart (the log went back to an
    // earlier step: a resume from a checkpoint), a spike of the statistic drawn (a comparison finds them).
    struct Event {
        enum Kind { Skipped, NotFinite, LossScaleDrop, Restart, Spike };
        qint64 step = 0;
        Kind kind = Skipped;
        double value = 0; // iterations skipped or not finite in the interval; the new loss scale; the step the
                          // log had reached before a restart; a spike's height in noise sigmas
    };
    static constexpr Event::Kind kEventKinds[]
        = {Event::Skipped, Event::NotFinite, Event::LossScaleDrop, Event::Restart, Event::Spike};

    virtual std::vector<Statistic> statistics() const = 0;
    // The runs drawn, in order.
    virtual std::vector<RunRef> runs() const = 0;
    virtual QString runName(RunRef run) const = 0;
    // The name a legend shows: runName, or one shortened by what the runs' names share.
    virtual QString legendName(RunRef run) const { return runName(run); }
    // Whether the legend names the run's curve (not the grey context drawn behind the one that matters).
    virtual bool inLegend(RunRef) const { return true; }
    virtual QColor runColour(RunRef run) const = 0;
    virtual Qt::PenStyle runLineStyle(RunRef) const { return Qt::SolidLine; }
    virtual std::optional<Curve> curve(RunRef run, const Request &request) const = 0;
    // (step, consumed samples) of a run, in step order: its consumed-samples counter, else TensorBoard's
    // "vs samples" twins, else the sum of its logged batch sizes; empty when it has none of them.
    virtual std::vector<std::pair<double, double>> stepSamples(RunRef run) const = 0;
    // (step, consumed tokens) of a run, in step order: its consumed-tokens counter, else its consumed samples
    // times its sequence length (a config key); empty when it has neither.
    virtual std::vector<std::pair<double, double>> stepTokens(RunRef) const { return {}; }
    // Why there is nothing to draw when statistics() or runs() is empty (no folder, every run hidden, a
    // folder of evaluation results only); "" to say nothing.
    virtual QString emptyText() const { return {}; }
    // The run's events, in step order (none by default: a source of differences has none of its own).
    virtual std::vector<Event> events(RunRef) const { return {}; }

Q_SIGNALS:
    void statisticsChanged(); // statistics() or runs() changed (a folder opened, a recompute)
    void curvesChanged(); // the same request now gives other curves (a run hidden or shown, new values)
};

// The visible runs of a workspace.
class WorkspaceCurveSource : public CurveSource
{
    Q_OBJECT
public:
    explicit WorkspaceCurveSource(Workspace *workspace, QObject *parent = nullptr);

    std::vector<Statistic> statistics() const override;
    std::vector<RunRef> runs() const override;
    QString runName(RunRef run) const override;
    QString legendName(RunRef run) const override;
    QColor runColour(RunRef run) const override;
    Qt::PenStyle runLineStyle(RunRef run) const override;
    std::optional<Curve> curve(RunRef run, const Request &request) const override;
    std::vector<std::pair<double, double>> stepSamples(RunRef run) const override;
    std::vector<std::pair<double, double>> stepTokens(RunRef run) const override;
    // The sequence length a run's config names (seq_length, --seq-length, max_seq_len, ...); 0 when none does.
    static int64_t sequenceLength(const std::vector<ConfigEntry> &configs);
    QString emptyText() const override;
    std::vector<Event> events(RunRef run) const override;

private:
    // The series the query layer chooses for a run and request (the range aside): chosen once, not on every
    // pan and zoom (the choice counts every candidate's points); forgotten when the stores change.
    std::optional<Series> chosen(RunRef run, const SeriesRequest &request) const;
    std::vector<std::pair<double, double>> readStepSamples(RunRef run) const;

    Workspace *m_workspace;
    mutable std::set<QString> m_listedTensorStats; // what statistics() last listed
    mutable std::map<QString, std::optional<Series>> m_chosen;
    mutable std::map<RunRef, std::vector<Event>> m_events;
    // Read once per run (choosing the series counts their points), forgotten when the stores change.
    mutable std::map<RunRef, std::vector<std::pair<double, double>>> m_stepSamples;
    mutable std::map<RunRef, std::vector<std::pair<double, double>>> m_stepTokens;
};

} // namespace fp8scope

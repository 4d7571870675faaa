// The side-by-side comparison of a run with its baseline: pickers for the two runs (the pairing by default,
// any two allowed) and the statistic; the two runs overlaid in an ordinary curve view, and beneath it, on the
// same x axis, their difference with the band the triage engine judged the departure by, the departure's
// step and interval marked on both; then the comparison's findings (selecting one moves the shared
// selection to its run, layer, tensor and step), its evaluation table (the gap against its standard error,
// the significant ones marked) and its config and version table (differing keys first, suspects first;
// identical ones one click away). It is computed off the GUI thread, on the workspace's query queue.
#pragma once

#include "core/analysis/comparisondata.h"

#include <QWidget>

#include <map>
#include <memory>
#include <tuple>

class QCheckBox;
class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QSplitter;
class QStandardItemModel;
class QTabWidget;
class QTableView;
class QToolButton;

namespace fp8scope {

class AuditChart;
class CurveView;
class DepartureMark;
class EvalChart;
class HeatmapView;
class SingleRunHeatmapSource;
class DifferenceCurveSource;
class LayerDifferenceSource;
class PairCurveSource;
class Selection;
class Workspace;

class CompareView : public QWidget
{
    Q_OBJECT
public:
    CompareView(Workspace *workspace, Selection *selection, QWidget *parent = nullptr);
    ~CompareView() override;

    // Compares `run` with `baseline` (either invalid: the pairing's first pair).
    void setPair(RunRef baseline, RunRef run);
    RunRef baseline() const;
    RunRef run() const;
    void setStatistic(const QString &stat);
    QString statistic() const;

    // The splitters' sizes and the statistic, for the window's settings; restoreState takes them back (the
    // statistic once the runs have it).
    QByteArray saveState() const;
    void restoreState(const QByteArray &state);

    bool isComputing() const { return m_ticket != 0; }
    // Forgets the comparisons computed (a folder read again does so itself); benchmarks time a first one.
    void forgetComparisons() { m_cache.clear(); }
    // The comparison drawn (nullptr before the first).
    const ComparisonData *comparison() const { return m_data.get(); }

    CurveView *overlay() const { return m_overlay; }
    CurveView *difference() const { return m_difference; }
    QTableView *findingsTable() const { return m_findings; }
    QTableView *evalTable() const { return m_evals; }
    EvalChart *evalChart() const { return m_evalChart; }
    QTableView *auditTable() const { return m_auditTable; }
    AuditChart *auditChart() const { return m_auditChart; }
    // Selects an audited layer (inference name) in the table and the plot, and its training module.
    void selectAuditLayer(const QString &name);
    QTableView *configTable() const { return m_config; }
    QSplitter *splitter() const { return m_splitter; }
    // The tabs beside the plots: Findings, Evals, Config, Layers.
    QTabWidget *tabs() const { return m_tabs; }
    // The Focus button shows the window's one focus state (View > Focus on the Tab): the window sets it; a
    // click asks for the other state (focusRequested).
    void setFocusChecked(bool on);
    static constexpr int kEvalsTab = 1;
    static constexpr int kLayersTab = 3;
    // The layer view: the baseline's and the run's per-layer statistic on one colour scale, the suspect layers
    // flagged on the run's.
    HeatmapView *baselineHeatmap() const { return m_baseHeat; }
    HeatmapView *runHeatmap() const { return m_runHeat; }
    // ... or, as one heatmap, their difference (run − baseline) or ratio (run / baseline).
    HeatmapView *differenceHeatmap() const { return m_diffHeat; }
    enum class LayerMode { SideBySide, Difference, Ratio };
    void setLayerMode(LayerMode mode);
    LayerMode layerMode() const;
    // The plot x of the departure marker on each plot (NaN when there is none).
    double departureMarkerX() const;
    QString status() const;

Q_SIGNALS:
    void comparisonChanged();
    // The tabs' Focus button: the window is asked to give the tab the whole window, or to give it back.
    void focusRequested(bool on);

protected:
    void showEvent(QShowEvent *event) override;

private:
    void setUpPlots();
    void setUpTables();
    void setUpLayers();
    void fillPickers();
    void recompute();
    void display(std::shared_ptr<const ComparisonData> data);
    void updateMarkers();
    void selectFinding(const QModelIndex &index);
    void fillAudit();
    void shareColourScale();
    // The names of a run's run-level statistics, sorted; read once (the catalog counts their points).
    const std::vector<QString> &runStatistics(RunRef run);
    // The (statistic, tensor) the layer view opens a comparison on: the first layer signal's that both runs
    // have, else one both have that does not depend on the precision, of the first suspect's tensor.
    std::pair<QString, QString> layerStatistic() const;

    Workspace *m_workspace;
    Selection *m_selection;
    QString m_slot;
    QComboBox *m_baselineBox;
    QComboBox *m_runBox;
    QComboBox *m_statBox;
    QLabel *m_status;
    QSplitter *m_splitter; // the plots | the tables
    QSplitter *m_plots; // the overlay above the difference
    PairCurveSource *m_pairSource;
    DifferenceCurveSource *m_differenceSource;
    CurveView *m_overlay;
    CurveView *m_difference;
    QTabWidget *m_tabs;
    QStandardItemModel *m_findingsModel;
    QStandardItemModel *m_evalModel;
    QStandardItemModel *m_auditModel;
    QLabel *m_auditTitle;
    AuditChart *m_auditChart;
    QStandardItemModel *m_configModel;
    QSortFilterProxyModel *m_configFilter;
    QCheckBox *m_identical;
    QTableView *m_findings;
    QTableView *m_evals;
    QTableView *m_auditTable = nullptr;
    QTableView *m_config;
    EvalChart *m_evalChart;
    SingleRunHeatmapSource *m_baseSource;
    SingleRunHeatmapSource *m_runSource;
    HeatmapView *m_baseHeat;
    HeatmapView *m_runHeat;
    LayerDifferenceSource *m_diffSource;
    HeatmapView *m_diffHeat;
    QComboBox *m_layerMode;
    DepartureMark *m_marks[2] = {nullptr, nullptr}; // the overlay's and the difference's
    std::shared_ptr<const ComparisonData> m_data;
    // Comparisons computed since the folders were read, by (baseline, run, statistic): switching back to a
    // pair draws it at once.
    std::map<std::tuple<RunRef, RunRef, QString>, std::shared_ptr<const ComparisonData>> m_cache;
    std::map<RunRef, std::vector<QString>> m_runStatistics;
    quint64 m_ticket = 0;
    bool m_syncingRange = false;
    bool m_sized = false; // the splitter's first shares were set
    QToolButton *m_focusButton = nullptr;
    bool m_stale = false; // the pickers changed while the view was hidden: compute when it is shown
    QString m_wantedStatistic; // restored, chosen when a pair has it
};

} // namespace fp8scope

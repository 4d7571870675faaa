// The guided triage: the evaluation path of docs/TRIAGE.md walked in five steps over the triage engine's
// comparison of a run with its baseline, each step's evidence in a table that drives the shared selection
// (so the curve, heatmap, histogram and table views show it):
//   1. Runs     the pair, and whether it compares like with like: the config keys that change the model
//               shape, the data or the plan, which a loss comparison does not account for;
//   2. Loss     the verdict in a sentence: where the loss departs and how sure, the lead of the first layer
//               signal, each run's spikes and recoveries (the Comparison tab one click away);
//   3. Class    the evidence of the verdict: the suspect config keys and versions (early divergence), the
//               layer suspects, most suspect first, with their lead (mid-run instability), the spikes of both runs
//               (loss spikes), the evaluation gaps and the inference precision (downstream gap);
//   4. Next     one change at a time, the engine's suggestions with their ready-to-paste configs, and for a
//               layer suspect the what-if of every recipe on its nearest dump (recomputed as jobs, on the GPU
//               when there is one);
//   5. Summary  every finding, each marked open, confirmed or dismissed with a note, kept in the run's store.
// The comparison is computed on the workspace's query queue and the what-if on its job queue: nothing blocks
// the window, and the wizard can be closed and opened again where it was.
#pragma once

#include "core/analysis/comparisondata.h"

#include <QDialog>

#include <functional>
#include <memory>

class QComboBox;
class QLabel;
class QListWidget;
class QPlainTextEdit;
class QPushButton;
class QStackedWidget;
class QStandardItem;
class QStandardItemModel;
class QSplitter;
class QTableView;

namespace fp8scope {

class CurveView;
class DepartureMark;
class EvalChart;
class HeatmapView;
class HistogramView;
class LayerCurveSource;
class PairCurveSource;
class Selection;
class SingleRunHeatmapSource;
class Workspace;

class TriageWizard : public QDialog
{
    Q_OBJECT
public:
    enum Step { RunsStep, LossStep, ClassStep, NextStep, SummaryStep };
    static constexpr int kSteps = 5;

    TriageWizard(Workspace *workspace, Selection *selection, QWidget *parent = nullptr);
    ~TriageWizard() override;

    // Triages `run` against `baseline` (either invalid: the pairing's first pair).
    void setPair(RunRef baseline, RunRef run);
    RunRef baseline() const;
    RunRef run() const;
    void setStep(Step step);
    Step step() const;

    // The comparison is being computed, or the what-if recomputed.
    bool isComputing() const { return m_ticket != 0 || m_whatIfPending > 0; }
    bool isComputingWhatIf() const { return m_whatIfPending > 0; }
    const ComparisonData *comparison() const { return m_data.get(); }

    // What each step shows, for tests and the report.
    QString comparabilityText() const;
    QString verdictText() const;
    QString classTitle() const;
    QString nextText() const;
    QTableView *comparabilityTable() const { return m_comparability; }
    QTableView *classTable() const { return m_class; }
    QTableView *whatIfTable() const { return m_whatIf; }
    QTableView *summaryTable() const { return m_summary; }
    // The evidence in the views users know: the loss overlay (band, spikes, departure) of the loss step; the
    // class step's views of a layer suspect (its statistic against the run's other layers, the heatmap with the
    // suspects marked, the histogram of the nearest dump), of spikes (the overlay again) and of a gap (the
    // evaluation chart). Which of them the class step shows depends on the verdict.
    CurveView *lossView() const { return m_lossView; }
    CurveView *layerCurves() const { return m_layerCurves; }
    HeatmapView *heatmap() const { return m_heatmap; }
    HistogramView *histogram() const { return m_histogram; }
    EvalChart *evalChart() const { return m_evalChart; }
    QWidget *evidence() const;
    // Follows a link of the step texts ("step:1375" selects the step and shows it in the loss plot,
    // "comparison:" opens the Comparison tab); what clicking one does.
    void followLink(const QString &link);
    // The dump the what-if was recomputed on, as `fp8scope-cli stats` names it (PATH[:DATASET]; "" when none):
    // the comparison's evidence dump (the one that shows the first suspect's damage).
    QString whatIfDump() const { return m_whatIfDump; }

    // The summary's review of a finding (its row): "open", "confirmed" or "dismissed", and a note; kept in the
    // run's store (reviewStored() follows).
    void setReview(int row, const QString &state, const QString &note);
    // The what-if table's columns: recipe, format, the five metrics, then the block census (blocks, clipping,
    // underflowing and flushed blocks in %, the binades of their scales).
    static constexpr int kBlocksColumn = 9;
    static constexpr int kWhatIfColumns = 14;
    static constexpr int kReviewColumn = 5;
    static constexpr int kNoteColumn = 6;

protected:
    void showEvent(QShowEvent *event) override;

Q_SIGNALS:
    void comparisonRequested(fp8scope::RunRef baseline, fp8scope::RunRef run); // "Open in the Comparison tab"
    // "Export Report..." (the summary step): the PDF report of the pair.
    void reportRequested(fp8scope::RunRef baseline, fp8scope::RunRef run);
    // A what-if row was activated: the recipe (Recipe::parse name) and format to show the histogram under.
    void recipeRequested(const QString &recipe, const QString &format);
    void computed(); // a comparison is shown
    void reviewStored(const QString &error);

private:
    void setUpViews();
    QWidget *runsPage();
    QWidget *lossPage();
    QWidget *classPage();
    QWidget *nextPage();
    QWidget *summaryPage();
    void fillPickers();
    void recompute();
    void display(std::shared_ptr<const ComparisonData> data);
    void fillRuns();
    void fillLoss();
    void fillClass();
    // The evidence pane on a suspect: its statistic for every layer (curves and heatmap), `flagged` marked.
    void showSuspectHeatmap(const analysis::Finding &suspect, const std::vector<std::pair<QString, QString>> &flagged);
    void fillNext();
    void fillNextText();
    // The comparison finished again (its next steps, after a review or a what-if kept) on the job queue; the shown
    // one takes it when it is still shown (the summary filled again where `summary`), then `then` runs.
    void finishAgain(bool summary, std::function<void()> then);
    void fillSummary();
    void startWhatIf();
    void showWhatIf(const WhatIfResult &result, const QString &title);
    void selectClassRow(const QModelIndex &index);
    void showSuspects();
    void activateSummaryRow(const QModelIndex &index);
    void onSummaryEdited(QStandardItem *item);
    void updateButtons();

    Workspace *m_workspace;
    Selection *m_selection;
    QString m_slot;
    QListWidget *m_steps;
    QStackedWidget *m_pages;
    QComboBox *m_baselineBox;
    QComboBox *m_runBox;
    QLabel *m_status;
    QLabel *m_comparabilityText;
    QLabel *m_verdict;
    QLabel *m_classTitle;
    QPlainTextEdit *m_next;
    QPushButton *m_copyNext = nullptr; // enabled while a next step has a config to copy
    QLabel *m_whatIfTitle;
    QStandardItemModel *m_comparabilityModel;
    QStandardItemModel *m_classModel;
    QStandardItemModel *m_whatIfModel;
    QStandardItemModel *m_summaryModel;
    QTableView *m_comparability;
    QTableView *m_class;
    QTableView *m_whatIf;
    QTableView *m_summary;
    PairCurveSource *m_lossSource;
    CurveView *m_lossView;
    DepartureMark *m_lossMark;
    QStackedWidget *m_evidence; // the class step's views: none, layer suspect, spikes, gap
    LayerCurveSource *m_layerSource;
    CurveView *m_layerCurves;
    SingleRunHeatmapSource *m_heatSource;
    HeatmapView *m_heatmap;
    HistogramView *m_histogram;
    CurveView *m_spikeView;
    EvalChart *m_evalChart;
    QPushButton *m_back;
    QPushButton *m_forward;
    std::shared_ptr<const ComparisonData> m_data;
    quint64 m_ticket = 0;
    int m_whatIfPending = 0;
    quint64 m_whatIfGeneration = 0; // moved by each fillNext(): a what-if of an earlier one is dropped
    QString m_whatIfDump;
    bool m_filling = false; // the summary is being filled: its edits are not the user's
    bool m_stale = false; // the pair changed while the wizard was hidden: compute when it is shown
};

} // namespace fp8scope

// The evaluation path of a baseline (core/analysis/attempts), a tab beside Curves and Comparison: a baseline
// picker; a table of every attempt against it (its parent and what changed from it, a warning where several
// things changed at once, its verdict, departure, loss gap at the end against the band, evaluation gaps,
// inference checkpoint findings, whether it fixed its parent's problem; the final candidate marked); and the
// attempts' loss differences to the baseline on one plot, the selected one highlighted. A double-click on an
// attempt asks for its comparison (comparisonRequested). Computed off the GUI thread, on the workspace's
// query queue, when the tab is seen.
#pragma once

#include "core/analysis/attempts.h"

#include <QWidget>

class QAction;
class QComboBox;
class QLabel;
class QStandardItemModel;
class QTableView;

namespace fp8scope {

class AttemptsChart;
class Workspace;

class AttemptsView : public QWidget
{
    Q_OBJECT
public:
    explicit AttemptsView(Workspace *workspace, QWidget *parent = nullptr);

    void setBaseline(RunRef baseline);
    RunRef baseline() const;
    bool isComputing() const { return m_ticket != 0; }
    const analysis::AttemptsResult &attempts() const { return m_result; }
    QTableView *table() const { return m_table; }
    AttemptsChart *chart() const { return m_chart; }
    // Compares every attempt with the baseline again (when the tab is seen).
    void recompute();
    // Keeps the user's word on the candidate: the attempt of that row chosen (the rule's own: confirmed), or
    // (row -1) the word taken back; the table follows once it is kept.
    void chooseCandidate(int row);

Q_SIGNALS:
    void comparisonRequested(fp8scope::RunRef baseline, fp8scope::RunRef run);
    // The user named the attempt `run` derives from (empty: none, the closest earlier attempt is taken); the
    // window writes it into the run's fp8scope.json.
    void parentRequested(fp8scope::RunRef run, const QString &parent);

protected:
    void showEvent(QShowEvent *event) override;

private:
    void reloadBaselines();
    void display(const analysis::AttemptsResult &result);

    Workspace *m_workspace;
    QComboBox *m_baselineBox;
    QLabel *m_status;
    QStandardItemModel *m_model;
    QTableView *m_table;
    AttemptsChart *m_chart;
    analysis::AttemptsResult m_result;
    QAction *m_choose;
    QAction *m_clear;
    QAction *m_parent;
    QString m_slot;
    quint64 m_ticket = 0;
    bool m_stale = true;
};

} // namespace fp8scope

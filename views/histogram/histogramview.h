// Histogram: for the selected run, layer, tensor and step (the nearest step with a tensor dump), the
// log2|x| histogram before or after the recipe's scaling, with the element format's min subnormal, min
// normal and max drawn, the underflow and saturation regions shaded and their shares printed. Choosing
// another recipe or format recomputes it in the job queue (on the GPU when there is one).
#pragma once

#include "core/numerics/metricsengine.h"
#include "core/numerics/tensormetrics.h"
#include "core/query/querytypes.h"
#include "views/plotting/plotview.h"

#include <map>
#include <optional>
#include <vector>

class QCheckBox;
class QComboBox;
class QLabel;
class QCPBars;

namespace fp8scope {

class Selection;
class Workspace;

class HistogramView : public PlotView
{
    Q_OBJECT
public:
    HistogramView(Workspace *workspace, Selection *selection, QWidget *parent = nullptr);

    // "current", "mxfp8", ... (Recipe::parse names) and the element format ("e4m3", ...).
    void setRecipe(const QString &recipe, const QString &format = QString());
    std::optional<Recipe> recipe() const;
    void setAfterScaling(bool on);

    // The dump shown (valid once one matches the selection) and its metrics (once computed).
    const std::optional<Dump> &dump() const { return m_dump; }
    const std::optional<TensorMetrics> &metrics() const { return m_metrics; }
    // "log2|x| of <layer> <tensor> at step N — <run> — <recipe> (<format>), after scaling".
    QString title() const override;
    bool isComputing() const { return m_ticket != 0; }
    // Off: while hidden the view recomputes nothing; it asks for what it missed when shown. On by default.
    void setRequestWhileHidden(bool on) { m_requestWhileHidden = on; }
    QString statusText() const;
    QString csv() const override;

Q_SIGNALS:
    void metricsChanged();

protected:
    void showEvent(QShowEvent *event) override;

private:
    void syncFormatBox();
    void reloadDumps();
    void selectionChanged();
    void request();
    void redraw();

    Workspace *m_workspace;
    Selection *m_selection;
    QComboBox *m_recipeBox;
    QComboBox *m_formatBox;
    QString m_formatChoice = QStringLiteral("e4m3"); // the format picked, kept while a recipe fixes its own
    QCheckBox *m_scaled;
    QLabel *m_status;
    QCPBars *m_bars;
    std::map<RunRef, std::vector<Dump>> m_dumps;
    std::optional<Dump> m_dump;
    QString m_slot; // this view's request slot
    std::optional<TensorMetrics> m_metrics;
    // The run and tensor the recipe was last set for: the recipe follows the run's own (its manifest or
    // config), and a choice made in the box holds until another run is selected.
    RunRef m_recipeRun;
    QString m_recipeTensor;
    quint64 m_ticket = 0;
    bool m_requestWhileHidden = true;
    bool m_requestPending = false; // a request skipped while hidden
};

} // namespace fp8scope

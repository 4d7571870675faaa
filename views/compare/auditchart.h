// The audit of an inference checkpoint as a per-layer plot, beside its table in the comparison's Evals tab: a
// point a module, in the model's layer order, those with a finding in red; three measures to pick from:
// - weight error: each layer's error against the reference as dequantized (rms of the difference over the
//   reference's), with the error a fresh quantization of the reference explains and the mismatch threshold
//   (3 times it);
// - scale ratio: what a sound scale makes 1: the dequantized weight's amax over the reference's (an inverted
//   scale sits at about the scale squared), and the activation amax the training run reached over a static
//   input scale's range (above 1 saturates, far below flushes);
// - weight amax: the dequantized weight's amax, and as the other convention would make it, against the band of
//   magnitudes trained weights have (the rule without a reference).
// A click on a layer's column selects it (layerClicked); setCurrentLayer marks the table's.
#pragma once

#include "core/audit/checkpointaudit.h"
#include "views/plotting/plotview.h"

#include <optional>

class QComboBox;
class QCPItemStraightLine;
class QCPItemText;
class QMouseEvent;

namespace fp8scope {

class AuditChart : public PlotView
{
    Q_OBJECT
public:
    enum class Measure { WeightError, ScaleRatio, WeightAmax };

    explicit AuditChart(QWidget *parent = nullptr);

    void setAudit(const std::optional<AuditResult> &audit);
    void setMeasure(Measure measure);
    Measure measure() const;
    // Marks the layer (inference name) with a vertical line; an unknown name clears the mark.
    void setCurrentLayer(const QString &name);
    // The layers along the x axis (layer i at x = i).
    const std::vector<AuditLayer> &layers() const { return m_layers; }
    // What the measure plots for a layer: the series' names and values (NaN where a layer has none), for
    // tests and the CSV.
    struct Series {
        QString name;
        std::vector<double> values;
    };
    std::vector<Series> series() const;
    QString csv() const override;
    QString title() const override;
    // What the chart says in place of points (why there are none), in the lines it is drawn in, wrapped to the
    // plot's width; "" when it has points.
    QString message() const;

Q_SIGNALS:
    void layerClicked(const QString &inferenceName);

protected:
    void resizeEvent(QResizeEvent *event) override;

private:
    void rebuild();
    // The message wrapped to the plot's width as it is now.
    void placeMessage();
    void onMouseRelease(QMouseEvent *event);

    QComboBox *m_measure;
    QCPItemStraightLine *m_current;
    QCPItemText *m_message;
    std::vector<AuditLayer> m_layers;
    AuditThresholds m_thresholds; // the audit's
    QString m_checkpoint;
    QString m_messageText; // unwrapped
    int m_currentIndex = -1;
};

} // namespace fp8scope

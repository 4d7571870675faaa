// The one selection every view shares: a run (by its RunRef), a layer, a tensor kind and a step. Views set
// the parts they know (the heatmap sets all four on a click, the curve view the step) and redraw on
// changed(), whose mask says what changed.
#pragma once

#include "core/query/querytypes.h"

#include <QObject>
#include <QString>

namespace fp8scope {

class Selection : public QObject
{
    Q_OBJECT
public:
    enum Part { Run = 1, Layer = 2, Tensor = 4, Step = 8 };
    Q_DECLARE_FLAGS(Parts, Part)

    explicit Selection(QObject *parent = nullptr);

    RunRef run() const { return m_run; } // invalid for none
    QString layer() const { return m_layer; }
    QString tensor() const { return m_tensor; }
    qint64 step() const { return m_step; } // -1 for none

    void setRun(fp8scope::RunRef run);
    void setLayer(const QString &layer);
    void setTensor(const QString &tensor);
    void setStep(qint64 step);
    // Sets several parts at once and emits changed() once.
    void set(fp8scope::RunRef run, const QString &layer, const QString &tensor, qint64 step);
    void clear();

Q_SIGNALS:
    void changed(fp8scope::Selection::Parts parts);

private:
    void update(RunRef run, const QString &layer, const QString &tensor, qint64 step);

    RunRef m_run;
    QString m_layer;
    QString m_tensor;
    qint64 m_step = -1;
};

} // namespace fp8scope

Q_DECLARE_OPERATORS_FOR_FLAGS(fp8scope::Selection::Parts)

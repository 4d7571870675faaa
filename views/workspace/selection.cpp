#include "selection.h"

namespace fp8scope {

Selection::Selection(QObject *parent)
    : QObject(parent)
{
}

void Selection::setRun(RunRef run)
{
    update(run, m_layer, m_tensor, m_step);
}

void Selection::setLayer(const QString &layer)
{
    update(m_run, layer, m_tensor, m_step);
}

void Selection::setTensor(const QString &tensor)
{
    update(m_run, m_layer, tensor, m_step);
}

void Selection::setStep(qint64 step)
{
    update(m_run, m_layer, m_tensor, step);
}

void Selection::set(RunRef run, const QString &layer, const QString &tensor, qint64 step)
{
    update(run, layer, tensor, step);
}

void Selection::clear()
{
    update(RunRef(), QString(), QString(), -1);
}

void Selection::update(RunRef run, const QString &layer, const QString &tensor, qint64 step)
{
    Parts parts;
    if (run != m_run)
        parts |= Run;
    if (layer != m_layer)
        parts |= Layer;
    if (tensor != m_tensor)
        parts |= Tensor;
    if (step != m_step)
        parts |= Step;
    m_run = run;
    m_layer = layer;
    m_tensor = tensor;
    m_step = step;
    if (parts)
        Q_EMIT changed(parts);
}

} // namespace fp8scope

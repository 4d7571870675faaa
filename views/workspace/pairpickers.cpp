#include "pairpickers.h"

#include "workspace.h"

#include <QComboBox>
#include <QSignalBlocker>

namespace fp8scope {

std::pair<RunRef, RunRef> defaultPair(const Workspace &workspace)
{
    for (const WorkspaceRun &r : workspace.runs()) {
        if (r.pairing.baseline.isValid())
            return {r.pairing.baseline, r.run.ref};
    }
    if (workspace.runCount() >= 2)
        return {workspace.runAt(0), workspace.runAt(1)};
    return {};
}

void PairPickers::fill(const Workspace &workspace) const
{
    const QSignalBlocker b1(baseline), b2(run);
    baseline->clear();
    run->clear();
    for (const WorkspaceRun &r : workspace.runs()) {
        for (QComboBox *box : {baseline, run}) {
            box->addItem(workspace.runName(r.run.ref), QVariant::fromValue(r.run.ref));
            box->setItemData(box->count() - 1, r.run.label(), Qt::ToolTipRole);
        }
    }
}

std::pair<RunRef, RunRef> PairPickers::show(const Workspace &workspace, RunRef baselineRun, RunRef runRun) const
{
    if (!baselineRun.isValid() || !runRun.isValid())
        std::tie(baselineRun, runRun) = defaultPair(workspace);
    const QSignalBlocker b1(baseline), b2(run);
    baseline->setCurrentIndex(baseline->findData(QVariant::fromValue(baselineRun)));
    run->setCurrentIndex(run->findData(QVariant::fromValue(runRun)));
    return {baselineRun, runRun};
}

RunRef PairPickers::baselineRun() const
{
    return baseline->currentData().value<RunRef>();
}

RunRef PairPickers::runRun() const
{
    return run->currentData().value<RunRef>();
}

} // namespace fp8scope

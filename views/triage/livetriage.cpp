#include "livetriage.h"

#include "views/workspace/workspace.h"

#include <QTimer>

#include <memory>

namespace fp8scope {

using namespace analysis;

namespace {

int rank(Severity s)
{
    return s == Severity::Critical ? 2 : s == Severity::Warning ? 1 : 0;
}

struct Evaluation {
    std::vector<Comparison> comparisons;
    int computed = 0, reused = 0;
};

} // namespace

QString LiveTriage::Notice::text() const
{
    QString s = QStringLiteral("%1 against %2: %3 %4")
                    .arg(runName, baselineName, severityName(finding.severity), findingKindName(finding.kind));
    if (!finding.layer.isEmpty())
        s += QLatin1Char(' ') + finding.layer;
    s += QStringLiteral(": ") + finding.summary;
    if (finding.step && newestStep >= *finding.step)
        s += QObject::tr(" (since step %1, %2 steps before the newest, %3)")
                 .arg(*finding.step)
                 .arg(newestStep - *finding.step)
                 .arg(newestStep);
    return s;
}

LiveTriage::LiveTriage(Workspace *workspace, QObject *parent)
    : QObject(parent)
    , m_workspace(workspace)
    , m_timer(new QTimer(this))
    , m_slot(Workspace::newSlot(QStringLiteral("live-triage")))
    , m_engine(std::make_shared<IncrementalTriage>())
{
    m_timer->setSingleShot(true);
    connect(m_timer, &QTimer::timeout, this, &LiveTriage::evaluate);
    // A folder opened anew: what it holds is recorded, not told.
    connect(workspace, &Workspace::loadingStarted, this, [this] {
        m_timer->stop();
        ++m_generation;
        m_ticket = 0;
        m_again = false;
        m_primed = false;
        m_told.clear();
        m_notices.clear();
        m_engine = std::make_shared<IncrementalTriage>();
    });
    connect(workspace, &Workspace::changed, this, [this](Workspace::Parts parts) {
        if ((parts & Workspace::Loaded) && !m_primed)
            schedule();
        if (parts & Workspace::Appended)
            schedule();
    });
}

void LiveTriage::setMinIntervalMs(int ms)
{
    m_minIntervalMs = std::max(0, ms);
}

void LiveTriage::setEnabled(bool on)
{
    m_enabled = on;
    if (!on)
        m_timer->stop();
}

void LiveTriage::schedule()
{
    if (!m_enabled || m_workspace->runCount() < 2)
        return;
    if (m_ticket) {
        m_again = true;
        return;
    }
    if (m_timer->isActive())
        return;
    const qint64 since = m_since.isValid() ? m_since.elapsed() : m_minIntervalMs;
    m_timer->start(int(std::max<qint64>(0, m_minIntervalMs - since)));
}

void LiveTriage::evaluate()
{
    m_since.start();
    const bool tell = m_primed;
    const quint64 generation = m_generation;
    // One evaluation at a time (m_ticket), on the query queue's one thread: the engine is never shared.
    std::shared_ptr<IncrementalTriage> engine = m_engine;
    m_ticket = m_workspace->query(
        m_slot,
        [engine](const Catalog &catalog) -> QVariant {
            auto e = std::make_shared<Evaluation>();
            e->comparisons = engine->update(catalog).comparisons;
            e->computed = engine->computed();
            e->reused = engine->reused();
            return QVariant::fromValue(std::shared_ptr<const Evaluation>(std::move(e)));
        },
        this,
        [this, tell, generation](const QVariant &value) {
            if (generation != m_generation)
                return; // another folder's
            m_ticket = 0;
            ++m_evaluations;
            if (const auto e = value.value<std::shared_ptr<const Evaluation>>()) {
                m_computed += e->computed;
                m_reused += e->reused;
                take(e->comparisons, tell);
            }
            m_primed = true;
            Q_EMIT evaluated();
            if (m_again) {
                m_again = false;
                schedule();
            }
        });
}

void LiveTriage::take(const std::vector<Comparison> &comparisons, bool tell)
{
    for (const Comparison &c : comparisons) {
        const WorkspaceRun *run = m_workspace->run(c.run);
        const WorkspaceRun *base = m_workspace->run(c.baseline);
        if (!run || !base)
            continue;
        // A finding a review dismissed is not told; neither is a static one (a config difference known at the
        // start): a notice is for a change in the run.
        const std::vector<FindingReview> reviews = m_workspace->catalog().findingReviews(c.run, c.baseline);
        for (const Finding &f : c.findings) {
            const QString key
                = run->run.name + QLatin1Char('\n') + base->run.name + QLatin1Char('\n') + findingIdentity(f);
            const auto it = m_told.constFind(key);
            if (it != m_told.constEnd() && *it >= rank(f.severity))
                continue;
            m_told.insert(key, rank(f.severity));
            if (!tell || rank(f.severity) < 1 || !findingKindInfo(f.kind).change || isDismissed(reviews, f))
                continue;
            m_notices.push_back(
                {c.baseline, c.run, m_workspace->runName(c.run), m_workspace->runName(c.baseline), f, run->latestStep});
            Q_EMIT noticed(int(m_notices.size()) - 1);
        }
    }
}

} // namespace fp8scope

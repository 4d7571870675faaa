#include "attemptsview.h"

#include "attemptschart.h"

#include "views/models/tableexport.h"
#include "views/workspace/workspace.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHash>
#include <QHeaderView>
#include <QInputDialog>
#include <QLabel>
#include <QSplitter>
#include <QStandardItemModel>
#include <QTableView>
#include <QVBoxLayout>

#include <cmath>

Q_DECLARE_METATYPE(fp8scope::analysis::AttemptsResult)

namespace fp8scope {

using namespace analysis;

namespace {

constexpr int kRunRole = Qt::UserRole + 1;

QString gapText(const Attempt &a)
{
    if (!std::isfinite(a.endGap))
        return {};
    return QObject::tr("%1 (band %2)").arg(QString::number(a.endGap, 'g', 3), QString::number(a.endEdge, 'g', 3));
}

QString evalText(const Attempt &a)
{
    QStringList parts;
    for (auto it = a.evalGaps.cbegin(); it != a.evalGaps.cend(); ++it)
        parts << (it.key().isEmpty() ? QString::number(it.value())
                                     : QStringLiteral("%1 (%2)").arg(it.value()).arg(it.key()));
    return parts.join(QStringLiteral(", "));
}

// "candidate" (by the rule), "confirmed", "your choice", or "the rule's" where the user chose another.
QString candidateText(const AttemptsResult &r, size_t i)
{
    if (r.candidate == i)
        return r.candidateSource == CandidateSource::Chosen   ? QObject::tr("your choice")
            : r.candidateSource == CandidateSource::Confirmed ? QObject::tr("confirmed")
                                                              : QObject::tr("candidate");
    return r.ruleCandidate == i ? QObject::tr("the rule's") : QString();
}

} // namespace

AttemptsView::AttemptsView(Workspace *workspace, QWidget *parent)
    : QWidget(parent)
    , m_workspace(workspace)
    , m_baselineBox(new QComboBox(this))
    , m_status(new QLabel(this))
    , m_model(new QStandardItemModel(this))
    , m_table(newTableView(QStringLiteral("attemptsTable"), this))
    , m_chart(new AttemptsChart(this))
    , m_choose(new QAction(tr("Choose as the &Candidate"), this))
    , m_clear(new QAction(tr("Back to the &Rule's Candidate"), this))
    , m_parent(new QAction(tr("Set the &Parent..."), this))
    , m_slot(Workspace::newSlot(QStringLiteral("attempts")))
{
    setObjectName(QStringLiteral("attemptsView"));
    m_baselineBox->setObjectName(QStringLiteral("attemptsBaseline"));
    m_status->setObjectName(QStringLiteral("attemptsStatus"));
    m_status->setWordWrap(true);
    m_table->setModel(m_model);
    addTableActions(m_table, tr("attempts.csv"));
    // The user's word on the candidate, kept in the baseline's store: this attempt (the rule's: confirmed), or
    // back to the rule.
    m_choose->setObjectName(QStringLiteral("attemptsChoose"));
    m_clear->setObjectName(QStringLiteral("attemptsClear"));
    auto *separator = new QAction(this);
    separator->setSeparator(true);
    m_table->addAction(separator);
    m_table->addAction(m_choose);
    m_table->addAction(m_clear);
    m_parent->setObjectName(QStringLiteral("attemptsParent"));
    m_table->addAction(m_parent);
    connect(m_parent, &QAction::triggered, this, [this] {
        const int row = m_table->currentIndex().row();
        if (row < 0 || row >= int(m_result.attempts.size()))
            return;
        const Attempt &a = m_result.attempts[size_t(row)];
        const QString none = tr("(none: the closest earlier attempt)");
        QStringList names {none};
        for (const Attempt &o : m_result.attempts) {
            if (o.run != a.run)
                names << o.name;
        }
        const QString current = a.parentSource == QLatin1String("fp8scope.json") ? a.parentName : none;
        bool ok = false;
        const QString chosen = QInputDialog::getItem(this, tr("Set the Parent"),
            tr("The attempt %1 derives from (kept in its fp8scope.json):").arg(a.name), names,
            std::max(0, int(names.indexOf(current))), false, &ok);
        if (ok)
            Q_EMIT parentRequested(a.run, chosen == none ? QString() : chosen);
    });
    connect(m_choose, &QAction::triggered, this, [this] { chooseCandidate(m_table->currentIndex().row()); });
    connect(m_clear, &QAction::triggered, this, [this] { chooseCandidate(-1); });
    auto *top = new QHBoxLayout;
    top->addWidget(new QLabel(tr("Baseline"), this));
    top->addWidget(m_baselineBox, 1);
    auto *split = new QSplitter(Qt::Vertical, this);
    split->setObjectName(QStringLiteral("attemptsSplit"));
    split->addWidget(m_table);
    split->addWidget(m_chart);
    split->setStretchFactor(0, 1);
    split->setStretchFactor(1, 1);
    auto *layout = new QVBoxLayout(this);
    layout->setContentsMargins(2, 2, 2, 2);
    layout->addLayout(top);
    layout->addWidget(m_status);
    layout->addWidget(split, 1);
    connect(m_baselineBox, &QComboBox::currentIndexChanged, this, [this] {
        m_stale = true;
        recompute();
    });
    connect(m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
        [this](const QModelIndex &current) { m_chart->setHighlighted(current.isValid() ? current.row() : -1); });
    connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex &index) {
        const QVariant run = m_model->index(index.row(), 0).data(kRunRole);
        if (run.isValid())
            Q_EMIT comparisonRequested(m_result.baseline, run.value<RunRef>());
    });
    connect(m_workspace, &Workspace::changed, this, [this](Workspace::Parts parts) {
        if (parts
            & (Workspace::Loaded | Workspace::Closed | Workspace::Statistics | Workspace::Appended
                | Workspace::Reviews)) {
            reloadBaselines();
            m_stale = true;
            recompute();
        }
    });
    reloadBaselines();
}

void AttemptsView::reloadBaselines()
{
    const RunRef current = baseline();
    const QSignalBlocker block(m_baselineBox);
    m_baselineBox->clear();
    for (const RunRef &b : baselinesWithAttempts(m_workspace->catalog())) {
        const WorkspaceRun *w = m_workspace->run(b);
        m_baselineBox->addItem(w ? m_workspace->runName(b) : QString(), QVariant::fromValue(b));
    }
    const int i = m_baselineBox->findData(QVariant::fromValue(current));
    m_baselineBox->setCurrentIndex(i >= 0 ? i : 0);
}

void AttemptsView::setBaseline(RunRef b)
{
    const int i = m_baselineBox->findData(QVariant::fromValue(b));
    if (i >= 0)
        m_baselineBox->setCurrentIndex(i);
}

RunRef AttemptsView::baseline() const
{
    return m_baselineBox->currentData().value<RunRef>();
}

void AttemptsView::chooseCandidate(int row)
{
    if (!m_result.baseline.isValid() || row >= int(m_result.attempts.size()))
        return;
    CandidateChoice choice;
    if (row >= 0) {
        choice.candidate = m_result.attempts[size_t(row)].name;
        choice.state = m_result.ruleCandidate == size_t(row) ? CandidateSource::Confirmed : CandidateSource::Chosen;
    }
    m_workspace->storeCandidateChoice(m_result.baseline, choice, this, [this](const QString &error) {
        if (!error.isEmpty())
            m_status->setText(tr("The candidate was not kept: %1").arg(error));
    });
}

void AttemptsView::showEvent(QShowEvent *event)
{
    QWidget::showEvent(event);
    if (m_stale)
        recompute();
}

void AttemptsView::recompute()
{
    if (m_ticket)
        m_workspace->queries().cancel(m_ticket);
    m_ticket = 0;
    const RunRef b = baseline();
    if (!b.isValid()) {
        display({});
        m_status->setText(tr("No FP8 run is paired with a baseline: open a baseline and its attempts."));
        return;
    }
    // Computed when seen: every attempt is compared with the baseline.
    if (!isVisible())
        return;
    m_stale = false;
    m_status->setText(tr("Comparing every attempt with the baseline..."));
    m_ticket = m_workspace->query(
        m_slot, [b](const Catalog &catalog) { return QVariant::fromValue(computeAttempts(catalog, b)); }, this,
        [this](const QVariant &value) {
            m_ticket = 0;
            display(value.value<AttemptsResult>());
        });
}

void AttemptsView::display(const AttemptsResult &stored)
{
    m_result = stored;
    // Shown by the names the run list gives them (the result keeps the runs' own, which choices are stored by).
    AttemptsResult result = stored;
    QHash<QString, QString> names;
    for (Attempt &a : result.attempts) {
        const QString shown = m_workspace->runName(a.run);
        if (!shown.isEmpty()) {
            names.insert(a.name, shown);
            a.name = shown;
        }
    }
    for (Attempt &a : result.attempts) {
        const QString parent = a.parent.isValid() ? m_workspace->runName(a.parent) : QString();
        a.parentName = !parent.isEmpty() ? parent : names.value(a.parentName, a.parentName);
    }
    if (const QString base = m_workspace->runName(result.baseline); !base.isEmpty())
        result.baselineName = base;
    m_model->clear();
    m_model->setHorizontalHeaderLabels({tr("Attempt"), tr("Parent"), tr("Changed from parent"), tr("Verdict"),
        tr("Departure"), tr("End gap"), tr("Eval gaps"), tr("Checkpoint"), tr("Fixes parent"), tr("Candidate")});
    for (size_t i = 0; i < result.attempts.size(); ++i) {
        const Attempt &a = result.attempts[i];
        QStringList changed;
        for (const AttemptChange &c : a.fromParent)
            changed << QStringLiteral("%1: %2 → %3").arg(c.group == c.key ? c.key : c.group, c.from, c.to);
        QList<QStandardItem *> row {textItem(a.name),
            textItem(a.parentName.isEmpty() ? tr("(the baseline)") : a.parentName),
            textItem(a.groupsFromParent.join(QStringLiteral(", "))),
            // The engine's name, and for "none" what it means, in the words the other columns use.
            textItem((a.verdict == analysis::Verdict::None ? tr("none (healthy)") : verdictName(a.verdict))
                + comparabilityCaveat(a)),
            a.departure ? numberItem(double(*a.departure), 0) : textItem(QString()), textItem(gapText(a)),
            textItem(evalText(a)),
            textItem(a.auditFindings < 0 ? QString() : tr("%n finding(s)", nullptr, a.auditFindings)),
            textItem(a.fixesParent), textItem(candidateText(result, i))};
        row.front()->setData(QVariant::fromValue(a.run), kRunRole);
        row[3]->setToolTip(a.comparabilityText);
        row[2]->setToolTip(changed.join(QLatin1Char('\n')));
        if (a.severalAtOnce) {
            row[2]->setText(tr("⚠ %1").arg(row[2]->text()));
            row[2]->setToolTip(tr("%n changes at once: which of them did what cannot be told apart\n", nullptr,
                                   int(a.groupsFromParent.size()))
                + changed.join(QLatin1Char('\n')));
        }
        if (!a.healthy())
            row[3]->setForeground(QColor(200, 30, 0));
        if (result.candidate == i) {
            QFont bold = row.front()->font();
            bold.setBold(true);
            for (QStandardItem *it : row)
                it->setFont(bold);
        }
        m_model->appendRow(row);
    }
    m_table->resizeColumnsToContents();
    m_chart->setAttempts(result);
    m_chart->setHighlighted(result.candidate ? int(*result.candidate) : (result.attempts.empty() ? -1 : 0));
    if (!result.baseline.isValid())
        return;
    m_choose->setEnabled(!result.attempts.empty());
    m_clear->setEnabled(
        result.candidateSource == CandidateSource::Chosen || result.candidateSource == CandidateSource::Confirmed);
    m_status->setText(result.candidateSource == CandidateSource::Chosen
            ? tr("%n attempt(s) against %1; the candidate, your choice: %2 (the rule's: %3).", nullptr,
                int(result.attempts.size()))
                  .arg(result.baselineName, result.attempts[*result.candidate].name,
                      result.ruleCandidate ? result.attempts[*result.ruleCandidate].name : tr("none"))
            : result.candidate
            ? tr("%n attempt(s) against %1; the candidate: %2 (%3).", nullptr, int(result.attempts.size()))
                  .arg(result.baselineName, result.attempts[*result.candidate].name,
                      result.candidateSource == CandidateSource::Confirmed ? tr("confirmed") : candidateRule())
            : tr("%n attempt(s) against %1; no candidate yet (%2).", nullptr, int(result.attempts.size()))
                  .arg(result.baselineName, candidateRule()));
}

} // namespace fp8scope

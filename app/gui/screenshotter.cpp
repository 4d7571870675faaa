#include "screenshotter.h"

#include "mainwindow.h"
#include "views/compare/compareview.h"
#include "views/curves/curveview.h"
#include "views/heatmap/heatmapview.h"
#include "views/histogram/histogramview.h"
#include "views/triage/triagewizard.h"
#include "views/workspace/selection.h"
#include "views/workspace/workspace.h"

#include <QDir>
#include <QDockWidget>
#include <QPixmap>
#include <QSplitter>
#include <QTableView>
#include <QTextStream>
#include <QTimer>

#include <algorithm>
#include <cmath>

namespace fp8scope {

Screenshotter::Screenshotter(MainWindow *window, const QString &outDir, std::function<void()> open, Tour tour)
    : QObject(window)
    , m_window(window)
    , m_outDir(outDir)
{
    QDir().mkpath(outDir);
    if (tour == Tour::StartPage) {
        // Nothing to open: the start page is the tour.
        QTimer::singleShot(500, this, [this] {
            save(QStringLiteral("00-start-page.png"));
            Q_EMIT finished(m_ok);
        });
        return;
    }
    if (open) {
        // What a new user sees first, then what they open.
        QTimer::singleShot(500, this, [this, open] {
            save(QStringLiteral("00-start-page.png"));
            open();
        });
    }
    // A folder that never gets ready (nothing in it could be read) still ends the tour, with what is shown.
    m_giveUp = new QTimer(this);
    m_giveUp->setSingleShot(true);
    m_giveUp->setInterval(180000);
    connect(m_giveUp, &QTimer::timeout, this, [this] {
        QTextStream(stderr) << "fp8scope: the window never got ready; the tour ends here\n";
        m_ok = false;
        save(QStringLiteral("01-workspace.png"));
        Q_EMIT finished(false);
    });
    m_giveUp->start();
    const bool demo = tour == Tour::Demo;
    m_steps.push_back([this] {
        save(QStringLiteral("01-workspace.png"));
        next();
    });
    m_steps.push_back([this, demo] {
        // What a user does first: click the hottest cell of the heatmap (where the runs have one).
        const Heatmap &h = m_window->heatmap()->heatmap();
        size_t best = 0;
        for (size_t i = 0; i < h.values.size(); ++i) {
            if (std::isfinite(h.values[i]) && (!std::isfinite(h.values[best]) || h.values[i] > h.values[best]))
                best = i;
        }
        if (std::none_of(h.values.begin(), h.values.end(), [](double v) { return std::isfinite(v); })) {
            m_ok = m_ok && !demo; // the demo has one
            next();
            return;
        }
        const qsizetype layer = qsizetype(best / h.steps.size());
        m_window->curves()->setStatistic(QStringLiteral("tensor:") + m_window->heatmap()->statistic());
        m_window->selection()->set(
            m_window->heatmap()->run(), h.layers[layer], m_window->heatmap()->tensor(), h.steps[best % h.steps.size()]);
        afterHistogram([this] {
            save(QStringLiteral("02-hottest-cell.png"));
            next();
        });
    });
    m_steps.push_back([this, demo] {
        if (!demo)
            return next();
        m_window->histogram()->setRecipe(QStringLiteral("mxfp8"));
        afterHistogram([this] {
            save(QStringLiteral("03-mxfp8-what-if.png"));
            next();
        });
    });
    m_steps.push_back([this, demo] {
        if (!demo)
            return next();
        // The recipe most FP8 runs train with: its scale comes from the dump's amax history.
        m_window->histogram()->setRecipe(QStringLiteral("delayed"));
        afterHistogram([this] {
            save(QStringLiteral("04-delayed-scale.png"));
            next();
        });
    });
    m_steps.push_back([this, demo] {
        if (!demo)
            return next();
        m_window->heatmap()->setThreshold(true, 2.0);
        m_window->curves()->setStatistic(QStringLiteral("lm loss"));
        QTimer::singleShot(200, this, [this] {
            save(QStringLiteral("05-threshold.png"));
            next();
        });
    });
    m_steps.push_back([this] {
        // The FP8 run against its baseline: the overlay, the difference strip, the findings (a folder of one run
        // has none).
        if (m_window->workspace()->runCount() < 2)
            return next();
        m_window->showComparison();
        saveWhen([this] { return !m_window->compare()->isComputing() && m_window->compare()->comparison(); },
            QStringLiteral("06-comparison.png"));
    });
    m_steps.push_back([this] {
        // Its layers: run − baseline of a statistic both runs log, the suspect layer flagged.
        CompareView *compare = m_window->compare();
        if (!compare->comparison() || m_window->heatmap()->heatmap().layers.isEmpty())
            return next();
        compare->tabs()->setCurrentIndex(CompareView::kLayersTab);
        compare->setLayerMode(CompareView::LayerMode::Difference);
        saveWhen([compare] { return !compare->differenceHeatmap()->isLoading(); },
            QStringLiteral("07-comparison-layers.png"));
    });
    // The triage wizard, step by step (its own window).
    const std::pair<TriageWizard::Step, const char *> steps[] = {{TriageWizard::RunsStep, "08-triage-runs.png"},
        {TriageWizard::LossStep, "09-triage-loss.png"}, {TriageWizard::ClassStep, "10-triage-class.png"},
        {TriageWizard::NextStep, "11-triage-next.png"}, {TriageWizard::SummaryStep, "12-triage-summary.png"}};
    for (const auto &[step, name] : steps) {
        // A folder's tour: its answer, the summary.
        if (!demo && step != TriageWizard::SummaryStep)
            continue;
        m_steps.push_back([this, step = step, name = QString::fromLatin1(name)] {
            if (m_window->workspace()->runCount() == 0)
                return next();
            if (step == TriageWizard::RunsStep || !m_window->triage())
                m_window->showTriage();
            TriageWizard *wizard = m_window->triage();
            wizard->setStep(step);
            // The class step's views load on entering it (the heatmap, the histogram's recompute).
            saveWhen(
                [wizard] {
                    return !wizard->isComputing() && wizard->comparison() && !wizard->heatmap()->isLoading()
                        && !wizard->histogram()->isComputing();
                },
                name, wizard);
        });
    }
    m_steps.push_back([this, demo] {
        // Back in the window: the evaluations, and beneath them the audit of the FP8 run's inference export.
        if (m_window->triage())
            m_window->triage()->close();
        if (!demo)
            return next();
        m_window->showComparison();
        CompareView *compare = m_window->compare();
        compare->tabs()->setCurrentIndex(CompareView::kEvalsTab);
        // The comparison alone, the docks out of its way for the shot, the audit given the room (the docks come
        // back after it).
        for (QDockWidget *dock : m_window->findChildren<QDockWidget *>()) {
            if (dock->isVisible()) {
                m_hiddenDocks.push_back(dock);
                dock->hide();
            }
        }
        if (auto *split = compare->findChild<QSplitter *>(QStringLiteral("compareSplitter")))
            split->setSizes({m_window->width() * 2 / 5, m_window->width() * 3 / 5});
        if (auto *pane = compare->findChild<QSplitter *>(QStringLiteral("compareEvalPane")))
            pane->setSizes({pane->height() / 5, pane->height() / 5, pane->height() * 3 / 5});
        // The layer with the planted fault marked (the table lists those with a finding first).
        if (QAbstractItemModel *audit = compare->auditTable()->model(); audit->rowCount() > 0)
            compare->selectAuditLayer(audit->index(0, 0).data().toString());
        saveWhen([compare] { return !compare->isComputing() && compare->comparison(); },
            QStringLiteral("13-comparison-audit.png"), compare);
    });
    m_steps.push_back([this] {
        for (QDockWidget *dock : m_hiddenDocks)
            dock->show();
        m_hiddenDocks.clear();
        next();
    });
    connect(window, &MainWindow::ready, this, [this] {
        if (m_started)
            return; // a folder that changes on disk makes the window ready again: the tour goes on as it was
        m_started = true;
        m_giveUp->stop();
        QTimer::singleShot(300, this, &Screenshotter::next);
    });
}

void Screenshotter::saveWhen(std::function<bool()> ready, const QString &name, QWidget *what)
{
    // Polled every 100 ms, a minute at most; then a moment for the queued replots.
    auto *poll = new QTimer(this);
    auto waited = std::make_shared<int>(0);
    connect(poll, &QTimer::timeout, this, [this, poll, waited, ready, name, what] {
        if (!ready() && ++*waited < 600)
            return;
        poll->deleteLater();
        QTimer::singleShot(300, this, [this, name, what] {
            save(name, what);
            next();
        });
    });
    poll->start(100);
}

void Screenshotter::next()
{
    if (m_at >= m_steps.size()) {
        Q_EMIT finished(m_ok);
        return;
    }
    m_steps[m_at++]();
}

void Screenshotter::save(const QString &name, QWidget *what)
{
    const QString path = QDir(m_outDir).filePath(name);
    if (!(what ? what : static_cast<QWidget *>(m_window))->grab().save(path)) {
        m_ok = false;
        QTextStream(stderr) << "fp8scope: could not write " << path << '\n';
        return;
    }
    QTextStream(stdout) << path << '\n';
}

void Screenshotter::afterHistogram(std::function<void()> then)
{
    auto *poll = new QTimer(this);
    auto waited = std::make_shared<int>(0);
    connect(poll, &QTimer::timeout, this, [this, poll, waited, then] {
        if (m_window->histogram()->isComputing() && ++*waited < 600)
            return;
        poll->deleteLater();
        QTimer::singleShot(200, this, then); // let the views paint
    });
    poll->start(100);
}

} // namespace fp8scope

// A run being written, for the tests of following: replays a scenario folder (core/demo/scenarios.h) into
// another, the baseline whole at once, the run's other files at once and its logs line by line in step order.
#pragma once

#include "core/demo/scenarios.h"

#include <QDir>
#include <QDirIterator>
#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>

#include <atomic>
#include <chrono>
#include <thread>
#include <vector>

namespace fp8scope {

// Replays `from` into `to`: the baseline folder whole, the run's other files at once, its logs in step order,
// `stepsPerTick` steps every `tickMs` (both logs of a step are written before the next step's).
class ScenarioReplay
{
public:
    ScenarioReplay(const QString &from, const QString &to, const ScenarioPlan &plan, int stepsPerTick, int tickMs)
        : m_from(from)
        , m_to(to)
        , m_plan(plan)
        , m_stepsPerTick(stepsPerTick)
        , m_tickMs(tickMs)
    {
    }
    ~ScenarioReplay() { stop(); }

    // Copies what is written at once and starts the writer's thread (`threaded` false: the caller writes
    // with writeThrough()).
    bool start(QString *error, bool threaded = true)
    {
        if (!copyTree(m_from + QLatin1Char('/') + m_plan.baseline, m_to + QLatin1Char('/') + m_plan.baseline)) {
            *error = QStringLiteral("cannot copy the baseline");
            return false;
        }
        const QString run = m_from + QLatin1Char('/') + m_plan.run;
        QDirIterator it(run, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString path = it.next();
            const QString rel = QDir(m_from).relativeFilePath(path);
            const QString target = m_to + QLatin1Char('/') + rel;
            QDir().mkpath(QFileInfo(target).absolutePath());
            if (path.endsWith(QLatin1String(".log")) || path.endsWith(QLatin1String(".out"))) {
                QFile f(path);
                if (!f.open(QIODevice::ReadOnly)) {
                    *error = path;
                    return false;
                }
                m_logs.push_back({target, f.readAll().split('\n'), 0});
            } else if (!QFile::copy(path, target)) {
                *error = QStringLiteral("cannot copy ") + rel;
                return false;
            }
        }
        if (threaded)
            m_thread = std::thread([this] { loop(); });
        return true;
    }

    // Writes the logs' lines through `step` (every line of it and before); false when nothing is left after
    // it, or a log could not be written.
    bool writeThrough(int64_t step)
    {
        // Megatron's " iteration 120/ 5000 |" and Transformer Engine's "iteration=000120".
        static const QRegularExpression iteration(QStringLiteral("iteration[ =]*0*(\\d+)"));
        bool more = false;
        for (Log &log : m_logs) {
            QFile f(log.path);
            if (!f.open(QIODevice::Append))
                return false;
            while (log.next < log.lines.size()) {
                const QByteArray &line = log.lines[log.next];
                const QRegularExpressionMatch m = iteration.match(QString::fromLatin1(line));
                if (m.hasMatch() && m.captured(1).toLongLong() > step)
                    break;
                if (log.next + 1 < log.lines.size() || !line.isEmpty())
                    f.write(line + '\n');
                ++log.next;
            }
            more = more || log.next < log.lines.size();
        }
        m_step = step;
        return more;
    }

    void stop()
    {
        m_stop = true;
        if (m_thread.joinable())
            m_thread.join();
    }

    // The newest step written (every line of it and before).
    int64_t step() const { return m_step.load(); }
    bool done() const { return m_done.load(); }

private:
    struct Log {
        QString path;
        QList<QByteArray> lines;
        qsizetype next;
    };

    static bool copyTree(const QString &from, const QString &to)
    {
        QDirIterator it(from, QDir::Files, QDirIterator::Subdirectories);
        while (it.hasNext()) {
            const QString path = it.next();
            const QString target = to + QLatin1Char('/') + QDir(from).relativeFilePath(path);
            QDir().mkpath(QFileInfo(target).absolutePath());
            if (!QFile::copy(path, target))
                return false;
        }
        return true;
    }

    void loop()
    {
        int64_t step = 0;
        bool more = true;
        while (more && !m_stop) {
            step += m_stepsPerTick;
            more = writeThrough(step);
            std::this_thread::sleep_for(std::chrono::milliseconds(m_tickMs));
        }
        m_done = true;
    }

    QString m_from, m_to;
    ScenarioPlan m_plan;
    int m_stepsPerTick, m_tickMs;
    std::vector<Log> m_logs;
    std::thread m_thread;
    std::atomic<bool> m_stop {false};
    std::atomic<bool> m_done {false};
    std::atomic<int64_t> m_step {0};
};

} // namespace fp8scope

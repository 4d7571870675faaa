// What the attempts tests share (tst_triage, tst_report, tst_attempts): one BF16 baseline and three FP8 attempts
// derived from each other, written from the mid-run instability scenario of seed 3:
//   fp8            the planted mid-run instability (the MXFP8 recipe);
//   fp8-b-current  blockwise scaling instead (one change; the scaling the triage suggests for MXFP8), with the
//   baseline's loss: it fixes fp8's problem; fp8-c-two      blockwise scaling and deterministic mode at once, its
//   fp8scope.json naming fp8 its parent; still
//                  unstable (fp8's loss).
#pragma once

#include "core/demo/scenarios.h"

#include <QDir>
#include <QFile>
#include <QRegularExpression>

#include <map>

namespace fp8scope::testing {

inline bool writeAttemptsFolder(const QString &dir, ScenarioPlan *plan, QString *error)
{
    if (!generateScenario(dir, Scenario::MidRunInstability, 3, plan, error))
        return false;
    const auto fail = [error](const QString &why) {
        *error = why;
        return false;
    };
    if (plan->run != QLatin1String("fp8") || plan->baseline != QLatin1String("bf16"))
        return fail(QStringLiteral("the scenario of seed 3 names its runs %1 and %2").arg(plan->baseline, plan->run));
    for (const QString &name :
        {QStringLiteral("fp8-b-current"), QStringLiteral("fp8-c-two"), QStringLiteral("fp8-d-fallback")}) {
        const QString to = dir + QLatin1Char('/') + name;
        QDir().mkpath(to);
        for (const QString &f : QDir(dir + QStringLiteral("/fp8")).entryList(QDir::Files)) {
            if (!QFile::copy(dir + QStringLiteral("/fp8/") + f, to + QLatin1Char('/') + f))
                return fail(QStringLiteral("cannot copy %1").arg(f));
        }
        QFile config(to + QStringLiteral("/config.yaml"));
        if (!config.open(QIODevice::ReadOnly))
            return fail(QStringLiteral("no config.yaml in %1").arg(to));
        QByteArray yaml = config.readAll();
        config.close();
        if (name.endsWith(QLatin1String("fallback")))
            yaml += "  --first-last-layers-bf16: true\n";
        else
            yaml.replace("--fp8-recipe: mxfp8", "--fp8-recipe: blockwise");
        if (name.endsWith(QLatin1String("two")))
            yaml += "  --deterministic-mode: true\n";
        if (!config.open(QIODevice::WriteOnly | QIODevice::Truncate) || config.write(yaml) != yaml.size())
            return fail(QStringLiteral("cannot write %1").arg(config.fileName()));
    }
    const QString log = dir + QStringLiteral("/fp8-b-current/stdout.log");
    if (!QFile::remove(log) || !QFile::copy(dir + QStringLiteral("/bf16/stdout.log"), log))
        return fail(QStringLiteral("cannot replace %1").arg(log));
    // The fallback's loss: the baseline's (at its nearest logged iteration) until 2200, fp8's from there.
    QFile baseLog(dir + QStringLiteral("/bf16/stdout.log")),
        fallbackLog(dir + QStringLiteral("/fp8-d-fallback/stdout.log"));
    if (!baseLog.open(QIODevice::ReadOnly) || !fallbackLog.open(QIODevice::ReadOnly))
        return fail(QStringLiteral("cannot read the logs"));
    static const QRegularExpression line(QStringLiteral(R"(iteration\s+(\d+)/.*lm loss: ([0-9.E+-]+))"));
    std::map<int64_t, QByteArray> baseLoss;
    for (const QByteArray &l : baseLog.readAll().split('\n')) {
        const QRegularExpressionMatch m = line.match(QString::fromUtf8(l));
        if (m.hasMatch())
            baseLoss[m.captured(1).toLongLong()] = m.captured(2).toUtf8();
    }
    QByteArray mixed;
    for (QByteArray l : fallbackLog.readAll().split('\n')) {
        const QRegularExpressionMatch m = line.match(QString::fromUtf8(l));
        if (m.hasMatch() && m.captured(1).toLongLong() < 2200 && !baseLoss.empty()) {
            auto at = baseLoss.upper_bound(m.captured(1).toLongLong());
            if (at != baseLoss.begin())
                --at;
            l.replace(QByteArray("lm loss: " + m.captured(2).toUtf8()), QByteArray("lm loss: " + at->second));
        }
        mixed += l + '\n';
    }
    fallbackLog.close();
    if (!fallbackLog.open(QIODevice::WriteOnly | QIODevice::Truncate) || fallbackLog.write(mixed.chopped(1)) < 0)
        return fail(QStringLiteral("cannot write %1").arg(fallbackLog.fileName()));
    QFile manifest(dir + QStringLiteral("/fp8-c-two/fp8scope.json"));
    if (!manifest.open(QIODevice::WriteOnly) || manifest.write(R"({"parent": "fp8"})") < 0)
        return fail(QStringLiteral("cannot write %1").arg(manifest.fileName()));
    return true;
}

} // namespace fp8scope::testing

// The demo run pair: generated, ingested through the same importers as the real fixtures with zero
// problems, and its planted story found through the store where planted.json says, for three seeds;
// the same seed regenerates byte-identical logs.
#include "core/store/runstore.h"
#include "core/storeaccess.h"

#include <QDir>

#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>
#include <hdf5.h>

#include <cmath>
#include <limits>
#include <map>

using namespace fp8scope;

namespace {

constexpr int64_t kAll = std::numeric_limits<int64_t>::max();

std::map<int64_t, double> series(const RunStore &s, int64_t run, const SeriesKey &key)
{
    std::map<int64_t, double> out;
    const auto found = s.findSeries(run, key);
    if (found.empty())
        return out;
    for (const SeriesPoint &p : s.points(found.front().id, std::numeric_limits<int64_t>::min(), kAll, 0))
        out[p.step] = p.value;
    return out;
}

int runCli(const QStringList &args)
{
    QProcess p;
    p.start(qEnvironmentVariable("FP8SCOPE_CLI"), args);
    p.waitForFinished(600000);
    if (p.exitCode() != 0)
        qWarning("%s", p.readAllStandardError().constData());
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
}

QByteArray readAll(const QString &path)
{
    QFile f(path);
    return f.open(QIODevice::ReadOnly) ? f.readAll() : QByteArray();
}

} // namespace

class TestDemo : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void plantedStoryIsFound_data();
    void plantedStoryIsFound();
    void sameSeedSameLogs();

private:
    std::vector<int64_t> m_departures;
};

void TestDemo::plantedStoryIsFound_data()
{
    QTest::addColumn<int>("seed");
    QTest::newRow("seed 1") << 1;
    QTest::newRow("seed 2") << 2;
    QTest::newRow("seed 7") << 7;
}

void TestDemo::plantedStoryIsFound()
{
    QFETCH(int, seed);
    QTemporaryDir dir;
    QCOMPARE(runCli({QStringLiteral("demo"), dir.path(), QStringLiteral("--seed"), QString::number(seed)}), 0);
    const QJsonObject planted = QJsonDocument::fromJson(readAll(dir.filePath(QStringLiteral("planted.json")))).object();
    const int64_t departure = int64_t(planted.value(QStringLiteral("departure_step")).toDouble());
    const int64_t underflowStart = int64_t(planted.value(QStringLiteral("underflow_start_step")).toDouble());
    const QString layer = planted.value(QStringLiteral("layer")).toString();
    QVERIFY(departure > 0 && !layer.isEmpty());
    m_departures.push_back(departure);

    RunStore store;
    QString error;
    QVERIFY2(store.open(dir.path(), &error), qPrintable(error));
    const IngestReport report = store.ingest();
    QCOMPARE(report.filesFailed, 0);
    QCOMPARE(store.problems().size(), size_t(0));
    QVERIFY(report.unrecognised.contains(QStringLiteral("README.md")));
    const auto bf16 = store.run(QStringLiteral("bf16"));
    const auto fp8 = store.run(QStringLiteral("fp8"));
    QVERIFY(bf16 && fp8);
    QCOMPARE(bf16->precision, QStringLiteral("bf16"));
    QCOMPARE(fp8->precision, QStringLiteral("fp8"));
    QCOMPARE(fp8->baseline, QStringLiteral("bf16"));

    // Departure: the first step from which the FP8 - BF16 loss gap, averaged over +-50 steps, stays above 0.03.
    const auto a = series(store, bf16->id, {{}, {}, QStringLiteral("lm loss"), {}, {}});
    const auto b = series(store, fp8->id, {{}, {}, QStringLiteral("lm loss"), {}, {}});
    QVERIFY(a.size() > 100 && b.size() > 100);
    std::vector<std::pair<int64_t, double>> gap;
    for (const auto &[step, v] : b) {
        if (a.count(step))
            gap.emplace_back(step, v - a.at(step));
    }
    int64_t found = -1;
    for (size_t i = 5; i + 5 < gap.size(); ++i) {
        bool stays = true;
        for (size_t j = i; j + 5 < gap.size() && stays; ++j) {
            double m = 0;
            for (size_t k = j - 5; k <= j + 5; ++k)
                m += gap[k].second;
            stays = m / 11.0 > 0.03;
        }
        if (stays) {
            found = gap[i].first;
            break;
        }
    }
    QVERIFY2(std::abs(found - departure) <= 60,
        qPrintable(QStringLiteral("found %1, planted %2").arg(found).arg(departure)));

    // Underflow: the fc2 activation whose underflow rises most is the planted layer; it starts before the departure.
    QString worst;
    double worstRise = -1;
    int64_t riseStep = -1;
    for (const SeriesInfo &s :
        store.findSeries(fp8->id, {{}, QStringLiteral("activation"), QStringLiteral("underflows%"), {}, {}})) {
        if (!s.key.layer.endsWith(QLatin1String("linear_fc2")))
            continue;
        const auto u = series(store, fp8->id, s.key);
        const double early = u.begin()->second;
        const double late = u.rbegin()->second;
        if (late - early > worstRise) {
            worstRise = late - early;
            worst = s.key.layer;
            riseStep = -1;
            for (const auto &[step, v] : u) {
                if (v > early + 1.0) {
                    riseStep = step;
                    break;
                }
            }
        }
    }
    QCOMPARE(worst, layer);
    QVERIFY(worstRise > 10.0);
    QVERIFY2(riseStep > underflowStart && riseStep < departure,
        qPrintable(QStringLiteral("rise at %1 (%2..%3)").arg(riseStep).arg(underflowStart).arg(departure)));

    // First and last layers quantize worse than the middle ones.
    const Heatmap mse = testing::matrixOf(store, fp8->id, QStringLiteral("mse"), QStringLiteral("activation"));
    std::map<QString, double> meanMse;
    for (qsizetype l = 0; l < mse.layers.size(); ++l) {
        double sum = 0;
        for (size_t s = 0; s < mse.steps.size(); ++s)
            sum += mse.at(l, s);
        meanMse[mse.layers.at(l).section(QLatin1Char('.'), 0, 2)] += sum / double(mse.steps.size());
    }
    const double first = meanMse[QStringLiteral("decoder.layers.0")];
    const double last = meanMse[QStringLiteral("decoder.layers.11")];
    const double middle = meanMse[QStringLiteral("decoder.layers.5")];
    QVERIFY2(first > 2 * middle && last > 2 * middle,
        qPrintable(QStringLiteral("%1 %2 %3").arg(first).arg(middle).arg(last)));

    // Downstream: the two largest BF16-inference gaps are the planted tasks; FP8 inference narrows them.
    std::map<QString, double> base, fp8Bf16, fp8Fp8;
    for (const EvalRow &e : store.evals(bf16->id))
        base[e.eval.task] = e.eval.value;
    for (const EvalRow &e : store.evals(fp8->id))
        (e.eval.inference == QLatin1String("fp8") ? fp8Fp8 : fp8Bf16)[e.eval.task] = e.eval.value;
    QCOMPARE(base.size(), size_t(6));
    QCOMPARE(fp8Bf16.size(), size_t(6));
    QCOMPARE(fp8Fp8.size(), size_t(6));
    std::vector<std::pair<double, QString>> gaps;
    for (const auto &[task, v] : base)
        gaps.emplace_back(v - fp8Bf16[task], task);
    std::sort(gaps.rbegin(), gaps.rend());
    QStringList weak {gaps[0].second, gaps[1].second};
    weak.sort();
    QStringList plantedTasks;
    for (const auto &t : planted.value(QStringLiteral("weak_tasks")).toArray())
        plantedTasks << t.toString();
    plantedTasks.sort();
    QCOMPARE(weak, plantedTasks);
    for (const QString &t : plantedTasks)
        QVERIFY(base[t] - fp8Fp8[t] < base[t] - fp8Bf16[t]);

    // Tensor dumps at the planted steps are indexed.
    const auto dumps = store.dumps(fp8->id);
    QCOMPARE(dumps.size(), size_t(4 * 4 * 3));
    // ... and carry the scale_inv and amax history the run "trained" with.
    const hid_t file = H5Fopen(dir.filePath(dumps.front().file).toUtf8().constData(), H5F_ACC_RDONLY, H5P_DEFAULT);
    QVERIFY(file >= 0);
    const hid_t ds = H5Dopen2(file, dumps.front().dump.dataset.toUtf8().constData(), H5P_DEFAULT);
    QVERIFY(ds >= 0);
    QVERIFY(H5Aexists(ds, "scale_inv") > 0);
    QVERIFY(H5Aexists(ds, "amax_history") > 0);
    float scaleInv = 0;
    const hid_t attr = H5Aopen(ds, "scale_inv", H5P_DEFAULT);
    H5Aread(attr, H5T_NATIVE_FLOAT, &scaleInv);
    H5Aclose(attr);
    H5Dclose(ds);
    H5Fclose(file);
    QVERIFY(scaleInv > 0 && std::isfinite(scaleInv));
}

void TestDemo::sameSeedSameLogs()
{
    QTemporaryDir one, two;
    QCOMPARE(runCli({QStringLiteral("demo"), one.path(), QStringLiteral("--seed"), QStringLiteral("5"),
                 QStringLiteral("--steps"), QStringLiteral("1000")}),
        0);
    QCOMPARE(runCli({QStringLiteral("demo"), two.path(), QStringLiteral("--seed"), QStringLiteral("5"),
                 QStringLiteral("--steps"), QStringLiteral("1000")}),
        0);
    const QStringList files {QStringLiteral("bf16/logs/train.out"), QStringLiteral("fp8/logs/train.out"),
        QStringLiteral("fp8/rank_0/nvdlfw_inspect_statistics_logs/nvdlfw_inspect_globalrank-0.log"),
        QStringLiteral("bf16/eval/results_bf16_inference.json"), QStringLiteral("fp8/eval/results_fp8_inference.json"),
        QStringLiteral("fp8/config.yaml"), QStringLiteral("README.md"), QStringLiteral("planted.json")};
    for (const QString &f : files) {
        const QByteArray x = readAll(one.filePath(f));
        QVERIFY2(!x.isEmpty(), qPrintable(f));
        QVERIFY2(x == readAll(two.filePath(f)), qPrintable(f));
    }
    // Another seed moves the story.
    QTemporaryDir three;
    QCOMPARE(runCli({QStringLiteral("demo"), three.path(), QStringLiteral("--seed"), QStringLiteral("6"),
                 QStringLiteral("--steps"), QStringLiteral("1000")}),
        0);
    QVERIFY(readAll(one.filePath(QStringLiteral("planted.json")))
        != readAll(three.filePath(QStringLiteral("planted.json"))));
    QVERIFY(m_departures.size() == 3);
    QVERIFY(!(m_departures[0] == m_departures[1] && m_departures[1] == m_departures[2]));
}

QTEST_GUILESS_MAIN(TestDemo)
#include "tst_demo.moc"

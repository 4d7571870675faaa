// Issue 42 (part): the curve view's model tested alone, without a widget: what it fetches for each run (the
// range in view with its margin, by steps or by the steps the visible samples or tokens span), where each point
// goes on the x axis, the series' whole extent, the axes' labels, and what the plot says in place of curves or
// above them. A source of made-up runs stands in for the workspace's.
#include "views/curves/curvemodel.h"

#include "testmain.h"

#include <QTest>

using namespace fp8scope;

namespace {

// Two or three runs of made-up points; remembers every request.
class FakeSource : public CurveSource
{
public:
    struct FakeRun {
        QString name;
        std::vector<SeriesPoint> points;
        std::vector<std::pair<double, double>> samples; // (step, consumed samples)
        std::vector<std::pair<double, double>> tokens;
        bool xIsSamples = false;
        int64_t firstStep = 0, lastStep = 0; // of the whole series
    };
    std::vector<FakeRun> fakeRuns;
    bool listsStatistics = true;
    mutable std::vector<std::pair<RunRef, Request>> requests;

    static RunRef ref(size_t i) { return {1, int64_t(i + 1)}; }

    std::vector<Statistic> statistics() const override
    {
        if (!listsStatistics)
            return {};
        return {{QStringLiteral("lm loss"), false, {}}, {QStringLiteral("underflows%"), true, {}}};
    }
    std::vector<RunRef> runs() const override
    {
        std::vector<RunRef> out;
        for (size_t i = 0; i < fakeRuns.size(); ++i)
            out.push_back(ref(i));
        return out;
    }
    QString runName(RunRef run) const override { return fakeRuns[size_t(run.id - 1)].name; }
    QColor runColour(RunRef) const override { return Qt::black; }
    std::optional<Curve> curve(RunRef run, const Request &request) const override
    {
        requests.emplace_back(run, request);
        const FakeRun &r = fakeRuns[size_t(run.id - 1)];
        if (r.points.empty())
            return std::nullopt;
        Curve c {.name = r.name, .xIsSamples = r.xIsSamples};
        c.series.points = int64_t(r.points.size());
        c.series.firstStep = r.firstStep;
        c.series.lastStep = r.lastStep;
        c.points = r.points;
        return c;
    }
    std::vector<std::pair<double, double>> stepSamples(RunRef run) const override
    {
        return fakeRuns[size_t(run.id - 1)].samples;
    }
    std::vector<std::pair<double, double>> stepTokens(RunRef run) const override
    {
        return fakeRuns[size_t(run.id - 1)].tokens;
    }
    QString emptyText() const override { return QStringLiteral("open a folder"); }
};

std::vector<SeriesPoint> pointsAt(const std::vector<std::pair<int64_t, double>> &steps)
{
    std::vector<SeriesPoint> out;
    for (const auto &[step, v] : steps)
        out.push_back({.step = step, .lastStep = step, .value = v, .min = v, .max = v});
    return out;
}

} // namespace

class TestCurveModel : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void curvesByStepWithTheirWholeExtent()
    {
        FakeSource source;
        source.fakeRuns = {{.name = QStringLiteral("bf16"),
                               .points = pointsAt({{10, 3.0}, {20, 2.5}, {30, 2.0}}),
                               .firstStep = 0,
                               .lastStep = 100},
            {.name = QStringLiteral("fp8"),
                .points = pointsAt({{10, 3.1}, {40, 2.2}}),
                .firstStep = 5,
                .lastStep = 40}};
        CurveModel model(&source);
        model.reloadMappings();
        const CurveModel::Drawing d
            = model.fetch({.statistic = QStringLiteral("lm loss"), .resolution = 640, .sourceHasStatistics = true});
        QCOMPARE(d.curves.size(), size_t(2));
        QCOMPARE(d.curves[0].xs, (std::vector<double> {10, 20, 30}));
        QCOMPARE(d.curves[1].values, (std::vector<double> {3.1, 2.2}));
        QCOMPARE(d.curves[0].name, QStringLiteral("bf16"));
        // The points fetched span 10..40; the series reach 0..100 beyond them.
        QCOMPARE(d.lo, 10.0);
        QCOMPARE(d.hi, 40.0);
        QCOMPARE(d.extentLo, 0.0);
        QCOMPARE(d.extentHi, 100.0);
        QCOMPARE(d.xLabel, QStringLiteral("step"));
        QCOMPARE(d.yLabel, QStringLiteral("lm loss"));
        QVERIFY(d.message.isEmpty());
        QVERIFY(d.note.isEmpty());
        // Asked for the run-level statistic at the plot's resolution, over everything (nothing in view yet).
        QCOMPARE(source.requests.size(), size_t(2));
        QCOMPARE(source.requests[0].second.stat, QStringLiteral("lm loss"));
        QVERIFY(!source.requests[0].second.tensorLevel);
        QCOMPARE(source.requests[0].second.range.resolution, 640);
        QCOMPARE(source.requests[0].second.range.from, std::numeric_limits<int64_t>::min());
    }

    void theRangeInViewIsFetchedWithAMargin()
    {
        FakeSource source;
        source.fakeRuns = {{.name = QStringLiteral("a"), .points = pointsAt({{100, 1.0}}), .lastStep = 100}};
        CurveModel model(&source);
        model.reloadMappings();
        (void)model.fetch({.statistic = QStringLiteral("lm loss"), .visible = std::pair(100.0, 300.0)});
        // 5 % of the width and a step on either side.
        QCOMPARE(source.requests.back().second.range.from, int64_t(89));
        QCOMPARE(source.requests.back().second.range.to, int64_t(311));
    }

    void runsWithoutCountsAreLeftOutOfTheSamplesAxisAndSaid()
    {
        FakeSource source;
        source.fakeRuns = {{.name = QStringLiteral("counted"),
                               .points = pointsAt({{10, 1.0}, {20, 0.5}}),
                               .samples = {{0, 0}, {10, 1000}, {20, 2000}},
                               .lastStep = 20},
            {.name = QStringLiteral("uncounted"), .points = pointsAt({{10, 1.0}}), .lastStep = 10}};
        CurveModel model(&source);
        model.reloadMappings();
        QVERIFY(model.hasCountsFor(CurveModel::XAxis::Samples));
        QVERIFY(!model.hasCountsFor(CurveModel::XAxis::Tokens));
        const CurveModel::Drawing d
            = model.fetch({.statistic = QStringLiteral("lm loss"), .axis = CurveModel::XAxis::Samples});
        QCOMPARE(d.curves.size(), size_t(1));
        QCOMPARE(d.curves[0].xs, (std::vector<double> {1000, 2000}));
        QCOMPARE(d.curves[0].steps, (std::vector<double> {10, 20}));
        QCOMPARE(d.xLabel, QStringLiteral("consumed samples"));
        QVERIFY2(d.note.contains(QLatin1String("uncounted")) && !d.note.contains(QLatin1String("counted,")),
            qPrintable(d.note));
        QVERIFY(d.note.contains(QLatin1String("samples axis")));
        // A run placed by its counts maps both ways, past its last count by the end segment.
        QCOMPARE(model.xOfStep(CurveModel::XAxis::Samples, FakeSource::ref(0), 30), 3000.0);
        QCOMPARE(model.stepOfX(CurveModel::XAxis::Samples, FakeSource::ref(0), 500), 5.0);
        QVERIFY(model.placesOn(CurveModel::XAxis::Samples, FakeSource::ref(0)));
        QVERIFY(!model.placesOn(CurveModel::XAxis::Samples, FakeSource::ref(1)));
        QCOMPARE(model.xOfStep(CurveModel::XAxis::Steps, FakeSource::ref(0), 30), 30.0);
    }

    void byTokensTheVisibleTokensAreAskedAsSteps()
    {
        FakeSource source;
        source.fakeRuns = {{.name = QStringLiteral("a"),
            .points = pointsAt({{10, 1.0}}),
            .tokens = {{0, 0}, {100, 409600}},
            .lastStep = 100}};
        CurveModel model(&source);
        model.reloadMappings();
        const CurveModel::Drawing d = model.fetch({.statistic = QStringLiteral("lm loss"),
            .axis = CurveModel::XAxis::Tokens,
            .visible = std::pair(40960.0, 204800.0)});
        // Tokens 40960..204800 are steps 10..50: asked as steps with the margin (2 + 1).
        QCOMPARE(source.requests.back().second.range.from, int64_t(7));
        QCOMPARE(source.requests.back().second.range.to, int64_t(53));
        QCOMPARE(d.curves.size(), size_t(1));
        QCOMPARE(d.curves[0].xs, (std::vector<double> {40960}));
        // The series' last step on the axis: 409600 tokens.
        QCOMPARE(d.extentHi, 409600.0);
    }

    void bucketsAreDrawnFromTheirMidpoints()
    {
        FakeSource source;
        source.fakeRuns = {{.name = QStringLiteral("a"),
            .points = {{.step = 0, .lastStep = 9, .value = 1, .min = 1, .max = 3, .count = 10}},
            .lastStep = 9}};
        CurveModel model(&source);
        model.reloadMappings();
        const CurveModel::Drawing d = model.fetch({.statistic = QStringLiteral("lm loss")});
        QVERIFY(d.curves[0].bucketed);
        QCOMPARE(d.curves[0].values, (std::vector<double> {2.0}));
        QCOMPARE(d.curves[0].mins, (std::vector<double> {1.0}));
        QCOMPARE(d.curves[0].maxs, (std::vector<double> {3.0}));
    }

    void whatThePlotSaysInPlaceOfCurves()
    {
        FakeSource source;
        source.fakeRuns = {{.name = QStringLiteral("a"), .points = pointsAt({{1, 0.0}, {2, 0.0}}), .lastStep = 2}};
        CurveModel model(&source);
        model.reloadMappings();
        // A tensor statistic with no tensor chosen: nothing asked, and said.
        CurveModel::Drawing d = model.fetch({.statistic = QStringLiteral("tensor:underflows%")});
        QVERIFY(d.curves.empty());
        QVERIFY(source.requests.empty());
        QVERIFY(d.message.contains(QLatin1String("choose a tensor")));
        // Chosen: its label names the layer by its last four parts and the tensor.
        d = model.fetch({.statistic = QStringLiteral("tensor:underflows%"),
            .layer = QStringLiteral("model.decoder.layers.9.mlp.linear_fc2"),
            .tensor = QStringLiteral("gradient")});
        QCOMPARE(d.yLabel, QStringLiteral("underflows% of layers.9.mlp.linear_fc2 gradient"));
        QVERIFY(source.requests.back().second.tensorLevel);
        QCOMPARE(source.requests.back().second.layer, QStringLiteral("model.decoder.layers.9.mlp.linear_fc2"));
        // Every value 0: said (a log's four decimals hide small values).
        QVERIFY(d.message.contains(QLatin1String("Every value of underflows% is 0")));
        // No run has it.
        source.fakeRuns[0].points.clear();
        d = model.fetch({.statistic = QStringLiteral("lm loss")});
        QCOMPARE(d.message, QStringLiteral("No run shown has lm loss."));
        QVERIFY(d.lo > d.hi);
        // Nothing to show at all: the source's own words.
        d = model.fetch({.statistic = QStringLiteral("lm loss"), .sourceHasStatistics = false});
        QCOMPARE(d.message, QStringLiteral("open a folder"));
    }

    void checkpointTensorsHaveNoStepToShow()
    {
        FakeSource source;
        source.fakeRuns
            = {{.name = QStringLiteral("ckpt"), .points = pointsAt({{-1, 0.5}}), .firstStep = -1, .lastStep = -1}};
        CurveModel model(&source);
        model.reloadMappings();
        const CurveModel::Drawing d = model.fetch({.statistic = QStringLiteral("lm loss")});
        QVERIFY(d.checkpointOnly);
        QCOMPARE(d.xLabel, QStringLiteral("checkpoint (no step)"));
    }
};

FP8SCOPE_TEST_GUILESS_MAIN(TestCurveModel)
#include "tst_curvemodel.moc"

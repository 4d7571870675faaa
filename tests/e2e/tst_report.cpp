// The triage report (`fp8scope-cli report`, core/report + views/report) read as a reader reads it, with
// poppler-utils: for a scenario of each class pdftotext finds the verdict, the engine's departure step, the
// suspect layer, the planted keys or tasks; pdfinfo the pages and the size (A4 and Letter); pdffonts every font
// embedded; pdfimages only the heatmap, a pixel per cell; the outline a bookmark per section at the page the
// contents give; pdftoppm a page that is not blank. In process: the document model's provenance (every input
// file with its SHA-256), the reviews, and a report made without a metrics backend. Bad arguments fail with
// a reason and leave no file.
#include "attemptsfolder.h"
#include "blowuprun.h"
#include "core/analysis/triage.h"
#include "core/demo/demogenerator.h"
#include "core/demo/scenarios.h"
#include "core/query/catalog.h"
#include "core/report/triagereport.h"
#include "core/store/runstore.h"
#include "core/storeaccess.h"

#include <QCryptographicHash>
#include <QFile>
#include <QProcess>
#include <QRegularExpression>
#include <QStandardPaths>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>
#include <set>

using namespace fp8scope;

namespace {

struct Output {
    int code = -1;
    QString out, err;
};

Output runTool(const QString &program, const QStringList &args)
{
    QProcess p;
    p.start(program, args);
    Output o;
    if (!p.waitForFinished(300000))
        return o;
    o.code = p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
    o.out = QString::fromUtf8(p.readAllStandardOutput());
    o.err = QString::fromUtf8(p.readAllStandardError());
    return o;
}

Output cli(const QStringList &args)
{
    return runTool(qEnvironmentVariable("FP8SCOPE_CLI"), args);
}

// The "  p. N  Title" lines the CLI prints: each section and the page it starts on.
std::vector<std::pair<QString, int>> printedSections(const QString &out)
{
    std::vector<std::pair<QString, int>> s;
    static const QRegularExpression line(QStringLiteral("^  p\\. (\\d+)  (.+)$"), QRegularExpression::MultilineOption);
    for (auto it = line.globalMatch(out); it.hasNext();) {
        const auto m = it.next();
        s.emplace_back(m.captured(2), m.captured(1).toInt());
    }
    return s;
}

QString unescapeXml(QString s)
{
    return s.replace(QStringLiteral("&quot;"), QStringLiteral("\""))
        .replace(QStringLiteral("&apos;"), QStringLiteral("'"))
        .replace(QStringLiteral("&lt;"), QStringLiteral("<"))
        .replace(QStringLiteral("&gt;"), QStringLiteral(">"))
        .replace(QStringLiteral("&amp;"), QStringLiteral("&"));
}

} // namespace

class TestReport : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase();
    void eachScenarioClass_data();
    void eachScenarioClass();
    void letterSizeAndANonBlankPage();
    void documentModel();
    void badArguments();
    void aRunOnItsOwn();
    void attemptsSection();

private:
    QTemporaryDir m_tmp;
};

void TestReport::initTestCase()
{
    QVERIFY(m_tmp.isValid());
    QVERIFY(QFileInfo(qEnvironmentVariable("FP8SCOPE_CLI")).isExecutable());
    for (const char *tool : {"pdftotext", "pdfinfo", "pdffonts", "pdfimages", "pdftohtml", "pdftoppm"}) {
        if (QStandardPaths::findExecutable(QLatin1String(tool)).isEmpty())
            QSKIP(qPrintable(
                QStringLiteral("%1 missing (poppler-utils: packaging/install-deps.sh)").arg(QLatin1String(tool))));
    }
}

void TestReport::eachScenarioClass_data()
{
    QTest::addColumn<int>("scenario");
    for (Scenario s : {Scenario::EarlyDivergence, Scenario::MidRunInstability, Scenario::LossSpikes,
             Scenario::DownstreamGap, Scenario::None})
        QTest::newRow(qPrintable(scenarioName(s))) << int(s);
}

void TestReport::eachScenarioClass()
{
    QFETCH(int, scenario);
    const Scenario s = Scenario(scenario);
    const QString dir = m_tmp.filePath(scenarioName(s));
    ScenarioPlan plan;
    QString error;
    QVERIFY2(generateScenario(dir, s, 2, &plan, &error), qPrintable(error));
    // The downstream gap's run folder holds its inference export, one scale inverted: the report says so.
    if (s == Scenario::DownstreamGap)
        QVERIFY2(writeInferenceExport(dir + QLatin1Char('/') + plan.run + QStringLiteral("/inference"),
                     {.layers = 3, .faultLayer = 2, .fault = ExportFault::InvertedScale, .seed = 9}, &error),
            qPrintable(error));
    const QString pdf = m_tmp.filePath(scenarioName(s) + QStringLiteral(".pdf"));
    const Output made = cli({QStringLiteral("report"), dir, QStringLiteral("-o"), pdf});
    QVERIFY2(made.code == 0, qPrintable(made.err));
    QVERIFY(QFileInfo::exists(pdf));
    QVERIFY(!QFileInfo::exists(pdf + QStringLiteral(".draft")) && !QFileInfo::exists(pdf + QStringLiteral(".part")));

    // What the engine says of the pair (the CLI ingested the folder).
    Catalog catalog;
    QVERIFY2(catalog.open(dir, &error), qPrintable(error));
    const auto baseline = catalog.findRun(plan.baseline), run = catalog.findRun(plan.run);
    QVERIFY(baseline && run);
    const analysis::Comparison engine = analysis::compareRuns(catalog, baseline->ref, run->ref);
    QCOMPARE(analysis::verdictName(engine.verdict), scenarioName(s));

    // The text, as a reader's search finds it (pdftotext joins nothing across lines: search line by line too).
    const Output text = runTool(QStringLiteral("pdftotext"), {QStringLiteral("-layout"), pdf, QStringLiteral("-")});
    QCOMPARE(text.code, 0);
    const QString t = text.out;
    QVERIFY2(t.contains(QStringLiteral("Verdict: %1.").arg(scenarioName(s))), qPrintable(t.left(2000)));
    QVERIFY(t.contains(plan.run) || t.contains(run->label()));
    if (engine.departure)
        QVERIFY2(t.contains(QStringLiteral("Departure at step %1").arg(*engine.departure)), qPrintable(t.left(2000)));
    switch (s) {
    case Scenario::EarlyDivergence:
        for (const QString &key : plan.keys)
            QVERIFY2(t.contains(key), qPrintable(key));
        break;
    case Scenario::MidRunInstability:
        QVERIFY2(t.contains(plan.layer), qPrintable(plan.layer));
        QVERIFY(t.contains(QStringLiteral("Layer suspects")));
        break;
    case Scenario::DownstreamGap:
        for (const QString &task : plan.tasks)
            QVERIFY2(t.contains(task), qPrintable(task));
        QVERIFY(t.contains(QStringLiteral("Evaluation")));
        // The audit's section, its finding, and the first next step says what to re-export.
        QVERIFY(t.contains(QStringLiteral("Inference checkpoint")));
        QVERIFY2(t.contains(QStringLiteral("model.layers.2.self_attn.o_proj")), qPrintable(t));
        QVERIFY(t.contains(QStringLiteral("inverted-scale")));
        QVERIFY2(t.contains(QStringLiteral("re-export model.layers.2.self_attn.o_proj")), qPrintable(t));
        break;
    case Scenario::LossSpikes: QVERIFY(t.contains(QStringLiteral("per 1000 steps"))); break;
    case Scenario::None: break;
    }
    for (const QString &section : {QStringLiteral("Contents"), QStringLiteral("Method"), QStringLiteral("Provenance"),
             QStringLiteral("What to try next")})
        QVERIFY2(t.contains(section), qPrintable(section));

    // Pages and size.
    const Output info = runTool(QStringLiteral("pdfinfo"), {pdf});
    QCOMPARE(info.code, 0);
    const auto sections = printedSections(made.out);
    QVERIFY(sections.size() >= 6);
    const QRegularExpressionMatch pages = QRegularExpression(QStringLiteral("Pages:\\s+(\\d+)")).match(info.out);
    QVERIFY(pages.hasMatch());
    QVERIFY(made.out.contains(QStringLiteral("(%1 pages").arg(pages.captured(1))));
    QVERIFY(pages.captured(1).toInt() >= sections.back().second);
    QVERIFY2(info.out.contains(QStringLiteral("595 x 842 pts (A4)")), qPrintable(info.out));

    // Every font embedded.
    const Output fonts = runTool(QStringLiteral("pdffonts"), {pdf});
    QCOMPARE(fonts.code, 0);
    const QStringList fontLines = fonts.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts).mid(2);
    QVERIFY(!fontLines.isEmpty());
    for (const QString &l : fontLines)
        QVERIFY2(l.contains(QRegularExpression(QStringLiteral("\\s+yes\\s+(yes|no)\\s+(yes|no)\\s+\\d+\\s+\\d+\\s*$"))),
            qPrintable(l));

    // Images: the heatmaps only (the plots are vector), each a pixel per cell.
    const Output images = runTool(QStringLiteral("pdfimages"), {QStringLiteral("-list"), pdf});
    QCOMPARE(images.code, 0);
    const QStringList imageLines = images.out.split(QLatin1Char('\n'), Qt::SkipEmptyParts).mid(2);
    if (s == Scenario::MidRunInstability) {
        QCOMPARE(imageLines.size(), 1);
        const Heatmap h = catalog.matrix(run->ref, {.stat = plan.stat, .tensor = plan.tensor});
        const QStringList f = imageLines.front().simplified().split(QLatin1Char(' '));
        QCOMPARE(f.value(3).toInt(), int(h.steps.size()));
        QCOMPARE(f.value(4).toInt(), int(h.layers.size()));
        QVERIFY2(f.value(8) != QLatin1String("jpeg"), qPrintable(imageLines.front())); // the cells exactly
    } else {
        QVERIFY2(imageLines.isEmpty(), qPrintable(images.out));
    }

    // The outline: a bookmark per section, at the page the contents name.
    const Output xml = runTool(
        QStringLiteral("pdftohtml"), {QStringLiteral("-xml"), QStringLiteral("-stdout"), QStringLiteral("-i"), pdf});
    QCOMPARE(xml.code, 0);
    std::vector<std::pair<QString, int>> outline;
    static const QRegularExpression item(QStringLiteral("<item page=\"(\\d+)\">([^<]*)</item>"));
    for (auto it = item.globalMatch(xml.out); it.hasNext();) {
        const auto m = it.next();
        outline.emplace_back(unescapeXml(m.captured(2)), m.captured(1).toInt());
    }
    QCOMPARE(outline, sections);
    // ... and the contents page lists them with those pages.
    const Output contents = runTool(QStringLiteral("pdftotext"),
        {QStringLiteral("-f"), QStringLiteral("2"), QStringLiteral("-l"), QStringLiteral("2"),
            QStringLiteral("-layout"), pdf, QStringLiteral("-")});
    for (const auto &[title, page] : sections)
        QVERIFY2(contents.out.contains(QRegularExpression(QRegularExpression::escape(title) + QStringLiteral("[ .]+")
                     + QString::number(page) + QStringLiteral("\\b"))),
            qPrintable(title));
}

void TestReport::letterSizeAndANonBlankPage()
{
    const QString dir = m_tmp.filePath(QStringLiteral("letter"));
    ScenarioPlan plan;
    QString error;
    QVERIFY2(generateScenario(dir, Scenario::MidRunInstability, 3, &plan, &error), qPrintable(error));
    const QString pdf = m_tmp.filePath(QStringLiteral("letter.pdf"));
    const Output made = cli({QStringLiteral("report"), dir, QStringLiteral("-o"), pdf, QStringLiteral("--page-size"),
        QStringLiteral("letter"), QStringLiteral("--baseline"), plan.baseline, QStringLiteral("--run"), plan.run});
    QVERIFY2(made.code == 0, qPrintable(made.err));
    const Output info = runTool(QStringLiteral("pdfinfo"), {pdf});
    QVERIFY2(info.out.contains(QStringLiteral("612 x 792 pts (letter)")), qPrintable(info.out));
    // The loss comparison's page, rendered: ink on it, and not all ink.
    const int page = printedSections(made.out).front().second;
    const QString prefix = m_tmp.filePath(QStringLiteral("page"));
    const Output png = runTool(QStringLiteral("pdftoppm"),
        {QStringLiteral("-gray"), QStringLiteral("-r"), QStringLiteral("40"), QStringLiteral("-f"),
            QString::number(page), QStringLiteral("-l"), QString::number(page), QStringLiteral("-singlefile"), pdf,
            prefix});
    QCOMPARE(png.code, 0);
    QFile f(prefix + QStringLiteral(".pgm"));
    QVERIFY(f.open(QIODevice::ReadOnly));
    const QByteArray data = f.readAll();
    // P5 <w> <h> <max>\n<bytes>
    const QList<QByteArray> head = data.left(64).split('\n');
    QVERIFY(data.startsWith("P5"));
    const QList<QByteArray> size = head.value(1).split(' ');
    const int w = size.value(0).toInt(), h = size.value(1).toInt();
    QVERIFY(w > 100 && h > 100);
    const QByteArray pixels = data.right(qsizetype(w) * h);
    qsizetype dark = 0;
    for (char c : pixels)
        dark += uchar(c) < 160 ? 1 : 0;
    const double share = double(dark) / double(pixels.size());
    QVERIFY2(share > 0.01 && share < 0.6, qPrintable(QString::number(share)));
}

void TestReport::documentModel()
{
    const QString dir = m_tmp.filePath(QStringLiteral("model"));
    ScenarioPlan plan;
    QString error;
    QVERIFY2(generateScenario(dir, Scenario::MidRunInstability, 5, &plan, &error), qPrintable(error));
    Catalog catalog;
    QVERIFY2(catalog.open(dir, &error), qPrintable(error));
    QVERIFY(CatalogTestAccess::storeOf(catalog, catalog.stores().front().serial)->ingest().errors.isEmpty());
    catalog.refresh();
    const auto [baseline, run] = report::defaultReportPair(catalog);
    QCOMPARE(catalog.run(baseline)->name, plan.baseline);
    QCOMPARE(catalog.run(run)->name, plan.run);
    // A review given in the wizard is in the report, with its note.
    const analysis::Comparison c = analysis::compareRuns(catalog, baseline, run);
    const auto [folder, name] = catalog.baselineKey(run, baseline);
    QVERIFY(CatalogTestAccess::store(catalog, run)
                ->storeFindingReview(run.id, folder, name,
                    {analysis::findingIdentity(c.findings.front()), ReviewState::Confirmed,
                        QStringLiteral("seen on the cluster too"), QString()},
                    &error));
    report::TriageReportOptions options;
    options.version = QStringLiteral("test");
    options.command = QStringLiteral("fp8scope-cli report %1 -o out.pdf").arg(dir);
    int calls = 0;
    const auto doc = report::buildTriageReport(
        catalog, baseline, run, nullptr, options, &error, [&](int done, int total, const QString &) {
            ++calls;
            return done <= total;
        });
    QVERIFY2(doc, qPrintable(error));
    QVERIFY(calls > 3);
    const QString text = report::documentText(*doc).join(QLatin1Char('\n'));
    QVERIFY(text.contains(QStringLiteral("seen on the cluster too")));
    QVERIFY(text.contains(options.command));
    // No backend: the dumps are named, not recomputed (the scenario has none: then the what-if says so).
    QVERIFY(text.contains(QStringLiteral("no metrics backend")) || text.contains(QStringLiteral("has no tensor dump")));
    // A curve figure per statistic and tensor kind of the first three suspects, each with every layer of that
    // tensor kind that has the statistic, the suspects among them in colour and last (on top).
    std::vector<std::pair<QString, QString>> kinds;
    for (const analysis::Finding &f : c.findings) {
        if (f.kind != analysis::FindingKind::LayerSignal || f.severity == analysis::Severity::Info || kinds.size() >= 3)
            continue;
        if (std::find(kinds.begin(), kinds.end(), std::pair(f.stat, f.tensor)) == kinds.end())
            kinds.emplace_back(f.stat, f.tensor);
    }
    QVERIFY(!kinds.empty());
    const report::Section *layerSection = nullptr;
    for (const report::Section &s : doc->sections)
        layerSection = s.title == QLatin1String("Layer suspects") ? &s : layerSection;
    QVERIFY(layerSection);
    size_t curveFigures = 0;
    for (const report::Block &b : layerSection->blocks) {
        const auto *f = std::get_if<report::Figure>(&b);
        const auto *curves = f ? std::get_if<report::CurveFigure>(&f->content) : nullptr;
        if (!curves)
            continue;
        const auto [stat, tensor] = kinds[curveFigures++];
        QCOMPARE(curves->yLabel, QStringLiteral("%1 of %2").arg(stat, tensor));
        size_t withTensor = 0;
        for (const LayerTensors &l : catalog.layerTensors({run}))
            withTensor += l.tensors.contains(tensor)
                    && catalog.chooseSeries(run, {.stat = stat, .layer = l.layer, .tensor = tensor})
                ? 1
                : 0;
        QCOMPARE(curves->lines.size(), withTensor);
        QVERIFY(!curves->lines.back().faint); // a suspect, drawn last
        QVERIFY(curves->lines.front().faint);
    }
    QCOMPARE(curveFigures, kinds.size());
    // Provenance: every input file of both runs, with its SHA-256.
    const report::Section *prov = nullptr;
    for (const report::Section &s : doc->sections)
        prov = s.title == QLatin1String("Provenance") ? &s : prov;
    QVERIFY(prov);
    const report::Table *files = nullptr;
    for (const report::Block &b : prov->blocks)
        files = files ? files : std::get_if<report::Table>(&b);
    QVERIFY(files);
    std::set<QString> listed;
    for (const QStringList &row : files->rows) {
        QFile f(row.value(0));
        QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(row.value(0)));
        QCOMPARE(row.value(3),
            QString::fromLatin1(QCryptographicHash::hash(f.readAll(), QCryptographicHash::Sha256).toHex()));
        listed.insert(QFileInfo(row.value(0)).canonicalFilePath());
    }
    for (const InputFile &f : catalog.inputFiles(run))
        QVERIFY2(listed.count(QFileInfo(f.path).canonicalFilePath()), qPrintable(f.path));
    for (const InputFile &f : catalog.inputFiles(baseline))
        QVERIFY2(listed.count(QFileInfo(f.path).canonicalFilePath()), qPrintable(f.path));
    QVERIFY(listed.size() >= 4);
    // Cancelled: no document, the reason.
    const auto cancelled = report::buildTriageReport(
        catalog, baseline, run, nullptr, options, &error, [](int, int, const QString &) { return false; });
    QVERIFY(!cancelled);
    QCOMPARE(error, QStringLiteral("cancelled"));
}

// A folder of one run (no baseline): the report of that run on its own, with its blow-up, its verdict and
// what to try next; the comparability of a pair is said on a pair's title page.
void TestReport::aRunOnItsOwn()
{
    QVERIFY(testdata::writeBlowUpRun(m_tmp.filePath(QStringLiteral("alone/blowup"))));
    const QString pdf = m_tmp.filePath(QStringLiteral("alone.pdf"));
    const Output made = cli({QStringLiteral("report"), m_tmp.filePath(QStringLiteral("alone")), QStringLiteral("-o"),
        pdf, QStringLiteral("--backend"), QStringLiteral("cpu")});
    QVERIFY2(made.code == 0, qPrintable(made.err));
    const Output text = runTool(QStringLiteral("pdftotext"), {QStringLiteral("-layout"), pdf, QStringLiteral("-")});
    QCOMPARE(text.code, 0);
    QVERIFY2(text.out.contains(QStringLiteral("on its own")), qPrintable(text.out.left(2000)));
    QVERIFY2(text.out.contains(QStringLiteral("Checked on its own (no baseline)")), qPrintable(text.out.left(2000)));
    QVERIFY(text.out.contains(QStringLiteral("run-blow-up")));
    QVERIFY(!text.out.contains(QStringLiteral("Nothing to change")));
}

void TestReport::badArguments()
{
    const QString dir = m_tmp.filePath(QStringLiteral("bad"));
    ScenarioPlan plan;
    QString error;
    QVERIFY2(generateScenario(dir, Scenario::None, 1, &plan, &error), qPrintable(error));
    const Output noOutput = cli({QStringLiteral("report"), dir});
    QCOMPARE(noOutput.code, 2);
    QVERIFY(noOutput.err.contains(QStringLiteral("-o FILE.pdf")));
    const Output page = cli({QStringLiteral("report"), dir, QStringLiteral("-o"),
        m_tmp.filePath(QStringLiteral("x.pdf")), QStringLiteral("--page-size"), QStringLiteral("A3")});
    QCOMPARE(page.code, 2);
    QVERIFY(page.err.contains(QStringLiteral("A4 or Letter")));
    const Output unknown
        = cli({QStringLiteral("report"), dir, QStringLiteral("-o"), m_tmp.filePath(QStringLiteral("x.pdf")),
            QStringLiteral("--baseline"), QStringLiteral("nosuch"), QStringLiteral("--run"), plan.run});
    QCOMPARE(unknown.code, 1);
    QVERIFY(unknown.err.contains(QStringLiteral("no run 'nosuch'")));
    QVERIFY(!QFileInfo::exists(m_tmp.filePath(QStringLiteral("x.pdf"))));
    // A folder that cannot be written: the reason, no file left behind.
    const QString nowhere = m_tmp.filePath(QStringLiteral("no/such/dir/r.pdf"));
    const Output unwritable = cli({QStringLiteral("report"), dir, QStringLiteral("-o"), nowhere});
    QCOMPARE(unwritable.code, 1);
    QVERIFY2(unwritable.err.contains(QStringLiteral("r.pdf")), qPrintable(unwritable.err));
    QVERIFY(!QFileInfo::exists(nowhere));
}

// A baseline with three attempts: the report on one of them has an Attempts section with every attempt, its
// parent, its outcome and the candidate, and their loss gaps in one figure; a pair alone has none.
void TestReport::attemptsSection()
{
    const QString dir = m_tmp.filePath(QStringLiteral("attempts"));
    ScenarioPlan plan;
    QString error;
    QVERIFY2(testing::writeAttemptsFolder(dir, &plan, &error), qPrintable(error));
    Catalog catalog;
    QVERIFY2(catalog.open(dir, &error), qPrintable(error));
    QVERIFY(CatalogTestAccess::storeOf(catalog, catalog.stores().front().serial)->ingest().errors.isEmpty());
    catalog.refresh();
    RunRef baseline, run;
    for (const Run &r : catalog.runs()) {
        if (r.name == plan.baseline)
            baseline = r.ref;
        if (r.name == plan.run)
            run = r.ref;
    }
    report::TriageReportOptions options;
    options.hashFiles = false;
    const auto doc = report::buildTriageReport(catalog, baseline, run, nullptr, options, &error);
    QVERIFY2(doc, qPrintable(error));
    const auto section = std::find_if(doc->sections.begin(), doc->sections.end(),
        [](const report::Section &s) { return s.title == QLatin1String("Attempts"); });
    QVERIFY(section != doc->sections.end());
    const report::Table *table = nullptr;
    const report::Figure *figure = nullptr;
    for (const report::Block &b : section->blocks) {
        if (const auto *t = std::get_if<report::Table>(&b))
            table = t;
        if (const auto *f = std::get_if<report::Figure>(&b))
            figure = f;
    }
    QVERIFY(table && figure);
    QCOMPARE(int(table->rows.size()), 4);
    QCOMPARE(table->rows[0][0], QStringLiteral("fp8"));
    QCOMPARE(table->highlighted, std::vector<size_t> {0}); // the run reported on
    QCOMPARE(table->rows[1][0], QStringLiteral("fp8-b-current"));
    QCOMPARE(table->rows[1].back(), QStringLiteral("yes")); // the candidate
    QCOMPARE(table->rows[1][7], QStringLiteral("fixed"));
    QVERIFY(table->rows[2][2].startsWith(QLatin1String("several: ")));
    const auto &curves = std::get<report::CurveFigure>(figure->content);
    QCOMPARE(int(curves.lines.size()), 4);
    const QString text = report::documentText(*doc).join(QLatin1Char('\n'));
    QVERIFY(text.contains(QLatin1String("Several changes at once")));
}

QTEST_GUILESS_MAIN(TestReport)
#include "tst_report.moc"

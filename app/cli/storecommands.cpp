#include "storecommands.h"

#include "app/common/commandline.h"
#include "clijob.h"
#include "folderargs.h"
#include "mpirecompute.h"

#include "app/cudafactory.h"
#include "core/formats/expertnames.h"
#include "core/jobs/jobqueue.h"
#include "core/numerics/backendselect.h"
#include "core/numerics/metricsengine.h"
#include "core/query/catalog.h"
#include "core/query/precisionmap.h"
#include "core/recompute/dumprecompute.h"
#include "core/session/foldersession.h"

#include <QCommandLineParser>
#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTextStream>

#include <algorithm>
#include <cmath>
#include <limits>

namespace fp8scope::cli {

namespace {

// Opens the folder's store as it is (no ingest: `ingest` reads the folder, the readers show what is stored).
bool openSession(FolderSession &session, const QString &folder)
{
    QString error;
    if (!session.open(folder, &error)) {
        QTextStream(stderr) << "fp8scope-cli: " << error << '\n';
        return false;
    }
    return true;
}

// The readers show what is stored: a folder never read in has nothing to show, which is said with what to do
// (an empty answer would look like an empty folder).
void sayNothingStored(const QString &folder)
{
    QTextStream(stderr) << "fp8scope-cli: no runs stored for " << folder << ": read its files in first with '"
                        << "fp8scope-cli ingest " << folder
                        << "' (triage, report, attempts and watch read them themselves)\n";
}

std::optional<Run> findRun(const Catalog &catalog, const QString &name, const QString &folder)
{
    auto r = catalog.findRun(name);
    if (!r && catalog.runs().empty()) {
        sayNothingStored(folder);
    } else if (!r) {
        QTextStream err(stderr);
        err << "fp8scope-cli: no run '" << name << "'; runs:";
        for (const Run &i : catalog.runs())
            err << ' ' << i.name;
        err << '\n';
    }
    return r;
}

// Store errors met while answering (a damaged store): said on stderr, so an empty answer is not taken for
// an empty run. True when there were some.
bool reportStoreErrors(const Catalog &catalog)
{
    bool any = false;
    for (const ProblemEntry &p : catalog.problems()) {
        if (p.storeError) {
            QTextStream(stderr) << "fp8scope-cli: " << p.path << ": " << p.message << '\n';
            any = true;
        }
    }
    return any;
}

// CSV keeps every digit (round trip); tables print 10 significant digits.
QString number(double v, bool exact = false)
{
    return std::isnan(v) ? QStringLiteral("nan") : QString::number(v, 'g', exact ? 17 : 10);
}

} // namespace

int runIngest(const QStringList &args)
{
    QCommandLineParser parser;
    const QString jsonOpt = QStringLiteral("json");
    const QString rebuildOpt = QStringLiteral("rebuild");
    if (const int rc = parseCommand(parser, *cliCommand(u"ingest"), args))
        return rc < 0 ? 0 : rc;
    const QString folder = parser.positionalArguments().front();
    QTextStream out(stdout);
    QTextStream err(stderr);
    if (parser.isSet(rebuildOpt)) {
        QString error;
        int carried = 0;
        if (!FolderSession::rebuild(folder, &error, &carried)) {
            err << "fp8scope-cli: " << error << '\n';
            return 1;
        }
        if (carried > 0)
            err << "fp8scope-cli: " << carried << " review(s) of triage findings carried over to the new store\n";
    }
    FolderSession session;
    if (!openSession(session, folder))
        return 1;
    Catalog &catalog = session.catalog();
    const QString storePath = session.storePath(catalog.stores().front().serial);
    // The ingest runs as a job, as in the GUI; this thread shows its progress on a terminal.
    IngestReport report;
    const QString jobError = runJob([&](JobContext &ctx) {
        report = session
                     .ingest([&](int done, int total, const QString &file) {
                         ctx.setProgress(done, total, file);
                         return !ctx.isCancelled();
                     })
                     .front()
                     .report;
    });
    if (!jobError.isEmpty())
        report.errors << QStringLiteral("ingest stopped: %1").arg(jobError);
    catalog.refresh();
    const auto runs = catalog.runs();
    const auto problems = catalog.problems();
    const QDir dir(folder);
    if (parser.isSet(jsonOpt)) {
        QJsonArray runArray;
        for (const Run &r : runs)
            runArray.append(QJsonObject {{QStringLiteral("name"), r.name}, {QStringLiteral("precision"), r.precision},
                {QStringLiteral("series"), double(r.seriesCount)}, {QStringLiteral("points"), double(r.pointCount)},
                {QStringLiteral("evals"), double(catalog.evals(r.ref).size())}});
        QJsonArray problemArray;
        for (const ProblemEntry &p : problems)
            problemArray.append(
                QJsonObject {{QStringLiteral("file"), p.storeError ? p.path : dir.relativeFilePath(p.path)},
                    {QStringLiteral("line"), double(p.line)}, {QStringLiteral("offset"), double(p.offset)},
                    {QStringLiteral("message"), p.message}});
        QJsonObject doc {{QStringLiteral("store"), storePath}, {QStringLiteral("runs"), runArray},
            {QStringLiteral("problems"), problemArray},
            {QStringLiteral("files"),
                QJsonObject {{QStringLiteral("read"), report.filesRead},
                    {QStringLiteral("resumed"), report.filesResumed},
                    {QStringLiteral("unchanged"), report.filesUnchanged},
                    {QStringLiteral("failed"), report.filesFailed}}},
            {QStringLiteral("points_written"), double(report.pointsWritten)},
            {QStringLiteral("unrecognised"), QJsonArray::fromStringList(report.unrecognised)},
            {QStringLiteral("unreadable"),
                [&] {
                    QJsonArray a;
                    for (const auto &[path, why] : report.unreadable)
                        a.append(QJsonObject {{QStringLiteral("file"), path}, {QStringLiteral("reason"), why}});
                    return a;
                }()},
            {QStringLiteral("errors"), QJsonArray::fromStringList(report.errors)}};
        out << QJsonDocument(doc).toJson(QJsonDocument::Indented);
    } else {
        out << "store    " << storePath << '\n';
        out << "files    " << report.filesRead << " read, " << report.filesResumed << " resumed, "
            << report.filesUnchanged << " unchanged, " << report.filesFailed << " failed; " << report.pointsWritten
            << " points written\n";
        for (const Run &r : runs)
            out << "run      " << r.name << ": " << r.seriesCount << " series, " << r.pointCount << " points, "
                << catalog.evals(r.ref).size() << " evals\n";
        for (const ProblemEntry &p : problems) {
            const QString place = FolderSession::placeOf(p);
            out << "problem  " << (p.storeError ? p.path : dir.relativeFilePath(p.path))
                << (place.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(place)) << ": " << p.message << '\n';
        }
        if (!report.unrecognised.isEmpty()) {
            out << "skipped  " << report.unrecognised.size() << " file(s) in no format fp8scope reads:\n";
            for (const QString &f : report.unrecognised)
                out << "         " << f << '\n';
        }
        for (const auto &[path, why] : report.unreadable)
            out << "unread   " << path << ": " << why << '\n';
        for (const QString &e : report.errors)
            out << "error    " << e << '\n';
    }
    return report.filesFailed > 0 || !report.errors.isEmpty() ? 1 : 0;
}

int runRuns(const QStringList &args)
{
    QCommandLineParser parser;
    const QString jsonOpt = QStringLiteral("json");
    if (const int rc = parseCommand(parser, *cliCommand(u"runs"), args))
        return rc < 0 ? 0 : rc;
    FolderSession session;
    if (!openSession(session, parser.positionalArguments().front()))
        return 1;
    Catalog &catalog = session.catalog();
    if (catalog.runs().empty())
        sayNothingStored(parser.positionalArguments().front());
    QTextStream out(stdout);
    QJsonArray array;
    for (const Run &r : catalog.runs()) {
        const Pairing p = catalog.pairing(r.ref);
        const auto baseline = catalog.run(p.baseline);
        const QString baselineName = baseline ? baseline->name : QString();
        const auto versions = catalog.versions(r.ref);
        if (parser.isSet(jsonOpt)) {
            QJsonObject v;
            for (const VersionEntry &e : versions)
                v.insert(e.package, e.version);
            array.append(QJsonObject {{QStringLiteral("name"), r.name}, {QStringLiteral("display_name"), r.displayName},
                {QStringLiteral("group"), r.group}, {QStringLiteral("precision"), r.precision},
                {QStringLiteral("recipe"), r.recipe}, {QStringLiteral("baseline"), baselineName},
                {QStringLiteral("pairing"), basisName(p.basis)}, {QStringLiteral("pairing_reason"), p.reason},
                {QStringLiteral("versions"), v}, {QStringLiteral("series"), double(r.seriesCount)},
                {QStringLiteral("points"), double(r.pointCount)}});
            continue;
        }
        out << r.name << "\tprecision=" << (r.precision.isEmpty() ? QStringLiteral("?") : r.precision)
            << "\trecipe=" << r.recipe << "\tbaseline=" << baselineName << "\tseries=" << r.seriesCount
            << "\tpoints=" << r.pointCount << '\n';
        if (!r.group.isEmpty())
            out << "    group     " << r.group << '\n';
        out << "    baseline  " << (baseline ? baselineName : QStringLiteral("none")) << " (" << basisName(p.basis)
            << ": " << p.reason << ")\n";
        const QString key = keyVersionsText(versions);
        out << "    versions  " << (key.isEmpty() ? QStringLiteral("none recorded") : key);
        if (versions.size() > size_t(key.count(QLatin1Char(',')) + (key.isEmpty() ? 0 : 1)))
            out << " (" << versions.size() << " packages in all)";
        out << '\n';
    }
    if (parser.isSet(jsonOpt))
        out << QJsonDocument(array).toJson(QJsonDocument::Indented);
    return reportStoreErrors(catalog) ? 1 : 0;
}

int runSeries(const QStringList &args)
{
    QCommandLineParser parser;
    const QString runOpt = QStringLiteral("run");
    const QString statOpt = QStringLiteral("stat");
    const QString layerOpt = QStringLiteral("layer");
    const QString tensorOpt = QStringLiteral("tensor");
    const QString sourceOpt = QStringLiteral("source");
    const QString recipeOpt = QStringLiteral("recipe");
    const QString samplesOpt = QStringLiteral("samples");
    const QString bucketsOpt = QStringLiteral("buckets");
    const QString csvOpt = QStringLiteral("csv");
    if (const int rc = parseCommand(parser, *cliCommand(u"series"), args))
        return rc < 0 ? 0 : rc;
    if (!parser.isSet(runOpt) || !parser.isSet(statOpt)) {
        QTextStream(stderr) << "fp8scope-cli series: --run and --stat are required\n";
        return 2;
    }
    FolderSession session;
    if (!openSession(session, parser.positionalArguments().front()))
        return 1;
    Catalog &catalog = session.catalog();
    const auto run = findRun(catalog, parser.value(runOpt), parser.positionalArguments().front());
    if (!run)
        return 1;
    const SeriesRequest request {.stat = parser.value(statOpt),
        .layer = parser.value(layerOpt),
        .tensor = parser.value(tensorOpt),
        .source = parser.value(sourceOpt),
        .recipe = parser.value(recipeOpt),
        .axis = parser.isSet(samplesOpt) ? SeriesAxis::Samples : SeriesAxis::Step};
    const auto found = catalog.candidates(run->ref, request);
    if (found.empty() && request.layer.isEmpty() && request.tensor.isEmpty()) {
        // A per-layer statistic asked for without a layer: list where it is rather than pick one.
        QStringList where;
        for (const Series &s : catalog.series(run->ref)) {
            if (s.stat == request.stat && !s.layer.isEmpty()) {
                const QString w = QStringLiteral("--layer %1 --tensor %2").arg(s.layer, s.tensor);
                if (!where.contains(w))
                    where << w;
            }
        }
        if (!where.isEmpty()) {
            QTextStream err(stderr);
            err << "fp8scope-cli: '" << request.stat << "' is a per-layer statistic of run " << run->name << " ("
                << where.size() << " layer and tensor pairs); choose one:\n";
            for (const QString &w : where.mid(0, 50))
                err << "  " << w << '\n';
            if (where.size() > 50)
                err << "  ... and " << where.size() - 50 << " more\n";
            return 2;
        }
    }
    if (found.empty()) {
        reportStoreErrors(catalog);
        QTextStream(stderr) << "fp8scope-cli: no series '" << parser.value(statOpt) << "' in run " << run->name << '\n';
        return 1;
    }
    const Series &s = found.front();
    if (found.size() > 1) {
        QStringList others;
        for (size_t i = 1; i < found.size(); ++i)
            others << found[i].source + (found[i].recipe.isEmpty() ? QString() : QLatin1Char(' ') + found[i].recipe);
        QTextStream(stderr) << "fp8scope-cli: " << s.stat << " from " << s.source << " (also "
                            << others.join(QStringLiteral(", ")) << "; --source chooses)\n";
    }
    const auto pts = catalog.points(s, {.resolution = parser.value(bucketsOpt).toInt()});
    QTextStream out(stdout);
    const bool csv = parser.isSet(csvOpt);
    if (csv)
        out << "step,value,min,max,count\n";
    else
        out << "# " << run->name << " | " << s.stat
            << (s.sourceStat != s.stat ? QStringLiteral(" (%1)").arg(s.sourceStat) : QString())
            << " | layer=" << s.layer << " tensor=" << s.tensor << " source=" << s.source
            << (s.recipe.isEmpty() ? QString() : QStringLiteral(" recipe=") + s.recipe) << " | " << s.points
            << " points\n";
    for (const SeriesPoint &p : pts) {
        if (csv)
            out << p.step << ',' << number(p.value, true) << ',' << number(p.min, true) << ',' << number(p.max, true)
                << ',' << p.count << '\n';
        else if (p.count == 1)
            out << p.step << '\t' << number(p.value) << '\n';
        else
            out << p.step << '-' << p.lastStep << "\tmin " << number(p.min) << "\tmax " << number(p.max) << '\n';
    }
    return reportStoreErrors(catalog) ? 1 : 0;
}

int runHeatmap(const QStringList &args)
{
    QCommandLineParser parser;
    const QString runOpt = QStringLiteral("run");
    const QString statOpt = QStringLiteral("stat");
    const QString tensorOpt = QStringLiteral("tensor");
    const QString csvOpt = QStringLiteral("csv");
    const QString recipeOpt = QStringLiteral("recipe");
    const QString sourceOpt = QStringLiteral("source");
    if (const int rc = parseCommand(parser, *cliCommand(u"heatmap"), args))
        return rc < 0 ? 0 : rc;
    if (!parser.isSet(runOpt) || !parser.isSet(statOpt) || !parser.isSet(tensorOpt)) {
        QTextStream(stderr) << "fp8scope-cli heatmap: --run, --stat and --tensor are required\n";
        return 2;
    }
    FolderSession session;
    if (!openSession(session, parser.positionalArguments().front()))
        return 1;
    Catalog &catalog = session.catalog();
    const auto run = findRun(catalog, parser.value(runOpt), parser.positionalArguments().front());
    if (!run)
        return 1;
    MatrixRequest request {.stat = parser.value(statOpt),
        .tensor = parser.value(tensorOpt),
        .source = parser.value(sourceOpt),
        .recipe = parser.value(recipeOpt)};
    const auto experts = expertRowsFromName(parser.value(QStringLiteral("experts")));
    if (!experts || *experts == ExpertRows::One) {
        QTextStream(stderr) << "fp8scope-cli heatmap: --experts takes max, mean or all\n";
        return 2;
    }
    request.experts = *experts;
    if (parser.isSet(QStringLiteral("expert"))) {
        bool ok = false;
        request.expert = parser.value(QStringLiteral("expert")).toInt(&ok);
        if (!ok || request.expert < 0) {
            QTextStream(stderr) << "fp8scope-cli heatmap: --expert takes an expert's index (0, 1, ...)\n";
            return 2;
        }
        request.experts = ExpertRows::One;
    }
    request.expertsOf = parser.value(QStringLiteral("experts-of"));
    const Heatmap h = catalog.matrix(run->ref, request);
    if (h.layers.isEmpty()) {
        reportStoreErrors(catalog);
        QTextStream(stderr) << "fp8scope-cli: no " << parser.value(statOpt) << " of " << parser.value(tensorOpt)
                            << (request.expertsOf.isEmpty() ? QString()
                                                            : QStringLiteral(" of the experts of ") + request.expertsOf)
                            << " in run " << run->name << '\n';
        return 1;
    }
    if (parser.isSet(recipeOpt) && h.recipe != parser.value(recipeOpt)) {
        QTextStream(stderr) << "fp8scope-cli: " << parser.value(statOpt) << " of " << parser.value(tensorOpt)
                            << " was not recomputed under " << parser.value(recipeOpt)
                            << "; recipes: " << h.recipes.join(QLatin1String(", ")) << '\n';
        return 1;
    }
    if (parser.isSet(sourceOpt) && h.source != parser.value(sourceOpt)) {
        QTextStream(stderr) << "fp8scope-cli: no " << parser.value(statOpt) << " of " << parser.value(tensorOpt)
                            << " from " << parser.value(sourceOpt)
                            << "; sources: " << h.sources.join(QLatin1String(", ")) << '\n';
        return 1;
    }
    if (h.recipes.size() > 1 && !parser.isSet(recipeOpt))
        QTextStream(stderr) << "fp8scope-cli: recomputed under " << h.recipe << " (also "
                            << QStringList(h.recipes.begin() + 1, h.recipes.end()).join(QLatin1String(", "))
                            << "; --recipe chooses)\n";
    QTextStream out(stdout);
    const QChar sep = parser.isSet(csvOpt) ? QLatin1Char(',') : QLatin1Char('\t');
    out << "layer";
    for (int64_t s : h.steps)
        out << sep << s;
    out << '\n';
    if (!h.expertReduction.isEmpty())
        QTextStream(stderr) << "fp8scope-cli: experts' GEMMs one row each, " << h.expertReduction
                            << " (--experts all: a row per expert)\n";
    for (qsizetype l = 0; l < h.layers.size(); ++l) {
        out << h.layers.at(l);
        for (size_t s = 0; s < h.steps.size(); ++s)
            out << sep << number(h.at(l, s), parser.isSet(csvOpt));
        out << '\n';
        if (h.rowExpertCount(l) == 0)
            continue;
        // Which expert each value is from (empty for a mean of several, or no value).
        out << h.layers.at(l) << " [expert]";
        for (size_t s = 0; s < h.steps.size(); ++s) {
            const int e = h.cellExpert(l, s);
            out << sep << (e >= 0 ? QString::number(e) : QString());
        }
        out << '\n';
    }
    return reportStoreErrors(catalog) ? 1 : 0;
}

int runLayers(const QStringList &args)
{
    QCommandLineParser parser;
    if (const int rc = parseCommand(parser, *cliCommand(u"layers"), args))
        return rc < 0 ? 0 : rc;
    FolderSession session;
    if (!openSession(session, parser.positionalArguments().front()))
        return 1;
    Catalog &catalog = session.catalog();
    // A folder of one run needs no --run.
    std::optional<Run> run;
    if (parser.isSet(QStringLiteral("run")))
        run = findRun(catalog, parser.value(QStringLiteral("run")), parser.positionalArguments().front());
    else if (catalog.runs().size() == 1)
        run = catalog.runs().front();
    else if (catalog.runs().empty())
        sayNothingStored(parser.positionalArguments().front());
    else
        QTextStream(stderr) << "fp8scope-cli layers: the folder holds " << catalog.runs().size()
                            << " runs: --run names one\n";
    if (!run)
        return parser.isSet(QStringLiteral("run")) ? 1 : 2;
    const PrecisionMap map = precisionMap(catalog, run->ref);
    QTextStream out(stdout);
    const auto step = [](int64_t s, bool from) {
        return (from ? s == std::numeric_limits<int64_t>::min() : s == std::numeric_limits<int64_t>::max())
            ? QJsonValue()
            : QJsonValue(double(s));
    };
    if (parser.isSet(QStringLiteral("json"))) {
        QJsonArray layers;
        for (const LayerPrecision &l : map.layers) {
            QJsonArray spans;
            for (const PrecisionSpan &s : l.spans)
                spans.append(QJsonObject {{QStringLiteral("from"), step(s.from, true)},
                    {QStringLiteral("to"), step(s.to, false)}, {QStringLiteral("precision"), s.precision},
                    {QStringLiteral("recipe"), s.recipe},
                    {QStringLiteral("gemms"), QJsonArray::fromStringList(s.gemms)},
                    {QStringLiteral("source"), s.source}, {QStringLiteral("automatic"), s.automatic}});
            const auto e = expertOf(l.layer);
            layers.append(QJsonObject {{QStringLiteral("layer"), l.layer},
                {QStringLiteral("gemm"), e ? QJsonValue(e->gemm) : QJsonValue()},
                {QStringLiteral("expert"), e ? QJsonValue(e->expert) : QJsonValue()},
                {QStringLiteral("high_precision_throughout"), map.highPrecisionThroughout(l.layer)},
                {QStringLiteral("spans"), spans}});
        }
        out << QJsonDocument(
            QJsonObject {{QStringLiteral("run"), run->name}, {QStringLiteral("precision"), map.precision},
                {QStringLiteral("recipe"), map.recipe}, {QStringLiteral("layers"), layers},
                {QStringLiteral("notes"), QJsonArray::fromStringList(map.notes)}})
                   .toJson(QJsonDocument::Indented);
        return reportStoreErrors(catalog) ? 1 : 0;
    }
    out << run->name << ": " << (map.precision.isEmpty() ? QStringLiteral("precision unknown") : map.precision)
        << (map.recipe.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(map.recipe)) << ", " << map.layers.size()
        << " layers\n";
    for (const LayerPrecision &l : map.layers) {
        // A layer that runs as the run does says nothing more.
        if (l.spans.size() == 1)
            continue;
        out << l.layer << '\n';
        for (size_t i = 1; i < l.spans.size(); ++i) {
            const PrecisionSpan &s = l.spans[i];
            out << "  " << s.precision << (s.recipe.isEmpty() ? QString() : QStringLiteral(" (%1)").arg(s.recipe));
            if (s.gemms.size() < 3)
                out << ' ' << s.gemms.join(QLatin1Char('+'));
            if (!s.wholeRun())
                out << " steps "
                    << (s.from == std::numeric_limits<int64_t>::min() ? QString() : QString::number(s.from)) << '-'
                    << (s.to == std::numeric_limits<int64_t>::max() ? QString() : QString::number(s.to));
            out << ": " << s.source << '\n';
        }
    }
    for (const QString &n : map.notes)
        out << "note: " << n << '\n';
    return reportStoreErrors(catalog) ? 1 : 0;
}

int runRecompute(const QStringList &args)
{
    QCommandLineParser parser;
    const QString recipeOpt = QStringLiteral("recipe");
    const QString backendOpt = QStringLiteral("backend");
    const QString threadsOpt = QStringLiteral("threads");
    if (const int rc = parseCommand(parser, *cliCommand(u"recompute"), args))
        return rc < 0 ? 0 : rc;
    QTextStream out(stdout);
    QTextStream err(stderr);
    std::vector<Recipe> recipes;
    QString error;
    const QStringList names
        = parser.isSet(recipeOpt) ? parser.values(recipeOpt) : QStringList {QStringLiteral("current")};
    for (const QString &n : names) {
        auto r = Recipe::parse(n, std::nullopt, &error);
        if (!r) {
            err << "fp8scope-cli: " << error << '\n';
            return 2;
        }
        recipes.push_back(*r);
    }
    const auto choice = backendChoiceFromName(parser.value(backendOpt));
    if (!choice) {
        err << "fp8scope-cli: --backend takes auto, cpu or cuda\n";
        return 2;
    }
    const int threads = parser.value(threadsOpt).toInt();
    const QString folder = parser.positionalArguments().front();
    if (parser.isSet(QStringLiteral("mpi"))) {
#ifdef FP8SCOPE_HAVE_MPI
        return runRecomputeMpi({.folder = folder,
            .recipes = names,
            .backend = *choice,
            .threads = threads,
            .all = parser.isSet(QStringLiteral("all")),
            .json = parser.isSet(QStringLiteral("json"))});
#else
        err << "fp8scope-cli: this fp8scope-cli was built without MPI; install Open MPI (Debian: `apt install "
               "libopenmpi-dev openmpi-bin`), build again (CMake finds it), and run it as `mpirun -n N "
               "fp8scope-cli recompute FOLDER --mpi`; without --mpi it recomputes in this process\n";
        return 2;
#endif
    }
    if (parser.isSet(QStringLiteral("all")) || parser.isSet(QStringLiteral("json"))) {
        err << "fp8scope-cli: --all and --json go with --mpi\n";
        return 2;
    }
    FolderSession session;
    if (!openSession(session, folder))
        return 1;
    Catalog &catalog = session.catalog();
    // The dump index must be current.
    for (const FolderSession::FolderIngest &f : session.ingest()) {
        for (const QString &e : f.report.errors)
            err << "fp8scope-cli: " << e << '\n';
    }
    std::vector<Dump> work;
    for (const Run &r : catalog.runs()) {
        for (const Dump &d : catalog.dumps(r.ref))
            work.push_back(d);
    }
    if (work.empty()) {
        err << "fp8scope-cli: no tensor dumps indexed in " << folder << '\n';
        return 1;
    }
    int failures = 0;
    QString backendName;
    QStringList errors; // written by the job, printed here afterwards
    const QString jobError = runJob([&](JobContext &ctx) {
        BackendSelection selection = selectBackend(*choice, threads, cudaFactory());
        if (!selection.backend) {
            errors << selection.error;
            failures = int(work.size());
            return;
        }
        backendName = selection.status;
        for (size_t i = 0; i < work.size() && !ctx.isCancelled(); ++i) {
            const Dump &w = work[i];
            ctx.setProgress(qint64(i), qint64(work.size()), w.record.layer + QLatin1Char('/') + w.record.tensor);
            QString e;
            if (!session.recompute(w, *selection.backend, recipes, &e)) {
                errors << e;
                ++failures;
            }
        }
    });
    if (!jobError.isEmpty()) {
        errors << QStringLiteral("recompute stopped: %1").arg(jobError);
        failures = std::max(failures, 1);
    }
    for (const QString &e : errors)
        err << "fp8scope-cli: " << e << '\n';
    out << "recomputed " << (work.size() - size_t(failures)) << " of " << work.size() << " tensors x " << recipes.size()
        << " recipe(s) on " << backendName << '\n';
    return failures ? 1 : 0;
}

} // namespace fp8scope::cli

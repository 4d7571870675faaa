#include "statscommand.h"

#include "app/common/commandline.h"

#include "app/cudafactory.h"
#include "clijob.h"
#include "core/jobs/jobqueue.h"
#include "core/numerics/backendselect.h"
#include "core/numerics/blockcensus.h"
#include "core/numerics/metricsengine.h"
#include "core/numerics/whatif.h"

#include <QCommandLineParser>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTextStream>

#include <algorithm>
#include <cmath>

namespace fp8scope::cli {

namespace {

QString num(double v, int precision = 6)
{
    if (std::isnan(v))
        return QStringLiteral("-");
    return QString::number(v, 'g', precision);
}

void printTable(QTextStream &out, const TensorInfo &info, const TensorMetrics &m)
{
    const auto row
        = [&](const QString &name, const QString &value) { out << "  " << name.leftJustified(28) << value << '\n'; };
    out << "tensor   " << info.file << (info.name.isEmpty() ? QString() : QStringLiteral(":") + info.name) << '\n';
    QStringList dims;
    for (int64_t d : info.shape)
        dims << QString::number(d);
    out << "dtype    " << dtypeName(info.storedDtype) << "  shape [" << dims.join(QStringLiteral(", ")) << "]\n";
    if (!info.decoding.isEmpty())
        out << "decode   " << info.decoding << '\n';
    out << "recipe   " << m.recipe << "  format " << formatName(m.format) << "  backend " << m.backend << "\n\n";
    row(QStringLiteral("numel"), QString::number(m.numel));
    row(QStringLiteral("zeros"), QString::number(m.zeros));
    row(QStringLiteral("nan / inf"), QStringLiteral("%1 / %2").arg(m.nans).arg(m.infs));
    row(QStringLiteral("amax"), num(m.amax));
    row(QStringLiteral("smallest non-zero |x|"), num(m.aminNonzero));
    row(QStringLiteral("dynamic range (log2)"), num(m.dynamicRange, 4));
    row(QStringLiteral("mean / std"), QStringLiteral("%1 / %2").arg(num(m.mean), num(m.std)));
    row(QStringLiteral("excess kurtosis"), num(m.excessKurtosis, 4));
    row(QStringLiteral("underflow %"), num(m.underflowPct, 4));
    row(QStringLiteral("saturation %"), num(m.saturationPct, 4));
    row(QStringLiteral("MSE"), num(m.mse));
    row(QStringLiteral("cosine similarity"), num(m.cosine, 8));
    row(QStringLiteral("SQNR (dB)"), num(m.sqnrDb, 4));
    row(QStringLiteral("relative error"), num(m.relativeError, 4));
    if (m.blocks > 0) {
        row(QStringLiteral("blocks (zero amax)"), QStringLiteral("%1 (%2)").arg(m.blocks).arg(m.zeroAmaxBlocks));
        row(QStringLiteral("scale_inv min / max"),
            QStringLiteral("%1 / %2").arg(num(m.scaleInvMin), num(m.scaleInvMax)));
        row(QStringLiteral("mean log2 scale_inv"), num(m.meanLog2ScaleInv, 4));
    } else {
        row(QStringLiteral("scale / scale_inv"), QStringLiteral("%1 / %2").arg(num(m.scale), num(m.scaleInvMin)));
    }
    if (!m.delayedScaleSource.isEmpty())
        row(QStringLiteral("delayed scale from"), m.delayedScaleSource);
    if (!std::isnan(m.delayedOverCurrentLog2))
        row(QStringLiteral("log2(delayed / current)"), num(m.delayedOverCurrentLog2, 4));
    out << "\n  log2|x| histogram (before -> after scaling):\n";
    for (int i = 0; i < fp8math::kHistBins; ++i) {
        const qint64 a = m.histIn[size_t(i)];
        const qint64 b = m.histScaled[size_t(i)];
        if (a || b)
            out << "    " << QString::number(fp8math::histBinLog2(i)).rightJustified(5) << "  "
                << QString::number(a).rightJustified(12) << "  " << QString::number(b).rightJustified(12) << '\n';
    }
}

void printWhatIf(QTextStream &out, const TensorInfo &info, const std::vector<TensorMetrics> &all,
    const std::vector<std::optional<BlockCensus>> &censuses, const std::vector<std::optional<BlockEvidence>> &blocks,
    std::optional<size_t> best)
{
    out << "tensor   " << info.file << (info.name.isEmpty() ? QString() : QStringLiteral(":") + info.name) << "  ("
        << dtypeName(info.storedDtype) << ", " << info.numel << " elements)\n";
    if (!info.decoding.isEmpty())
        out << "decode   " << info.decoding << '\n';
    out << "backend  " << (all.empty() ? QString() : all.front().backend) << "\n\n";
    out << "  " << QStringLiteral("recipe").leftJustified(40) << QStringLiteral("format").leftJustified(10)
        << QStringLiteral("damage%").rightJustified(11) << QStringLiteral("mean rel err%").rightJustified(14)
        << QStringLiteral("underflow%").rightJustified(11) << QStringLiteral("saturated%").rightJustified(11)
        << QStringLiteral("MSE").rightJustified(13) << QStringLiteral("SQNR dB").rightJustified(9)
        << QStringLiteral("cosine").rightJustified(12) << '\n';
    for (const TensorMetrics &m : all) {
        out << "  " << m.recipe.leftJustified(40) << formatName(m.format).leftJustified(10)
            << num(m.damagePct, 4).rightJustified(11) << num(m.meanRelErrorPct, 4).rightJustified(14)
            << num(m.underflowPct, 4).rightJustified(11) << num(m.saturationPct, 4).rightJustified(11)
            << num(m.mse, 4).rightJustified(13) << num(m.sqnrDb, 4).rightJustified(9)
            << num(m.cosine, 7).rightJustified(12) << '\n';
    }
    if (best && *best < all.size())
        out << "\n  best recipe: " << all[*best].recipe << " (" << formatName(all[*best].format) << "), by "
            << whatIfCriterion() << '\n';
    const auto delayed
        = std::find_if(all.begin(), all.end(), [](const TensorMetrics &m) { return !m.delayedScaleSource.isEmpty(); });
    if (delayed != all.end())
        out << "\n  delayed scale from " << delayed->delayedScaleSource << '\n';
    // The block recipes' scales: how many blocks clip, lose elements to underflow, or are flushed whole.
    if (std::none_of(censuses.begin(), censuses.end(), [](const auto &c) { return c.has_value(); }))
        return;
    out << "\n  " << QStringLiteral("block scales").leftJustified(40) << QStringLiteral("format").leftJustified(10)
        << QStringLiteral("blocks").rightJustified(11) << QStringLiteral("clipping%").rightJustified(11)
        << QStringLiteral("underflow%").rightJustified(11) << QStringLiteral("flushed%").rightJustified(10)
        << QStringLiteral("  scale_inv binades") << '\n';
    for (size_t i = 0; i < all.size() && i < censuses.size(); ++i) {
        const std::optional<BlockCensus> &c = censuses[i];
        if (!c)
            continue;
        const QString binades = c->scaleLog2.empty()
            ? QStringLiteral("-")
            : QStringLiteral("2^%1 .. 2^%2").arg(c->scaleLog2.begin()->first).arg(c->scaleLog2.rbegin()->first);
        out << "  " << all[i].recipe.leftJustified(40) << formatName(all[i].format).leftJustified(10)
            << QString::number(c->blocks).rightJustified(11) << num(c->clippingPct(), 4).rightJustified(11)
            << num(c->underflowingPct(), 4).rightJustified(11) << num(c->flushedPct(), 4).rightJustified(10) << "  "
            << binades << (c->zeroScaleBlocks ? QStringLiteral(", %1 with scale 0").arg(c->zeroScaleBlocks) : QString())
            << '\n';
    }
    out << "  (clipping: a block with a saturated element; underflow: with a non-zero element quantized to 0; "
           "flushed: every non-zero element lost)\n";
    // Where the blocks that lost half their values lie, and the same blocks with FP32 scales.
    for (size_t i = 0; i < blocks.size(); ++i) {
        if (blocks[i] && blocks[i]->flagged > 0)
            out << "\n  " << all[i].recipe << ": " << blocks[i]->sentence() << '\n';
    }
}

} // namespace

int runStats(const QStringList &args)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    const QString recipeOpt = QStringLiteral("recipe");
    const QString formatOpt = QStringLiteral("format");
    const QString jsonOpt = QStringLiteral("json");
    const QString whatIfOpt = QStringLiteral("what-if");
    const QString threadsOpt = QStringLiteral("threads");
    const QString historyOpt = QStringLiteral("amax-history");
    const QString listOpt = QStringLiteral("list");
    const QString backendOpt = QStringLiteral("backend");
    const QString scaleInvOpt = QStringLiteral("scale-inv");
    if (const int rc = parseCommand(parser, *cliCommand(u"stats"), args))
        return rc < 0 ? 0 : rc;
    const QString spec = parser.positionalArguments().front();
    Problem problem;
    if (parser.isSet(listOpt)) {
        std::vector<SkippedTensor> skipped;
        const QStringList names = listTensors(spec, &problem, &skipped);
        if (!problem.message.isEmpty()) {
            err << "fp8scope-cli: " << problem.toString() << '\n';
            return 1;
        }
        auto shapeText = [](const std::vector<int64_t> &shape) {
            QStringList dims;
            for (int64_t d : shape)
                dims << QString::number(d);
            return dims.join(QLatin1Char('x'));
        };
        // One line per tensor: name, stored dtype, shape (tab-separated, so `cut -f1` gives the names).
        for (const QString &n : names) {
            Problem p;
            auto reader = openTensor(n.isEmpty() ? spec : spec + QLatin1Char(':') + n, &p, QStringLiteral("none"));
            if (!reader) {
                out << n << "\t?\t" << p.message << '\n';
                continue;
            }
            out << n << '\t' << dtypeName(reader->info().storedDtype) << '\t' << shapeText(reader->info().shape)
                << '\n';
        }
        // Then the tensors of dtypes fp8scope does not read, as the file spells the dtype, marked so.
        for (const SkippedTensor &t : skipped)
            out << t.name << '\t' << t.dtype << '\t' << shapeText(t.shape) << "\tnot read\n";
        return 0;
    }

    std::optional<Format> format;
    if (parser.isSet(formatOpt)) {
        format = formatFromName(parser.value(formatOpt));
        if (!format) {
            err << "fp8scope-cli: unknown format '" << parser.value(formatOpt)
                << "' (e4m3, e5m2, e4m3fnuz, e5m2fnuz, e2m1, bf16)\n";
            return 2;
        }
    }
    std::vector<Recipe> recipes;
    QString error;
    if (parser.isSet(whatIfOpt)) {
        // The recipes the tensor could be trained in: its role by its name (a gradient's says so), the run's format.
        const QString fp8Format = parser.value(QStringLiteral("fp8-format")).toLower();
        if (fp8Format != QLatin1String("hybrid") && fp8Format != QLatin1String("e4m3")
            && fp8Format != QLatin1String("e5m2")) {
            err << "fp8scope-cli: --fp8-format takes hybrid, e4m3 or e5m2\n";
            return 2;
        }
        const QString dataset = spec.section(QLatin1Char(':'), 1);
        recipes = whatIfCandidates(dataset.isEmpty() ? QFileInfo(spec).fileName() : dataset, fp8Format);
    } else {
        const auto recipe = Recipe::parse(parser.value(recipeOpt), format, &error);
        if (!recipe) {
            err << "fp8scope-cli: " << error << '\n';
            return 2;
        }
        recipes.push_back(*recipe);
    }
    const auto backendChoice = backendChoiceFromName(parser.value(backendOpt));
    if (!backendChoice) {
        err << "fp8scope-cli: --backend takes auto, cpu or cuda\n";
        return 2;
    }
    bool threadsOk = false;
    const int threads = parser.value(threadsOpt).toInt(&threadsOk);
    if (!threadsOk || threads < 0) {
        err << "fp8scope-cli: --threads takes a non-negative integer\n";
        return 2;
    }

    auto reader = openTensor(spec, &problem, parser.value(scaleInvOpt));
    if (!reader) {
        err << "fp8scope-cli: " << problem.toString() << '\n';
        return 1;
    }
    reader->setThreads(threads);
    std::vector<float> history = reader->amaxHistory();
    if (parser.isSet(historyOpt)) {
        history.clear();
        for (const QString &v : parser.value(historyOpt).split(QLatin1Char(','), Qt::SkipEmptyParts)) {
            bool ok = false;
            history.push_back(v.trimmed().toFloat(&ok));
            if (!ok) {
                err << "fp8scope-cli: bad --amax-history value '" << v << "'\n";
                return 2;
            }
        }
    }
    for (Recipe &r : recipes)
        r.amaxHistory = history;

    // The computation runs as a job on the queue's worker thread, which also creates (and so owns) the
    // backend, as in the GUI; this thread waits in an event loop and shows progress on a terminal.
    std::optional<std::vector<TensorMetrics>> results;
    std::vector<std::optional<BlockCensus>> censuses; // the what-if's block recipes
    std::vector<std::optional<BlockEvidence>> blocks;
    std::optional<size_t> best; // the what-if's best FP8 recipe
    QString backendError;
    const QString jobError = runJob([&](JobContext &ctx) {
        BackendSelection selection = selectBackend(*backendChoice, threads, cudaFactory());
        if (!selection.backend) {
            backendError = selection.error;
            return;
        }
        const auto progress = [&ctx](int64_t done, int64_t total) {
            ctx.setProgress(done, total, QStringLiteral("computing"));
            return !ctx.isCancelled();
        };
        if (parser.isSet(whatIfOpt)) {
            // The what-if every front end shows: one pass for the metrics, then the block recipes' census.
            const std::optional<WhatIfResult> w
                = computeWhatIf(*reader, recipes, *selection.backend, &problem, progress);
            if (!w)
                return;
            results.emplace();
            for (const WhatIfRow &row : w->rows) {
                if (hasBlockScales(row.recipe) && !row.census) {
                    problem.message = row.censusError;
                    results.reset();
                    return;
                }
                results->push_back(row.metrics);
                censuses.push_back(row.census);
                blocks.push_back(row.blocks);
            }
            best = w->best;
            return;
        }
        MetricsEngine engine(*selection.backend);
        results = engine.compute(*reader, recipes, &problem, progress);
    });
    if (!jobError.isEmpty()) {
        err << "fp8scope-cli: " << jobError << '\n';
        return 1;
    }
    if (!backendError.isEmpty()) {
        err << "fp8scope-cli: " << backendError << '\n';
        return 1;
    }
    if (!results) {
        err << "fp8scope-cli: " << problem.toString() << '\n';
        return 1;
    }
    const TensorInfo &info = reader->info();
    if (parser.isSet(jsonOpt)) {
        QJsonArray shape;
        for (int64_t d : info.shape)
            shape.append(double(d));
        QJsonObject tensor {{QStringLiteral("file"), info.file}, {QStringLiteral("name"), info.name},
            {QStringLiteral("dtype"), dtypeName(info.storedDtype)}, {QStringLiteral("shape"), shape}};
        if (!info.decoding.isEmpty())
            tensor.insert(QStringLiteral("decoding"), info.decoding);
        QJsonObject doc {{QStringLiteral("tensor"), tensor}};
        if (parser.isSet(whatIfOpt)) {
            QJsonArray rows;
            for (size_t i = 0; i < results->size(); ++i) {
                QJsonObject row = (*results)[i].toJson();
                if (i < censuses.size() && censuses[i])
                    row.insert(QStringLiteral("block_census"), censuses[i]->toJson());
                if (i < blocks.size() && blocks[i])
                    row.insert(QStringLiteral("block_evidence"), blocks[i]->toJson());
                rows.append(row);
            }
            doc.insert(QStringLiteral("what_if"), rows);
            doc.insert(QStringLiteral("best"), best ? QJsonValue((*results)[*best].recipe) : QJsonValue());
            doc.insert(QStringLiteral("best_criterion"), whatIfCriterion());
        } else {
            doc.insert(QStringLiteral("metrics"), results->front().toJson());
        }
        out << QJsonDocument(doc).toJson(QJsonDocument::Indented);
    } else if (parser.isSet(whatIfOpt)) {
        printWhatIf(out, info, *results, censuses, blocks, best);
    } else {
        printTable(out, info, results->front());
    }
    return 0;
}

} // namespace fp8scope::cli

#include "blockscommand.h"

#include "app/common/commandline.h"
#include "clijob.h"
#include "core/numerics/blockmap.h"
#include "core/numerics/techeck.h"

#include <QCommandLineParser>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QLocale>
#include <QTextStream>

#include <cmath>

namespace fp8scope::cli {

namespace {

QString num(double v)
{
    return QString::number(v, 'g', 4);
}

void printMap(QTextStream &out, const BlockMap &m, int64_t top)
{
    const QLocale c = QLocale::c();
    out << "recipe   " << m.recipe.name() << " (" << formatName(m.recipe.format) << "), blocks " << m.blockShape()
        << ", grid " << m.gridRows << " x " << m.gridCols << " = " << c.toString(qlonglong(m.blocks())) << " blocks\n";
    if (m.globalDecode > 0.0f)
        out << "tensor scale_inv (NVFP4's FP32 scale) " << num(m.globalDecode) << '\n';
    out << '\n' << m.patternText() << "\n\n";
    int64_t zeroScale = 0;
    const std::map<int, int64_t> histogram = m.scaleHistogram(&zeroScale);
    out << "  block scales (log2 scale_inv: blocks)";
    for (const auto &[log2, n] : histogram)
        out << "  " << log2 << ": " << c.toString(qlonglong(n));
    if (zeroScale)
        out << "  scale 0: " << c.toString(qlonglong(zeroScale));
    out << "\n\n";
    out << "  " << QStringLiteral("row").rightJustified(7) << QStringLiteral("col").rightJustified(7)
        << QStringLiteral("first row").rightJustified(11) << QStringLiteral("first col").rightJustified(11)
        << QStringLiteral("scale").rightJustified(12) << QStringLiteral("amax").rightJustified(12)
        << QStringLiteral("flushed%").rightJustified(10) << QStringLiteral("saturated%").rightJustified(11)
        << QStringLiteral("rel err").rightJustified(10) << "  flagged\n";
    for (int64_t i : m.ranked(top)) {
        const std::optional<int> e = m.scaleExponent(i);
        out << "  " << QString::number(i / m.gridCols).rightJustified(7)
            << QString::number(i % m.gridCols).rightJustified(7) << QString::number(m.firstRow(i)).rightJustified(11)
            << QString::number(m.firstCol(i)).rightJustified(11)
            << (e ? QStringLiteral("2^%1").arg(*e) : num(m.scale[size_t(i)])).rightJustified(12)
            << num(m.amax[size_t(i)]).rightJustified(12) << num(m.underflowPct(i)).rightJustified(10)
            << num(m.saturatedPct(i)).rightJustified(11) << num(m.relError(i)).rightJustified(10)
            << (m.flagged(i) ? QStringLiteral("  yes") : QString()) << '\n';
    }
}

void printCheck(QTextStream &out, const TeCheck &check, int64_t top)
{
    out << "\nTransformer Engine's quantization (" << check.entry << ", " << check.teClass << ") against "
        << check.recipe.name() << " of " << check.highPrecision << ": "
        << (check.equal() ? QStringLiteral("equal, bit for bit") : QStringLiteral("DIFFERS")) << '\n';
    for (const QString &n : check.notes)
        out << "  " << n << '\n';
    out << "  " << check.summary() << '\n';
    for (const TeCopyCheck &copy : check.copies) {
        int64_t shown = 0;
        for (const TeDifference &d : copy.differences) {
            if (top > 0 && shown++ >= top)
                break;
            out << "    " << copy.copy << ' '
                << (d.kind == TeDifference::Kind::Scale ? QStringLiteral("scale of block") : QStringLiteral("code at"))
                << " (" << d.row << ", " << d.col << "): TE " << num(d.te) << ", reference " << num(d.reference)
                << (d.kind != TeDifference::Kind::Scale ? QStringLiteral(" (%1 code steps)").arg(d.by)
                           : std::isfinite(d.by)        ? QStringLiteral(" (%1 binades)").arg(num(d.by))
                                                        : QStringLiteral(" (a zero scale)"))
                << '\n';
        }
    }
}

} // namespace

int runBlocks(const QStringList &args)
{
    QTextStream out(stdout);
    QTextStream err(stderr);
    QCommandLineParser parser;
    if (const int rc = parseCommand(parser, *cliCommand(u"blocks"), args))
        return rc < 0 ? 0 : rc;
    const QString spec = parser.positionalArguments().front();
    bool ok = false;
    const int64_t top = parser.value(QStringLiteral("top")).toLongLong(&ok);
    if (!ok || top < 0) {
        err << "fp8scope-cli: --top takes a non-negative integer\n";
        return 2;
    }
    const int threads = parser.value(QStringLiteral("threads")).toInt(&ok);
    if (!ok || threads < 0) {
        err << "fp8scope-cli: --threads takes a non-negative integer\n";
        return 2;
    }
    std::optional<Format> format;
    if (parser.isSet(QStringLiteral("format"))) {
        format = formatFromName(parser.value(QStringLiteral("format")));
        if (!format) {
            err << "fp8scope-cli: unknown format '" << parser.value(QStringLiteral("format")) << "'\n";
            return 2;
        }
    }
    // FILE or FILE:DATASET; on a DumpTensors file the quantized entry (or none, or its high_precision)
    // stands for the pair: the map is of the high-precision tensor, and TE's quantization is checked.
    QString file = spec;
    QString dataset;
    if (!QFileInfo::exists(spec) && spec.lastIndexOf(QLatin1Char(':')) > 0) {
        file = spec.left(spec.lastIndexOf(QLatin1Char(':')));
        dataset = spec.mid(spec.lastIndexOf(QLatin1Char(':')) + 1);
    }
    Problem problem;
    QString mapSpec = spec;
    QString teEntry;
    const bool torch = file.endsWith(QLatin1String(".pt")) || file.endsWith(QLatin1String(".pth"));
    if (torch) {
        Problem listing;
        for (const QString &q : teQuantizedEntries(file, &listing)) {
            const QString base = q.left(q.lastIndexOf(QLatin1Char('.')) + 1);
            if (dataset.isEmpty() || dataset == q || dataset == base + QStringLiteral("high_precision")) {
                teEntry = q;
                mapSpec = file + QLatin1Char(':') + base + QStringLiteral("high_precision");
                break;
            }
        }
    }
    QString checkError;
    if (torch && teEntry.isEmpty()) {
        // A quantized entry that could not be listed (a lying storage, a class not read): say why.
        Problem p;
        if (!checkTeQuantized(file, dataset, &p) && p.message.contains(QLatin1String("is not compared")))
            checkError = p.toString();
    }
    std::optional<Recipe> recipe;
    QString error;
    if (parser.isSet(QStringLiteral("recipe"))) {
        recipe = Recipe::parse(parser.value(QStringLiteral("recipe")), format, &error);
        if (!recipe) {
            err << "fp8scope-cli: " << error << '\n';
            return 2;
        }
    } else if (!teEntry.isEmpty()) {
        recipe = teRecipe(file, teEntry, &problem);
        if (!recipe) {
            err << "fp8scope-cli: " << problem.toString() << '\n';
            return 1;
        }
        if (format)
            recipe->format = *format;
    } else {
        recipe = Recipe::parse(QStringLiteral("mxfp8"), format, &error);
    }
    auto reader = openTensor(mapSpec, &problem, parser.value(QStringLiteral("scale-inv")));
    if (!reader) {
        err << "fp8scope-cli: " << problem.toString() << '\n';
        return 1;
    }
    reader->setThreads(threads);

    std::optional<BlockMap> map;
    std::optional<BlockMap> fp32;
    std::optional<TeCheck> check;
    const std::optional<Recipe> counterpart = fp32ScaledCounterpart(*recipe);
    const QString jobError = runJob([&](JobContext &ctx) {
        const auto progress = [&ctx](int64_t done, int64_t total) {
            ctx.setProgress(done, total, QStringLiteral("mapping blocks"));
            return !ctx.isCancelled();
        };
        map = computeBlockMap(*reader, *recipe, &problem, threads, progress);
        if (!map)
            return;
        if (counterpart) {
            fp32 = computeBlockMap(*reader, *counterpart, &problem, threads, progress);
            if (!fp32) {
                map.reset();
                return;
            }
        }
        if (!teEntry.isEmpty()) {
            Problem p;
            check = checkTeQuantized(file, teEntry, &p);
            if (!check)
                checkError = p.toString();
        }
    });
    if (!jobError.isEmpty()) {
        err << "fp8scope-cli: " << jobError << '\n';
        return 1;
    }
    if (!map) {
        err << "fp8scope-cli: " << problem.toString() << '\n';
        return 1;
    }
    const TensorInfo &info = reader->info();
    if (parser.isSet(QStringLiteral("csv"))) {
        out << "row,col,first_row,first_col,scale,amax,underflow_pct,saturated_pct,rel_error,flagged\n";
        for (int64_t i : map->ranked(top)) {
            out << i / map->gridCols << ',' << i % map->gridCols << ',' << map->firstRow(i) << ',' << map->firstCol(i)
                << ',' << QString::number(double(map->scale[size_t(i)]), 'g', 9) << ','
                << QString::number(double(map->amax[size_t(i)]), 'g', 9) << ','
                << QString::number(map->underflowPct(i), 'g', 9) << ',' << QString::number(map->saturatedPct(i), 'g', 9)
                << ',' << QString::number(map->relError(i), 'g', 9) << ',' << (map->flagged(i) ? 1 : 0) << '\n';
        }
        if (!checkError.isEmpty())
            err << "fp8scope-cli: " << checkError << '\n';
        return 0;
    }
    if (parser.isSet(QStringLiteral("json"))) {
        QJsonObject doc {{QStringLiteral("tensor"),
                             QJsonObject {{QStringLiteral("file"), info.file}, {QStringLiteral("name"), info.name},
                                 {QStringLiteral("dtype"), dtypeName(info.storedDtype)}}},
            {QStringLiteral("map"), map->toJson(top)}};
        if (fp32)
            doc.insert(QStringLiteral("fp32_scales"),
                QJsonObject {{QStringLiteral("recipe"), counterpart->name()},
                    {QStringLiteral("what_if"), compareBlockScales(*map, *fp32).toJson()}});
        if (check)
            doc.insert(QStringLiteral("te_check"), check->toJson(int(top == 0 ? -1 : top)));
        else if (!checkError.isEmpty())
            doc.insert(QStringLiteral("te_check_error"), checkError);
        out << QJsonDocument(doc).toJson(QJsonDocument::Indented);
        return 0;
    }
    out << "tensor   " << info.file << (info.name.isEmpty() ? QString() : QStringLiteral(":") + info.name) << "  ("
        << dtypeName(info.storedDtype) << ", " << info.rows << " x " << info.cols << ")\n";
    printMap(out, *map, top);
    if (fp32)
        out << "\n  " << compareBlockScales(*map, *fp32).text() << " (" << counterpart->name() << ")\n";
    if (check)
        printCheck(out, *check, top);
    else if (!checkError.isEmpty())
        out << "\nTransformer Engine's quantization not compared: " << checkError << '\n';
    return 0;
}

} // namespace fp8scope::cli

#include "commandline.h"

#include "core/demo/scenarios.h"
#include "core/formats/formatnames.h"

#include <QTextStream>

#include <algorithm>

namespace fp8scope::cli {

namespace {

QString s(const char *text)
{
    return QString::fromUtf8(text);
}

OptionSpec flag(const char *name, const char *description)
{
    return {.names = {s(name)}, .description = s(description)};
}

OptionSpec valued(const char *name, const char *valueName, const char *description, const char *defaultValue = "")
{
    return {
        .names = {s(name)}, .valueName = s(valueName), .description = s(description), .defaultValue = s(defaultValue)};
}

OptionSpec withChoices(OptionSpec o, QStringList choices)
{
    o.choices = std::move(choices);
    return o;
}

OptionSpec withSuggestions(OptionSpec o, QStringList suggestions)
{
    o.suggestions = std::move(suggestions);
    return o;
}

OptionSpec ofKind(OptionSpec o, ValueKind kind)
{
    o.kind = kind;
    return o;
}

OptionSpec repeated(OptionSpec o)
{
    o.repeatable = true;
    return o;
}

ArgumentSpec folderArgument()
{
    return {.name = s("folder"),
        .syntax = s("FOLDER"),
        .description = s("run folder or workspace"),
        .kind = ValueKind::Folder};
}

QStringList backendChoices()
{
    return {s("auto"), s("cpu"), s("cuda")};
}

#define FP8SCOPE_RECIPE_GRAMMAR                                                                                        \
    "delayed[:margin=M,history=H,reduce=max|most_recent], current, current-pow2, mxfp8[-col][-ocp], block1x128, "      \
    "block128x128[-fp32], nvfp4, bf16"

// The recipes a user names most, for the completion; parameters (delayed:margin=1) are typed by hand.
QStringList recipeChoices()
{
    return {s("delayed"), s("current"), s("current-pow2"), s("mxfp8"), s("mxfp8-col"), s("mxfp8-ocp"),
        s("mxfp8-col-ocp"), s("block1x128"), s("block128x128"), s("block128x128-fp32"), s("nvfp4"), s("bf16")};
}

QStringList formatChoices()
{
    QStringList names;
    for (Format f : {Format::E4M3, Format::E5M2, Format::E4M3FNUZ, Format::E5M2FNUZ, Format::E2M1, Format::BF16})
        names << formatName(f);
    return names;
}

QStringList scenarioChoices()
{
    QStringList names;
    for (Scenario sc : {Scenario::EarlyDivergence, Scenario::MidRunInstability, Scenario::LossSpikes,
             Scenario::DownstreamGap, Scenario::None})
        names << scenarioName(sc);
    return names;
}

OptionSpec backendOption(const char *description)
{
    return withChoices(valued("backend", "backend", description, "auto"), backendChoices());
}

OptionSpec jsonOption()
{
    return flag("json", "print JSON");
}

QList<CommandSpec> makeCliCommands()
{
    QList<CommandSpec> commands;
    commands << CommandSpec {.name = s("stats"),
        .summary = s("FP8 metrics of one tensor (--recipe, --format, --what-if, --json)"),
        .description = s("FP8 metrics of one tensor from a dump (HDF5, safetensors, .npy, torch.save, JAX "
                         "inspect_array)."),
        .arguments = {{.name = s("tensor"),
            .syntax = s("FILE[:DATASET]"),
            .description = s("FILE or FILE:DATASET"),
            .kind = ValueKind::File}},
        .options
        = {withSuggestions(
               valued("recipe", "recipe", FP8SCOPE_RECIPE_GRAMMAR " (default: current)", "current"), recipeChoices()),
            withChoices(
                valued("format", "format", "e4m3, e5m2, e4m3fnuz, e5m2fnuz, e2m1, bf16 (default: the recipe's)"),
                formatChoices()),
            jsonOption(),
            flag("what-if",
                "one row per recipe the tensor could be trained in (in the format the run uses for its role: a "
                "gradient when its name says so), the best by damage, then mean relative error, then MSE"),
            withChoices(valued("fp8-format", "format",
                            "the run's FP8 format, for --what-if: hybrid (E4M3 forward, E5M2 gradients), e4m3 or "
                            "e5m2 (default: hybrid)",
                            "hybrid"),
                {s("hybrid"), s("e4m3"), s("e5m2")}),
            valued("threads", "n", "CPU threads (default: all)", "0"),
            valued("amax-history", "values",
                "comma-separated amax history for delayed scaling, newest first (default: the dump's amax_history "
                "attribute)"),
            flag("list", "list the tensors in FILE (name, stored dtype, shape; tab-separated) and exit"),
            backendOption("auto (CUDA when a device answers, else CPU), cpu or cuda (default: auto)"),
            valued("scale-inv", "scale",
                "FP8 tensors: the decode scale their codes are multiplied by: auto (the scale_inv stored beside the "
                "tensor, if any), none (the codes' values), a number, or the name of a tensor in FILE holding one "
                "scale per tensor, row or block (default: auto)",
                "auto")}};
    commands << CommandSpec {.name = s("blocks"),
        .summary = s("the block map of one tensor under a block recipe, the worst blocks first (--recipe, --json, "
                     "--csv); Transformer Engine's own quantization compared bit for bit"),
        .description = s("The blocks of one tensor under a block recipe (MXFP8 1x32 or 32x1, NVFP4 1x16, blockwise "
                         "1x128 or 128x128; a per-tensor recipe is one block): each block's scale (its exponent for "
                         "E8M0), amax, share of non-zero values flushed to zero, share saturated and mean relative "
                         "error, ranked by damage, where the damaged blocks lie (a few outliers, a band of rows or "
                         "columns), and the same blocks with FP32 scales. On a Transformer Engine DumpTensors file "
                         "(high_precision and quantized) the map is of the high-precision tensor under the quantized "
                         "tensor's recipe, and TE's codes and scales are compared with the reference quantization "
                         "of the high-precision tensor, bit for bit."),
        .arguments = {{.name = s("tensor"),
            .syntax = s("FILE[:DATASET]"),
            .description = s("FILE or FILE:DATASET"),
            .kind = ValueKind::File}},
        .options = {withSuggestions(valued("recipe", "recipe",
                                        FP8SCOPE_RECIPE_GRAMMAR " (default: the dump's Transformer Engine recipe, "
                                                                "else mxfp8)"),
                        recipeChoices()),
            withChoices(
                valued("format", "format", "e4m3, e5m2, e4m3fnuz, e5m2fnuz, e2m1, bf16 (default: the recipe's)"),
                formatChoices()),
            jsonOption(),
            flag("csv",
                "the ranked blocks as CSV (row, col, first_row, first_col, scale, amax, "
                "underflow_pct, saturated_pct, rel_error, flagged)"),
            valued("top", "n", "how many of the worst blocks (and of TE's differences) to list; 0: all (default 20)",
                "20"),
            valued("threads", "n", "CPU threads (default: all)", "0"),
            valued("scale-inv", "scale",
                "FP8 tensors: the decode scale their codes are multiplied by, as for stats (default: auto)", "auto")}};
    commands << CommandSpec {.name = s("generate"),
        .summary = s("write a synthetic tensor dump in the fp8scope-dump HDF5 layout"),
        .description = s("Writes a synthetic fp8scope-dump HDF5 file: activations with outliers (saturation under "
                         "stale delayed scaling), gradients spanning many binades (E4M3 underflow) and weights."),
        .arguments
        = {{.name = s("out"), .syntax = s("OUT.h5"), .description = s("output .h5 file"), .kind = ValueKind::File}},
        .options = {valued("rows", "n", "rows per tensor (default 1024)", "1024"),
            valued("cols", "n", "columns per tensor (default 1024)", "1024"),
            valued("seed", "n", "random seed (default 1)", "1"),
            valued("step", "n", "the training step the tensors are dumped at (default 100)", "100")}};
    commands << CommandSpec {.name = s("demo"),
        .summary = s("write the synthetic BF16/FP8 demo run pair, or a triage scenario, with planted problems"),
        .description = s("Write a synthetic BF16 + FP8 run pair with planted problems (see OUTDIR/README.md)."),
        .arguments = {{.name = s("outdir"),
            .syntax = s("OUTDIR"),
            .description = s("folder to write"),
            .kind = ValueKind::Folder}},
        .options = {valued("seed", "n", "random seed (default 1)", "1"),
            valued("layers", "n", "transformer layers (default 12)", "12"),
            valued("steps", "n", "training steps (default 3000)", "3000"),
            withChoices(valued("scenario", "name",
                            "a triage scenario instead of the demo: early-divergence, mid-run-instability, "
                            "loss-spikes, downstream-gap or none (its seed varies steps, layers, names, intervals "
                            "and noise; the truth is in OUTDIR/planted.json)"),
                scenarioChoices()),
            valued("experts", "n",
                "with --scenario: a mixture-of-experts model, its MLP GEMMs grouped GEMMs of N experts each (as "
                "Transformer Engine names them, NAME.gemm_I); a mid-run instability moves one expert"),
            flag("all-experts", "with --experts: a mid-run instability moves every expert of the GEMM")}};
    commands << CommandSpec {.name = s("ingest"),
        .summary = s("read a run folder (logs, evals, configs, dumps) into its store"),
        .description = s("Read a run folder into its store."),
        .arguments = {folderArgument()},
        .options = {jsonOption(),
            flag("rebuild",
                "throw the store away and read every file again (a damaged store; the store is a cache of the "
                "run's files, recomputed metrics are recomputed on request; reviews of triage findings, which are "
                "not in the files, are carried over)")}};
    commands << CommandSpec {.name = s("runs"),
        .summary = s("list the runs: precision, recipe, baseline and why, versions (--json)"),
        .description = s("List the runs of an ingested folder: precision, recipe, the baseline each is compared "
                         "with and why, and the versions of the frameworks it recorded. Like series, heatmap and "
                         "layers it shows what is stored: of a folder not read in yet it says so, with the ingest "
                         "command to run."),
        .arguments = {folderArgument()},
        .options = {jsonOption()}};
    commands << CommandSpec {.name = s("series"),
        .summary = s("print one series (--run, --stat, [--layer, --tensor, --source], --csv)"),
        .description = s("Print one series of a run. A run-level statistic may be named by any of its names "
                         "('lm loss', 'train/loss', 'grad-norm'); without --layer and --tensor it is run level."),
        .arguments = {folderArgument()},
        .options = {valued("run", "run", "run name"), valued("stat", "stat", "statistic, e.g. 'lm loss'"),
            valued("layer", "layer", "layer name"), valued("tensor", "tensor", "tensor kind"),
            valued("source", "source",
                "source (default: as the window chooses: logged before recomputed, then the most points)"),
            valued("recipe", "recipe", "for recomputed statistics, the recipe (default: the run's own)"),
            flag("samples", "the series logged against consumed samples ('... vs samples')"),
            valued("buckets", "n", "at most N points (min/max per bucket)", "0"), flag("csv", "print CSV")}};
    commands << CommandSpec {.name = s("heatmap"),
        .summary = s("print a layers x steps matrix (--run, --stat, --tensor, [--source], [--experts], --csv)"),
        .description = s("Print a layers x steps matrix of one statistic. A mixture-of-experts GEMM (Transformer "
                         "Engine's NAME.gemm_I, Megatron's local_experts.I) is one row holding the largest value "
                         "of its experts at each step (--experts mean: their mean; --expert I: expert I's; --experts "
                         "all: a row per expert), followed by a row 'GEMM [expert]' naming the expert each value is "
                         "from; --experts-of GEMM prints that GEMM's experts alone."),
        .arguments = {folderArgument()},
        .options = {valued("run", "run", "run name"), valued("stat", "stat", "statistic, e.g. underflows%"),
            valued("tensor", "tensor", "tensor kind"), flag("csv", "print CSV"),
            withSuggestions(valued("experts", "reduction", "max, mean or all (default: max)", "max"),
                {s("max"), s("mean"), s("all")}),
            valued("expert", "index", "one row per GEMM holding this expert's values"),
            valued("experts-of", "gemm", "the experts x steps matrix of this GEMM"),
            valued("recipe", "recipe",
                "for recomputed statistics, the recipe (default: the run's, else the most layers')"),
            valued(
                "source", "source", "source (default: logged before recomputed, then the one covering most layers)")}};
    commands << CommandSpec {.name = s("layers"),
        .summary = s("which GEMM ran in which precision and recipe, at which steps, and what says so (--run, --json)"),
        .description = s("Print the precision map of a run: each layer (GEMM) with the precision and recipe it ran "
                         "in and the steps, from the run's precision, Megatron's --first-last-layers-bf16 and "
                         "--te-precision-config-file, a Transformer Engine debug config in the run's folder "
                         "(DisableQuantizationLayer/GEMM and their older DisableFP8 names) and AutoswitchGemm's "
                         "statistics; each span names its source. The text lists the layers that do not run as the "
                         "run does."),
        .arguments = {folderArgument()},
        .options = {valued("run", "run", "run name (needed where the folder holds several)"), jsonOption()}};
    commands << CommandSpec {.name = s("recompute"),
        .summary = s("FP8 metrics of every indexed dump into the store (--recipe, --backend, --mpi)"),
        .description = s("Recompute FP8 metrics for every indexed tensor dump. With --mpi, run under mpirun or "
                         "srun: the dump files are shared out among the ranks by size, each computes its share on "
                         "its node's GPU (or CPU threads), and rank 0 alone writes the store; only the dumps not "
                         "yet recomputed under every recipe are computed (--all: every one), and a rank's failure "
                         "is listed by rank 0, which then exits 1 (run it again to fill in what is missing)."),
        .arguments = {folderArgument()},
        .options
        = {repeated(withSuggestions(
               valued("recipe", "recipe", FP8SCOPE_RECIPE_GRAMMAR " (repeatable; default: current)"), recipeChoices())),
            backendOption("auto, cpu or cuda (default: auto)"),
            valued("threads", "n", "CPU threads (default: all; with --mpi, a node's shared out among its ranks)", "0"),
            flag("mpi", "spread over the ranks of mpirun or srun (built with Open MPI)"),
            flag("all", "with --mpi, recompute the dumps the store holds results of too"),
            flag("json", "with --mpi, print a JSON summary: per rank its dumps, time and bytes read")}};
    commands << CommandSpec {.name = s("triage"),
        .summary = s("every FP8 run against its baseline: verdict, findings, what to try (--json)"),
        .description = s("Compare every FP8 run with its baseline and say what went wrong: early divergence, "
                         "mid-run instability, loss spikes or a downstream gap, with the evidence and what to try "
                         "next (docs/TRIAGE.md)."),
        .arguments = {folderArgument()},
        .options = {valued("baseline", "run", "the baseline run (with --run)"),
            valued("run", "run", "the run to compare (with --baseline)"), jsonOption()}};
    commands << CommandSpec {.name = s("attempts"),
        .summary = s("a baseline's attempts: what each changed, its outcome, the candidate (--json)"),
        .description = s("The evaluation path of a baseline: every FP8 run compared with it, what each changed "
                         "against the baseline and against the attempt it derives from (its fp8scope.json's "
                         "\"parent\", else the closest earlier attempt), grouped as one change each, a warning where "
                         "several changed at once; its verdict, departure, loss gap at the end, evaluation gaps and "
                         "inference checkpoint findings; whether it fixed its parent's problem; and the final "
                         "candidate by a stated rule (docs/TRIAGE.md)."),
        .arguments = {folderArgument()},
        .options = {valued("baseline", "run", "the baseline (default: every baseline with attempts)"), jsonOption()}};
    commands << CommandSpec {.name = s("watch"),
        .summary = s("follow a run that is still training and print each new finding once (--fail-on)"),
        .description = s("Follow a folder while its runs are written: read what was appended or added as soon "
                         "as it changes (or every interval where no change notification arrives), triage each FP8 run "
                         "against its baseline again with the run taken as live (a "
                         "layer signal while the loss has not departed yet is an early warning), and print each "
                         "new finding once, or again when its severity rises. Exits 3 on the first finding at or "
                         "above --fail-on, so that a job script can stop the training; 0 when stopped by SIGINT or "
                         "SIGTERM."),
        .arguments = {folderArgument()},
        .options = {valued("baseline", "run", "the baseline run (with --run; default: every pairing)"),
            valued("run", "run", "the run to follow (with --baseline)"),
            valued("interval", "seconds",
                "how often to read the folder without a change notification (network filesystems; default 2)", "2"),
            jsonOption(),
            withChoices(valued("fail-on", "severity", "exit 3 on the first finding at or above this severity"),
                {s("warning"), s("critical")})}};
    commands << CommandSpec {.name = s("compare"),
        .summary = s("a statistic of a run against its baseline: aligned, band, departure (--run, --csv)"),
        .description = s("One statistic of a run against its baseline, aligned on step (or consumed samples when "
                         "their batch sizes differ): both values, their difference, its running median, the edge it "
                         "must stay above (tolerance + noise band) and the departure (docs/TRIAGE.md)."),
        .arguments = {folderArgument()},
        .options = {valued("baseline", "run", "the baseline run (default: the run's pairing)"),
            valued("run", "run", "the run to compare"),
            valued("stat", "stat", "the statistic, by its canonical or source name (default: lm loss)", "lm loss"),
            flag("csv", "print every aligned step as CSV"), jsonOption()}};
    commands << CommandSpec {.name = s("report"),
        .summary = s("the triage report of a run against its baseline as a PDF (-o FILE.pdf, --baseline, --run)"),
        .description = s("Write the triage report of a run against its baseline as a PDF: what was compared, what "
                         "was found and on what evidence, what to try next, the reviews, the method and every "
                         "input file. Headless: the plots are painted without a display."),
        .arguments = {folderArgument()},
        .options
        = {ofKind({.names = {s("o"), s("output")}, .valueName = s("file"), .description = s("the PDF to write")},
               ValueKind::File),
            valued("baseline", "run", "the baseline run (with --run)"),
            valued("run", "run", "the run to report on (with --baseline; default: the first run with a baseline)"),
            withChoices(valued("page-size", "size", "A4 or Letter (default A4)", "A4"), {s("A4"), s("Letter")}),
            backendOption("where the suspects' dumps are recomputed: auto, cpu or cuda (default auto)")}};
    commands << CommandSpec {.name = s("audit"),
        .summary = s("check an inference checkpoint's FP8 weights and scales (--reference, --json)"),
        .description = s("Audit an FP8 inference checkpoint as serving stacks load it (Hugging Face safetensors, one "
                         "file or shards, with config.json / hf_quant_config.json): every quantized layer's scales "
                         "(missing, not finite or positive, on a grid the config does not state), and against a "
                         "reference (the BF16/FP32 weights it was made from, or a training checkpoint) whether its "
                         "scale is inverted or its weights are another checkpoint's. Exit status 1 when it finds "
                         "something."),
        .arguments = {{.name = s("checkpoint"),
            .syntax = s("CHECKPOINT"),
            .description = s("the export's folder or one .safetensors file"),
            .kind = ValueKind::Folder}},
        .options = {ofKind(repeated(valued("reference", "path",
                               "weights to compare with: safetensors (file or folder), torch.save or HDF5 "
                               "(repeatable)")),
                        ValueKind::File),
            ofKind(valued("mapping", "file",
                       "inference name to training name, a JSON object or two names a line (default: the known "
                       "families)"),
                ValueKind::File),
            ofKind(valued("run", "folder",
                       "the training run (folder or workspace): its activations' amax near the end checks the static "
                       "input scales"),
                ValueKind::Folder),
            valued("threads", "n", "threads (default: all)", "0"), jsonOption()}};
    return commands;
}

QString optionSynopsis(const OptionSpec &o)
{
    const QString &name = o.names.back();
    QString text = (name.size() == 1 ? QStringLiteral("-") : QStringLiteral("--")) + name;
    if (!o.valueName.isEmpty())
        text += QLatin1Char(' ') + o.valueName.toUpper();
    text = QLatin1Char('[') + text + QLatin1Char(']');
    if (o.repeatable)
        text += QStringLiteral("...");
    return text;
}

} // namespace

QString CommandSpec::synopsis() const
{
    QStringList parts;
    if (!name.isEmpty())
        parts << name;
    for (const ArgumentSpec &a : arguments)
        parts << a.syntax;
    for (const OptionSpec &o : options)
        parts << optionSynopsis(o);
    return parts.join(QLatin1Char(' '));
}

const QList<CommandSpec> &cliCommands()
{
    static const QList<CommandSpec> commands = makeCliCommands();
    return commands;
}

const CommandSpec *cliCommand(QStringView name)
{
    for (const CommandSpec &c : cliCommands()) {
        if (c.name == name)
            return &c;
    }
    return nullptr;
}

const CommandSpec &windowCommandLine()
{
    static const CommandSpec spec {.summary = s("the inspector window"),
        .description = s("An inspector for FP8 training runs."),
        .arguments = {{.name = s("PATH"),
            .syntax = s("[PATH...]"),
            .description = s("Run folders, or folders of runs, to open (or their fp8scope.json / "
                             "fp8scope-workspace.json)."),
            .kind = ValueKind::Folder,
            .optional = true}},
        .options = {flag("demo", "Generate the demo BF16/FP8 run pair (once, into the cache) and open it."),
            withChoices(
                valued("backend", "name", "Where recomputation runs: auto, cpu or cuda.", "auto"), backendChoices()),
            ofKind(valued("screenshots", "DIR", "Save screenshots of a few states into DIR, then quit."),
                ValueKind::Folder)}};
    return spec;
}

QString cliUsage()
{
    QString text = QStringLiteral("usage: fp8scope-cli COMMAND [options]\n       fp8scope-cli --version | --help\n"
                                  "commands:\n");
    const auto head
        = [](const CommandSpec &c) { return QString(c.name + QLatin1Char(' ') + c.arguments.front().syntax); };
    qsizetype width = 0;
    for (const CommandSpec &c : cliCommands())
        width = std::max(width, head(c).size());
    for (const CommandSpec &c : cliCommands())
        text += QStringLiteral("  ") + head(c).leftJustified(width + 2) + c.summary + QLatin1Char('\n');
    text += QStringLiteral("run 'fp8scope-cli COMMAND --help' for a command's options; 'man fp8scope-cli' for all\n");
    return text;
}

void addToParser(QCommandLineParser &parser, const CommandSpec &spec)
{
    parser.setApplicationDescription(spec.description);
    for (const ArgumentSpec &a : spec.arguments)
        parser.addPositionalArgument(a.name, a.description, a.syntax);
    for (const OptionSpec &o : spec.options) {
        QCommandLineOption option(o.names, o.description);
        if (!o.valueName.isEmpty())
            option.setValueName(o.valueName);
        if (!o.defaultValue.isEmpty())
            option.setDefaultValue(o.defaultValue);
        parser.addOption(option);
    }
}

QCommandLineOption helpOption()
{
    return QCommandLineOption({s("h"), s("help")}, s("Displays help on commandline options."));
}

int parseCommand(QCommandLineParser &parser, const CommandSpec &spec, const QStringList &args)
{
    parser.addOption(helpOption());
    addToParser(parser, spec);
    QTextStream err(stderr);
    const QString who = QStringLiteral("fp8scope-cli ") + spec.name;
    if (!parser.parse(args)) {
        err << who << ": " << parser.errorText() << '\n';
        return 2;
    }
    if (parser.isSet(QStringLiteral("help"))) {
        // Qt's usage line names the executable as it was started and not the command.
        QString help = parser.helpText();
        QStringList syntax;
        for (const ArgumentSpec &a : spec.arguments)
            syntax << a.syntax;
        help.replace(0, help.indexOf(QLatin1Char('\n')),
            QStringLiteral("Usage: fp8scope-cli %1 [options] %2").arg(spec.name, syntax.join(QLatin1Char(' '))));
        QTextStream(stdout) << help;
        return -1;
    }
    const qsizetype given = parser.positionalArguments().size();
    const qsizetype wanted = spec.arguments.size();
    if (given != wanted) {
        QStringList names;
        for (const ArgumentSpec &a : spec.arguments)
            names << a.syntax;
        err << who << ": expected " << (wanted == 1 ? QStringLiteral("one ") : QString())
            << names.join(QLatin1Char(' '))
            << (given > wanted ? QStringLiteral(", got %1 arguments").arg(given) : QString()) << '\n';
        return 2;
    }
    return 0;
}

QString cliOneLine()
{
    return s("the command-line front end of fp8scope, an inspector for FP8 training runs");
}

QString windowOneLine()
{
    return s("an inspector for FP8 training runs");
}

QList<ManualSection> cliManualSections()
{
    return {
        {s("DESCRIPTION"),
            {s("fp8scope-cli does headlessly what the fp8scope window does: it reads a training run's folder as it "
               "came off the cluster (Megatron-LM and NeMo logs, Transformer Engine statistics logs, TensorBoard "
               "event files, lm-eval results, configs, pip freeze files, tensor dumps) into a SQLite store, "
               "recomputes FP8, MXFP8 and NVFP4 quantization metrics from tensor dumps (on a CUDA device when one "
               "answers, on the CPU otherwise), and tells an FP8 run's early divergence from its baseline apart "
               "from mid-run instability, loss spikes and a downstream-score gap."),
                s("Every command takes its folder or file first and its options after; each prints its own options "
                  "with --help.")}},
        {s("EXIT STATUS"),
            {s("0 on success; 1 when the command ran but failed (an unreadable file, a store error, a failed "
               "ingest); 2 for a usage error (an unknown command or option, a missing argument).")}},
        {s("ENVIRONMENT"),
            {s("QT_QPA_PLATFORM: the report command paints its plots on Qt's offscreen platform unless this names "
               "another."),
                s("XDG_CACHE_HOME: where the store of a read-only folder is kept (default ~/.cache).")}},
        {s("FILES"),
            {s("FOLDER/.fp8scope/store.sqlite: the store of a folder, a cache of its files (rebuilt by ingest "
               "--rebuild); ~/.cache/fp8scope-cli/stores/ when the folder is read-only."),
                s("FOLDER/fp8scope.json: a run's manifest (name, precision, recipe, baseline); "
                  "FOLDER/fp8scope-workspace.json: a workspace's manifest."),
                s("/usr/share/fp8scope/tools/pt2safetensors.py: converts torch .pt dumps to safetensors (needs "
                  "Python with torch).")}},
        {s("EXAMPLES"),
            {s("$ fp8scope-cli demo /tmp/demo"), s("$ fp8scope-cli triage /tmp/demo"),
                s("$ fp8scope-cli compare /tmp/demo --run fp8 --csv"),
                s("$ fp8scope-cli report /tmp/demo -o triage.pdf"),
                s("$ fp8scope-cli stats dump.h5:layers.3.fc1.activation --what-if")}},
    };
}

QList<ManualSection> windowManualSections()
{
    return {
        {s("DESCRIPTION"),
            {s("fp8scope opens the folders of FP8 training runs as they came off the cluster and shows linked "
               "views of them: loss curves against the BF16 baseline, layer x step heatmaps of underflow and "
               "quantization error, histograms of tensor dumps against the FP8 range (recomputed under any recipe "
               "on demand, on a CUDA device when one answers), the comparison with the baseline, and a triage "
               "wizard whose findings export as a PDF report."),
                s("A PATH may be a run folder, a folder of runs (a workspace), or a run's fp8scope.json or a "
                  "workspace's fp8scope-workspace.json, whose folder is opened. With no PATH the start page offers "
                  "the recent folders and the demo."),
                s("Qt's own options (-platform, -style, -reverse, ...) are accepted as well; --help and --version "
                  "answer without a display.")}},
        {s("EXIT STATUS"), {s("0 when the window closed normally; 1 when --screenshots failed; 2 for a usage error.")}},
        {s("FILES"),
            {s("FOLDER/.fp8scope/store.sqlite: the store of an opened folder (File > Rebuild Store throws it "
               "away and reads the folder again)."),
                s("~/.config/fp8scope/fp8scope.conf: the window's settings and recent folders.")}},
        {s("EXAMPLES"), {s("$ fp8scope ~/runs/gpt3-fp8 ~/runs/gpt3-bf16"), s("$ fp8scope --demo")}},
    };
}

} // namespace fp8scope::cli

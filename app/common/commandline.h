// The command lines of fp8scope and fp8scope-cli, described once: each command's parser, the top-level usage,
// the man pages and the bash completion are all made from these descriptions, so they cannot drift apart.
#pragma once

#include <QCommandLineParser>
#include <QList>
#include <QString>
#include <QStringList>

namespace fp8scope::cli {

// What a positional argument or an option's value names, for the completion: a folder, a file, or text.
enum class ValueKind { Text, Folder, File };

struct OptionSpec {
    QStringList names; // "o", "output": the short name first when there is one
    QString valueName; // empty: a flag
    QString description; // one paragraph, as --help prints it
    QString defaultValue; // QCommandLineParser's default (empty: none)
    QStringList choices; // the values it takes, when they are a fixed list (completion, man page)
    QStringList suggestions; // values the completion offers where the option takes more (recipe parameters)
    ValueKind kind = ValueKind::Text;
    bool repeatable = false;
};

struct ArgumentSpec {
    QString name; // as --help lists it ("folder")
    QString syntax; // as the usage line writes it ("FOLDER", "[PATH...]")
    QString description;
    ValueKind kind = ValueKind::Text;
    bool optional = false; // the window's [PATH...]; every command takes exactly one
};

struct CommandSpec {
    QString name; // "stats"; empty for the window's own command line
    QString summary; // the one line of the top-level usage
    QString description; // the paragraph of the command's --help and man page section
    QList<ArgumentSpec> arguments;
    QList<OptionSpec> options;

    // The usage line's form, e.g. "stats FILE[:DATASET] [--recipe R]... [--json]".
    QString synopsis() const;
};

// fp8scope-cli's commands, in the order the usage lists them.
const QList<CommandSpec> &cliCommands();
// One of them by name; nullptr when there is none.
const CommandSpec *cliCommand(QStringView name);
// The window's command line (fp8scope [PATH...] [options]).
const CommandSpec &windowCommandLine();

// fp8scope-cli's top-level usage: its commands, each with its summary.
QString cliUsage();

// Adds spec's description, arguments and options to parser (not the help option).
void addToParser(QCommandLineParser &parser, const CommandSpec &spec);

// -h, --help. (QCommandLineParser's own adds --help-all, which only process() answers.)
QCommandLineOption helpOption();

// Sets up parser from spec (the help option, the arguments, the options), parses args (the command already
// taken out) and checks the arguments' count. Returns 0 to go on, -1 when the help was printed (exit 0), 2 after
// a usage error printed on stderr as "fp8scope-cli COMMAND: ...".
int parseCommand(QCommandLineParser &parser, const CommandSpec &spec, const QStringList &args);

// The parts of the manual that are not a command's options: what the program is, its exit status, the
// environment it reads, the files it keeps, examples. Shared by the man pages and nothing else.
struct ManualSection {
    QString title;
    QStringList paragraphs; // a paragraph starting with "$ " is an example command line
};
QString cliOneLine(); // "the command-line front end of fp8scope"
QString windowOneLine(); // "an inspector for FP8 training runs"
QList<ManualSection> cliManualSections();
QList<ManualSection> windowManualSections();

} // namespace fp8scope::cli

// The man pages of fp8scope(1) and fp8scope-cli(1) and their bash completion, made from the command-line
// descriptions of commandline.h (the same ones each parser and --help are made from). fp8scope-docgen writes
// them at build time; tests/e2e/tst_manpages.cpp holds them to what --help says.
#pragma once

#include <QString>

namespace fp8scope::cli {

QString cliManPage();
QString windowManPage();

// A bash completion script for both programs: commands, options, the fixed values an option takes, files and
// folders where an argument names one.
QString bashCompletion();

// Roff-escapes text for a man page's body: backslashes, a leading '.' or '\'', and every '-' of a command or
// option name when asOption is set (so that man prints a minus sign people can copy into a shell).
QString roffEscape(const QString &text, bool asOption = false);

} // namespace fp8scope::cli

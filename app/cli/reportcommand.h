// fp8scope-cli report: the triage report of a run against its baseline as a PDF, headless (the plots are
// painted on Qt's offscreen platform; no display is needed).
#pragma once

#include <QStringList>

namespace fp8scope::cli {

// Whether the command needs a QApplication (a widget toolkit on the offscreen platform) rather than a
// QCoreApplication.
bool needsWidgets(const QString &command);
int runReport(const QStringList &args);

} // namespace fp8scope::cli

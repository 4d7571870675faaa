// Help > About fp8scope: the version and the revision it was built from, the licence and home page, and the
// versions of everything it runs on (Qt, HDF5, SQLite, the CPU kernels' SIMD target, the CUDA runtime and
// driver) with the compute backend in use, which Copy puts on the clipboard for a bug report.
#pragma once

#include "core/about/libraryversions.h"

#include <QDialog>

class QTableWidget;

namespace fp8scope {

class AboutDialog : public QDialog
{
    Q_OBJECT
public:
    AboutDialog(const QList<ComponentVersion> &components, const QString &backendStatus, QWidget *parent = nullptr);

    // What Copy puts on the clipboard: the version line, then "component: version" a line.
    QString versionsText() const { return m_text; }

    // The compute backend's status as it changes (the first CUDA probe may finish while the box is open).
    void setBackendStatus(const QString &status);

private:
    void fillTable();

    QList<ComponentVersion> m_rows;
    QTableWidget *m_table = nullptr;
    QString m_text;
};

} // namespace fp8scope

// Transformer Engine debug statistics logs (nvdlfw_inspect): one file per rank,
// `<asctime> - INFO - <layer>_<tensor>_[<recipe>_]<stat>[_columnwise] iteration=<n> value=<v>`.
#pragma once

#include "importer.h"

namespace fp8scope {

struct TeStatName {
    QString layer;
    QString tensor;
    QString recipe; // mxfp8, fp8_block_scaling, ... or empty
    QString stat; // with "_columnwise" kept as a suffix
};

class TeDebugImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("te-debug"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    bool resumable() const override { return true; }
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;

    // Splits a statistic name: on the known tensor/stat/recipe vocabulary, else on the general shape
    // <layer>_<tensor>_<stat> (any statistic); false if no tensor word is there.
    static bool splitName(const QString &name, TeStatName *out);

private:
    static bool splitKnown(QString rest, const QString &suffix, TeStatName *out);
    static bool splitGeneral(const QString &name, TeStatName *out);
};

} // namespace fp8scope

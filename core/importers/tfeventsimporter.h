// TensorBoard event files (events.out.tfevents.*): TFRecord framing with masked CRC32C on the length and
// the payload, Event/Summary protobuf (libprotobuf). Scalars (simple_value or a scalar tensor) become
// series; histograms become min/max/count/mean series; text summaries (run arguments) become config.
// A corrupted record is reported with its byte offset and reading resynchronises on the next valid one.
#pragma once

#include "importer.h"

#include <cstddef>
#include <cstdint>

namespace fp8scope {

class TfEventsImporter : public Importer
{
public:
    QString name() const override { return QStringLiteral("tensorboard"); }
    bool recognises(const QString &fileName, const QByteArray &head) const override;
    ReadPosition read(const QString &path, const ReadPosition &from, IngestSink &sink) override;
};

// CRC-32C (Castagnoli) and TFRecord's masking of it.
uint32_t crc32c(const void *data, size_t n);
uint32_t maskedCrc32c(const void *data, size_t n);

} // namespace fp8scope

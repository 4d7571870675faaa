// Reads a text file line by line from a byte offset, in blocks, without holding the file in memory; a
// compressed file (.gz, .xz, .zst) as what it decompresses to. Lines longer than kMaxLine are skipped with a
// problem; invalid UTF-8 is reported. A final line without a newline is a file still being written (`value=12`
// of `value=1234.5678`): it is never handed over while the file may grow (modified within kSettledSeconds, or a
// compressed stream that stops early), and is left for the next ingest (ReadPosition::pendingTail). Once the
// file has settled it is handed over with `complete == false`, and the position returned stays at its start,
// so that it is read again, whole, if the file grows after all.
#pragma once

#include "importer.h"

#include <QFile>

#include <functional>

namespace fp8scope {

struct TextLine {
    QString text; // without the line terminator
    int64_t number = 0; // 1-based
    int64_t offset = 0; // byte offset of the line start
    bool complete = true;
};

// Calls handle(line) for every line from `from`; returns the position after the last complete line the
// handler accepted (handle returns false to leave an incomplete last line unconsumed).
ReadPosition readLines(const QString &path, const ReadPosition &from, IngestSink &sink,
    const std::function<bool(const TextLine &)> &handle);

// The same over raw bytes, for the hot importers: `bytes` is valid UTF-8 (checked) and lives only during
// the call.
struct ByteLine {
    QByteArrayView bytes;
    int64_t number = 0;
    int64_t offset = 0;
    bool complete = true;
};
ReadPosition readByteLines(const QString &path, const ReadPosition &from, IngestSink &sink,
    const std::function<bool(const ByteLine &)> &handle);

constexpr int64_t kMaxLine = int64_t(1) << 20;
// A file not modified for this long is taken as finished: its last line is read without a newline.
constexpr int64_t kSettledSeconds = 300;

// Whether the bytes are well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points past
// U+10FFFF).
bool isValidUtf8(QByteArrayView bytes);

} // namespace fp8scope

#include "linereader.h"

#include "compressedfile.h"

#include <QDateTime>
#include <QFileInfo>

#include <cstdint>
#include <cstring>

namespace fp8scope {

bool isValidUtf8(QByteArrayView b)
{
    // RFC 3629: no overlong forms, no surrogates, nothing above U+10FFFF. ASCII runs are the common case.
    const auto *p = reinterpret_cast<const uchar *>(b.data());
    const auto *end = p + b.size();
    while (p < end) {
        // Eight ASCII bytes at a time: logs are nearly all ASCII, and every line of an ingest passes here.
        if (end - p >= 8) {
            uint64_t word;
            std::memcpy(&word, p, 8);
            if ((word & 0x8080808080808080ull) == 0) {
                p += 8;
                continue;
            }
        }
        const uchar c = *p;
        if (c < 0x80) {
            ++p;
            continue;
        }
        int n = 0;
        uint32_t cp = 0, min = 0;
        if (c >= 0xC2 && c <= 0xDF) {
            n = 1;
            cp = c & 0x1F;
            min = 0x80;
        } else if (c >= 0xE0 && c <= 0xEF) {
            n = 2;
            cp = c & 0x0F;
            min = 0x800;
        } else if (c >= 0xF0 && c <= 0xF4) {
            n = 3;
            cp = c & 0x07;
            min = 0x10000;
        } else {
            return false;
        }
        if (end - p <= n)
            return false;
        for (int k = 1; k <= n; ++k) {
            if ((p[k] & 0xC0) != 0x80)
                return false;
            cp = (cp << 6) | (p[k] & 0x3F);
        }
        if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
            return false;
        p += n + 1;
    }
    return true;
}

ReadPosition readByteLines(const QString &path, const ReadPosition &from, IngestSink &sink,
    const std::function<bool(const ByteLine &)> &handle)
{
    DecompressedFile f(path);
    QString openError;
    if (!f.open(&openError)) {
        sink.problem(0, -1, QStringLiteral("cannot open: %1").arg(openError));
        return from;
    }
    if (!f.skipTo(from.offset)) {
        sink.problem(0, from.offset,
            f.error().isEmpty() ? QStringLiteral("cannot seek") : QStringLiteral("cannot seek: %1").arg(f.error()));
        return from;
    }
    ReadPosition pos = from;
    pos.pendingTail = false;
    QByteArray pending; // the start of a line that crosses a block boundary
    bool overlong = false;
    int64_t lineStart = from.offset;
    auto emitLine = [&](QByteArrayView bytes, bool complete) -> bool {
        const int64_t number = pos.line + 1;
        if (overlong) {
            sink.problem(number, lineStart, QStringLiteral("line longer than %1 bytes skipped").arg(kMaxLine));
            return true;
        }
        if (bytes.endsWith('\r'))
            bytes.chop(1);
        if (!isValidUtf8(bytes)) {
            sink.problem(number, lineStart, QStringLiteral("invalid UTF-8; line skipped"));
            return true;
        }
        return handle({bytes, number, lineStart, complete});
    };
    constexpr qint64 kBlock = 1 << 20;
    QByteArray block;
    int64_t blockStart = from.offset;
    while (!(block = f.read(kBlock)).isEmpty()) {
        qsizetype start = 0;
        for (;;) {
            const qsizetype nl = block.indexOf('\n', start);
            const qsizetype end = nl < 0 ? block.size() : nl;
            if (nl >= 0 && pending.isEmpty() && !overlong) {
                // The whole line is inside this block: no copy.
                if (end - start > kMaxLine)
                    overlong = true;
                emitLine(QByteArrayView(block.constData() + start, end - start), true);
            } else {
                if (!overlong) {
                    pending.append(block.constData() + start, end - start);
                    if (pending.size() > kMaxLine) {
                        overlong = true;
                        pending.clear();
                    }
                }
                if (nl < 0)
                    break;
                emitLine(pending, true);
            }
            pos.line += 1;
            pos.offset = blockStart + nl + 1;
            lineStart = pos.offset;
            pending.clear();
            overlong = false;
            start = nl + 1;
        }
        blockStart += block.size();
    }
    if (!f.error().isEmpty())
        sink.problem(pos.line + 1, blockStart, QStringLiteral("%1; the rest of the file is not read").arg(f.error()));
    if (!pending.isEmpty() || overlong) {
        // A last line without a newline. While the file may grow it waits; once settled it is read, and the
        // position stays at its start (read again, whole, should the file grow after all). A compressed file
        // whose stream ended is whole: its last line is complete as it is.
        const QDateTime modified = QFileInfo(path).lastModified();
        const bool settled
            = !f.truncated() && modified.isValid() && modified.secsTo(QDateTime::currentDateTime()) >= kSettledSeconds;
        if (f.complete()) {
            if (emitLine(pending, true)) {
                pos.line += 1; // a whole line: read, and the position after it
                pos.offset = blockStart;
            }
        } else if (!settled || !emitLine(pending, false)) {
            pos.pendingTail = true;
            sink.problem(pos.line + 1, lineStart,
                f.truncated()
                    ? QStringLiteral("the compressed data ends inside a line (a file still being written or cut "
                                     "short); the line is read once it is complete")
                    : QStringLiteral("incomplete last line (no newline); it is read once it ends, or once the file "
                                     "has not changed for %1 minutes")
                          .arg(kSettledSeconds / 60));
        }
    }
    return pos;
}

ReadPosition readLines(const QString &path, const ReadPosition &from, IngestSink &sink,
    const std::function<bool(const TextLine &)> &handle)
{
    return readByteLines(path, from, sink, [&](const ByteLine &l) {
        return handle({QString::fromUtf8(l.bytes), l.number, l.offset, l.complete});
    });
}

} // namespace fp8scope

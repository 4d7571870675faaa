#include "linereader.h"

#include <QStringDecoder>

namespace fp8scope {

namespace {

bool validUtf8(QByteArrayView b)
{
    for (char c : b) {
        if (uchar(c) >= 0x80) {
            QStringDecoder decode(QStringDecoder::Utf8);
            (void)decode(b);
            return !decode.hasError();
        }
    }
    return true;
}

} // namespace

ReadPosition readByteLines(const QString &path, const ReadPosition &from, IngestSink &sink,
    const std::function<bool(const ByteLine &)> &handle)
{
    QFile f(path);
    if (!f.open(QIODevice::ReadOnly)) {
        sink.problem(0, -1, QStringLiteral("cannot open: %1").arg(f.errorString()));
        return from;
    }
    if (!f.seek(from.offset)) {
        sink.problem(0, from.offset, QStringLiteral("cannot seek"));
        return from;
    }
    ReadPosition pos = from;
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
        if (!validUtf8(bytes)) {
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
    if (!pending.isEmpty() || overlong) {
        // A last line without a newline: consumed only if the importer accepts it as complete.
        if (emitLine(pending, false)) {
            pos.line += 1;
            pos.offset = blockStart;
        } else {
            sink.problem(pos.line + 1, lineStart,
                QStringLiteral("incomplete last line (no newline); it is read again at the next ingest"));
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

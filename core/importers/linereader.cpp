#include "linereader.h"

#include <QStringDecoder>

namespace fp8scope {

ReadPosition readLines(const QString &path, const ReadPosition &from, IngestSink &sink,
    const std::function<bool(const TextLine &)> &handle)
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
    QByteArray pending; // bytes of the current line so far
    bool overlong = false;
    int64_t lineStart = from.offset;
    auto emitLine = [&](const QByteArray &bytes, bool complete) -> bool {
        const int64_t number = pos.line + 1;
        if (overlong) {
            sink.problem(number, lineStart, QStringLiteral("line longer than %1 bytes skipped").arg(kMaxLine));
            return true;
        }
        QStringDecoder decode(QStringDecoder::Utf8);
        QString text = decode(bytes);
        if (decode.hasError()) {
            sink.problem(number, lineStart, QStringLiteral("invalid UTF-8; line skipped"));
            return true;
        }
        if (text.endsWith(QLatin1Char('\r')))
            text.chop(1);
        return handle({text, number, lineStart, complete});
    };
    constexpr qint64 kBlock = 1 << 20;
    QByteArray block;
    while (!(block = f.read(kBlock)).isEmpty()) {
        qsizetype start = 0;
        for (;;) {
            const qsizetype nl = block.indexOf('\n', start);
            const qsizetype end = nl < 0 ? block.size() : nl;
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
            pos.line += 1;
            pos.offset = int64_t(f.pos() - block.size() + nl + 1);
            lineStart = pos.offset;
            pending.clear();
            overlong = false;
            start = nl + 1;
        }
    }
    if (!pending.isEmpty() || overlong) {
        // A last line without a newline: consumed only if the importer accepts it as complete.
        if (emitLine(pending, false)) {
            pos.line += 1;
            pos.offset = f.pos();
        } else {
            sink.problem(pos.line + 1, lineStart,
                QStringLiteral("incomplete last line (no newline); it is read again at the next ingest"));
        }
    }
    return pos;
}

} // namespace fp8scope

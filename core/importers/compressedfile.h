// A file read as its bytes, or as what it decompresses to when its name says it is compressed (.gz with
// zlib, .xz with liblzma, .zst with libzstd): the line importers read compressed logs transparently.
// A compressed stream that stops early (a log still being compressed, a copy cut short) gives what it
// decompressed so far, and truncated() says so.
#pragma once

#include <QByteArray>
#include <QFile>
#include <QString>

#include <memory>

namespace fp8scope {

enum class Compression { None, Gzip, Xz, Zstd };

// By the name's last suffix (".gz", ".xz", ".zst"), case-insensitive.
Compression compressionOf(const QString &fileName);
// The name without its compression suffix ("train.log.gz" -> "train.log").
QString withoutCompressionSuffix(const QString &fileName);

class DecompressedFile
{
public:
    explicit DecompressedFile(const QString &path);
    ~DecompressedFile();
    DecompressedFile(const DecompressedFile &) = delete;
    DecompressedFile &operator=(const DecompressedFile &) = delete;

    bool open(QString *error);
    // Up to `max` bytes of the content (decompressed when compressed); empty at its end or on an error.
    QByteArray read(qint64 max);
    // Moves to `offset` of the content: a seek in a plain file, decompressing and dropping up to it in a
    // compressed one. False when the content is shorter.
    bool skipTo(qint64 offset);
    // The compressed data was damaged (error() says how) or ended before its stream did (truncated()).
    QString error() const { return m_error; }
    bool truncated() const { return m_truncated; }
    // A compressed file read to the end of its last stream, with nothing after it: its content is whole (a last
    // line without a newline is a complete line). False for a plain file, which may still grow.
    bool complete() const { return m_complete; }

private:
    struct Codec;
    QFile m_file;
    Compression m_kind;
    std::unique_ptr<Codec> m_codec;
    QString m_error;
    bool m_truncated = false;
    bool m_complete = false;
    bool m_end = false;
};

// The first `max` bytes of the content (decompressed when compressed).
QByteArray readContentHead(const QString &path, qint64 max);

} // namespace fp8scope

#include "compressedfile.h"

#include <lzma.h>
#include <zlib.h>
#include <zstd.h>

#include <cstring>

namespace fp8scope {

Compression compressionOf(const QString &fileName)
{
    if (fileName.endsWith(QLatin1String(".gz"), Qt::CaseInsensitive))
        return Compression::Gzip;
    if (fileName.endsWith(QLatin1String(".xz"), Qt::CaseInsensitive))
        return Compression::Xz;
    if (fileName.endsWith(QLatin1String(".zst"), Qt::CaseInsensitive))
        return Compression::Zstd;
    return Compression::None;
}

QString withoutCompressionSuffix(const QString &fileName)
{
    switch (compressionOf(fileName)) {
    case Compression::None: return fileName;
    case Compression::Gzip:
    case Compression::Xz: return fileName.chopped(3);
    case Compression::Zstd: return fileName.chopped(4);
    }
    return fileName;
}

namespace {
constexpr qint64 kInputBlock = 256 * 1024;
} // namespace

// One decoder's state; each consumes the compressed input in blocks and produces into the caller's buffer.
struct DecompressedFile::Codec {
    Compression kind;
    QByteArray input; // compressed bytes read, not yet consumed
    qsizetype inputPos = 0;
    bool inputEnd = false;
    z_stream z {};
    lzma_stream x = LZMA_STREAM_INIT;
    ZSTD_DStream *zs = nullptr;
    bool streamEnd = false; // the last stream ended (a gzip member may be followed by another)

    explicit Codec(Compression k)
        : kind(k)
    {
    }
    ~Codec()
    {
        if (kind == Compression::Gzip)
            inflateEnd(&z);
        else if (kind == Compression::Xz)
            lzma_end(&x);
        else if (zs)
            ZSTD_freeDStream(zs);
    }
    bool init(QString *error)
    {
        switch (kind) {
        case Compression::Gzip:
            if (inflateInit2(&z, 15 + 32) == Z_OK) // gzip or zlib header, detected
                return true;
            *error = QStringLiteral("zlib could not start");
            return false;
        case Compression::Xz:
            if (lzma_stream_decoder(&x, UINT64_MAX, LZMA_CONCATENATED) == LZMA_OK)
                return true;
            *error = QStringLiteral("liblzma could not start");
            return false;
        case Compression::Zstd:
            zs = ZSTD_createDStream();
            if (zs && !ZSTD_isError(ZSTD_initDStream(zs)))
                return true;
            *error = QStringLiteral("libzstd could not start");
            return false;
        case Compression::None: break;
        }
        return false;
    }
};

DecompressedFile::DecompressedFile(const QString &path)
    : m_file(path)
    , m_kind(compressionOf(path))
{
}

DecompressedFile::~DecompressedFile() = default;

bool DecompressedFile::open(QString *error)
{
    if (!m_file.open(QIODevice::ReadOnly)) {
        *error = m_file.errorString();
        return false;
    }
    if (m_kind == Compression::None)
        return true;
    m_codec = std::make_unique<Codec>(m_kind);
    return m_codec->init(error);
}

QByteArray DecompressedFile::read(qint64 max)
{
    if (m_kind == Compression::None)
        return m_file.read(max);
    QByteArray out;
    if (m_end || !m_codec)
        return out;
    Codec &c = *m_codec;
    out.resize(max);
    qint64 produced = 0;
    while (produced < max) {
        if (c.inputPos >= c.input.size() && !c.inputEnd) {
            c.input = m_file.read(kInputBlock);
            c.inputPos = 0;
            c.inputEnd = c.input.isEmpty();
        }
        const bool noInput = c.inputPos >= c.input.size();
        if (noInput && c.inputEnd && m_kind == Compression::Xz && !c.streamEnd) {
            // liblzma's decoder of concatenated streams says the last one ended only once told that the input
            // did: finish it (what it still holds comes out; a stream cut short says so).
            c.x.next_in = nullptr;
            c.x.avail_in = 0;
            c.x.next_out = reinterpret_cast<uint8_t *>(out.data() + produced);
            c.x.avail_out = size_t(max - produced);
            const lzma_ret rc = lzma_code(&c.x, LZMA_FINISH);
            const qint64 made = qint64(size_t(max - produced) - c.x.avail_out);
            produced += made;
            c.streamEnd = rc == LZMA_STREAM_END;
            if (rc == LZMA_OK && made > 0)
                continue; // more to come out
            if (rc != LZMA_STREAM_END && rc != LZMA_BUF_ERROR && rc != LZMA_OK)
                m_error = QStringLiteral("damaged xz data (liblzma error %1)").arg(int(rc));
        }
        if (noInput && c.inputEnd) {
            // The file ended: inside a stream, it was cut short (or is still being written); after one, the
            // content is whole.
            if (!c.streamEnd)
                m_truncated = true;
            else
                m_complete = m_error.isEmpty();
            m_end = true;
            break;
        }
        auto *in = reinterpret_cast<const uint8_t *>(c.input.constData() + c.inputPos);
        const size_t inLen = size_t(c.input.size() - c.inputPos);
        auto *dst = reinterpret_cast<uint8_t *>(out.data() + produced);
        const size_t dstLen = size_t(max - produced);
        size_t used = 0, made = 0;
        if (m_kind == Compression::Gzip) {
            if (c.streamEnd) {
                // Another gzip member after the one that ended (concatenated files): a fresh stream.
                inflateReset(&c.z);
                c.streamEnd = false;
            }
            c.z.next_in = const_cast<uint8_t *>(in);
            c.z.avail_in = uInt(inLen);
            c.z.next_out = dst;
            c.z.avail_out = uInt(dstLen);
            const int rc = inflate(&c.z, Z_NO_FLUSH);
            used = inLen - c.z.avail_in;
            made = dstLen - c.z.avail_out;
            if (rc == Z_STREAM_END) {
                c.streamEnd = true;
            } else if (rc != Z_OK && !(rc == Z_BUF_ERROR && used == 0 && made == 0 && noInput)) {
                m_error = QStringLiteral("damaged gzip data (%1)").arg(QString::fromLatin1(c.z.msg ? c.z.msg : "zlib"));
                m_end = true;
            }
        } else if (m_kind == Compression::Xz) {
            c.x.next_in = in;
            c.x.avail_in = inLen;
            c.x.next_out = dst;
            c.x.avail_out = dstLen;
            const lzma_ret rc = lzma_code(&c.x, LZMA_RUN);
            used = inLen - c.x.avail_in;
            made = dstLen - c.x.avail_out;
            c.streamEnd = rc == LZMA_STREAM_END;
            if (rc == LZMA_STREAM_END) {
                m_end = true;
                m_complete = true;
            } else if (rc != LZMA_OK && rc != LZMA_BUF_ERROR) {
                m_error = QStringLiteral("damaged xz data (liblzma error %1)").arg(int(rc));
                m_end = true;
            }
        } else {
            ZSTD_inBuffer ib {in, inLen, 0};
            ZSTD_outBuffer ob {dst, dstLen, 0};
            const size_t rc = ZSTD_decompressStream(c.zs, &ob, &ib);
            used = ib.pos;
            made = ob.pos;
            if (ZSTD_isError(rc)) {
                m_error = QStringLiteral("damaged zstd data (%1)").arg(QString::fromLatin1(ZSTD_getErrorName(rc)));
                m_end = true;
            } else {
                c.streamEnd = rc == 0; // a frame ended; another may follow
            }
        }
        c.inputPos += qsizetype(used);
        produced += qint64(made);
        if (m_end)
            break;
        // No progress with input left: the decoder needs more input than this block holds.
        if (used == 0 && made == 0 && !noInput && c.inputPos < c.input.size()) {
            QByteArray rest = c.input.mid(c.inputPos) + m_file.read(kInputBlock);
            if (rest.size() == c.input.size() - c.inputPos)
                c.inputEnd = true;
            c.input = rest;
            c.inputPos = 0;
            if (c.inputEnd && !c.streamEnd) {
                m_truncated = true;
                m_end = true;
                break;
            }
        }
    }
    out.resize(produced);
    return out;
}

bool DecompressedFile::skipTo(qint64 offset)
{
    if (m_kind == Compression::None)
        return m_file.seek(offset);
    qint64 left = offset;
    while (left > 0) {
        const QByteArray b = read(std::min<qint64>(left, 1 << 20));
        if (b.isEmpty())
            return false;
        left -= b.size();
    }
    return true;
}

QByteArray readContentHead(const QString &path, qint64 max)
{
    DecompressedFile f(path);
    QString error;
    if (!f.open(&error))
        return {};
    QByteArray out;
    while (out.size() < max) {
        const QByteArray b = f.read(max - out.size());
        if (b.isEmpty())
            break;
        out += b;
    }
    return out;
}

} // namespace fp8scope

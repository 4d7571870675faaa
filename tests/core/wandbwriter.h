// A writer of W&B's transaction log framing for the tests (the header, 32 KiB blocks, 7-byte chunk headers with
// an IEEE CRC-32 of type and payload, FIRST/MIDDLE/LAST across blocks), made from
// docs/research/wandb-mlflow-formats.md.
#pragma once

#include <QByteArray>

#include <zlib.h>

#include <algorithm>
#include <cstdint>

namespace fp8scope::testing {

// Appends records as W&B's writer frames them.
class LogWriter
{
public:
    LogWriter() { m_bytes = QByteArray(":W&B\xe1\xbe\x00", 7); }

    void add(const QByteArray &record)
    {
        qsizetype left = record.size();
        qsizetype at = 0;
        bool first = true;
        do {
            qsizetype room = 32768 - m_bytes.size() % 32768;
            if (room < 7) {
                m_bytes.append(QByteArray(room, '\0'));
                room = 32768;
            }
            const qsizetype n = std::min(left, room - 7);
            const bool last = n == left;
            const uint8_t type = first && last ? 1 : first ? 2 : last ? 4 : 3;
            chunk(type, record.mid(at, n));
            at += n;
            left -= n;
            first = false;
        } while (left > 0);
    }

    void chunk(uint8_t type, const QByteArray &payload)
    {
        QByteArray typed(1, char(type));
        typed += payload;
        const uint32_t crc
            = uint32_t(crc32(0L, reinterpret_cast<const Bytef *>(typed.constData()), uInt(typed.size())));
        for (int i = 0; i < 4; ++i)
            m_bytes.append(char((crc >> (8 * i)) & 0xFF));
        m_bytes.append(char(payload.size() & 0xFF));
        m_bytes.append(char(payload.size() >> 8));
        m_bytes += typed;
    }

    const QByteArray &bytes() const { return m_bytes; }

private:
    QByteArray m_bytes;
};

// Protobuf's wire form, enough for hand-made W&B records.
inline QByteArray varint(uint64_t v)
{
    QByteArray out;
    while (v >= 0x80) {
        out += char((v & 0x7F) | 0x80);
        v >>= 7;
    }
    out += char(v);
    return out;
}

inline QByteArray field(int number, const QByteArray &bytes)
{
    QByteArray out = varint(uint64_t(number) << 3 | 2);
    out += varint(uint64_t(bytes.size()));
    out += bytes;
    return out;
}

} // namespace fp8scope::testing

#include "wandblog.h"

#include <zlib.h>

#include <cstring>

namespace fp8scope {

namespace {

enum ChunkType : uint8_t { kFull = 1, kFirst = 2, kMiddle = 3, kLast = 4 };

uint32_t le32(const char *p)
{
    uint32_t v = 0;
    for (int i = 3; i >= 0; --i)
        v = (v << 8) | uint8_t(p[i]);
    return v;
}

uint32_t chunkCrc(const char *typeAndPayload, size_t n)
{
    return uint32_t(crc32(0L, reinterpret_cast<const Bytef *>(typeAndPayload), uInt(n)));
}

} // namespace

bool isWandbLogHeader(const QByteArray &bytes, QString *why)
{
    if (bytes.size() < kWandbLogHeaderSize) {
        *why = QStringLiteral("shorter than the 7-byte W&B header");
        return false;
    }
    if (std::memcmp(bytes.constData(), ":W&B", 4) != 0) {
        *why = QStringLiteral("not a W&B transaction log (it does not start with \":W&B\")");
        return false;
    }
    const int magic = uint8_t(bytes[4]) | (uint8_t(bytes[5]) << 8);
    if (magic != 0xBEE1 || bytes[6] != 0) {
        *why = QStringLiteral("a W&B log of magic 0x%1 version %2 (0xbee1 version 0 is read)")
                   .arg(magic, 4, 16, QLatin1Char('0'))
                   .arg(int(uint8_t(bytes[6])));
        return false;
    }
    return true;
}

bool readWandbLog(
    const QByteArray &bytes, int64_t from, std::vector<WandbLogRecord> *records, int64_t *end, Problem *problem)
{
    const int64_t size = bytes.size();
    const char *data = bytes.constData();
    int64_t at = std::max<int64_t>(from, kWandbLogHeaderSize);
    *end = at;
    QByteArray pending; // a record's chunks so far (FIRST, MIDDLE...)
    int64_t pendingOffset = -1;
    while (at < size) {
        const int64_t blockEnd = (at / kWandbLogBlockSize + 1) * kWandbLogBlockSize;
        if (blockEnd - at < kWandbLogHeaderSize) {
            // The block's trailer: zeros up to the next block (a log cut inside it has nothing more yet).
            const int64_t stop = std::min(blockEnd, size);
            for (int64_t i = at; i < stop; ++i) {
                if (data[i] != 0) {
                    *problem = {{}, i, QStringLiteral("a block's trailer holds a non-zero byte")};
                    return false;
                }
            }
            if (blockEnd > size)
                return true; // written up to here
            at = blockEnd;
            if (pendingOffset < 0)
                *end = at;
            continue;
        }
        if (size - at < kWandbLogHeaderSize)
            return true; // a header not yet whole
        const uint32_t crc = le32(data + at);
        const int length = uint8_t(data[at + 4]) | (uint8_t(data[at + 5]) << 8);
        const uint8_t type = uint8_t(data[at + 6]);
        if (crc == 0 && length == 0 && type == 0) {
            // A zeroed rest of a block (a writer's preallocation): skipped to the next block.
            const int64_t stop = std::min(blockEnd, size);
            bool zeros = true;
            for (int64_t i = at; i < stop && zeros; ++i)
                zeros = data[i] == 0;
            if (!zeros) {
                *problem = {{}, at, QStringLiteral("a chunk of type 0")};
                return false;
            }
            if (blockEnd > size)
                return true;
            at = blockEnd;
            if (pendingOffset < 0)
                *end = at;
            continue;
        }
        if (at + kWandbLogHeaderSize + length > blockEnd) {
            *problem = {{}, at,
                QStringLiteral("a chunk of %1 bytes runs past the end of its block (%2 bytes left)")
                    .arg(length)
                    .arg(blockEnd - at - kWandbLogHeaderSize)};
            return false;
        }
        if (at + kWandbLogHeaderSize + length > size)
            return true; // its payload not yet whole
        if (type < kFull || type > kLast) {
            *problem = {{}, at, QStringLiteral("a chunk of unknown type %1").arg(type)};
            return false;
        }
        if (chunkCrc(data + at + 6, size_t(length) + 1) != crc) {
            *problem = {{}, at, QStringLiteral("a chunk whose checksum fails (CRC-32 of its type and payload)")};
            return false;
        }
        const QByteArray payload(data + at + kWandbLogHeaderSize, length);
        const int64_t chunkAt = at;
        at += kWandbLogHeaderSize + length;
        switch (type) {
        case kFull:
            if (pendingOffset >= 0) {
                *problem = {{}, chunkAt, QStringLiteral("a whole record inside another one (FIRST without LAST)")};
                return false;
            }
            records->push_back({chunkAt, payload});
            *end = at;
            break;
        case kFirst:
            if (pendingOffset >= 0) {
                *problem = {{}, chunkAt, QStringLiteral("a record begun inside another one")};
                return false;
            }
            pending = payload;
            pendingOffset = chunkAt;
            break;
        case kMiddle:
        case kLast:
            if (pendingOffset < 0) {
                *problem = {{}, chunkAt,
                    QStringLiteral("the %1 of a record never begun")
                        .arg(type == kMiddle ? QStringLiteral("middle") : QStringLiteral("end"))};
                return false;
            }
            pending += payload;
            if (type == kLast) {
                records->push_back({pendingOffset, pending});
                pending.clear();
                pendingOffset = -1;
                *end = at;
            }
            break;
        }
    }
    return true;
}

} // namespace fp8scope

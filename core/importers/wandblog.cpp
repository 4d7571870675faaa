#include "wandblog.h"

#include <zlib.h>

#include <algorithm>
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

bool scanWandbLog(QByteArrayView bytes, int64_t from, const std::function<bool(int64_t, QByteArrayView)> &record,
    int64_t *end, std::vector<Problem> *problems)
{
    const int64_t size = bytes.size();
    const char *data = bytes.data();
    int64_t at = std::max<int64_t>(from, kWandbLogHeaderSize);
    *end = at;
    QByteArray pending; // a record's chunks so far (FIRST, MIDDLE...)
    int64_t pendingOffset = -1;
    bool recovering = false; // after a damaged chunk: continuations skipped up to the next record's start
    // A damaged chunk is said at its offset; reading goes on at the next block, as W&B's own reader recovers.
    // `where`: the chunk met (the damage may be said at the record it began).
    const auto damaged = [&](int64_t offset, const QString &why, int64_t where = -1) {
        problems->push_back({{}, offset, why + QStringLiteral("; read on from the next block")});
        pending.clear();
        pendingOffset = -1;
        recovering = true;
        at = ((where < 0 ? offset : where) / kWandbLogBlockSize + 1) * kWandbLogBlockSize;
    };
    while (at < size) {
        const int64_t blockEnd = (at / kWandbLogBlockSize + 1) * kWandbLogBlockSize;
        if (blockEnd - at < kWandbLogHeaderSize) {
            // The block's trailer: zeros up to the next block (a log cut inside it has nothing more yet).
            const int64_t stop = std::min(blockEnd, size);
            int64_t nonZero = -1;
            for (int64_t i = at; i < stop && nonZero < 0; ++i)
                nonZero = data[i] != 0 ? i : -1;
            if (nonZero >= 0) {
                damaged(nonZero, QStringLiteral("a block's trailer holds a non-zero byte"));
                continue;
            }
            if (blockEnd > size)
                return problems->empty(); // written up to here
            at = blockEnd;
            if (pendingOffset < 0)
                *end = at;
            continue;
        }
        if (size - at < kWandbLogHeaderSize)
            return problems->empty(); // a header not yet whole
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
                damaged(at, QStringLiteral("a chunk of type 0"));
                continue;
            }
            if (blockEnd > size)
                return problems->empty();
            at = blockEnd;
            if (pendingOffset < 0)
                *end = at;
            continue;
        }
        if (at + kWandbLogHeaderSize + length > blockEnd) {
            damaged(at,
                QStringLiteral("a chunk of %1 bytes runs past the end of its block (%2 bytes left)")
                    .arg(length)
                    .arg(blockEnd - at - kWandbLogHeaderSize));
            continue;
        }
        if (at + kWandbLogHeaderSize + length > size)
            return problems->empty(); // its payload not yet whole
        if (type < kFull || type > kLast) {
            damaged(at, QStringLiteral("a chunk of unknown type %1").arg(type));
            continue;
        }
        if (chunkCrc(data + at + 6, size_t(length) + 1) != crc) {
            damaged(at, QStringLiteral("a chunk whose checksum fails (CRC-32 of its type and payload)"));
            continue;
        }
        const QByteArrayView payload(data + at + kWandbLogHeaderSize, length);
        const int64_t chunkAt = at;
        at += kWandbLogHeaderSize + length;
        if (recovering && (type == kMiddle || type == kLast)) {
            *end = at; // the rest of a record the damage cut
            continue;
        }
        recovering = false;
        switch (type) {
        case kFull:
            if (pendingOffset >= 0) {
                damaged(chunkAt, QStringLiteral("a whole record inside another one (FIRST without LAST)"));
                continue;
            }
            if (!record(chunkAt, payload))
                return problems->empty();
            *end = at;
            break;
        case kFirst:
            if (pendingOffset >= 0) {
                damaged(chunkAt, QStringLiteral("a record begun inside another one"));
                continue;
            }
            pending = payload.toByteArray();
            pendingOffset = chunkAt;
            break;
        case kMiddle:
        case kLast:
            if (pendingOffset < 0) {
                damaged(chunkAt,
                    QStringLiteral("the %1 of a record never begun")
                        .arg(type == kMiddle ? QStringLiteral("middle") : QStringLiteral("end")));
                continue;
            }
            pending += payload;
            if (pending.size() > kWandbMaxRecord) {
                damaged(
                    pendingOffset, QStringLiteral("a record longer than %1 MiB").arg(kWandbMaxRecord >> 20), chunkAt);
                continue;
            }
            if (type == kLast) {
                const int64_t recordAt = pendingOffset;
                pendingOffset = -1;
                if (!record(recordAt, pending))
                    return problems->empty();
                pending.clear();
                *end = at;
            }
            break;
        }
    }
    return problems->empty();
}

bool readWandbLog(
    const QByteArray &bytes, int64_t from, std::vector<WandbLogRecord> *records, int64_t *end, Problem *problem)
{
    std::vector<Problem> problems;
    const bool ok = scanWandbLog(
        bytes, from,
        [&](int64_t offset, QByteArrayView payload) {
            records->push_back({offset, payload.toByteArray()});
            return true;
        },
        end, &problems);
    if (!problems.empty())
        *problem = problems.front();
    return ok;
}

} // namespace fp8scope

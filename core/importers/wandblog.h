// The record framing of Weights & Biases' transaction log (wandb/offline-run-*/run-<id>.wandb; the format is
// in docs/research/wandb-mlflow-formats.md): a 7-byte header (":W&B", 0xBEE1 little-endian, version 0), then
// 32 KiB blocks counted from the file's first byte, each holding chunks of a 7-byte header (an IEEE CRC-32 of
// the type byte and the payload, unmasked; the payload's length, 16 bits little-endian; the type: FULL, FIRST,
// MIDDLE, LAST) and their payload; a block's last bytes too few for a header are zeros. A record (one
// serialized wandb_internal.Record) is a FULL chunk or a FIRST, MIDDLE..., LAST run of them.
//
// The reader hands out every complete record and says where they end, so that a log still being written (or
// cut short) is read up to its last complete record and read on from there; a chunk whose checksum fails or
// whose length runs past its block is an error at its offset, and reading goes on at the next block (the rest of
// a record the damage cut skipped), as W&B's own reader recovers.
#pragma once

#include "core/tensors/problem.h"

#include <QByteArray>
#include <QByteArrayView>

#include <cstdint>
#include <functional>
#include <vector>

namespace fp8scope {

struct WandbLogRecord {
    int64_t offset = 0; // of its first chunk's header
    QByteArray payload;
};

constexpr int kWandbLogHeaderSize = 7;
constexpr int64_t kWandbLogBlockSize = 32768;
// The longest record read (a history row is a few hundred bytes, a config some kilobytes): a longer one is damage.
constexpr qsizetype kWandbMaxRecord = qsizetype(64) << 20;

// Whether bytes start with the header W&B writes (version 0); *why otherwise.
bool isWandbLogHeader(const QByteArray &bytes, QString *why);

// Hands each complete record of `bytes` (the file from its first byte, or as much of it as is written), from
// `from` (kWandbLogHeaderSize, or a previous call's *end), to `record` (its offset and payload, valid during the
// call; false stops the reading there); *end is the offset after the last complete record handed over (where a
// later read starts). False when a chunk was damaged: each is in *problems at its offset.
bool scanWandbLog(QByteArrayView bytes, int64_t from, const std::function<bool(int64_t, QByteArrayView)> &record,
    int64_t *end, std::vector<Problem> *problems);

// Reads the complete records of `bytes` (the file from its first byte, or as much of it as is written) from
// `from` (kWandbLogHeaderSize, or a previous call's *end); *end is the offset after the last complete record
// (where a later read starts). False with *problem (the first damaged chunk's offset) when a chunk cannot be
// read: the records around it are returned all the same.
bool readWandbLog(
    const QByteArray &bytes, int64_t from, std::vector<WandbLogRecord> *records, int64_t *end, Problem *problem);

} // namespace fp8scope

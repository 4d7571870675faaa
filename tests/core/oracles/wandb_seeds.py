"""Seeds of the fuzz_wandb corpus from a log the real wandb package wrote offline (tests/core/oracles/write_loggers.py
or any small run): its records framed again as W&B frames them, with the paths and host of the machine that wrote it
replaced, then cut inside a record, damaged in a chunk's payload, and with a record across blocks.

usage: wandb_seeds.py RUN.wandb OUTDIR
"""
import struct
import sys
import zlib

from wandb.proto import wandb_internal_pb2 as pb

BLOCK = 32768


def records(data):
    pos, pending = 7, b''
    while pos + 7 <= len(data):
        left = BLOCK - pos % BLOCK
        if left < 7:
            pos += left
            continue
        crc, length, kind = struct.unpack('<IHB', data[pos:pos + 7])
        if length == 0 and kind == 0:
            pos += left
            continue
        payload = data[pos + 7:pos + 7 + length]
        pos += 7 + length
        if kind == 1:
            yield payload
        elif kind == 2:
            pending = payload
        elif kind == 3:
            pending += payload
        elif kind == 4:
            yield pending + payload


def frame(payloads):
    out = bytearray(b':W&B\xe1\xbe\x00')
    for record in payloads:
        first, at = True, 0
        while True:
            room = BLOCK - len(out) % BLOCK
            if room < 7:
                out += b'\0' * room
                room = BLOCK
            n = min(len(record) - at, room - 7)
            last = at + n == len(record)
            kind = 1 if first and last else 2 if first else 4 if last else 3
            chunk = record[at:at + n]
            out += struct.pack('<IHB', zlib.crc32(bytes([kind]) + chunk), n, kind) + chunk
            at += n
            first = False
            if last:
                break
    return bytes(out)


def neutral(payload):
    r = pb.Record()
    r.ParseFromString(payload)
    kind = r.WhichOneof('record_type')
    if kind == 'environment':
        e = r.environment
        for field in ('program', 'code_path', 'code_path_local', 'root', 'executable', 'host', 'username', 'email'):
            if getattr(e, field):
                setattr(e, field, '/data/run' if field != 'host' else 'node-0')
        del e.args[:]
        e.args.append('--fp8-format=hybrid')
    elif kind == 'run':
        r.run.host = 'node-0'
    elif kind == 'artifact':
        return None
    return r.SerializeToString()


src, out = sys.argv[1], sys.argv[2]
payloads = [p for p in (neutral(p) for p in records(open(src, 'rb').read())) if p is not None]
whole = frame(payloads)
open(f'{out}/offline-run.wandb', 'wb').write(whole)
open(f'{out}/cut-in-a-record.wandb', 'wb').write(whole[:len(whole) * 2 // 3])
damaged = bytearray(whole)
damaged[len(whole) // 2] ^= 0x5A
open(f'{out}/damaged-chunk.wandb', 'wb').write(bytes(damaged))
big = pb.Record()
big.config.update.add(key='notes', value_json='"' + 'x' * 40000 + '"')
open(f'{out}/across-blocks.wandb', 'wb').write(frame(payloads[:3] + [big.SerializeToString()] + payloads[3:8]))

# SPDX-License-Identifier: LGPL-2.1-or-later
"""Seeds that reach the snapshot loader's resource and finiteness checks
(docs/fuzzing.md): forged from fuzz/corpus-snapshot/full.snap with the
checksum recomputed, as an attacker would.  fuzz_snapshot: a header asking
for mem_len 2^20 or a 2^20 segment, a 2 GiB section of zeros in a few KB, NaN
and infinity in the memory, another writer.  fuzz_state: baseline states with
a non-finite value (corpus-state/).  Run after fuzz/make_snapshot_seeds.sh."""
import ctypes
import hashlib
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
SNAP = os.path.join(HERE, 'corpus-snapshot')
INTS = 16 + 128
HEADER = INTS + 60 + 32
F_NLAYER, F_DMODEL, F_HD, F_MEMLEN, F_MAXSEG, F_MLEN, F_SHUF, F_NSECT = 0, 1, 2, 4, 7, 8, 13, 14
zstd = ctypes.CDLL('libzstd.so.1')
for fn in ('ZSTD_compressBound', 'ZSTD_compress', 'ZSTD_decompress'):
    getattr(zstd, fn).restype = ctypes.c_size_t


def load(path):
    blob = open(path, 'rb').read()
    head = bytearray(blob[:HEADER])
    raw_n, comp_n = struct.unpack_from('<QQ', head, HEADER - 16)
    out = ctypes.create_string_buffer(max(raw_n, 1))
    assert zstd.ZSTD_decompress(out, raw_n, blob[HEADER:HEADER + comp_n], comp_n) == raw_n
    return head, bytearray(out.raw[:raw_n])


def field(head, i, v=None):
    if v is not None:
        struct.pack_into('<i', head, INTS + 4 * i, v)
    return struct.unpack_from('<i', head, INTS + 4 * i)[0]


def save(name, head, frame, raw_n, sbytes=None):
    if sbytes is not None:
        struct.pack_into('<Q', head, HEADER - 24, sbytes)
    struct.pack_into('<QQ', head, HEADER - 16, raw_n, len(frame))
    body = bytes(head) + frame
    with open(os.path.join(SNAP, name), 'wb') as f:
        f.write(body + hashlib.sha256(body).digest())


def compress(raw):
    cap = zstd.ZSTD_compressBound(len(raw))
    buf = ctypes.create_string_buffer(cap)
    n = zstd.ZSTD_compress(buf, cap, bytes(raw), len(raw), 3)
    return buf.raw[:n]


def zero_frame(prefix, zeros):
    """prefix in raw blocks, then zeros in RLE blocks of 128 KiB."""
    out = bytearray(struct.pack('<IBQ', 0xFD2FB528, 0xE0, len(prefix) + zeros))
    pieces = [(0, prefix[i:i + 131072]) for i in range(0, len(prefix), 131072)]
    while zeros:
        pieces.append((1, min(131072, zeros)))
        zeros -= pieces[-1][1]
    for k, (kind, d) in enumerate(pieces):
        size = len(d) if kind == 0 else d
        out += struct.pack('<I', (k == len(pieces) - 1) | (kind << 1) | (size << 3))[:3]
        out += d if kind == 0 else b'\0'
    return bytes(out)


def main():
    src = os.path.join(SNAP, 'full.snap')
    head, raw = load(src)
    sbytes = struct.unpack_from('<Q', head, HEADER - 24)[0]
    for name, f, v in (('budget-memlen.snap', F_MEMLEN, 1 << 20), ('budget-segment.snap', F_MAXSEG, 1 << 20)):
        h = bytearray(head)
        field(h, f, v)
        save(name, h, compress(raw), len(raw))
    h = bytearray(head)
    zeros = 2 << 30
    prefix = bytes(raw) + struct.pack('<I', 5) + b'zeros' + struct.pack('<Q', zeros)
    field(h, F_NSECT, field(h, F_NSECT) + 1)
    save('budget-zeros.snap', h, zero_frame(prefix, zeros), len(prefix) + zeros,
         sbytes + 4 + 5 + 8 + zeros)
    n = field(head, F_NLAYER) * field(head, F_MLEN) * 2 * field(head, F_HD) + field(head, F_DMODEL)
    for name, word in (('nonfinite-nan.snap', 0x7fc00000), ('nonfinite-inf.snap', 0x7f800000)):
        r = bytearray(raw)
        for b, byte in enumerate(struct.pack('<I', word)):  # float 0, byte-shuffled or not
            r[b * n if field(head, F_SHUF) else b] = byte
        save(name, bytearray(head), compress(r), len(r))
    state = os.path.join(HERE, 'corpus-state')
    os.makedirs(state, exist_ok=True)
    # fuzz_state: first byte 3 -> txl_baseline_restore (MAD, window 16, warm-up 4)
    vals = [0.5, 1.5, 2.5, 3.5, 4.5]
    for name, bad in (('baseline.bin', None), ('baseline-inf.bin', float('inf')), ('baseline-nan.bin', float('nan'))):
        v = list(vals)
        if bad is not None:
            v[2] = bad
        data = bytes([3]) + struct.pack('<5i', 0, 16, 4, len(v), len(v)) + struct.pack('<d', 0.5)
        data += b''.join(struct.pack('<d', x) for x in v)
        with open(os.path.join(state, name), 'wb') as f:
            f.write(data)


if __name__ == '__main__':
    main()

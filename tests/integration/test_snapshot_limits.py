# SPDX-License-Identifier: LGPL-2.1-or-later
"""Hostile snapshots against `txl score` and `txl snapshot info`: files forged
with a recomputed checksum (it is unkeyed) that declare a huge memory or
segment, or carry a 2 GiB section of zeros that compresses to a few hundred
KB; devices and FIFOs; NaN and infinity in the memory; another writer's file;
the temporaries a killed writer leaves.  Each is refused with a message that
names the problem, in bounded memory (the child's peak RSS from wait4) and
without hanging."""
import ctypes
import fcntl
import hashlib
import json
import os
import struct
import subprocess
import sys
import tempfile
import time

from checks import check, tally

HERE = os.path.dirname(os.path.abspath(__file__))
TXL = os.environ.get('TXL_BIN', os.path.join(HERE, '..', '..', 'build', 'tools', 'txl'))
MODEL = os.path.join(HERE, '..', '..', 'models', 'default.gguf')
RSS_LIMIT_KB = 300 * 1024  # "a few hundred MB" for any input under 1 MB

# the header (lib/state/snapshot.c): magic, u32 version, u32 size, two 64-char ids,
# 15 i32 fields, i64 tokens seen, u64 section bytes, raw and compressed sizes
F_NLAYER, F_DMODEL, F_HD, F_KIND, F_MEMLEN, F_CLAMP, F_SAME, F_MAXSEG, F_MLEN, \
    F_HASLAST, F_SEG, F_NPEND, F_PREC, F_SHUF, F_NSECT = range(15)
INTS = 16 + 128
HEADER = INTS + 4 * 15 + 32

zstd = ctypes.CDLL('libzstd.so.1')
zstd.ZSTD_compressBound.restype = ctypes.c_size_t
zstd.ZSTD_compress.restype = ctypes.c_size_t
zstd.ZSTD_decompress.restype = ctypes.c_size_t
zstd.ZSTD_isError.restype = ctypes.c_uint


def run(args, stdin=b'', env=None, timeout=60):
    """Runs txl; returns rc, stdout, stderr and the child's peak RSS (KB)."""
    with tempfile.TemporaryFile() as i, tempfile.TemporaryFile() as o, tempfile.TemporaryFile() as e:
        i.write(stdin)
        i.seek(0)
        p = subprocess.Popen([TXL] + args, stdin=i, stdout=o, stderr=e,
                             env=dict(os.environ, **(env or {})))
        t0 = time.time()
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                break
            if time.time() - t0 > timeout:
                p.kill()
                pid, status, ru = os.wait4(p.pid, 0)
                status = -1
                break
            time.sleep(0.02)
        p.returncode = os.waitstatus_to_exitcode(status) if status != -1 else -9
        o.seek(0)
        e.seek(0)
        return p.returncode, o.read(), e.read().decode(errors='replace'), ru.ru_maxrss


class Snap:
    """A snapshot taken apart: header fields, payload, and put back together
    with a recomputed checksum."""

    def __init__(self, path):
        blob = open(path, 'rb').read()
        self.head = bytearray(blob[:HEADER])
        raw_n, comp_n = struct.unpack_from('<QQ', self.head, HEADER - 16)
        out = ctypes.create_string_buffer(max(raw_n, 1))
        got = zstd.ZSTD_decompress(out, raw_n, blob[HEADER:HEADER + comp_n], comp_n)
        assert not zstd.ZSTD_isError(got) and got == raw_n
        self.raw = bytearray(out.raw[:raw_n])

    def field(self, i, v=None):
        if v is not None:
            struct.pack_into('<i', self.head, INTS + 4 * i, v)
        return struct.unpack_from('<i', self.head, INTS + 4 * i)[0]

    def sizes(self, sbytes=None, raw=None, comp=None):
        off = INTS + 60 + 8
        cur = list(struct.unpack_from('<QQQ', self.head, off))
        new = [sbytes, raw, comp]
        for k in range(3):
            if new[k] is not None:
                cur[k] = new[k]
        struct.pack_into('<QQQ', self.head, off, *cur)
        return cur

    def write(self, path, frame=None, raw_n=None):
        """frame: a ready zstd frame (else the payload, compressed)."""
        if frame is None:
            cap = zstd.ZSTD_compressBound(len(self.raw))
            buf = ctypes.create_string_buffer(cap)
            n = zstd.ZSTD_compress(buf, cap, bytes(self.raw), len(self.raw), 3)
            frame = buf.raw[:n]
            raw_n = len(self.raw)
        self.sizes(raw=raw_n, comp=len(frame))
        body = bytes(self.head) + frame
        with open(path, 'wb') as f:
            f.write(body + hashlib.sha256(body).digest())


def zero_frame(prefix, zeros):
    """A zstd frame by hand: `prefix` in raw blocks, then `zeros` zero bytes
    in RLE blocks (4 bytes per 128 KiB): gigabytes in a few hundred KB."""
    out = bytearray(struct.pack('<IB', 0xFD2FB528, 0xE0))  # single segment, 8-byte size
    out += struct.pack('<Q', len(prefix) + zeros)
    blk = 1 << 17
    pieces = [(0, prefix[i:i + blk]) for i in range(0, len(prefix), blk)]
    left = zeros
    while left:
        n = min(blk, left)
        pieces.append((1, n))
        left -= n
    for k, (kind, data) in enumerate(pieces):
        size = len(data) if kind == 0 else data
        last = 1 if k == len(pieces) - 1 else 0
        out += struct.pack('<I', last | (kind << 1) | (size << 3))[:3]
        out += data if kind == 0 else b'\0'
    return bytes(out)


def refused(name, rc, err, rss, words):
    print('  (peak RSS %d MB)' % (rss // 1024))
    check(name, rc == 1 and all(w in err for w in words) and rss < RSS_LIMIT_KB,
          'rc %d, peak RSS %d MB, %s' % (rc, rss // 1024, err[-300:]))


def main():
    tmp = tempfile.mkdtemp(prefix='txl-snaplim-')
    ids = ' '.join(str((i * 37) % 200 + 10) for i in range(40)).encode()
    good = os.path.join(tmp, 'good.snap')
    rc, _, err, _ = run(['score', '-m', MODEL, '--ids', '--segment', '16', '--save-snapshot', good], ids)
    check('a snapshot to forge from', rc == 0, err)
    rc, _, err, rss_ok = run(['score', '-m', MODEL, '--ids', '--load-snapshot', good], b'5 6 7')
    check('it loads', rc == 0, err)
    print('peak RSS of a good restore: %d MB' % (rss_ok // 1024))
    bad = os.path.join(tmp, 'bad.snap')
    load = ['score', '-m', MODEL, '--ids', '--load-snapshot', bad]

    # 1. sizes the model does not imply: memory and segment, same raw payload
    for field, value, what in ((F_MEMLEN, 1 << 20, 'mem_len 1048576'), (F_MAXSEG, 16000, 'segment 16000')):
        s = Snap(good)
        s.field(field, value)
        s.write(bad)
        rc, _, err, rss = run(load, b'5 6 7')
        refused('forged %s refused before allocating' % what, rc, err, rss,
                ['TXL_MEMORY_LIMIT', 'bad.snap'])

    # 2. a 2 GiB section of zeros in a file of a few hundred KB
    s = Snap(good)
    name = b'zeros'
    zeros = 2 << 30
    prefix = bytes(s.raw) + struct.pack('<I', len(name)) + name + struct.pack('<Q', zeros)
    sbytes = s.sizes()[0] + 4 + len(name) + 8 + zeros
    s.sizes(sbytes=sbytes)
    s.field(F_NSECT, s.field(F_NSECT) + 1)
    s.write(bad, zero_frame(prefix, zeros), len(prefix) + zeros)
    size = os.path.getsize(bad)
    rc, _, err, rss = run(load, b'5 6 7')
    refused('a %d KB file declaring a 2 GiB section: refused by txl score' % (size // 1024),
            rc, err, rss, ['TXL_MEMORY_LIMIT'])
    rc, out, err, rss = run(['snapshot', 'info', bad])
    refused('... and by txl snapshot info', rc, err, rss, ['TXL_MEMORY_LIMIT'])
    # the knob: a small zero section passes by default, not under a tiny budget
    s = Snap(good)
    zeros = 24 << 20
    prefix = bytes(s.raw) + struct.pack('<I', len(name)) + name + struct.pack('<Q', zeros)
    s.sizes(sbytes=s.sizes()[0] + 4 + len(name) + 8 + zeros)
    s.field(F_NSECT, s.field(F_NSECT) + 1)
    s.write(bad, zero_frame(prefix, zeros), len(prefix) + zeros)
    rc, out, err, _ = run(['snapshot', 'info', bad])
    check('a 24 MB section within the default budget is read', rc == 0 and b'"zeros": 25165824' in out, err[-300:])
    rc, out, err, _ = run(['snapshot', 'info', bad], env={'TXL_MEMORY_LIMIT': '16M'})
    check('TXL_MEMORY_LIMIT=16M refuses it, naming the limit', rc == 1 and 'budget of 16 MiB' in err and 'TXL_MEMORY_LIMIT' in err, err[-300:])
    rc, out, err, _ = run(['snapshot', 'info', good], env={'TXL_MEMORY_LIMIT': 'lots'})
    check('a malformed TXL_MEMORY_LIMIT is an error', rc == 1 and "TXL_MEMORY_LIMIT='lots'" in err, err[-300:])

    # 3. not regular files: read without end, or block on open
    fifo = os.path.join(tmp, 'fifo.snap')
    os.mkfifo(fifo)
    for path in ('/dev/zero', fifo, tmp):
        rc, _, err, rss = run(['score', '-m', MODEL, '--ids', '--load-snapshot', path], b'5 6 7', timeout=20)
        refused('--load-snapshot %s refused at once' % os.path.basename(path), rc, err, rss,
                ['not a regular file'])
    rc, _, err, _ = run(['snapshot', 'info', fifo], timeout=20)
    check('txl snapshot info on a FIFO refused', rc == 1 and 'not a regular file' in err, err[-300:])

    # 4. NaN and infinity in the memory (floats byte-shuffled: 4 planes)
    s0 = Snap(good)
    n = s0.field(F_NLAYER) * s0.field(F_MLEN) * 2 * s0.field(F_HD) + s0.field(F_DMODEL)
    check('the memory is in use', s0.field(F_MLEN) > 0 and s0.field(F_SHUF) == 1 and s0.field(F_PREC) == 0)
    for word, what in ((0x7fc00000, 'NaN'), (0x7f800000, 'infinity'), (0xff800000, '-infinity')):
        s = Snap(good)
        at = n // 3
        for b, byte in enumerate(struct.pack('<I', word)):
            s.raw[b * n + at] = byte
        s.write(bad)
        rc, _, err, rss = run(load, b'5 6 7')
        refused('memory holding %s refused' % what, rc, err, rss, ['not a finite number', 'float %d' % at])

    # 5. the writer: txl score's own, another's, none (older files)
    rc, out, _, _ = run(['snapshot', 'info', good])
    check('snapshot info names the writer', rc == 0 and json.loads(out).get('writer') == 'txl score', out[-300:].decode())
    s = Snap(good)
    other = b'pipeline "other", element "txlmodel0"'
    raw = bytes(s.raw)
    key = struct.pack('<I', 10) + b'txl.writer' + struct.pack('<Q', 9) + b'txl score'
    at = raw.index(key)
    s.raw = bytearray(raw[:at] + struct.pack('<I', 10) + b'txl.writer' + struct.pack('<Q', len(other)) + other
                      + raw[at + len(key):])
    s.sizes(sbytes=s.sizes()[0] + len(other) - 9)
    s.write(bad)
    rc, _, err, _ = run(load, b'5 6 7')
    check("another writer's snapshot refused", rc == 1 and 'written by pipeline "other"' in err, err[-300:])
    s = Snap(good)
    s.raw = bytearray(raw[:at] + raw[at + len(key):])
    s.sizes(sbytes=s.sizes()[0] - len(key))
    s.field(F_NSECT, s.field(F_NSECT) - 1)
    s.write(bad)
    rc, _, err, _ = run(load, b'5 6 7')
    check('a snapshot without a writer (older) still loads', rc == 0, err[-300:])

    # 6. stale temporaries of --save-snapshot's path
    target = os.path.join(tmp, 'keep.snap')
    stale = ['keep.snap.Ab3dE9', 'keep.snap.zzzzzz']
    kept = ['keep.snap.Ab3dE', 'keep.snap.Ab3dE9x', 'keep.snap.Ab_dE9', 'other.snap.Ab3dE9', 'keep.snapAb3dE9']
    for nm in stale + kept:
        with open(os.path.join(tmp, nm), 'wb') as f:
            f.write(b'\0' * 1000)
    os.mkdir(os.path.join(tmp, 'keep.snap.Dir123'))
    live = os.path.join(tmp, 'keep.snap.Live12')
    lf = open(live, 'wb')
    fcntl.flock(lf, fcntl.LOCK_EX)  # a writer still at work
    rc, _, err, _ = run(['score', '-m', MODEL, '--ids', '--save-snapshot', target], b'1 2 3 4')
    left = set(os.listdir(tmp))
    check('--save-snapshot removes stale temporaries of its path',
          rc == 0 and not any(nm in left for nm in stale), '%s %s' % (sorted(left), err[-200:]))
    check('... and keeps other names, a directory and a locked temporary',
          all(nm in left for nm in kept + ['keep.snap.Dir123', 'keep.snap.Live12']), str(sorted(left)))
    lf.close()

    sys.exit(1 if tally() else 0)


if __name__ == '__main__':
    main()

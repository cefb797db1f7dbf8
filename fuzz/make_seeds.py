#!/usr/bin/env python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes a few small valid GGUF v3 files as a seed corpus for fuzz_gguf.

Standard library only.  Usage: make_seeds.py [OUTDIR] (default: corpus-gguf
next to this script)."""
import os
import struct
import sys

U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
FIXED = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i",
         F32: "<f", BOOL: "<B", U64: "<Q", I64: "<q", F64: "<d"}


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return struct.pack("<Q", len(b)) + b


def value(t, v):
    if t == STR:
        return gstr(v)
    if t == ARR:
        et, items = v
        return struct.pack("<IQ", et, len(items)) + b"".join(
            value(et, x) for x in items)
    return struct.pack(FIXED[t], v)


def gguf(kvs, tensors, align=32):
    """kvs: [(key, type, value)]; tensors: [(name, type, ne, payload)]."""
    out = b"GGUF" + struct.pack("<IQQ", 3, len(tensors), len(kvs))
    for key, t, v in kvs:
        out += gstr(key) + struct.pack("<I", t) + value(t, v)
    off, infos, data = 0, b"", b""
    for name, ttype, ne, payload in tensors:
        off = -(-off // align) * align
        infos += gstr(name) + struct.pack("<I", len(ne))
        infos += b"".join(struct.pack("<Q", n) for n in ne)
        infos += struct.pack("<IQ", ttype, off)
        data = data.ljust(off, b"\0") + payload
        off += len(payload)
    out += infos
    out = out.ljust(-(-len(out) // align) * align, b"\0")
    return out + data


def f32s(n, scale=0.5):
    return struct.pack("<%df" % n, *[i * scale for i in range(n)])


def f16s(n):
    return struct.pack("<%de" % n, *[i / 8 for i in range(n)])


def seeds():
    tiny_model = gguf(
        [("general.architecture", STR, "transfo-xl"),
         ("txl.format_version", U32, 1),
         ("txl.n_token", U32, 4),
         ("txl.same_length", BOOL, 1),
         ("txl.cutoffs", ARR, (U32, [2])),
         ("txl.tie_projs", ARR, (BOOL, [0, 1])),
         ("txl.layer_norm_eps", F32, 1e-5),
         ("tokenizer.type", STR, "word"),
         ("tokenizer.tokens", ARR, (STR, ["<eos>", "the", "a", "<unk>"]))],
        [("emb.0.weight", 0, [2, 4], f32s(8)),
         ("blk.0.attn_norm.bias", 0, [2], f32s(2, -1.0))])
    every_type = gguf(
        [("u8", U8, 200), ("i8", I8, -5), ("u16", U16, 65535),
         ("i16", I16, -300), ("u32", U32, 7), ("i32", I32, -7),
         ("f32", F32, 2.5), ("bool", BOOL, 0), ("str", STR, "caf\u00e9"),
         ("u64", U64, 2**63 + 1), ("i64", I64, -2**40), ("f64", F64, 0.125),
         ("a.i16", ARR, (I16, [-1, 2, -3])), ("a.u64", ARR, (U64, [1, 2])),
         ("a.str", ARR, (STR, [b"", b"x\0y"])), ("a.f64", ARR, (F64, [1.5])),
         ("a.empty", ARR, (U8, []))],
        [("h", 1, [3, 1, 2, 1], f16s(6))])
    aligned = gguf(
        [("general.alignment", U32, 64), ("general.name", STR, "aligned")],
        [("a", 0, [3], f32s(3)), ("b", 1, [5], f16s(5)),
         ("c", 0, [1, 1, 2], f32s(2))], align=64)
    meta_only = gguf([("k", U32, 1), ("s", STR, "")], [])
    return {"tiny_model.gguf": tiny_model, "every_type.gguf": every_type,
            "aligned.gguf": aligned, "meta_only.gguf": meta_only,
            "empty_header.gguf": gguf([], [])}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    outdir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        here, "corpus-gguf")
    os.makedirs(outdir, exist_ok=True)
    for name, blob in seeds().items():
        with open(os.path.join(outdir, name), "wb") as fh:
            fh.write(blob)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: LGPL-2.1-or-later
"""Minimal safetensors writer/reader for tests (the format is an 8-byte
little-endian header length, a JSON header, then raw little-endian data)."""
import json
import struct

import numpy as np

_DTYPES = {np.dtype('float32'): 'F32', np.dtype('float16'): 'F16',
           np.dtype('float64'): 'F64'}
_NP = {v: k for k, v in _DTYPES.items()}


def write_safetensors(path, tensors, metadata=None):
    """tensors: dict name -> numpy array (float32/float16/float64)."""
    header = {}
    blobs = []
    off = 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        b = a.astype(a.dtype.newbyteorder('<'), copy=False).tobytes()
        header[name] = {'dtype': _DTYPES[a.dtype], 'shape': list(a.shape),
                        'data_offsets': [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header['__metadata__'] = metadata
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)))
        f.write(h)
        for b in blobs:
            f.write(b)


def read_safetensors(path):
    with open(path, 'rb') as f:
        raw = f.read()
    (n,) = struct.unpack('<Q', raw[:8])
    header = json.loads(raw[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == '__metadata__':
            continue
        a, b = info['data_offsets']
        out[name] = np.frombuffer(raw[base + a:base + b],
                                  dtype=_NP[info['dtype']]).reshape(info['shape'])
    return out

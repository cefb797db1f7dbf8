# SPDX-License-Identifier: LGPL-2.1-or-later
"""What test_ingest.py and test_otlp_sdk.py share: txld started on loopback
over a configuration directory, POST with any headers, the lines a txlsink
wrote, and a protobuf ExportLogsServiceRequest written by hand."""
import ctypes
import ctypes.util
import json
import os
import shutil
import struct
import subprocess
import sys
import urllib.error
import urllib.request

from checks import tally, wait_for

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
MODEL = os.path.abspath(os.path.join(ROOT, 'models', 'default.gguf'))
PLUGINS = os.environ.get('TXL_PLUGIN_DIR', os.path.join(ROOT, 'build', 'plugins'))
TXLD = os.environ.get('TXLD_BIN', os.path.join(ROOT, 'build', 'tools', 'txld'))
CHAIN = ('appsrc name=ingest ! txltokenizer model={m} ! txlmodel model={m} flush-on-newline=true '
         '! txlsink location={out}')


def scoring_conf(name, out, extra=''):
    """A pipeline file's text: HTTP ingest into the bundled model, scores to out."""
    return ('[pipeline]\nname = %s\nlaunch = %s\nsnapshot = none\nrestart = on-failure\n%s'
            % (name, CHAIN.format(m=MODEL, out=out), extra))


def start_txld(tmp, confs, args=()):
    """txld over confs ({file name: text}); returns (process, base URL)."""
    conf = os.path.join(tmp, 'conf')
    os.makedirs(conf, exist_ok=True)
    for name, text in confs.items():
        with open(os.path.join(conf, name), 'w') as f:
            f.write(text)
    portfile = os.path.join(tmp, 'port')
    env = dict(os.environ, GST_PLUGIN_PATH=PLUGINS, TXL_NUM_THREADS='1')
    proc = subprocess.Popen([TXLD, '--config', conf, '--state-dir', tmp, '--port', '0',
                             '--port-file', portfile] + list(args),
                            stdout=open(os.path.join(tmp, 'txld.log'), 'wb'),
                            stderr=subprocess.STDOUT, env=env)
    wait_for(lambda: os.path.exists(portfile) and open(portfile).read().strip(), 30)
    return proc, 'http://127.0.0.1:%s' % open(portfile).read().strip()


def finish(proc, tmp):
    """Stops txld; on a failed check shows its log and exits 1, else
    removes tmp."""
    proc.terminate()
    proc.wait(timeout=30)
    if tally():
        print(open(os.path.join(tmp, 'txld.log'), errors='replace').read()[-3000:])
        sys.exit(1)
    shutil.rmtree(tmp)


def post(url, body, headers=None):
    """(status, headers, body bytes) of a POST, errors included."""
    req = urllib.request.Request(url, data=body, method='POST', headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, dict(r.headers), r.read()
    except urllib.error.HTTPError as e:
        return e.code, dict(e.headers), e.read()


def get(url):
    with urllib.request.urlopen(url, timeout=30) as r:
        return r.read().decode()


def scored(path):
    """The JSON objects a txlsink wrote so far (a line cut short is left)."""
    if not os.path.exists(path):
        return []
    out = []
    with open(path, 'rb') as f:
        for line in f:
            if line.endswith(b'\n'):
                out.append(json.loads(line))
    return out


# ---- protobuf, written by hand (field numbers of OTLP logs v1) ------------

def _varint(n):
    out = b''
    while True:
        b = n & 0x7f
        n >>= 7
        out += bytes([b | (0x80 if n else 0)])
        if not n:
            return out


def pb_len(field, data):
    return _varint(field << 3 | 2) + _varint(len(data)) + data


def pb_str_any(s):
    return pb_len(1, s if isinstance(s, bytes) else s.encode())


def pb_kv(key, value_any):
    return pb_len(1, key.encode()) + pb_len(2, value_any)


def pb_request(resource_attrs, records):
    """records: dicts with body (bytes or str), time (ns), severity, attrs."""
    res = b''.join(pb_len(1, pb_kv(k, pb_str_any(v))) for k, v in resource_attrs.items())
    logs = b''
    for r in records:
        rec = b''
        if 'time' in r:
            rec += _varint(1 << 3 | 1) + struct.pack('<Q', r['time'])
        if 'severity_number' in r:
            rec += _varint(2 << 3) + _varint(r['severity_number'])
        if 'severity' in r:
            rec += pb_len(3, r['severity'].encode())
        rec += pb_len(5, pb_str_any(r['body']))
        for k, v in r.get('attrs', {}).items():
            rec += pb_len(6, pb_kv(k, pb_str_any(v)))
        logs += pb_len(2, rec)
    # the resource after its logs: the wire order is free
    return pb_len(1, pb_len(2, logs) + pb_len(1, res))


# ---- zstd through libzstd (a build dependency; Python 3.11 has no zstd) ----

def zstd_compress(data, level=3):
    """One zstd frame of data, its size in the header."""
    lib = ctypes.CDLL(ctypes.util.find_library('zstd') or 'libzstd.so.1')
    size_t = ctypes.c_size_t
    lib.ZSTD_compressBound.restype, lib.ZSTD_compressBound.argtypes = size_t, [size_t]
    lib.ZSTD_compress.restype = size_t
    lib.ZSTD_compress.argtypes = [ctypes.c_void_p, size_t, ctypes.c_char_p, size_t, ctypes.c_int]
    lib.ZSTD_isError.restype, lib.ZSTD_isError.argtypes = ctypes.c_uint, [size_t]
    cap = lib.ZSTD_compressBound(len(data))
    dst = ctypes.create_string_buffer(cap)
    n = lib.ZSTD_compress(dst, cap, data, len(data), level)
    assert not lib.ZSTD_isError(n)
    return dst.raw[:n]


def peak_rss(pid):
    """A process's peak resident memory (VmHWM), bytes."""
    with open('/proc/%d/status' % pid) as f:
        for line in f:
            if line.startswith('VmHWM:'):
                return int(line.split()[1]) * 1024
    return 0

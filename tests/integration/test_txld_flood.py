# SPDX-License-Identifier: LGPL-2.1-or-later
"""txld against clients that flood its inputs (docs/ingest.md, docs/syslog.md):
each case was found by an adversarial audit on 2026-11-29 and failed before
its fix.

1. OTLP amplification: a 1 MB protobuf request of 150,000 tiny records
   under a 4,000-byte service.name decodes to about 1.3 GB of lines; it
   gets 413 (decoded past 4 x --ingest-max-body) and txld's peak memory
   stays small.  (Before: 1.3 GB resident; 4 MB of it aborted txld.)
2. Tiny syslog messages: "x\\n" over TCP into a slow pipeline until the
   source stops reading; the 16 MiB queue counts memory, so txld stays
   under 200 MB.  (Before: 1.8 GB.)
3. SIGTERM while eight clients keep posting JSON arrays of 498,000 values
   (the most a body may hold): txld stops within 10 s.  (Before: never; one
   accept wake-up served dozens of them.)  A JSON body of more values gets
   413 before parsing (4 MB of "{}," took 530 MB and 3 s).
4. An `output` that is a FIFO: refused with a warning, nothing blocks,
   SIGTERM exits at once.  (Before: blocked in open() for good.)
5. A gzip body of two members: both read; bytes after a gzip body: 400.
   (Before: the second member dropped with 200.)
6. Content-Length: -5: 400.  (Before: 200, the body dropped.)
7. 60 connections each holding most of a 4 MiB ingest body: past 16 x
   --ingest-max-body in all they get 503 with Retry-After, and txld stays
   under 150 MB.  (Before: all held, a gigabyte at 250.)

About 40 s."""
import gzip
import os
import shutil
import socket
import sys
import threading
import time

from checks import check, wait_for
from txld_daemon import ROOT, Daemon, run_cases

PLUGINS = os.environ.get('TXL_PLUGIN_DIR', os.path.join(ROOT, 'build', 'plugins'))
SINK = '[pipeline]\nlaunch = appsrc name=ingest ! fakesink\nsnapshot = none\n'


def daemon(tmp, confs):
    """txld over the configuration files confs (name: text) in tmp."""
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(os.path.join(tmp, 'conf'))
    os.makedirs(os.path.join(tmp, 'state'))
    for name, text in confs.items():
        with open(os.path.join(tmp, 'conf', name), 'w') as f:
            f.write(text)
    return Daemon(tmp, 'flood', env={'GST_PLUGIN_PATH': PLUGINS, 'TXL_NUM_THREADS': '1'})


def pb_len(field, data):
    n, out = len(data), b''
    while True:
        out += bytes([(n & 0x7f) | (0x80 if n > 0x7f else 0)])
        n >>= 7
        if not n:
            break
    return bytes([field << 3 | 2]) + out + data


def amplification(tmp):
    d = daemon(tmp, {'sink.conf': SINK + 'otlp = true\n'})
    try:
        kv = pb_len(1, b'service.name') + pb_len(2, pb_len(1, b'A' * 4000))
        rec = pb_len(2, pb_len(5, b'\x18\x00'))  # a LogRecord whose body is the integer 0
        body = pb_len(1, pb_len(1, pb_len(1, kv)) + pb_len(2, rec * 150000))
        st, answer = d.post('/v1/logs', body, [('Content-Type', 'application/x-protobuf')])
        peak = d.peak_mb()
        check('OTLP: %d KB of tiny records under a 4,000-byte service.name: 413, peak memory %d MB'
              % (len(body) // 1000, peak), st == 413 and peak < 200, (st, answer[:200], peak))
    finally:
        check('  and txld stops', d.stop()[0] == 0)


def tiny_syslog(tmp):
    with socket.socket() as s:
        s.bind(('127.0.0.1', 0))
        port = s.getsockname()[1]
    launch = ('txlsyslogsrc address=127.0.0.1 port=%d udp=false ! identity sleep-time=2000000 '
              '! fakesink' % port)
    d = daemon(tmp, {'sl.conf': '[pipeline]\nlaunch = %s\nsnapshot = none\n' % launch})
    try:
        def connect():
            try:
                return socket.create_connection(('127.0.0.1', port), timeout=3)
            except OSError:
                return None
        c = wait_for(connect, timeout=15, step=0.2)
        if not check('syslog: the source listens', c is not None):
            return
        sent, t = 0, time.time()
        block = b'x\n' * 32768
        try:
            while time.time() - t < 20:
                c.sendall(block)
                sent += len(block)
        except socket.timeout:
            pass  # the source stopped reading: back-pressure
        c.close()
        peak = d.peak_mb()
        check('syslog: %.1f MB of two-byte messages until the source stopped reading: peak memory %d MB'
              % (sent / 1e6, peak), sent > 1e5 and peak < 200, (sent, peak))
    finally:
        rc, dt = d.stop()
        check('  and txld stops (%.1f s)' % dt, rc == 0, rc)


def term_under_json(tmp):
    d = daemon(tmp, {'sink.conf': SINK + 'ingest = true\n'})
    # just under the values a JSON body may hold (500,000): each costs the
    # main loop the most a body can
    body = b'[' + b'{},' * 249000
    body = body[:-1] + b']'
    stop = threading.Event()
    posts = [0]

    def poster():
        while not stop.is_set():
            try:
                d.post('/pipelines/sink/lines', body, [('Content-Type', 'application/json')], timeout=60)
                posts[0] += 1
            except OSError:
                time.sleep(0.1)
    threads = [threading.Thread(target=poster) for _ in range(8)]
    for t in threads:
        t.start()
    time.sleep(4)
    rc, dt = d.stop(timeout=30)
    stop.set()
    for t in threads:
        t.join()
    check('SIGTERM while 8 clients post JSON arrays of 498,000 values (%d answered): exit 0 in %.1f s'
          % (posts[0], dt), rc == 0 and dt < 10, (rc, dt, d.logtext()[-500:]))


def fifo_output(tmp):
    fifo = os.path.join(tmp + '-x', 'out.fifo')
    os.makedirs(os.path.dirname(fifo), exist_ok=True)
    os.mkfifo(fifo)
    d = daemon(tmp, {'a.conf': '[pipeline]\nlaunch = fakesrc num-buffers=1 ! fakesink\nrestart = never\n'
                               'snapshot = none\noutput = %s\n' % fifo})
    try:
        t = time.time()
        while 'not a regular file' not in d.logtext() and time.time() - t < 10:
            time.sleep(0.1)
        check('an output that is a FIFO: refused with a warning', 'not a regular file' in d.logtext(),
              d.logtext()[-500:])
    finally:
        rc, dt = d.stop()
        check('  and SIGTERM exits at once (%.2f s)' % dt, rc == 0 and dt < 5, (rc, dt))
        shutil.rmtree(tmp + '-x', ignore_errors=True)


def bodies(tmp):
    d = daemon(tmp, {'sink.conf': SINK + 'ingest = true\n'})
    try:
        two = gzip.compress(b'one\ntwo\n') + gzip.compress(b'three\nfour\n')
        st, answer = d.post('/pipelines/sink/lines', two, [('Content-Encoding', 'gzip')])
        check('gzip of two members: 200, 4 lines', st == 200 and b'"lines": 4' in answer, (st, answer))
        st, answer = d.post('/pipelines/sink/lines', gzip.compress(b'one\n') + b'trailing junk',
                            [('Content-Encoding', 'gzip')])
        check('bytes after a gzip body: 400', st == 400, (st, answer))
        many = b'[' + b'1,' * 600000 + b'1]'
        st, answer = d.post('/pipelines/sink/lines', many, [('Content-Type', 'application/json')])
        peak = d.peak_mb()
        check('a JSON array of 600,001 values: 413 before parsing, peak memory %d MB' % peak,
              st == 413 and b'smaller batches' in answer and peak < 100, (st, answer[:200], peak))
        st, answer = d.post('/pipelines/sink/lines', b'abc\ndef\n', length=-5)
        check('Content-Length: -5: 400', st == 400, (st, answer))
    finally:
        check('  and txld stops', d.stop()[0] == 0)


def held_bodies(tmp):
    d = daemon(tmp, {'sink.conf': SINK + 'ingest = true\n'})
    try:
        chunk = (b'x' * 1023 + b'\n') * 64
        socks, refused = [], 0
        for i in range(60):
            s = socket.create_connection(('127.0.0.1', d.port), timeout=10)
            try:
                s.sendall(b'POST /pipelines/sink/lines HTTP/1.1\r\nHost: x\r\n'
                          b'Content-Length: 4194304\r\n\r\n')
                for _ in range(56):  # all but the last 512 KiB
                    s.sendall(chunk)
                socks.append(s)
            except OSError:
                refused += 1
                s.close()
        time.sleep(1)
        peak = d.peak_mb()
        for s in socks:
            s.close()
        check('60 connections holding 3.5 MB of ingest bodies: %d refused (503), peak memory %d MB'
              % (refused, peak), refused >= 40 and peak < 150, (refused, peak))
        st, answer = d.post('/pipelines/sink/lines', b'after\n')
        check('  then a small batch: 200', st == 200, (st, answer))
    finally:
        check('  and txld stops', d.stop()[0] == 0)


def main():
    return run_cases('txld-flood-', [amplification, tiny_syslog, term_under_json, fifo_output, bodies, held_bodies])


if __name__ == '__main__':
    sys.exit(main())

# SPDX-License-Identifier: LGPL-2.1-or-later
"""A txld started for a test on a free port, talked to with raw sockets
(what test_txld_hostile and test_txld_flood share)."""
import json
import os
import resource
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from checks import results, txld_port

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
TXLD = os.environ.get('TXLD_BIN', os.path.join(ROOT, 'build', 'tools', 'txld'))


class Daemon:
    """txld over tmp/conf and tmp/state; env adds to the environment."""

    def __init__(self, tmp, tag, args=(), nofile=None, env=None):
        self.tmp = tmp
        self.log = os.path.join(tmp, 'txld-%s.log' % tag)
        portfile = os.path.join(tmp, 'port-%s' % tag)
        env = dict(os.environ, G_MESSAGES_DEBUG='', **(env or {}))

        def limit():
            if nofile:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))
        self.p = subprocess.Popen(
            [TXLD, '--config', os.path.join(tmp, 'conf'),
             '--state-dir', os.path.join(tmp, 'state'),
             '--port', '0', '--port-file', portfile] + list(args),
            stdout=open(self.log, 'ab'), stderr=subprocess.STDOUT, env=env,
            preexec_fn=limit)
        self.port = txld_port(self.p, portfile, self.logtext)

    def logtext(self):
        return open(self.log, errors='replace').read()

    def request(self, raw, timeout=3.0):
        """Sends raw bytes, returns (status or None, whole answer)."""
        try:
            s = socket.create_connection(('127.0.0.1', self.port), timeout=timeout)
        except OSError as e:
            return None, repr(e).encode()
        data = b''
        try:
            s.sendall(raw)
            while True:
                b = s.recv(65536)
                if not b:
                    break
                data += b
        except OSError as e:
            if not data:
                return None, repr(e).encode()
        finally:
            s.close()
        try:
            return int(data.split(b' ', 2)[1]), data
        except (IndexError, ValueError):
            return None, data

    def get(self, path, timeout=3.0):
        return self.request(('GET %s HTTP/1.1\r\nHost: x\r\n\r\n' % path).encode(),
                            timeout)

    def json(self, path):
        st, data = self.get(path)
        return json.loads(data.split(b'\r\n\r\n', 1)[1]) if st == 200 else None

    def metric(self, name):
        st, data = self.get('/metrics')
        for l in data.decode(errors='replace').splitlines():
            if l.startswith(name + ' '):
                return float(l.split()[1])
        return None

    def post(self, path, body, headers=(), timeout=30.0, length=None):
        """POST body (Content-Length: length when given): (status, body)."""
        h = 'POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %s\r\n' % (
            path, len(body) if length is None else length)
        for k, v in headers:
            h += '%s: %s\r\n' % (k, v)
        st, data = self.request(h.encode() + b'\r\n' + body, timeout)
        return st, data.split(b'\r\n\r\n', 1)[-1]

    def status_kb(self, key):
        for l in open('/proc/%d/status' % self.p.pid):
            if l.startswith(key + ':'):
                return int(l.split()[1])
        return 0

    def rss_kb(self):
        return self.status_kb('VmRSS')

    def peak_mb(self):
        return self.status_kb('VmHWM') // 1024

    def stop(self, timeout=10):
        self.p.send_signal(signal.SIGTERM)
        t = time.time()
        try:
            rc = self.p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            rc = None
        return rc, time.time() - t


def run_cases(prefix, cases):
    """Each case(tmp) in a fresh folder under one temporary folder; the
    exit status of a test (77: no txld built)."""
    if not os.path.exists(TXLD):
        print('SKIP: no txld at %s' % TXLD)
        return 77
    tmp = tempfile.mkdtemp(prefix=prefix)
    t0 = time.time()
    try:
        for i, case in enumerate(cases):
            case(os.path.join(tmp, str(i)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    failed = results.count(False)
    print('%d checks, %d failed, %.1f s' % (len(results), failed, time.time() - t0))
    return 1 if failed else 0

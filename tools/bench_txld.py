#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Load test for txld: N concurrent TCP scoring pipelines in one daemon.

    tools/bench_txld.py [--pipelines 50] [--lines 60] [--build build]

Starts txld with N pipelines (tcpserversrc ! txltokenizer ! txlmodel
flush-on-newline=true ! txlsink, all naming models/default.gguf), measures
the daemon's resident memory idle, then feeds every pipeline --lines
generated log lines over its own loopback connection at once and waits
until /pipelines has counted them all: aggregate lines/s and tokens/s,
peak RSS (VmHWM) and how much of it is file-backed (the memory-mapped
weights, once) versus anonymous (per-pipeline state).  The same for one
pipeline gives the per-pipeline cost.  Prints a Markdown table
(docs/performance.md, section txld)."""
import argparse
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..')
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import loggen  # noqa: E402
from freeport import free_port  # noqa: E402


def status(pid):
    out = {}
    with open('/proc/%d/status' % pid) as f:
        for l in f:
            k, _, v = l.partition(':')
            if k in ('VmRSS', 'VmHWM', 'RssAnon', 'RssFile', 'RssShmem', 'Threads'):
                out[k] = int(v.split()[0])
    return out


def run(n, lines_per, build, model, snapshot_interval):
    tmp = tempfile.mkdtemp(prefix='txld-bench-')
    conf, state = os.path.join(tmp, 'conf'), os.path.join(tmp, 'state')
    os.makedirs(conf)
    os.makedirs(state)
    ports = [free_port() for _ in range(n)]
    for i, port in enumerate(ports):
        with open(os.path.join(conf, 'p%02d.conf' % i), 'w') as f:
            f.write('[pipeline]\nlaunch = tcpserversrc host=127.0.0.1 port=%d ! '
                    'txltokenizer model=%s ! txlmodel model=%s flush-on-newline=true ! '
                    'txlsink location=/dev/null threshold-mode=quantile quantile=0.995 '
                    'warmup=50\nsnapshot-interval = %d\n' % (port, model, model,
                                                            snapshot_interval))
    env = dict(os.environ, GST_PLUGIN_PATH=os.path.join(build, 'plugins'))
    portfile = os.path.join(tmp, 'port')
    d = subprocess.Popen([os.path.join(build, 'tools', 'txld'), '--config', conf,
                          '--state-dir', state, '--port', '0', '--port-file', portfile],
                         stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, 'log'), 'w'),
                         env=env)
    try:
        while not (os.path.exists(portfile) and open(portfile).read().strip()):
            time.sleep(0.05)
        http = 'http://127.0.0.1:%d' % int(open(portfile).read())

        def pipelines():
            with urllib.request.urlopen(http + '/pipelines', timeout=30) as r:
                return json.loads(r.read())['pipelines']
        deadline = time.time() + 60
        while sum(p['state'] == 'running' for p in pipelines()) < n:
            if time.time() > deadline:
                raise RuntimeError('not every pipeline runs: ' + open(os.path.join(tmp, 'log')).read()[-1000:])
            time.sleep(0.1)
        time.sleep(0.5)
        idle = status(d.pid)

        texts = []
        for i in range(n):
            g = loggen.Gen(100 + i, loggen.START)
            texts.append(''.join(g.normal() + '\n' for _ in range(lines_per)).encode())
        socks = []
        for port in ports:
            for _ in range(100):
                try:
                    socks.append(socket.create_connection(('127.0.0.1', port)))
                    break
                except OSError:
                    time.sleep(0.05)
        t0 = time.time()
        threads = [threading.Thread(target=s.sendall, args=(t,)) for s, t in zip(socks, texts)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        while True:
            ps = pipelines()
            if sum(p['lines'] for p in ps) >= n * lines_per:
                break
            time.sleep(0.1)
        wall = time.time() - t0
        tokens = sum(p['tokens'] for p in ps)
        busy = status(d.pid)
        # one snapshot now, so that /metrics knows the state's size
        urllib.request.urlopen(urllib.request.Request(
            http + '/pipelines/p00/snapshot', data=b'', method='POST'), timeout=30).read()
        time.sleep(1.2)
        with urllib.request.urlopen(http + '/metrics', timeout=30) as r:
            metrics = r.read().decode()
        state_bytes = [float(l.split()[-1]) for l in metrics.splitlines()
                       if l.startswith('txld_pipeline_state_memory_bytes')]
        for s in socks:
            s.close()
        t1 = time.time()
        d.terminate()
        rc = d.wait(timeout=120)
        stop = time.time() - t1
        return dict(n=n, lines=n * lines_per, tokens=tokens, wall=wall, idle=idle,
                    busy=busy, stop=stop, rc=rc,
                    state=max(state_bytes) if state_bytes else 0,
                    snaps=len([f for f in os.listdir(state) if f.endswith('.snap')]))
    finally:
        if d.poll() is None:
            d.kill()
            d.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--pipelines', type=int, default=50)
    ap.add_argument('--lines', type=int, default=60, help='lines per pipeline')
    ap.add_argument('--build', default=os.path.join(ROOT, 'build'))
    ap.add_argument('--model', default=os.path.abspath(os.path.join(ROOT, 'models', 'default.gguf')))
    ap.add_argument('--snapshot-interval', type=int, default=30)
    a = ap.parse_args()
    rows = [run(1, a.lines, a.build, a.model, a.snapshot_interval),
            run(a.pipelines, a.lines, a.build, a.model, a.snapshot_interval)]
    print('| pipelines | lines | tokens | wall s | lines/s | tokens/s | RSS idle MiB | '
          'RSS peak MiB | file-backed MiB | anon MiB | threads | state/pipeline KiB | '
          'SIGTERM stop s | snapshots |')
    print('|---' * 14 + '|')
    for r in rows:
        mib = 1024.0
        print('| %d | %d | %d | %.2f | %.0f | %.0f | %.1f | %.1f | %.1f | %.1f | %d | %.0f | '
              '%.2f (exit %s) | %d |' % (
                  r['n'], r['lines'], r['tokens'], r['wall'], r['lines'] / r['wall'],
                  r['tokens'] / r['wall'], r['idle']['VmRSS'] / mib, r['busy']['VmHWM'] / mib,
                  r['busy']['RssFile'] / mib, r['busy']['RssAnon'] / mib,
                  r['busy']['Threads'], r['state'] / 1024.0, r['stop'], r['rc'], r['snaps']))
    one, many = rows
    per = (many['busy']['VmHWM'] - one['busy']['VmHWM']) / max(many['n'] - 1, 1) / 1024.0
    print('\nper extra pipeline: %.2f MiB of peak RSS' % per)


if __name__ == '__main__':
    main()

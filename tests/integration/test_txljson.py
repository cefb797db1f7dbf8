# SPDX-License-Identifier: LGPL-2.1-or-later
"""txljson: txlsink's JSON Lines as buffers, into standard sinks.  Behind
txlmodel and txlsessions, `txljson ! filesink` writes byte for byte what
txlsink writes, threshold properties included; `txljson ! tcpclientsink`
delivers the same bytes to a TCP server; its txl-anomaly messages are
posted; its line-scored and session-scored signals are txlsink's (and a
live source's lines get their latency); a snapshot cut anywhere resumes
into `filesink append=true` with the uninterrupted output."""
import json
import os
import random
import socket
import subprocess
import sys
import tempfile
import threading

from checks import check, tally
from gstlaunch import ENV, cut_and_resume, run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
MODEL = os.path.join(ROOT, 'models', 'default.gguf')
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import loggen  # noqa: E402


def pipeline(src, scorer, tail):
    return (['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, 'blocksize=777', '!',
             'txltokenizer', 'model=' + MODEL, '!'] + scorer.split() + ['!'] + tail.split())


def main():
    tmp = tempfile.mkdtemp(prefix='txl-json-')
    g = loggen.Gen(4, loggen.START)
    lines = [g.normal() for _ in range(240)]
    lines[200] = 'qqzx ### \u2603 unheard of 0xdead ~~~ zzzz'
    src = os.path.join(tmp, 'in.log')
    with open(src, 'w') as f:
        f.write(''.join(l + '\n' for l in lines))
    a, b = os.path.join(tmp, 'a.jsonl'), os.path.join(tmp, 'b.jsonl')
    for name, scorer, props in (
            ('txlmodel', 'txlmodel model=' + MODEL, ''),
            ('txlmodel, threshold=3', 'txlmodel model=' + MODEL, 'threshold=3.0'),
            ('txlsessions', 'txlsessions model=%s session-key=web-0[0-9]' % MODEL, '')):
        rc1, e1 = run(pipeline(src, scorer, 'txlsink location=%s %s' % (a, props)))
        rc2, e2 = run(pipeline(src, scorer, 'txljson %s ! filesink location=%s' % (props, b)))
        same = rc1 == 0 and rc2 == 0 and open(a, 'rb').read() == open(b, 'rb').read()
        check('%s: txljson ! filesink writes what txlsink writes' % name,
              same and os.path.getsize(a) > 1000, (e1 + e2)[-300:])

    # into a TCP server
    srv = socket.socket()
    srv.bind(('127.0.0.1', 0))
    srv.listen(1)
    got = []

    def serve():
        c, _ = srv.accept()
        while True:
            d = c.recv(65536)
            if not d:
                break
            got.append(d)
        c.close()
    t = threading.Thread(target=serve)
    t.start()
    rc, err = run(pipeline(src, 'txlmodel model=' + MODEL,
                           'txljson ! tcpclientsink host=127.0.0.1 port=%d' % srv.getsockname()[1]))
    t.join(timeout=30)
    srv.close()
    rc1, _ = run(pipeline(src, 'txlmodel model=' + MODEL, 'txlsink location=' + a))
    check('txljson ! tcpclientsink: the server gets the same bytes',
          rc == 0 and b''.join(got) == open(a, 'rb').read(), err[-300:])

    # its anomaly messages
    rc, out = run(['gst-launch-1.0', '-m'] + pipeline(src, 'txlmodel model=' + MODEL,
                                                      'txljson ! fakesink')[2:])
    check('txl-anomaly messages come from txljson', rc == 0 and 'txl-anomaly' in out and
          'txljson0' in out, out[-300:])

    check_signals(src)

    # snapshots: cut anywhere, resumed into the same file
    data = open(src, 'rb').read()

    def launch(s, out, snap=None, extra=''):
        el = 'txlmodel model=%s %s' % (MODEL, extra)
        if snap:
            el += ' snapshot-location=' + snap
        return pipeline(s, el, 'txljson ! filesink append=true location=' + out)
    ref = open(a, 'rb').read()
    r = random.Random(8)
    for cut in sorted(r.randrange(1, len(data)) for _ in range(3)):
        ok, got_out, msg = cut_and_resume(data, cut, launch, tmp)
        check('cut at byte %d: resumed output is the uninterrupted one' % cut,
              ok and got_out == ref, msg)
    return 1 if tally() else 0


def check_signals(src):
    """txljson's signals against txlsink's, through the GStreamer bindings
    (skipped without them)."""
    try:
        p = subprocess.run(['/usr/bin/python3', os.path.join(HERE, 'txljson_signals.py'), MODEL, src],
                           capture_output=True, env=dict(ENV, PYTHONDONTWRITEBYTECODE='1'), timeout=300)
    except OSError:
        print('SKIP signals: no /usr/bin/python3')
        return
    if b'No module named' in p.stderr or b'Namespace Gst not available' in p.stderr:
        print('SKIP signals: no GStreamer bindings')
        return
    try:
        r = json.loads(p.stdout.decode().splitlines()[-1])
    except (ValueError, IndexError):
        check('the signals driver ran', False, p.stderr.decode()[-800:])
        return
    check('txljson emits line-scored for every line, as txlsink does',
          r['json_lines'] and r['json_lines'] == r['sink_lines'],
          (len(r['json_lines'] or []), len(r['sink_lines'] or [])))
    check('txljson emits session-scored for every session, as txlsink does',
          r['json_sessions'] and r['json_sessions'] == r['sink_sessions'],
          (r['json_sessions'], r['sink_sessions']))
    lat = r['latencies']
    check('a live source\'s lines get their latency through txljson',
          len(lat) == 5 and all(0 <= v < 5 * 10 ** 9 for v in lat), lat)


if __name__ == '__main__':
    sys.exit(main())

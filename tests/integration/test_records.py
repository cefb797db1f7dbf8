# SPDX-License-Identifier: LGPL-2.1-or-later
"""txltokenizer's format=auto (the default) on structured lines, through
gst-launch-1.0: the same 200 log lines score exactly the same plain, with
CRLF line ends, wrapped as Docker JSON and as journalctl -o json, with
their fields out as "fields"; a Java stack trace joins one record with
continuation=...; format=raw scores the JSON as text (as before the
reader); a snapshot cut anywhere in a JSON stream resumes byte for byte."""
import json
import os
import random
import sys
import tempfile

from checks import check, tally
from gstlaunch import cut_and_resume, run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
MODEL = os.path.join(ROOT, 'models', 'default.gguf')
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import loggen  # noqa: E402


def launch(src, out, snap=None, extra='', tok=''):
    el = 'txlmodel model=%s %s' % (MODEL, extra)
    if snap:
        el += ' snapshot-location=%s' % snap
    return (['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, 'blocksize=509', '!',
             'txltokenizer', 'model=' + MODEL] + tok.split() + ['!'] + el.split() +
            ['!', 'txlsink', 'location=' + out])


def score(tmp, name, data, tok=''):
    src, out = os.path.join(tmp, name + '.in'), os.path.join(tmp, name + '.jsonl')
    with open(src, 'wb') as f:
        f.write(data)
    rc, err = run(launch(src, out, tok=tok))
    rows = [json.loads(l) for l in open(out)] if rc == 0 and os.path.exists(out) else []
    check('%s: ran' % name, rc == 0, err[-300:])
    return rows


def main():
    tmp = tempfile.mkdtemp(prefix='txl-records-')
    g = loggen.Gen(7, loggen.START)
    lines = [g.normal() for _ in range(200)]
    plain = score(tmp, 'plain', ''.join(l + '\n' for l in lines).encode())
    crlf = score(tmp, 'crlf', ''.join(l + '\r\n' for l in lines).encode())
    docker = score(tmp, 'docker', ''.join(json.dumps(
        {'log': l + '\n', 'stream': 'stdout', 'time': '2026-11-25T10:00:%02dZ' % (i % 60)}) + '\n'
        for i, l in enumerate(lines)).encode())
    journal = score(tmp, 'journal', ''.join(json.dumps(
        {'MESSAGE': l, '_HOSTNAME': 'web-%d' % (i % 3), 'SYSLOG_IDENTIFIER': 'app', 'PRIORITY': '6',
         '__REALTIME_TIMESTAMP': str(1764064800000000 + i)}) + '\n' for i, l in enumerate(lines)).encode())
    raw = score(tmp, 'raw', ''.join(json.dumps({'log': l + '\n', 'stream': 'stdout'}) + '\n'
                                    for l in lines).encode(), tok='format=raw')

    def same(a, b):
        return len(a) == len(b) == 200 and all(
            x['bpb'] == y['bpb'] and x['tokens'] == y['tokens'] and x['text'] == y['text']
            and x['bytes'] == y['bytes'] for x, y in zip(a, b))
    mean = sum(r['bpb'] for r in plain) / max(len(plain), 1)
    print('plain: mean %.3f bits/byte, %d flagged' % (mean, sum(r['flag'] for r in plain)))
    check('CRLF lines score as LF lines', same(plain, crlf), crlf[:1])
    check('Docker JSON lines score as their messages', same(plain, docker), docker[:1])
    check('journalctl JSON lines score as their messages', same(plain, journal), journal[:1])
    check('Docker fields: time', all(r['fields'] == {'time': '2026-11-25T10:00:%02dZ' % (i % 60)}
                                     for i, r in enumerate(docker)), docker[:1])
    check('journal fields: host, app, time, severity by name',
          all(r['fields'] == {'host': 'web-%d' % (i % 3), 'app': 'app', 'severity': 'info',
                              'time': str(1764064800000000 + i)} for i, r in enumerate(journal)),
          journal[:1])
    if raw:
        rm = sum(r['bpb'] for r in raw) / len(raw)
        print('format=raw on the Docker lines: mean %.3f bits/byte, %d flagged' %
              (rm, sum(r['flag'] for r in raw)))
        check('format=raw scores the JSON as text (costlier than its message)', rm > mean + 0.5,
              (rm, mean))

    # a stack trace: with a continuation rule one record, scored once
    trace = ('2026-11-25 10:00:01 ERROR worker failed\n'
             'java.lang.IllegalStateException: boom\n'
             '\tat a.b.C.run(C.java:10)\n'
             '\tat a.b.D.main(D.java:3)\n'
             'Caused by: java.io.IOException: disk\n'
             '\t... 2 more\n'
             '2026-11-25 10:00:02 INFO next\n')
    t1 = score(tmp, 'trace', trace.encode(), tok='continuation=^([[:space:]]|Caused[[:space:]]by:|java[.])')
    check('continuation: a stack trace is one record', len(t1) == 2 and 'Caused by: java.io' in
          t1[0]['text'] and t1[1]['text'] == '2026-11-25 10:00:02 INFO next', [r['text'] for r in t1])
    t0 = score(tmp, 'trace0', trace.encode())
    check('without continuation: one record per line', len(t0) == 7)

    # resumed from a snapshot cut anywhere, the JSON stream's output is the
    # uninterrupted one's
    data = ''.join(json.dumps({'msg': l, 'host': 'h%d' % (i % 2)}) + '\n'
                   for i, l in enumerate(lines[:80])).encode()
    src, whole = os.path.join(tmp, 'j.in'), os.path.join(tmp, 'whole.jsonl')
    with open(src, 'wb') as f:
        f.write(data)
    rc, err = run(launch(src, whole))
    ref = open(whole, 'rb').read() if rc == 0 else b''
    r = random.Random(3)
    for cut in [r.randrange(1, len(data)) for _ in range(3)]:
        ok, got, msg = cut_and_resume(data, cut, launch, tmp)
        check('JSON stream cut at byte %d: resumed output identical' % cut, ok and got == ref, msg)
    return 1 if tally() else 0


if __name__ == '__main__':
    sys.exit(main())

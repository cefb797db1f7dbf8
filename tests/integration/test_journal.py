# SPDX-License-Identifier: LGPL-2.1-or-later
"""txljournalsrc on real journal files (written by systemd-journal-remote
from journal export text): fields out, and the cursor kept in snapshots:
a pipeline stopped at the end of the journal and started again after more
entries arrived continues with the next entry, neither reading one twice
nor skipping one, byte for byte the output of one uninterrupted run.  With
follow=true and no snapshot it reads only entries newer than its start.
Exits 77 (skipped) without txljournalsrc (libsystemd) or
systemd-journal-remote."""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from checks import check, tally
from gstlaunch import ENV, run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
MODEL = os.path.join(ROOT, 'models', 'default.gguf')
REMOTE = '/lib/systemd/systemd-journal-remote'
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import loggen  # noqa: E402

T0 = 1764064800000000  # microseconds since the epoch


def write_journal(path, first, n, msgs):
    """Entries first..first+n-1 as a journal file (export format through
    systemd-journal-remote)."""
    export = path + '.export'
    with open(export, 'w') as f:
        for i in range(first, first + n):
            f.write('__REALTIME_TIMESTAMP=%d\n__MONOTONIC_TIMESTAMP=%d\n'
                    '_BOOT_ID=0123456789abcdef0123456789abcdef\nMESSAGE=%s\nPRIORITY=%d\n'
                    'SYSLOG_IDENTIFIER=app%d\n_HOSTNAME=h%d\n_PID=%d\n_SYSTEMD_UNIT=svc.service\n\n'
                    % (T0 + i * 1000, 1000 + i, msgs[i], 6 if i % 7 else 3, i % 2, i % 3, 100 + i))
    p = subprocess.run([REMOTE, '--output=' + path, export], capture_output=True, timeout=60)
    os.remove(export)
    return p.returncode == 0


def launch(d, out, snap=None, extra=''):
    el = 'txlmodel model=%s %s' % (MODEL, extra)
    if snap:
        el += ' snapshot-location=' + snap
    return (['gst-launch-1.0', '-q', 'txljournalsrc', 'directory=' + d, 'follow=false',
             'from-head=true', '!', 'txltokenizer', 'model=' + MODEL, '!'] + el.split() +
            ['!', 'txlsink', 'location=' + out, 'append=true'])


def rows(path):
    return [json.loads(l) for l in open(path)] if os.path.exists(path) else []


def main():
    if not os.path.exists(REMOTE):
        print('SKIP: systemd-journal-remote is not installed')
        return 77
    if subprocess.run(['gst-inspect-1.0', 'txljournalsrc'], capture_output=True, env=ENV).returncode:
        print('SKIP: txljournalsrc not built (no libsystemd)')
        return 77
    tmp = tempfile.mkdtemp(prefix='txl-journal-')
    g = loggen.Gen(9, loggen.START)
    msgs = [g.normal() for _ in range(100)]
    full, cut = os.path.join(tmp, 'full'), os.path.join(tmp, 'cut')
    os.makedirs(full)
    os.makedirs(cut)
    ok = (write_journal(os.path.join(full, 'a.journal'), 0, 60, msgs) and
          write_journal(os.path.join(full, 'b.journal'), 60, 40, msgs) and
          write_journal(os.path.join(cut, 'a.journal'), 0, 60, msgs))
    if not check('journal files written', ok):
        return tally()
    ref_out = os.path.join(tmp, 'ref.jsonl')
    rc, err = run(launch(full, ref_out))
    ref = rows(ref_out)
    check('one run reads every entry in order', rc == 0 and [r['text'] for r in ref] == msgs,
          err[-300:])
    check('fields: host, app, procid, unit, severity, time, cursor',
          ref and set(ref[0]['fields']) == {'host', 'app', 'procid', 'unit', 'severity', 'time',
                                            'cursor'} and ref[3]['fields']['severity'] == 'info'
          and ref[7]['fields']['severity'] == 'err', ref[:1])
    # stopped at the journal's end (the snapshot keeps the stream), more
    # entries arrive, started again: it continues after the last one
    out, snap = os.path.join(tmp, 'out.jsonl'), os.path.join(tmp, 's.snap')
    rc1, e1 = run(launch(cut, out, snap))
    n1 = len(rows(out))
    write_journal(os.path.join(cut, 'b.journal'), 60, 40, msgs)
    rc2, e2 = run(launch(cut, out, snap, extra='hold-at-eos=false'))
    got = rows(out)
    check('restarted: the entries after the snapshot, none twice, none skipped',
          rc1 == 0 and rc2 == 0 and [r['text'] for r in got] == msgs, (n1, len(got), (e1 + e2)[-300:]))
    # the two directories' files have their own sequence ids: cursors differ
    def strip(rs):
        return [dict(r, fields={k: v for k, v in r['fields'].items() if k != 'cursor'}) for r in rs]
    check('restarted: every score and field as in the uninterrupted run (cursors aside)',
          strip(got) == strip(ref))
    # follow=true, no snapshot, default start at the tail: only new entries
    live = os.path.join(tmp, 'live')
    os.makedirs(live)
    write_journal(os.path.join(live, 'a.journal'), 0, 20, msgs)
    lout = os.path.join(tmp, 'live.jsonl')
    p = subprocess.Popen(['gst-launch-1.0', '-q', '-e', 'txljournalsrc', 'directory=' + live, '!',
                          'txltokenizer', 'model=' + MODEL, '!', 'txlmodel', 'model=' + MODEL,
                          'flush-on-newline=true', '!', 'txlsink', 'location=' + lout],
                         env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(2)
    write_journal(os.path.join(live, 'b.journal'), 20, 5, msgs)
    deadline = time.time() + 30
    while len(rows(lout)) < 5 and time.time() < deadline and p.poll() is None:
        time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
    check('follow from the tail: only the entries written after the start',
          [r['text'] for r in rows(lout)] == msgs[20:25], [r['text'][:20] for r in rows(lout)])
    failed = tally()
    if not failed:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())

# SPDX-License-Identifier: LGPL-2.1-or-later
"""Learning snapshots written by an older build (tests/data/learn-2026-11-28,
made by its make.py with 7f33652's build: learning section version 1,
txlsink's part 3, txlsessions' 4) continue with this one: txlmodel
learn=true ! txlsink, txlsessions learn=true ! txlsink and txl score --learn
each load theirs and write every line the older build wrote after it, with
the same tokens and scores (bits per byte and worst part, to the printed
precision; other CPU kernels round the last digit differently), and the
lines judged after it are judged against the model file (ref_bpb) as this
build judges new lines."""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
from checks import check, finish  # noqa: E402
from gstlaunch import ENV  # noqa: E402

ROOT = os.path.join(HERE, '..', '..')
DATA = os.path.join(HERE, '..', 'data', 'learn-2026-11-28')
TXL = os.environ.get('TXL_BIN', os.path.join(ROOT, 'build', 'tools', 'txl'))
WARMUP = 150
ENV1 = dict(ENV, TXL_NUM_THREADS='1')


def rows(path):
    """The per-line records of a JSON-lines output, by line number."""
    if not os.path.exists(path):
        return {}
    recs = (json.loads(l) for l in open(path, 'rb').read().splitlines())
    return {r['line']: r for r in recs if 'line' in r and 'session' not in r}


def compare(name, got, rc, err):
    want = json.load(open(os.path.join(DATA, 'expected.json')))[name]
    written = [w for w in want if w[0] in got]
    check('%s: the older build\'s snapshot loads' % name, rc == 0 and got, err[-400:])
    check('%s: the lines the older build wrote after it are written again (%d)' % (name, len(want)),
          len(want) >= 80 and sorted(got) == sorted(w[0] for w in want),
          (len(want), sorted(got)[:3], [w[0] for w in want][:3]))
    off = [(w[0], w[1:4], (got[w[0]]['tokens'], got[w[0]]['bpb'], got[w[0]]['worst']))
           for w in written
           if got[w[0]]['tokens'] != w[1] or abs(got[w[0]]['bpb'] - w[2]) > 1e-4
           or abs(got[w[0]]['worst'] - w[3]) > 1e-4]
    check('%s: the same tokens and scores, line for line' % name, written and not off, off[:3])
    judged = [r for r in got.values() if not r.get('warmup')]
    check('%s: lines judged after it are judged against the model file (ref_bpb)' % name,
          judged and all('ref_bpb' in r for r in judged), [r['line'] for r in judged][:5])


def pipeline(tmp, name, element):
    for f in os.listdir(DATA):
        shutil.copy(os.path.join(DATA, f), tmp)
    model, snap, out = (os.path.join(tmp, f) for f in ('model.gguf', name + '.snap', name + '.jsonl'))
    args = (['gst-launch-1.0', '-q', 'filesrc', 'location=' + os.path.join(tmp, name + '-b.log'),
             'blocksize=997', '!', 'txltokenizer', 'model=' + model, '!'] +
            (element % model).split() +
            ['learn=true', 'learn-warmup=%d' % WARMUP, 'snapshot-location=' + snap, 'hold-at-eos=false',
             '!', 'txlsink', 'location=' + out, 'append=true'])
    p = subprocess.run(args, capture_output=True, env=ENV1, timeout=300)
    compare(name, rows(out), p.returncode, p.stderr.decode(errors='replace'))


def main():
    tmp = tempfile.mkdtemp(prefix='txl-oldsnap-')
    pipeline(tmp, 'model', 'txlmodel model=%s')
    pipeline(tmp, 'sessions', 'txlsessions model=%s session-key=sess=[0-9]+')
    out = os.path.join(tmp, 'score.jsonl')
    with open(out, 'wb') as o:
        p = subprocess.run([TXL, 'score', '-m', os.path.join(tmp, 'model.gguf'), '--learn', '--learn-warmup',
                            str(WARMUP), '--load-snapshot', os.path.join(tmp, 'score.snap')],
                           stdin=open(os.path.join(tmp, 'model-b.log'), 'rb'), stdout=o,
                           stderr=subprocess.PIPE, env=ENV1, timeout=300)
    compare('score', rows(out), p.returncode, p.stderr.decode(errors='replace'))
    return finish(tmp)


if __name__ == '__main__':
    sys.exit(main())

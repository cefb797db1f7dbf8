# SPDX-License-Identifier: LGPL-2.1-or-later
"""Results do not depend on the thread count: txl score (text and ids, and
learning on the stream) and txl train give the same bytes under
TXL_NUM_THREADS = 1, 2 and 3.

Before the matrix products were cut into slices of a fixed width, OpenBLAS
summed slices of another width (one per thread) in another order and 62 of
801 lines differed in their last printed digit between 1 and 2 threads."""
import os
import subprocess
import sys
import tempfile

from checks import check, tally

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
TXL = os.environ.get('TXL_BIN', os.path.join(ROOT, 'build', 'tools', 'txl'))
MODEL = os.path.join(ROOT, 'models', 'default.gguf')


def txl(args, threads, stdin=None):
    env = dict(os.environ, TXL_NUM_THREADS=str(threads))
    p = subprocess.run([TXL] + args, input=stdin, capture_output=True, env=env,
                       timeout=300)
    if p.returncode != 0:
        sys.stderr.write(p.stderr.decode('utf-8', 'replace'))
    return p.returncode, p.stdout


def differing(a, b):
    la, lb = a.splitlines(), b.splitlines()
    return sum(1 for x, y in zip(la, lb) if x != y) + abs(len(la) - len(lb))


def main():
    tmp = tempfile.mkdtemp(prefix='txl-threads-')
    log = os.path.join(tmp, 'app.log')
    gen = subprocess.run(['/usr/bin/python3', os.path.join(ROOT, 'tools', 'loggen.py'),
                          '--lines', '800', '--seed', '3', '--anomalies', '0.01'],
                         capture_output=True, check=True, timeout=60)
    with open(log, 'wb') as f:
        f.write(gen.stdout)

    outs = {t: txl(['score', '-m', MODEL, log], t) for t in (1, 2, 3)}
    check('text scores: every run succeeds', all(rc == 0 for rc, _ in outs.values()))
    check('text scores: > 700 lines scored', len(outs[1][1].splitlines()) > 700)
    for t in (2, 3):
        n = differing(outs[1][1], outs[t][1])
        check('text scores: 1 and %d threads identical' % t, n == 0,
              '%d lines differ' % n)

    ids = ' '.join(str((i * 37 + 11) % 1000) for i in range(3000)).encode()
    outs = {t: txl(['score', '-m', MODEL, '--ids', '-'], t, stdin=ids) for t in (1, 2)}
    check('ids: 1 and 2 threads identical', outs[1][0] == 0 and outs[1][1] == outs[2][1],
          '%d lines differ' % differing(outs[1][1], outs[2][1]))

    # learning: a round trains its batch in two parts, one per task
    head = os.path.join(tmp, 'head.log')
    with open(log, 'rb') as f, open(head, 'wb') as g:
        g.write(b''.join(f.readlines()[:200]))
    learnt = {}
    for t in (1, 2):
        p = subprocess.run([TXL, 'score', '-m', MODEL, '--learn', '--learn-warmup', '100',
                            head], capture_output=True, timeout=300,
                           env=dict(os.environ, TXL_NUM_THREADS=str(t)))
        check('learn: %d threads runs a round' % t,
              p.returncode == 0 and b'learnt round 1 after line 100' in p.stderr,
              p.stderr.decode('utf-8', 'replace')[-300:])
        learnt[t] = p.stdout
    check('learn: 1 and 2 threads identical', learnt[1] == learnt[2],
          '%d lines differ' % differing(learnt[1], learnt[2]))

    models = {}
    for t in (1, 2):
        out = os.path.join(tmp, 'm%d.gguf' % t)
        rc, _ = txl(['train', '-o', out, '--steps', '3', '--batch', '4', '--warmup', '1',
                     '--eval-every', '0', '--eval-tokens', '2048',
                     '--checkpoint-every', '0', log], t)
        check('train: %d threads succeeds' % t, rc == 0)
        with open(out, 'rb') as f:
            models[t] = f.read()
    check('train: 1 and 2 threads write the same model', models[1] == models[2])

    # a run stopped on one thread and resumed on two ends where both ended
    out = os.path.join(tmp, 'r.gguf')
    common = ['--steps', '3', '--batch', '4', '--warmup', '1', '--eval-every', '0',
              '--eval-tokens', '2048', '--checkpoint-every', '0']
    rc1, _ = txl(['train', '-o', out, '--stop-after', '1'] + common + [log], 1)
    rc2, _ = txl(['train', '-o', out, '--resume'] + common + [log], 2)
    with open(out, 'rb') as f:
        resumed = f.read()
    check('train: stopped on 1 thread, resumed on 2: the same model',
          rc1 == 0 and rc2 == 0 and resumed == models[1])

    return 1 if tally() else 0


if __name__ == '__main__':
    sys.exit(main())

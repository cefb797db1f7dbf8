# SPDX-License-Identifier: LGPL-2.1-or-later
"""The matrix kernels are chosen when a process starts, by what the CPU
offers (lib/kernels/cpu.c); TXL_CPU lowers the choice. On one machine this
runs `txl score` on each level the CPU has:

- the AVX-512 and AVX2 kernels sum every element in the same order, so they
  print the same bytes, and a snapshot saved on one continues on the other
  bit for bit;
- OpenBLAS (generic: a CPU without AVX2) rounds differently, by at most a
  a ten-thousandth of a bit per byte on a line at most;
- learning on the stream, with training's products on txl's own tiles
  (TXL_GEMM=tiles), prints the same bytes on AVX-512 and AVX2 too;
- `txl bench` reports the kernel in use and where txl_gemm goes; TXL_CPU
  above what the CPU has, or not a level at all, falls back to the CPU's
  best (the latter with a warning) instead of failing."""
import json
import os
import subprocess
import sys
import tempfile

from checks import check, tally

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
TXL = os.environ.get('TXL_BIN', os.path.join(ROOT, 'build', 'tools', 'txl'))
MODEL = os.path.join(ROOT, 'models', 'default.gguf')
LEVELS = ['generic', 'avx2', 'avx512']


def txl(args, level=None, stdin=None, gemm=None):
    env = dict(os.environ)
    env.pop('TXL_CPU', None)
    env.pop('TXL_GEMM', None)
    if level is not None:
        env['TXL_CPU'] = level
    if gemm is not None:
        env['TXL_GEMM'] = gemm
    p = subprocess.run([TXL] + args, input=stdin, capture_output=True, env=env,
                       timeout=300)
    return p.returncode, p.stdout, p.stderr.decode('utf-8', 'replace')


def bench(level, gemm=None):
    rc, out, err = txl(['bench', '-m', MODEL, '--json', '--segments', '1',
                        '--peak-size', '64'], level, gemm=gemm)
    if rc != 0:
        sys.stderr.write(err)
        return {}
    return json.loads(out)


def kernel(level):
    j = bench(level)
    return j.get('kernel'), j.get('cpu')


def bpb(out):
    return [json.loads(l)['bpb'] for l in out.decode().splitlines()]


def main():
    tmp = tempfile.mkdtemp(prefix='txl-cpu-')
    log = os.path.join(tmp, 'app.log')
    gen = subprocess.run(['/usr/bin/python3', os.path.join(ROOT, 'tools', 'loggen.py'),
                          '--lines', '400', '--seed', '5'], capture_output=True, timeout=60)
    with open(log, 'wb') as f:
        f.write(gen.stdout)
    text = gen.stdout

    best, cpu = kernel(None)
    check('txl bench reports a kernel and the CPU level', best in LEVELS and cpu in LEVELS,
          (best, cpu))
    if best not in LEVELS:
        return 1
    check('without TXL_CPU the kernel is the CPU\'s best', best == cpu, (best, cpu))
    have = LEVELS[:LEVELS.index(cpu) + 1]
    print('this CPU offers', cpu, flush=True)

    outs = {}
    for level in have:
        k, _ = kernel(level)
        check('TXL_CPU=%s runs the %s kernel' % (level, level), k == level, k)
        rc, out, err = txl(['score', '-m', MODEL, log], level)
        check('txl score on the %s kernel' % level, rc == 0 and out.count(b'\n') == 400,
              err)
        outs[level] = out

    for level in LEVELS[LEVELS.index(cpu) + 1:]:
        k, _ = kernel(level)
        check('TXL_CPU=%s on a CPU without it falls back to %s' % (level, cpu), k == cpu, k)

    if 'avx2' in outs and 'avx512' in outs:
        check('AVX-512 and AVX2 kernels print the same bytes', outs['avx2'] == outs['avx512'])
        # a snapshot saved on one kernel continues on the other bit for bit
        cut = text.index(b'\n', len(text) // 2) + 1
        snap = os.path.join(tmp, 'half.snap')
        rc1, p1, e1 = txl(['score', '-m', MODEL, '--save-snapshot', snap], 'avx512',
                          text[:cut])
        rc2, p2, e2 = txl(['score', '-m', MODEL, '--load-snapshot', snap], 'avx2', text[cut:])
        check('a snapshot saved on AVX-512 continues on AVX2 bit for bit',
              rc1 == 0 and rc2 == 0 and p1 + p2 == outs['avx512'], e1 + e2)

        # learning: a short warm-up, so that a round runs and scores lines
        learn = ['score', '-m', MODEL, '--learn', '--learn-warmup', '60', log]
        rl1, l1, e1 = txl(learn, 'avx512', gemm='tiles')
        rl2, l2, e2 = txl(learn, 'avx2', gemm='tiles')
        check('learning on the tiles: a round ran on each kernel',
              rl1 == 0 and rl2 == 0 and 'learnt round 1' in e1 and 'learnt round 1' in e2,
              e1 + e2)
        check('learning on the tiles prints the same bytes on AVX-512 and AVX2',
              l1 == l2 and l1.count(b'\n') == 400)

    for gemm in ['tiles', 'openblas']:
        j = bench(None, gemm)
        want = gemm if cpu != 'generic' else 'openblas'
        check('TXL_GEMM=%s: txl bench says txl_gemm goes to %s' % (gemm, want),
              j.get('gemm') == want and j.get('openblas_core'), j)

    if 'generic' in outs and len(have) > 1:
        a, b = bpb(outs['generic']), bpb(outs[have[-1]])
        worst = max(abs(x - y) for x, y in zip(a, b))
        print('generic vs %s: largest difference %.2e bits/byte on a line' % (have[-1], worst))
        check('OpenBLAS kernels agree with %s within 0.0001 bits/byte a line' % have[-1],
              len(a) == len(b) == 400 and worst <= 1e-4, worst)
        check('... and do differ somewhere (the level really changed)', worst > 0, worst)

    rc, out, err = txl(['score', '-m', MODEL, log], 'sse9')
    check('TXL_CPU=sse9 warns and runs the CPU\'s best',
          rc == 0 and 'TXL_CPU=sse9 is not one of' in err and out == outs[cpu], err)
    return 0


if __name__ == '__main__':
    rc = main()
    sys.exit(1 if tally() or rc else 0)

#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Parity of the C engine (`txl score`) with the PyTorch reference.

For each configuration: write a random Hugging Face checkpoint, convert it
with `txl convert --hf`, score random ids with `txl score --ids` and compare
every token's log-probability with tests/reference/txl_ref.py (max |diff| <= 1e-4,
same count, order, positions and token ids).  Also: run-time overrides
(--mem-len, --same-length, --clamp-len), same_length results independent of
--segment, and the id reader's independence from line layout.

Env TXL_BIN: the txl executable (default build/tools/txl).
Prints one line per case and "N passed, N failed"; exits 1 on failure.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import txl_ref  # noqa: E402
from hf_checkpoint import make_checkpoint, make_config  # noqa: E402
import reporting  # noqa: E402

torch.set_num_threads(1)

TXL = os.environ.get('TXL_BIN') or os.path.join(HERE, '..', '..', 'build', 'tools', 'txl')
TOL = 1e-4


def report(name, ok, detail=''):
    reporting.report(name, ok, detail, 46)


class Failure(Exception):
    pass


def run(args, stdin=None, timeout=120):
    p = subprocess.run([TXL] + args, input=stdin, capture_output=True,
                       timeout=timeout)
    if p.returncode != 0:
        raise Failure('txl %s: exit %d: %s' % (' '.join(args[:2]), p.returncode,
                                               p.stderr.decode(errors='replace').strip()[-600:]))
    return p.stdout


def convert(ckpt):
    out = os.path.join(ckpt, 'model.gguf')
    run(['convert', '--hf', ckpt, '-o', out])
    return out


def parse_scores(raw):
    recs = []
    for n, line in enumerate(raw.decode().splitlines(), 1):
        if not line.strip():
            continue
        try:
            o = json.loads(line)
        except ValueError:
            raise Failure('output line %d is not JSON: %r' % (n, line[:120]))
        if not isinstance(o, dict):
            raise Failure('output line %d is not an object' % n)
        if 'pos' not in o:
            continue  # a summary record
        for f in ('pos', 'token', 'logprob'):
            if f not in o:
                raise Failure('output line %d lacks "%s"' % (n, f))
        recs.append((int(o['pos']), int(o['token']), float(o['logprob'])))
    return recs


def score(model, ids, segment, mem_len=None, same_length=None, clamp_len=None,
          text=None):
    args = ['score', '-m', model, '--ids', '--segment', str(segment)]
    if mem_len is not None:
        args += ['--mem-len', str(mem_len)]
    if same_length is not None:
        args += ['--same-length', '1' if same_length else '0']
    if clamp_len is not None:
        args += ['--clamp-len', str(clamp_len)]
    if text is None:
        text = ' '.join(str(i) for i in ids) + '\n'
    return parse_scores(run(args, text.encode()))


def compare(ref, got):
    """max |diff|, or raises Failure naming the first mismatch."""
    if len(ref) != len(got):
        raise Failure('engine gave %d scores, reference %d' % (len(got), len(ref)))
    worst, where = 0.0, None
    for (rp, rt, rl), (gp, gt, gl) in zip(ref, got):
        if (rp, rt) != (gp, gt):
            raise Failure('record mismatch: reference (pos %d, token %d), engine '
                          '(pos %d, token %d)' % (rp, rt, gp, gt))
        d = abs(rl - gl)
        if not d <= worst:  # also catches NaN
            worst, where = (d if d == d else float('inf')), rp
    return worst, where


def parity_case(name, model, ref, ids, segment, **opts):
    try:
        got = score(model, ids, segment, **opts)
        want = txl_ref.score_ids(ref, ids, segment, **opts)
        d, where = compare(want, got)
        report(name, d <= TOL, 'max|diff| %.2e%s (%d tokens)' % (
            d, '' if d <= TOL else ' at pos %d' % where, len(got)))
        return got
    except (Failure, subprocess.TimeoutExpired) as e:
        report(name, False, str(e))
        return None


# --------------------------------------------------------------------------
CASES = {
    # (a) plain softmax, pre-LN, shared r biases, d_embed == d_model
    'a-plain-preln-sharedr': (dict(vocab_size=100, d_model=32, d_embed=32, n_head=4,
                                   d_head=8, d_inner=64, n_layer=2, mem_len=8,
                                   pre_lnorm=True, untie_r=False, cutoffs=[],
                                   tie_word_embeddings=True), 'emb', 6),
    # (b) adaptive softmax, 3 tail clusters, div_val 2, untie_r, same_length,
    #     clamp_len < key length, post-LN
    'b-adaptive-div2-samelen-clamp': (dict(vocab_size=300, d_model=32, d_embed=32,
                                           n_head=4, d_head=8, d_inner=48, n_layer=3,
                                           mem_len=10, same_length=True, clamp_len=5,
                                           pre_lnorm=False, untie_r=True, div_val=2,
                                           cutoffs=[60, 120, 200]), 'out', 7),
    # (c) d_embed != d_model, div_val 1, every projection and table tied
    'c-dembed-tiedprojs-div1': (dict(vocab_size=200, d_model=32, d_embed=48, n_head=4,
                                     d_head=8, d_inner=64, n_layer=2, mem_len=12,
                                     untie_r=True, div_val=1, cutoffs=[50, 100],
                                     tie_projs=[True, True, True],
                                     tie_word_embeddings=True), 'both', 5),
    # (c') div_val 4, d_embed != d_model, mixed projection ties, untied tables,
    #      official-style shared r biases, pre-LN, 3 layers
    'c2-div4-mixedties': (dict(vocab_size=250, d_model=48, d_embed=64, n_head=3,
                               d_head=16, d_inner=96, n_layer=3, mem_len=9,
                               clamp_len=4, pre_lnorm=True, untie_r=False, div_val=4,
                               cutoffs=[40, 100, 180],
                               tie_projs=[False, True, False, True],
                               tie_word_embeddings=False), 'emb', 8),
    # memory shorter than the segment; tied tables stored on the output side
    'g-memlen-lt-segment': (dict(vocab_size=150, d_model=32, d_embed=32, n_head=2,
                                 d_head=16, d_inner=64, n_layer=2, mem_len=3,
                                 same_length=False, div_val=2, cutoffs=[50, 100],
                                 untie_r=True), 'out', 8),
    # no memory at all
    'g-memlen0': (dict(vocab_size=120, d_model=32, d_embed=32, n_head=4, d_head=8,
                       d_inner=48, n_layer=2, mem_len=0, same_length=False,
                       cutoffs=[40], pre_lnorm=True), 'emb', 5),
}


def main():
    t0 = time.time()
    if not os.access(TXL, os.X_OK):
        print('txl executable not found at %s' % TXL)
        print('0 passed, 1 failed')
        return 1
    tmp = tempfile.TemporaryDirectory(prefix='txl-parity-')
    models, refs, ids_of = {}, {}, {}
    for i, (name, (over, store, seg)) in enumerate(CASES.items()):
        cfg = make_config(**over)
        d = os.path.join(tmp.name, name)
        make_checkpoint(d, cfg, seed=4242 + i, store_tied=store)
        ref = txl_ref.load_checkpoint(d, 'hf')
        ids = np.random.default_rng(99 + i).integers(0, cfg['vocab_size'],
                                                     size=5 * seg + 3).tolist()
        try:
            model = convert(d)
        except Failure as e:
            report('convert/' + name, False, str(e))
            continue
        models[name], refs[name], ids_of[name] = model, ref, ids
        parity_case(name + ' seg %d' % seg, model, ref, ids, seg)

    def have(name):
        if name in models:
            return True
        report('needs ' + name, False, 'model not converted')
        return False

    # other segment lengths, including 1 and one longer than the stream
    if have('a-plain-preln-sharedr'):
        n = 'a-plain-preln-sharedr'
        for seg in (1, 4, 64):
            parity_case('%s seg %d' % (n, seg), models[n], refs[n], ids_of[n], seg)

    # (d) run-time overrides differing from the file's values
    if have('b-adaptive-div2-samelen-clamp'):
        n = 'b-adaptive-div2-samelen-clamp'
        m, r, ids = models[n], refs[n], ids_of[n]
        parity_case('d-override mem 4 same 0 clamp 3', m, r, ids, 7,
                    mem_len=4, same_length=False, clamp_len=3)
        parity_case('d-override mem 13 same 1 clamp 0', m, r, ids, 6,
                    mem_len=13, same_length=True, clamp_len=0)
        parity_case('g-override mem 0 same 0', m, r, ids, 7, mem_len=0, same_length=False)
        parity_case('g-override mem 2 (< segment 7)', m, r, ids, 7, mem_len=2)
    if have('a-plain-preln-sharedr'):
        n = 'a-plain-preln-sharedr'
        parity_case('d-override same 1 clamp 2 mem 5', models[n], refs[n], ids_of[n], 6,
                    mem_len=5, same_length=True, clamp_len=2)

    # (e) with same_length the engine's scores do not depend on --segment
    if have('b-adaptive-div2-samelen-clamp'):
        n = 'b-adaptive-div2-samelen-clamp'
        ids = np.random.default_rng(5).integers(0, 300, size=5 * 16 + 3).tolist()
        outs = {}
        for seg in (3, 7, 16):
            got = parity_case('e-same_length seg %d vs reference' % seg, models[n],
                              refs[n], ids, seg)
            if got is not None:
                outs[seg] = got
        if len(outs) == 3:
            worst = 0.0
            ok = True
            for seg in (7, 16):
                if [x[:2] for x in outs[seg]] != [x[:2] for x in outs[3]]:
                    ok = False
                worst = max([worst] + [abs(a[2] - b[2]) for a, b in zip(outs[3], outs[seg])])
            report('e-same_length engine seg 3/7/16 agree', ok and worst <= 1e-5,
                   'max|diff| %.2e' % worst)
        else:
            report('e-same_length engine seg 3/7/16 agree', False, 'a run failed')

    # (f) the reader: one line, one id per line, odd spacing, a very long line
    if have('c-dembed-tiedprojs-div1'):
        n = 'c-dembed-tiedprojs-div1'
        rng = np.random.default_rng(17)
        ids = rng.integers(0, 200, size=4000).tolist()
        layouts = {
            'one line': ' '.join(map(str, ids)) + '\n',
            'one per line': '\n'.join(map(str, ids)) + '\n',
            'mixed spacing, no final newline':
                ''.join(str(t) + (' \t ' if k % 3 else '\n  ') for k, t in enumerate(ids)).rstrip(),
        }
        long_ids = ids * 10  # 40000 ids, a line of about 150 kB
        try:
            base = None
            outs = {}
            for lname, text in layouts.items():
                outs[lname] = score(models[n], ids, 5, text=text)
            base = outs['one line']
            ok = all(o == base for o in outs.values()) and len(base) == len(ids) - 1
            report('f-reader layouts identical', ok,
                   '%d tokens, %d layouts' % (len(base), len(outs)))
            # the engine must also agree with the reference on these ids
            d, _ = compare(txl_ref.score_ids(refs[n], ids[:400], 5), score(models[n], ids[:400], 5))
            report('f-reader ids match reference', d <= TOL, 'max|diff| %.2e' % d)
            one = score(models[n], long_ids, 5, text=' '.join(map(str, long_ids)) + '\n')
            per = score(models[n], long_ids, 5, text='\n'.join(map(str, long_ids)) + '\n')
            report('f-reader very long line', one == per and len(one) == len(long_ids) - 1,
                   '%d tokens' % len(one))
        except (Failure, subprocess.TimeoutExpired) as e:
            report('f-reader', False, str(e))

    print('time %.1fs' % (time.time() - t0))
    return 1 if reporting.tally() else 0


if __name__ == '__main__':
    sys.exit(main())

#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Checks of the PyTorch reference (tests/reference/txl_ref.py) itself.

(a) against a naive implementation written separately below: float64, one
    query, one key, one distance at a time, explicit sinusoids, explicit
    softmax, the memory kept as a per-position history of layer inputs;
(b) with same_length, scores do not depend on the segment length (and
    without it they do, so the check has teeth);
(c) the full next-token distribution sums to 1 and agrees with the
    per-token scores.
Prints "N passed, N failed"; exits non-zero on failure.
"""
import math
import os
import sys
import time

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import txl_ref  # noqa: E402
from hf_checkpoint import make_config, random_weights  # noqa: E402
from reporting import report as check, tally  # noqa: E402

torch.set_num_threads(1)

# --------------------------------------------------------------------------
# Naive implementation.  Deliberately shares no code with txl_ref.
# --------------------------------------------------------------------------
class Naive:
    def __init__(self, W, cfg, cluster_order):
        self.W = {k: np.asarray(v, dtype=np.float64) for k, v in W.items()}
        self.c = cfg
        self.order = cluster_order
        self.V = cfg['vocab_size']
        self.dm = cfg['d_model']
        self.H = cfg['n_head']
        self.dh = cfg['d_head']
        self.L = cfg['n_layer']
        self.ends = [0] + list(cfg['cutoffs']) + [self.V]

    def cluster_of(self, t):
        for k in range(len(self.ends) - 1):
            if self.ends[k] <= t < self.ends[k + 1]:
                return k
        raise ValueError(t)

    def embed(self, t):
        W, c = self.W, self.c
        if c['div_val'] == 1:
            e = W['transformer.word_emb.emb_layers.0.weight'][t]
            if c['d_embed'] != c['d_model']:
                e = W['transformer.word_emb.emb_projs.0'].dot(e)
        else:
            k = self.cluster_of(t)
            row = W['transformer.word_emb.emb_layers.%d.weight' % k][t - self.ends[k]]
            e = W['transformer.word_emb.emb_projs.%d' % k].dot(row)
        return e * math.sqrt(self.dm)

    def sinusoid(self, d):
        half = self.dm // 2
        out = np.zeros(self.dm)
        for m in range(half):
            f = 1.0 / (10000.0 ** (2.0 * m / self.dm))
            out[m] = math.sin(d * f)
            out[half + m] = math.cos(d * f)
        return out

    def layer_norm(self, x, name):
        mu = sum(x) / len(x)
        var = sum((xi - mu) ** 2 for xi in x) / len(x)
        y = (x - mu) / math.sqrt(var + self.c['layer_norm_epsilon'])
        return y * self.W[name + '.weight'] + self.W[name + '.bias']

    def biases(self, l):
        if self.c['untie_r']:
            p = 'transformer.layers.%d.dec_attn.' % l
            return self.W[p + 'r_w_bias'], self.W[p + 'r_r_bias']
        return self.W['transformer.r_w_bias'], self.W['transformer.r_r_bias']

    def layer(self, l, hist, p, key_pos, mem_len, same_length, clamp_len):
        """Output of layer l for the token at absolute position p."""
        W = self.W
        pre = 'transformer.layers.%d.' % l
        HD = self.H * self.dh
        Wqkv = W[pre + 'dec_attn.qkv_net.weight']
        Wq, Wk, Wv = Wqkv[:HD], Wqkv[HD:2 * HD], Wqkv[2 * HD:]
        Wr = W[pre + 'dec_attn.r_net.weight']
        u, v = self.biases(l)
        ln_a = pre + 'dec_attn.layer_norm'
        pre_ln = self.c['pre_lnorm']

        def inp(a):
            x = hist[a]
            return self.layer_norm(x, ln_a) if pre_ln else x

        q = Wq.dot(inp(p))
        keys = []
        for a in key_pos:
            if a > p:
                continue  # future
            if same_length and a <= p - mem_len:
                continue  # outside the fixed-length window
            keys.append(a)
        vec = np.zeros(HD)
        for h in range(self.H):
            sl = slice(h * self.dh, (h + 1) * self.dh)
            scores = []
            for a in keys:
                d = p - a
                if clamp_len > 0 and d > clamp_len:
                    d = clamp_len
                k = Wk.dot(inp(a))[sl]
                r = Wr.dot(self.sinusoid(d))[sl]
                s = 0.0
                for m in range(self.dh):
                    s += (q[sl][m] + u[h][m]) * k[m] + (q[sl][m] + v[h][m]) * r[m]
                scores.append(s / math.sqrt(self.dh))
            mx = max(scores)
            ex = [math.exp(s - mx) for s in scores]
            z = sum(ex)
            for a, e in zip(keys, ex):
                vec[sl] += (e / z) * Wv.dot(inp(a))[sl]
        x = hist[p] + W[pre + 'dec_attn.o_net.weight'].dot(vec)
        if not pre_ln:
            x = self.layer_norm(x, ln_a)
        ln_f = pre + 'pos_ff.layer_norm'
        y = self.layer_norm(x, ln_f) if pre_ln else x
        y = W[pre + 'pos_ff.CoreNet.0.weight'].dot(y) + W[pre + 'pos_ff.CoreNet.0.bias']
        y = np.maximum(y, 0.0)
        y = W[pre + 'pos_ff.CoreNet.3.weight'].dot(y) + W[pre + 'pos_ff.CoreNet.3.bias']
        out = x + y
        if not pre_ln:
            out = self.layer_norm(out, ln_f)
        return out

    def logits(self, hid, weight, bias, proj):
        x = hid if proj is None else proj.T.dot(hid)
        return weight.dot(x) + bias

    @staticmethod
    def log_softmax(z):
        mx = max(z)
        lse = mx + math.log(sum(math.exp(zi - mx) for zi in z))
        return np.array([zi - lse for zi in z])

    def distribution(self, hid):
        W, c = self.W, self.c
        nproj = c['div_val'] == 1 and c['d_embed'] == c['d_model']
        C = len(c['cutoffs'])

        def table(k):
            if c['div_val'] == 1:
                lo, hi = self.ends[k], self.ends[k + 1]
                return (W['crit.out_layers.0.weight'][lo:hi], W['crit.out_layers.0.bias'][lo:hi])
            return W['crit.out_layers.%d.weight' % k], W['crit.out_layers.%d.bias' % k]

        def proj(k):
            return None if nproj else W['crit.out_projs.%d' % k]

        w0, b0 = table(0)
        if C == 0:
            return self.log_softmax(self.logits(hid, w0, b0, proj(0)))
        hw = np.concatenate([w0, W['crit.cluster_weight']])
        hb = np.concatenate([b0, W['crit.cluster_bias']])
        head = self.log_softmax(self.logits(hid, hw, hb, proj(0)))
        out = np.zeros(self.V)
        for t in range(self.V):
            k = self.cluster_of(t)
            if k == 0:
                out[t] = head[t]
                continue
            col = c['cutoffs'][0] + k - 1 if self.order == 'hf' else len(head) - k
            w, b = table(k)
            tail = self.log_softmax(self.logits(hid, w, b, proj(k)))
            out[t] = head[col] + tail[t - self.ends[k]]
        return out

    def run(self, ids, segment, mem_len, same_length, clamp_len):
        """Distribution after every input position (inputs cut into
        segments of `segment` from ids[0])."""
        T = len(ids)
        hist = [dict() for _ in range(self.L + 1)]  # layer -> pos -> input
        rows = []
        for a in range(0, T, segment):
            b = min(a + segment, T)
            for p in range(a, b):
                hist[0][p] = self.embed(ids[p])
            mem_start = max(0, a - mem_len)
            key_pos = list(range(mem_start, b))
            for l in range(self.L):
                for p in range(a, b):
                    hist[l + 1][p] = self.layer(l, hist[l], p, key_pos,
                                                mem_len, same_length, clamp_len)
            for p in range(a, b):
                rows.append(self.distribution(hist[self.L][p]))
        return np.array(rows)


# --------------------------------------------------------------------------
CONFIGS = [
    ('postln-plain-sharedr', dict(vocab_size=40, d_model=16, d_embed=16, n_head=2, d_head=6,
                                  d_inner=24, n_layer=2, mem_len=5, untie_r=False,
                                  pre_lnorm=False, tie_word_embeddings=False), 4, 'hf'),
    ('preln-samelen-clamp-div2', dict(vocab_size=60, d_model=16, d_embed=16, n_head=2,
                                      d_head=8, d_inner=20, n_layer=2, mem_len=6,
                                      same_length=True, clamp_len=3, pre_lnorm=True,
                                      untie_r=True, div_val=2, cutoffs=[20, 35, 50]), 4, 'hf'),
    ('dembed-ne-dmodel-tiedprojs', dict(vocab_size=50, d_model=16, d_embed=12, n_head=2,
                                        d_head=5, d_inner=24, n_layer=2, mem_len=7,
                                        div_val=1, cutoffs=[20, 35], tie_projs=True,
                                        untie_r=True), 5, 'hf'),
    ('div4-memlt-seg-samelen', dict(vocab_size=48, d_model=16, d_embed=32, n_head=2,
                                    d_head=4, d_inner=16, n_layer=2, mem_len=3,
                                    same_length=True, clamp_len=2, div_val=4,
                                    cutoffs=[10, 30], tie_projs=[False, True, False],
                                    pre_lnorm=False), 5, 'hf'),
    ('memlen0-preln-official', dict(vocab_size=50, d_model=16, d_embed=16, n_head=2,
                                    d_head=8, d_inner=24, n_layer=2, mem_len=0,
                                    pre_lnorm=True, untie_r=False, div_val=2,
                                    cutoffs=[15, 25, 40]), 4, 'official'),
    ('samelen-official-3layer', dict(vocab_size=45, d_model=12, d_embed=24, n_head=3,
                                     d_head=4, d_inner=20, n_layer=3, mem_len=4,
                                     same_length=True, clamp_len=5, div_val=1,
                                     cutoffs=[12, 20, 30], tie_projs=[True, False, True, False],
                                     tie_word_embeddings=False), 3, 'official'),
]


def ref_model(cfg, seed, order):
    W = random_weights(cfg, seed)
    tw = {k: torch.from_numpy(v) for k, v in W.items()}
    return W, txl_ref.TransfoXLRef(tw, cfg, order)


def test_against_naive():
    for i, (name, over, seg, order) in enumerate(CONFIGS):
        cfg = make_config(**over)
        W, m = ref_model(cfg, 100 + i, order)
        rng = np.random.default_rng(7 + i)
        ids = rng.integers(0, cfg['vocab_size'], size=4 * seg + 2).tolist()
        naive = Naive(W, cfg, order).run(ids, seg, cfg['mem_len'], cfg['same_length'],
                                         cfg['clamp_len'])
        ref = txl_ref.stream_logprobs(m, ids, seg).double().numpy()
        d = float(np.abs(naive - ref).max())
        check('naive/%s' % name, d <= 1e-5, 'max|diff| %.2e' % d)
        # the per-token scores are the distribution's entries
        sc = txl_ref.score_ids(m, ids, seg)
        d2 = max(abs(lp - naive[pos - 1][tok]) for pos, tok, lp in sc)
        check('naive-score/%s' % name, d2 <= 1e-5 and len(sc) == len(ids) - 1,
              'max|diff| %.2e n=%d' % (d2, len(sc)))
    # overrides of mem_len / same_length / clamp_len at run time
    cfg = make_config(**CONFIGS[1][1])
    W, m = ref_model(cfg, 5, 'hf')
    ids = np.random.default_rng(3).integers(0, cfg['vocab_size'], size=17).tolist()
    for ml, sl, cl in [(2, False, 0), (9, True, 1), (4, True, 0)]:
        naive = Naive(W, cfg, 'hf').run(ids, 5, ml, sl, cl)
        ref = txl_ref.stream_logprobs(m, ids, 5, mem_len=ml, same_length=sl,
                                      clamp_len=cl).double().numpy()
        d = float(np.abs(naive - ref).max())
        check('naive/override mem=%d same=%d clamp=%d' % (ml, sl, cl), d <= 1e-5,
              'max|diff| %.2e' % d)


def test_same_length():
    over = dict(vocab_size=120, d_model=32, d_embed=32, n_head=4, d_head=8, d_inner=48,
                n_layer=3, mem_len=10, same_length=True, clamp_len=0, div_val=2,
                cutoffs=[40, 80], pre_lnorm=False)
    cfg = make_config(**over)
    _, m = ref_model(cfg, 11, 'hf')
    ids = np.random.default_rng(1).integers(0, 120, size=60).tolist()
    base = [lp for _, _, lp in txl_ref.score_ids(m, ids, 3)]
    for seg in (7, 16, 1, 59):
        other = [lp for _, _, lp in txl_ref.score_ids(m, ids, seg)]
        d = max(abs(x - y) for x, y in zip(base, other))
        check('same_length seg 3 vs %d' % seg, d <= 1e-5 and len(other) == len(base),
              'max|diff| %.2e' % d)
    # memory shorter than the segment, clamp on
    for ml in (4, 1):
        a = [lp for _, _, lp in txl_ref.score_ids(m, ids, 3, mem_len=ml, clamp_len=2)]
        b = [lp for _, _, lp in txl_ref.score_ids(m, ids, 11, mem_len=ml, clamp_len=2)]
        d = max(abs(x - y) for x, y in zip(a, b))
        check('same_length mem %d seg 3 vs 11' % ml, d <= 1e-5, 'max|diff| %.2e' % d)
    # without same_length the context depends on the cut: the check can fail
    a = [lp for _, _, lp in txl_ref.score_ids(m, ids, 3, same_length=False)]
    b = [lp for _, _, lp in txl_ref.score_ids(m, ids, 16, same_length=False)]
    d = max(abs(x - y) for x, y in zip(a, b))
    check('no same_length: depends on segment', d > 1e-3, 'max|diff| %.2e' % d)


def test_distribution():
    for name, over, seg, order in CONFIGS:
        cfg = make_config(**over)
        _, m = ref_model(cfg, 21, order)
        ids = np.random.default_rng(2).integers(0, cfg['vocab_size'], size=3 * seg + 1).tolist()
        dist = txl_ref.stream_logprobs(m, ids, seg)
        lse = torch.logsumexp(dist.double(), dim=1)
        d = float(lse.abs().max())
        check('sums-to-1/%s' % name, d <= 1e-5, 'max|log sum| %.2e' % d)
        sc = txl_ref.score_ids(m, ids, seg)
        d2 = max(abs(lp - float(dist[pos - 1, tok])) for pos, tok, lp in sc)
        check('dist-vs-score/%s' % name, d2 <= 1e-6, 'max|diff| %.2e' % d2)
        nxt = txl_ref.next_token_logprobs(m, ids, seg)
        check('next-token/%s' % name, torch.equal(nxt, dist[-1]) and nxt.shape[0] == cfg['vocab_size'])
    # cluster order matters with >= 2 tail clusters, not with one
    for cut, expect_diff in (([20, 35, 50], True), ([30], False)):
        cfg = make_config(**dict(CONFIGS[1][1], cutoffs=cut))
        W = {k: torch.from_numpy(v) for k, v in random_weights(cfg, 3).items()}
        ids = list(range(0, 60, 3))
        a = txl_ref.stream_logprobs(txl_ref.TransfoXLRef(W, cfg, 'hf'), ids, 4)
        b = txl_ref.stream_logprobs(txl_ref.TransfoXLRef(W, cfg, 'official'), ids, 4)
        d = float((a - b).abs().max())
        check('cluster order %s' % cut, (d > 1e-3) == expect_diff, 'max|diff| %.2e' % d)


def test_rel_shift():
    q, k = 3, 7
    x = torch.arange(q * k, dtype=torch.float32).reshape(q, k)
    y = txl_ref.TransfoXLRef.rel_shift(x)
    ok = all(float(y[i, j]) == float(x[i, j + q - 1 - i])
             for i in range(q) for j in range(k) if j + q - 1 - i < k)
    check('rel_shift', ok)


def main():
    t0 = time.time()
    test_rel_shift()
    test_against_naive()
    test_same_length()
    test_distribution()
    print('time %.1fs' % (time.time() - t0))
    return 1 if tally() else 0


if __name__ == '__main__':
    sys.exit(main())

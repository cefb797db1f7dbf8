#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Development check: our PyTorch reference (tests/reference/txl_ref.py) against
the official Transformer-XL PyTorch release (kimiyoung/transformer-xl).

The official code is NOT part of this repository.  Extract its pytorch/
directory somewhere and pass that path:

    git --git-dir=<mirror of kimiyoung/transformer-xl> show HEAD:pytorch/mem_transformer.py > /tmp/official/mem_transformer.py
    git --git-dir=... show HEAD:pytorch/utils/proj_adaptive_softmax.py > /tmp/official/utils/proj_adaptive_softmax.py
    git --git-dir=... show HEAD:pytorch/utils/log_uniform_sampler.py > /tmp/official/utils/log_uniform_sampler.py
    /usr/bin/python3 tools/check_ref_official.py /tmp/official

For several random configurations (untie_r off: the official PyTorch model has
one shared r_w_bias / r_r_bias) the same weights are loaded into the official
MemTransformerLM (eval mode, ext_len 0, crit.keep_order on) and into our
reference, a token stream is scored segment by segment with memory, and the
per-token losses are compared.  Two comparisons per configuration:
  official  reference in 'official' cluster order vs the official model;
  hf        reference in 'hf' cluster order vs the official model given the
            cluster_weight / cluster_bias rows in reverse order (HF's column
            shortlist+i-1 holds cluster i, the official column -i does; the
            reversal maps one convention onto the other).
Exit status 1 when any difference exceeds 1e-4.
"""
import os
import sys

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'reference'))

import txl_ref  # noqa: E402
from hf_checkpoint import make_config, random_weights  # noqa: E402


def install_shims():
    """The 2019 code expects a CUDA build and uint8 masks."""
    if torch.version.cuda is None:
        torch.version.cuda = '10.0'  # only parsed at import time
    orig_fill = torch.Tensor.masked_fill
    orig_fill_ = torch.Tensor.masked_fill_

    def fill(self, mask, value):
        if mask.dtype == torch.uint8:
            mask = mask.bool()
        return orig_fill(self, mask, value)

    def fill_(self, mask, value):
        if mask.dtype == torch.uint8:
            mask = mask.bool()
        return orig_fill_(self, mask, value)

    torch.Tensor.masked_fill = fill
    torch.Tensor.masked_fill_ = fill_


def official_name(hf):
    if hf.startswith('transformer.'):
        return hf[len('transformer.'):]
    return hf


def build_official(mt, cfg, W, seg, reverse_clusters):
    n_clusters = len(cfg['cutoffs'])
    m = mt.MemTransformerLM(
        cfg['vocab_size'], cfg['n_layer'], cfg['n_head'], cfg['d_model'],
        cfg['d_head'], cfg['d_inner'], dropout=0.0, dropatt=0.0,
        tie_weight=cfg['tie_word_embeddings'], d_embed=cfg['d_embed'],
        div_val=cfg['div_val'], tie_projs=cfg['tie_projs'],
        pre_lnorm=cfg['pre_lnorm'], tgt_len=seg, ext_len=0,
        mem_len=cfg['mem_len'], cutoffs=list(cfg['cutoffs']),
        same_length=cfg['same_length'], attn_type=0,
        clamp_len=cfg['clamp_len'])
    m.eval()
    m.crit.keep_order = True
    sd = m.state_dict()
    new = {}
    for k in sd:
        if k == 'pos_emb.inv_freq':  # a buffer the model computes itself
            new[k] = sd[k]
            continue
        hf = 'transformer.' + k if not k.startswith('crit.') else k
        v = torch.from_numpy(W[hf].copy())
        if reverse_clusters and k in ('crit.cluster_weight', 'crit.cluster_bias'):
            v = v.flip(0).contiguous()
        if tuple(v.shape) != tuple(sd[k].shape):
            raise SystemExit('shape mismatch %s: %s vs %s' % (k, v.shape, sd[k].shape))
        new[k] = v
    m.load_state_dict(new, strict=True)
    # the model's own attributes decide same_length / clamp_len at run time
    m.same_length = cfg['same_length']
    m.clamp_len = cfg['clamp_len']
    assert n_clusters == m.crit.n_clusters
    return m


def official_scores(m, ids, seg):
    out = []
    mems = tuple()
    with torch.no_grad():
        for a in range(0, len(ids) - 1, seg):
            b = min(a + seg, len(ids) - 1)
            data = torch.tensor(ids[a:b], dtype=torch.long)[:, None]
            target = torch.tensor(ids[a + 1:b + 1], dtype=torch.long)[:, None]
            ret = m(data, target, *mems)
            loss, mems = ret[0], tuple(ret[1:])
            out.extend((-loss[:, 0]).tolist())
    return out


CONFIGS = [
    ('plain-postln', dict(vocab_size=80, d_model=32, d_embed=32, n_head=4, d_head=8,
                          d_inner=64, n_layer=2, mem_len=8, untie_r=False,
                          tie_word_embeddings=False), 6),
    ('div2-3tails-samelen-clamp-preln', dict(vocab_size=200, d_model=32, d_embed=32,
                                             n_head=4, d_head=8, d_inner=48, n_layer=3,
                                             mem_len=10, same_length=True, clamp_len=6,
                                             pre_lnorm=True, untie_r=False, div_val=2,
                                             cutoffs=[50, 100, 150]), 7),
    ('dembed-tiedprojs-div1', dict(vocab_size=150, d_model=32, d_embed=48, n_head=4,
                                   d_head=8, d_inner=64, n_layer=2, mem_len=12,
                                   untie_r=False, div_val=1, cutoffs=[40, 90, 120],
                                   tie_projs=True), 5),
    ('div4-memlt-seg-samelen', dict(vocab_size=160, d_model=32, d_embed=64, n_head=2,
                                    d_head=16, d_inner=48, n_layer=2, mem_len=3,
                                    same_length=True, clamp_len=2, untie_r=False,
                                    div_val=4, cutoffs=[20, 60, 100],
                                    tie_projs=[False, True, False, True]), 6),
    ('memlen0-div2', dict(vocab_size=120, d_model=32, d_embed=32, n_head=4, d_head=8,
                          d_inner=64, n_layer=2, mem_len=0, untie_r=False, div_val=2,
                          cutoffs=[30, 60]), 5),
]


def main():
    if len(sys.argv) != 2:
        raise SystemExit('usage: check_ref_official.py OFFICIAL_PYTORCH_DIR')
    off = os.path.abspath(sys.argv[1])
    install_shims()
    sys.path.insert(0, os.path.join(off, 'utils'))
    sys.path.insert(0, off)
    import mem_transformer as mt  # noqa: E402

    torch.manual_seed(0)
    worst = 0.0
    for i, (name, over, seg) in enumerate(CONFIGS):
        cfg = make_config(**over)
        W = random_weights(cfg, 1000 + i)
        ids = np.random.default_rng(i).integers(0, cfg['vocab_size'], size=6 * seg + 3).tolist()
        tw = {k: torch.from_numpy(v) for k, v in W.items()}
        for order in ('official', 'hf'):
            ref = txl_ref.TransfoXLRef(tw, cfg, order)
            mine = [lp for _, _, lp in txl_ref.score_ids(ref, ids, seg)]
            om = build_official(mt, cfg, W, seg, reverse_clusters=(order == 'hf'))
            theirs = official_scores(om, ids, seg)
            assert len(mine) == len(theirs) == len(ids) - 1
            d = max(abs(a - b) for a, b in zip(mine, theirs))
            worst = max(worst, d)
            print('%-34s %-8s tokens %3d  max|diff| %.2e' % (name, order, len(mine), d))
    print('worst %.2e' % worst)
    # the comparison can fail: a wrong cluster order or a different memory
    # length must show up
    name, over, seg = CONFIGS[1]
    cfg = make_config(**over)
    W = random_weights(cfg, 1001)
    tw = {k: torch.from_numpy(v) for k, v in W.items()}
    ids = np.random.default_rng(1).integers(0, cfg['vocab_size'], size=6 * seg + 3).tolist()
    theirs = official_scores(build_official(mt, cfg, W, seg, False), ids, seg)
    ref = txl_ref.TransfoXLRef(tw, cfg, 'hf')
    d_order = max(abs(a - b) for a, (_, _, b) in zip(theirs, txl_ref.score_ids(ref, ids, seg)))
    ref = txl_ref.TransfoXLRef(tw, cfg, 'official')
    d_mem = max(abs(a - b) for a, (_, _, b) in
                zip(theirs, txl_ref.score_ids(ref, ids, seg, mem_len=cfg['mem_len'] - 1)))
    print('sanity: wrong cluster order %.2e, mem_len-1 %.2e (both must be large)'
          % (d_order, d_mem))
    ok = worst <= 1e-4 and d_order > 1e-2 and d_mem > 1e-3
    return 0 if ok else 1


if __name__ == '__main__':
    sys.exit(main())

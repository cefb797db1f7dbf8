# SPDX-License-Identifier: LGPL-2.1-or-later
"""Random Hugging Face style TransfoXL checkpoints for tests.

make_config(**overrides) -> dict with HF config.json keys
make_checkpoint(dir, config, seed, store_tied='emb'|'out'|'both', vocab=False)
    writes dir/config.json and dir/model.safetensors (and dir/vocab.txt when
    asked: vocab True or a list of words) and returns the full weight dict
    (every name, tied copies too) as numpy float32 arrays.
make_word_checkpoint(dir, seed, words=SMALL_WORDS) -> config
    a small two-layer checkpoint of a word vocabulary, vocab.txt included.

Tensor names and shapes follow HF's TransfoXLLMHeadModel:
    transformer.word_emb.emb_layers.{k}.weight   (n_k, d_k)   [div_val 1: one table (n_token, d_embed)]
    transformer.word_emb.emb_projs.{k}           (d_model, d_k) [div_val 1: only when d_embed != d_model]
    transformer.r_w_bias / r_r_bias              (n_head, d_head)  [not untie_r]
    transformer.layers.{l}.dec_attn.r_w_bias/r_r_bias               [untie_r]
    transformer.layers.{l}.dec_attn.qkv_net.weight (3*H*dh, d_model)
    transformer.layers.{l}.dec_attn.r_net.weight   (H*dh, d_model)
    transformer.layers.{l}.dec_attn.o_net.weight   (d_model, H*dh)
    transformer.layers.{l}.dec_attn.layer_norm.weight/.bias
    transformer.layers.{l}.pos_ff.CoreNet.0.weight/.bias (d_inner, d_model)/(d_inner)
    transformer.layers.{l}.pos_ff.CoreNet.3.weight/.bias (d_model, d_inner)/(d_model)
    transformer.layers.{l}.pos_ff.layer_norm.weight/.bias
    crit.out_layers.{k}.weight/.bias   (n_k, d_k)/(n_k)  [div_val 1: one layer over all n_token]
    crit.out_projs.{k}                 (d_model, d_k)  [div_val 1: (d_model, d_embed) per cluster,
                                                        absent when d_embed == d_model]
    crit.cluster_weight (C, d_embed), crit.cluster_bias (C)   [C = len(cutoffs) > 0]

Ties (HF tie_weights): tie_word_embeddings makes crit.out_layers.{k}.weight the
embedding table k; tie_projs[k] makes crit.out_projs.{k} the embedding
projection (emb_projs.0 when div_val == 1 and d_embed != d_model, emb_projs.k
when div_val > 1; no effect otherwise).  A tied pair is written once:
store_tied='emb' keeps the embedding's name (what HF's save_pretrained does),
'out' the output layer's name(s), 'both' writes every name.
"""
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from safetensors_io import write_safetensors  # noqa: E402

DEFAULTS = {
    'vocab_size': 100,
    'd_model': 32,
    'd_embed': 32,
    'n_head': 4,
    'd_head': 8,
    'd_inner': 64,
    'n_layer': 2,
    'mem_len': 8,
    'clamp_len': 0,
    'same_length': False,
    'pre_lnorm': False,
    'untie_r': True,
    'div_val': 1,
    'cutoffs': [],
    'tie_projs': None,          # default: [False] + [True] * len(cutoffs)
    'tie_word_embeddings': True,
    'layer_norm_epsilon': 1e-5,
}


def make_config(**overrides):
    """HF config.json dictionary; unknown keys are kept as given."""
    cfg = dict(DEFAULTS)
    cfg.update(overrides)
    cfg['cutoffs'] = [int(c) for c in cfg['cutoffs']]
    n = len(cfg['cutoffs']) + 1
    if cfg['tie_projs'] is None:
        cfg['tie_projs'] = [False] + [True] * (n - 1)
    elif isinstance(cfg['tie_projs'], bool):
        cfg['tie_projs'] = [cfg['tie_projs']] * n
    cfg['tie_projs'] = [bool(x) for x in cfg['tie_projs']]
    if len(cfg['tie_projs']) != n:
        raise ValueError('tie_projs needs len(cutoffs)+1 entries')
    # the remaining keys a real HF config.json carries
    cfg.setdefault('model_type', 'transfo-xl')
    cfg.setdefault('architectures', ['TransfoXLLMHeadModel'])
    cfg.setdefault('adaptive', True)
    cfg.setdefault('attn_type', 0)
    cfg.setdefault('sample_softmax', -1)
    # no 'proj_share_all_but_first': save_pretrained does not write it (the
    # constructor turns it into tie_projs); pass it as an override to get it
    cfg.setdefault('dropout', 0.1)
    cfg.setdefault('dropatt', 0.0)
    cfg.setdefault('init', 'normal')
    cfg.setdefault('init_range', 0.01)
    cfg.setdefault('init_std', 0.02)
    cfg.setdefault('proj_init_std', 0.01)
    cfg.setdefault('eos_token_id', 0)
    return cfg


def _cluster_dims(cfg):
    bounds = [0] + list(cfg['cutoffs']) + [cfg['vocab_size']]
    out = []
    for k in range(len(bounds) - 1):
        out.append((bounds[k], bounds[k + 1], cfg['d_embed'] // (cfg['div_val'] ** k)))
    return out


def tie_groups(cfg):
    """Lists of names that are one parameter under the config's ties."""
    groups = []
    div_val, d_model, d_embed = cfg['div_val'], cfg['d_model'], cfg['d_embed']
    n = len(cfg['cutoffs']) + 1
    if cfg.get('tie_word_embeddings', True):
        for k in range(1 if div_val == 1 else n):
            groups.append(['transformer.word_emb.emb_layers.%d.weight' % k,
                           'crit.out_layers.%d.weight' % k])
    if div_val == 1 and d_model != d_embed:
        g = ['transformer.word_emb.emb_projs.0'] + [
            'crit.out_projs.%d' % k for k in range(n) if cfg['tie_projs'][k]]
        if len(g) > 1:
            groups.append(g)
    elif div_val != 1:
        for k in range(n):
            if cfg['tie_projs'][k]:
                groups.append(['transformer.word_emb.emb_projs.%d' % k,
                               'crit.out_projs.%d' % k])
    return groups


def random_weights(cfg, seed):
    """Every tensor, tied copies included (identical arrays)."""
    rng = np.random.default_rng(seed)
    d_model, d_embed = cfg['d_model'], cfg['d_embed']
    H, dh, d_inner = cfg['n_head'], cfg['d_head'], cfg['d_inner']
    HD = H * dh
    div_val = cfg['div_val']
    n_clusters = len(cfg['cutoffs'])
    W = {}

    def normal(shape, std):
        return (rng.standard_normal(shape) * std).astype(np.float32)

    def lin(rows, cols, gain=0.9):
        return normal((rows, cols), gain / np.sqrt(cols))

    # adaptive input: after the sqrt(d_model) scale entries are about 1
    dims = _cluster_dims(cfg)
    if div_val == 1:
        W['transformer.word_emb.emb_layers.0.weight'] = normal(
            (cfg['vocab_size'], d_embed), 1.0 / np.sqrt(d_model))
        if d_model != d_embed:
            W['transformer.word_emb.emb_projs.0'] = lin(d_model, d_embed, 1.0) * np.float32(
                np.sqrt(d_embed / d_model))
    else:
        for k, (lo, hi, dk) in enumerate(dims):
            W['transformer.word_emb.emb_layers.%d.weight' % k] = normal(
                (hi - lo, dk), 1.0 / np.sqrt(d_model))
            W['transformer.word_emb.emb_projs.%d' % k] = normal(
                (d_model, dk), 1.0 / np.sqrt(dk)) * np.float32(np.sqrt(dk / d_model) * 1.5)
    # relative position biases: clearly nonzero
    if cfg['untie_r']:
        for l in range(cfg['n_layer']):
            p = 'transformer.layers.%d.dec_attn.' % l
            W[p + 'r_w_bias'] = normal((H, dh), 0.3)
            W[p + 'r_r_bias'] = normal((H, dh), 0.3)
    else:
        W['transformer.r_w_bias'] = normal((H, dh), 0.3)
        W['transformer.r_r_bias'] = normal((H, dh), 0.3)
    for l in range(cfg['n_layer']):
        p = 'transformer.layers.%d.' % l
        W[p + 'dec_attn.qkv_net.weight'] = lin(3 * HD, d_model, 1.0)
        W[p + 'dec_attn.r_net.weight'] = lin(HD, d_model, 1.0)
        W[p + 'dec_attn.o_net.weight'] = lin(d_model, HD, 0.8)
        for ln in ('dec_attn.layer_norm', 'pos_ff.layer_norm'):
            W[p + ln + '.weight'] = (1.0 + normal((d_model,), 0.1)).astype(np.float32)
            W[p + ln + '.bias'] = normal((d_model,), 0.05)
        W[p + 'pos_ff.CoreNet.0.weight'] = lin(d_inner, d_model, 1.2)
        W[p + 'pos_ff.CoreNet.0.bias'] = normal((d_inner,), 0.1)
        W[p + 'pos_ff.CoreNet.3.weight'] = lin(d_model, d_inner, 0.8)
        W[p + 'pos_ff.CoreNet.3.bias'] = normal((d_model,), 0.05)
    # output side
    if div_val == 1:
        W['crit.out_layers.0.weight'] = normal((cfg['vocab_size'], d_embed),
                                               1.5 / np.sqrt(d_embed))
        W['crit.out_layers.0.bias'] = normal((cfg['vocab_size'],), 0.2)
        if d_model != d_embed:
            for k in range(n_clusters + 1):
                W['crit.out_projs.%d' % k] = lin(d_embed, d_model, 1.0).T.copy()
    else:
        for k, (lo, hi, dk) in enumerate(dims):
            W['crit.out_layers.%d.weight' % k] = normal((hi - lo, dk), 1.5 / np.sqrt(dk))
            W['crit.out_layers.%d.bias' % k] = normal((hi - lo,), 0.2)
            W['crit.out_projs.%d' % k] = normal((d_model, dk), 1.0 / np.sqrt(d_model))
    if n_clusters > 0:
        W['crit.cluster_weight'] = normal((n_clusters, d_embed), 1.5 / np.sqrt(d_embed))
        W['crit.cluster_bias'] = normal((n_clusters,), 0.3)
    # apply ties: the whole group takes the embedding's values
    for g in tie_groups(cfg):
        for name in g[1:]:
            W[name] = W[g[0]]
    return W


def make_checkpoint(path, config, seed=0, store_tied='emb', vocab=False):
    if store_tied not in ('emb', 'out', 'both'):
        raise ValueError('store_tied must be emb, out or both')
    os.makedirs(path, exist_ok=True)
    W = random_weights(config, seed)
    stored = dict(W)
    for g in tie_groups(config):
        drop = g[1:] if store_tied == 'emb' else g[:1] if store_tied == 'out' else []
        for name in drop:
            stored.pop(name, None)
    write_safetensors(os.path.join(path, 'model.safetensors'), stored,
                      metadata={'format': 'pt'})
    with open(os.path.join(path, 'config.json'), 'w') as f:
        json.dump(config, f, indent=2, sort_keys=True)
    if vocab:
        # vocab: True (w2, w3, ...) or the words after <eos> and <unk>
        words = list(vocab) if isinstance(vocab, (list, tuple)) else \
            ['w%d' % i for i in range(2, config['vocab_size'])]
        with open(os.path.join(path, 'vocab.txt'), 'w') as f:
            f.write('\n'.join(['<eos>', '<unk>'] + words) + '\n')
    return W


SMALL_WORDS = ['the', 'cat', 'sat', 'on', 'mat', 'a', 'dog', 'ran']


def make_word_checkpoint(path, seed, words=SMALL_WORDS):
    """A small two-layer checkpoint of a word vocabulary (<eos>, <unk>, then
    words) in path, vocab.txt included: its config."""
    cfg = make_config(vocab_size=len(words) + 2, d_model=32, d_embed=32, n_head=4, d_head=8,
                      d_inner=64, n_layer=2, mem_len=8, tgt_len=4, same_length=False)
    make_checkpoint(path, cfg, seed=seed, vocab=words)
    return cfg

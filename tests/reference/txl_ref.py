# SPDX-License-Identifier: LGPL-2.1-or-later
"""Independent float32 PyTorch reference of Transformer-XL inference.

Written from the paper (Dai et al. 2019, "Transformer-XL: Attentive Language
Models Beyond a Fixed-Length Context") with the conventions of the Hugging
Face ``TransfoXLLMHeadModel`` checkpoints: weights are looked up by their
Hugging Face names and the configuration uses the keys of HF's config.json.

Everything is computed with whole-segment tensor operations; the only Python
loops run over layers, adaptive clusters and segments.

Public entry points
    TransfoXLRef(weights, config, cluster_order='hf')
    load_checkpoint(dir, cluster_order='hf')      -> TransfoXLRef
    score_ids(model, ids, segment, ...)           -> [(pos, token, logprob)]
    stream_logprobs(model, ids, segment, ...)     -> (len(ids), n_token)
    next_token_logprobs(model, ids, segment, ...) -> (n_token,)

Stream semantics (as in the official evaluation): inputs t0..t(N-1) predict
t1..tN, the next segment's inputs are tN..t(2N-1), and so on; the last
segment may be shorter.  The memory of each layer holds that layer's *input*
hidden states for the last ``mem_len`` positions; it starts empty, as in the
official release (``hf_zero_mems=True`` instead starts from mem_len zero
vectors, as Hugging Face's ``init_mems`` does).  See docs/reference.md.
"""
import json
import math
import os

import torch
import torch.nn.functional as F

__all__ = ['TransfoXLRef', 'load_checkpoint', 'resolve_weights', 'score_ids',
           'stream_logprobs', 'next_token_logprobs']


def _cfg_get(cfg, key, default=None):
    v = cfg.get(key, default)
    return default if v is None else v


def resolve_weights(weights, config):
    """Returns a dict with every tensor the model uses, filling tied tensors
    from whichever side of the tie the checkpoint stored."""
    w = {k: torch.as_tensor(v).to(torch.float32) for k, v in weights.items()}
    cutoffs = list(_cfg_get(config, 'cutoffs', []))
    n_clusters = len(cutoffs) + 1
    div_val = int(_cfg_get(config, 'div_val', 1))
    d_model = int(config['d_model'])
    d_embed = int(_cfg_get(config, 'd_embed', d_model))
    tie_w = bool(_cfg_get(config, 'tie_word_embeddings',
                          _cfg_get(config, 'tie_weight', True)))
    tie_projs = list(_cfg_get(config, 'tie_projs', [False] * n_clusters))
    tie_projs = (tie_projs + [False] * n_clusters)[:n_clusters]

    def link(a, b):
        # a and b are the same parameter: copy whichever exists
        if a in w and b not in w:
            w[b] = w[a]
        elif b in w and a not in w:
            w[a] = w[b]

    n_tables = 1 if div_val == 1 else n_clusters
    if tie_w:
        for k in range(n_tables):
            link('transformer.word_emb.emb_layers.%d.weight' % k,
                 'crit.out_layers.%d.weight' % k)
    for k in range(n_clusters):
        if not tie_projs[k]:
            continue
        if div_val == 1 and d_model != d_embed:
            link('transformer.word_emb.emb_projs.0', 'crit.out_projs.%d' % k)
        elif div_val != 1:
            link('transformer.word_emb.emb_projs.%d' % k, 'crit.out_projs.%d' % k)
    # div_val == 1 with several projections tied to emb_projs.0: any stored
    # copy defines all of them
    if div_val == 1 and d_model != d_embed:
        tied = [k for k in range(n_clusters) if tie_projs[k]]
        names = ['crit.out_projs.%d' % k for k in tied]
        have = [n for n in names if n in w]
        if have:
            for n in names + ['transformer.word_emb.emb_projs.0']:
                w.setdefault(n, w[have[0]])
    return w


class TransfoXLRef:
    """Transformer-XL with relative positional attention and an adaptive
    (projected) embedding and log-softmax.  ``cluster_order`` selects which
    head column holds a tail cluster's log-probability: 'hf' (cluster i,
    1-based, at column cutoffs[0] + i - 1) or 'official' (column -i)."""

    def __init__(self, weights, config, cluster_order='hf'):
        if cluster_order not in ('hf', 'official'):
            raise ValueError('cluster_order must be hf or official')
        c = config
        self.cfg = dict(config)
        self.n_token = int(c['vocab_size'])
        self.d_model = int(c['d_model'])
        self.d_embed = int(_cfg_get(c, 'd_embed', self.d_model))
        self.n_head = int(c['n_head'])
        self.d_head = int(c['d_head'])
        self.d_inner = int(c['d_inner'])
        self.n_layer = int(c['n_layer'])
        self.mem_len = int(_cfg_get(c, 'mem_len', 0))
        self.clamp_len = int(_cfg_get(c, 'clamp_len', 0))
        self.same_length = bool(_cfg_get(c, 'same_length', False))
        self.pre_lnorm = bool(_cfg_get(c, 'pre_lnorm', False))
        self.untie_r = bool(_cfg_get(c, 'untie_r', True))
        self.div_val = int(_cfg_get(c, 'div_val', 1))
        self.eps = float(_cfg_get(c, 'layer_norm_epsilon', 1e-5))
        self.cutoffs = [int(x) for x in _cfg_get(c, 'cutoffs', [])]
        self.bounds = [0] + self.cutoffs + [self.n_token]
        self.n_tail = len(self.cutoffs)
        self.cluster_order = cluster_order
        self.w = resolve_weights(weights, config)
        self._check_shapes()

    # ---------------------------------------------------------------- util
    def _p(self, name):
        try:
            return self.w[name]
        except KeyError:
            raise KeyError('reference: checkpoint lacks tensor %s' % name)

    def _check_shapes(self):
        HD = self.n_head * self.d_head
        expect = {}
        for l in range(self.n_layer):
            p = 'transformer.layers.%d.' % l
            expect[p + 'dec_attn.qkv_net.weight'] = (3 * HD, self.d_model)
            expect[p + 'dec_attn.r_net.weight'] = (HD, self.d_model)
            expect[p + 'dec_attn.o_net.weight'] = (self.d_model, HD)
            expect[p + 'pos_ff.CoreNet.0.weight'] = (self.d_inner, self.d_model)
            expect[p + 'pos_ff.CoreNet.3.weight'] = (self.d_model, self.d_inner)
        for name, shape in expect.items():
            got = tuple(self._p(name).shape)
            if got != shape:
                raise ValueError('%s: shape %s, expected %s' % (name, got, shape))

    def cluster_dims(self, k):
        return self.d_embed // (self.div_val ** k)

    def _r_bias(self, layer):
        if self.untie_r:
            p = 'transformer.layers.%d.dec_attn.' % layer
            return self._p(p + 'r_w_bias'), self._p(p + 'r_r_bias')
        return self._p('transformer.r_w_bias'), self._p('transformer.r_r_bias')

    # ---------------------------------------------------------- embedding
    def embed(self, ids):
        """ids: LongTensor (q,) -> (q, d_model), scaled by sqrt(d_model)."""
        if self.div_val == 1:
            e = self._p('transformer.word_emb.emb_layers.0.weight')[ids]
            if self.d_model != self.d_embed:
                e = e @ self._p('transformer.word_emb.emb_projs.0').t()
        else:
            e = torch.zeros(ids.shape[0], self.d_model)
            for k in range(len(self.bounds) - 1):
                lo, hi = self.bounds[k], self.bounds[k + 1]
                sel = (ids >= lo) & (ids < hi)
                if not bool(sel.any()):
                    continue
                table = self._p('transformer.word_emb.emb_layers.%d.weight' % k)
                proj = self._p('transformer.word_emb.emb_projs.%d' % k)
                e[sel] = table[ids[sel] - lo] @ proj.t()
        return e * math.sqrt(self.d_model)

    # ---------------------------------------------------------- positions
    def rel_pos_emb(self, klen, clamp_len):
        """Rows for distances klen-1 .. 0 (capped at clamp_len when > 0):
        all sines, then all cosines."""
        pos = torch.arange(klen - 1, -1, -1.0)
        if clamp_len > 0:
            pos = pos.clamp(max=float(clamp_len))
        inv_freq = 1.0 / (10000.0 ** (torch.arange(0.0, self.d_model, 2.0)
                                      / self.d_model))
        ang = pos[:, None] * inv_freq[None, :]
        return torch.cat([ang.sin(), ang.cos()], dim=-1)

    @staticmethod
    def rel_shift(x):
        """x: (q, k, ...) where column c holds relative-position row c
        (distance k-1-c).  Returns y with y[i, j] = x[i, j + q - 1 - i], i.e.
        the entry for distance (k - q + i) - j, via the pad-and-reshape trick
        (entries that would come from the right of the valid region are
        garbage and must be masked)."""
        q, k = x.shape[0], x.shape[1]
        pad = torch.zeros((q, 1) + tuple(x.shape[2:]), dtype=x.dtype)
        xp = torch.cat([pad, x], dim=1)
        xp = xp.view((k + 1, q) + tuple(x.shape[2:]))
        return xp[1:].reshape(x.shape)

    # ------------------------------------------------------------- layers
    def _ln(self, x, name):
        return F.layer_norm(x, (self.d_model,), self._p(name + '.weight'),
                            self._p(name + '.bias'), self.eps)

    def attention(self, layer, h, mem, pos_emb, mask):
        """h: (q, d_model) layer input; mem: (m, d_model) memory of this layer.
        Returns the attention sub-layer's output (residual and norm applied)."""
        p = 'transformer.layers.%d.dec_attn.' % layer
        q = h.shape[0]
        cat = torch.cat([mem, h], dim=0)
        k = cat.shape[0]
        x = self._ln(cat, p + 'layer_norm') if self.pre_lnorm else cat
        heads = x @ self._p(p + 'qkv_net.weight').t()
        HD = self.n_head * self.d_head
        wq = heads[-q:, :HD].reshape(q, self.n_head, self.d_head)
        wk = heads[:, HD:2 * HD].reshape(k, self.n_head, self.d_head)
        wv = heads[:, 2 * HD:].reshape(k, self.n_head, self.d_head)
        rk = (pos_emb @ self._p(p + 'r_net.weight').t()).reshape(
            k, self.n_head, self.d_head)
        r_w, r_r = self._r_bias(layer)
        ac = torch.einsum('ind,jnd->ijn', wq + r_w, wk)
        bd = self.rel_shift(torch.einsum('ind,jnd->ijn', wq + r_r, rk))
        score = (ac + bd) * (1.0 / math.sqrt(self.d_head))
        score = score.masked_fill(mask[:, :, None], float('-inf'))
        prob = torch.softmax(score, dim=1)
        vec = torch.einsum('ijn,jnd->ind', prob, wv).reshape(q, HD)
        out = vec @ self._p(p + 'o_net.weight').t()
        if self.pre_lnorm:
            return h + out
        return self._ln(h + out, p + 'layer_norm')

    def feed_forward(self, layer, h):
        p = 'transformer.layers.%d.pos_ff.' % layer
        x = self._ln(h, p + 'layer_norm') if self.pre_lnorm else h
        y = F.linear(x, self._p(p + 'CoreNet.0.weight'), self._p(p + 'CoreNet.0.bias'))
        y = F.linear(torch.relu(y), self._p(p + 'CoreNet.3.weight'),
                     self._p(p + 'CoreNet.3.bias'))
        if self.pre_lnorm:
            return h + y
        return self._ln(h + y, p + 'layer_norm')

    # ------------------------------------------------------------ segment
    def init_mems(self, zero_rows=0):
        """Empty memory (the official release).  zero_rows > 0 reproduces
        Hugging Face's init_mems, which starts with mem_len zero vectors."""
        return [torch.zeros(zero_rows, self.d_model) for _ in range(self.n_layer)]

    def _settings(self, mem_len, same_length, clamp_len):
        mem_len = self.mem_len if mem_len is None else int(mem_len)
        same_length = self.same_length if same_length is None else bool(same_length)
        clamp_len = self.clamp_len if clamp_len is None else int(clamp_len)
        return mem_len, same_length, clamp_len

    @staticmethod
    def attn_mask(qlen, mlen, mem_len, same_length):
        """True where query i (row) may NOT see key j (column); keys are
        [memory (mlen); segment (qlen)].  same_length follows the official
        rule: mask_len = klen - mem_len, shift = qlen - mask_len if
        mask_len > 0 else qlen, masked when j > i + mlen or j <= i - shift."""
        klen = mlen + qlen
        i = torch.arange(qlen)[:, None]
        j = torch.arange(klen)[None, :]
        mask = j > i + mlen
        if same_length:
            mask_len = klen - mem_len
            shift = qlen - mask_len if mask_len > 0 else qlen
            mask = mask | (j <= i - shift)
        return mask

    def forward(self, ids, mems, mem_len=None, same_length=None, clamp_len=None,
                grad=False):
        """One segment.  ids: sequence of q token ids.  mems: list (n_layer)
        of (m, d_model) tensors.  Returns (hidden (q, d_model), new_mems).
        grad=True records the graph for autograd (training); the new memory
        is detached, as in the paper: no gradient flows into it."""
        mem_len, same_length, clamp_len = self._settings(mem_len, same_length,
                                                         clamp_len)
        ids = torch.as_tensor(ids, dtype=torch.long).reshape(-1)
        if ids.numel() == 0:
            raise ValueError('empty segment')
        if int(ids.min()) < 0 or int(ids.max()) >= self.n_token:
            raise ValueError('token id out of range')
        q = ids.shape[0]
        mlen = mems[0].shape[0]
        k = mlen + q
        mask = self.attn_mask(q, mlen, mem_len, same_length)
        pos_emb = self.rel_pos_emb(k, clamp_len)
        h = self.embed(ids)
        new_mems = []
        with torch.set_grad_enabled(grad):
            for l in range(self.n_layer):
                # memory keeps each layer's input, last mem_len positions
                if mem_len > 0:
                    new_mems.append(torch.cat([mems[l], h], 0)[max(0, k - mem_len):]
                                    .detach().clone())
                else:
                    new_mems.append(torch.zeros(0, self.d_model))
                h = self.attention(l, h, mems[l], pos_emb, mask)
                h = self.feed_forward(l, h)
        return h, new_mems

    # ------------------------------------------------------------ softmax
    def _out_table(self, k):
        """(weight, bias) of cluster k's output rows."""
        if self.div_val == 1:
            lo, hi = self.bounds[k], self.bounds[k + 1]
            return (self._p('crit.out_layers.0.weight')[lo:hi],
                    self._p('crit.out_layers.0.bias')[lo:hi])
        return (self._p('crit.out_layers.%d.weight' % k),
                self._p('crit.out_layers.%d.bias' % k))

    def _out_proj(self, k):
        if self.div_val == 1 and self.d_model == self.d_embed:
            return None
        return self._p('crit.out_projs.%d' % k)

    def _logits(self, hidden, weight, bias, proj):
        x = hidden if proj is None else hidden @ proj
        return F.linear(x, weight, bias)

    def head_column(self, i):
        """Head column of tail cluster i (1-based)."""
        if self.cluster_order == 'hf':
            return self.cutoffs[0] + i - 1
        return self.cutoffs[0] + self.n_tail - i  # column -i

    def log_probs(self, hidden, grad=False):
        """hidden: (q, d_model) -> (q, n_token) log-probabilities."""
        with torch.set_grad_enabled(grad):
            if self.n_tail == 0:
                w, b = self._out_table(0)
                return torch.log_softmax(self._logits(hidden, w, b, self._out_proj(0)), -1)
            w0, b0 = self._out_table(0)
            hw = torch.cat([w0, self._p('crit.cluster_weight')], 0)
            hb = torch.cat([b0, self._p('crit.cluster_bias')], 0)
            head = torch.log_softmax(self._logits(hidden, hw, hb, self._out_proj(0)), -1)
            parts = [head[:, :self.cutoffs[0]]]
            for i in range(1, self.n_tail + 1):
                w, b = self._out_table(i)
                tail = torch.log_softmax(self._logits(hidden, w, b, self._out_proj(i)), -1)
                parts.append(head[:, self.head_column(i), None] + tail)
            return torch.cat(parts, dim=1)

    def target_logprobs(self, hidden, targets, grad=False):
        t = torch.as_tensor(targets, dtype=torch.long).reshape(-1)
        return self.log_probs(hidden, grad).gather(1, t[:, None])[:, 0]


# ------------------------------------------------------------------ loading
def load_checkpoint(path, cluster_order='hf'):
    """Reads an HF-style directory (config.json + model.safetensors)."""
    from safetensors_io import read_safetensors  # tests/reference on sys.path
    with open(os.path.join(path, 'config.json')) as f:
        config = json.load(f)
    raw = read_safetensors(os.path.join(path, 'model.safetensors'))
    weights = {k: torch.from_numpy(v.astype('float32')) for k, v in raw.items()}
    return TransfoXLRef(weights, config, cluster_order)


# ---------------------------------------------------------------- streaming
def _segments(n_inputs, segment):
    if segment < 1:
        raise ValueError('segment must be >= 1')
    s = 0
    while s < n_inputs:
        yield s, min(s + segment, n_inputs)
        s += segment


def _first_mems(model, mem_len, hf_zero_mems):
    ml = model.mem_len if mem_len is None else int(mem_len)
    return model.init_mems(ml if (hf_zero_mems and ml > 0) else 0)


def score_ids(model, ids, segment, mem_len=None, same_length=None, clamp_len=None,
              hf_zero_mems=False):
    """Log-prob of every token from the second on: [(pos, token, logprob)],
    pos being the token's 0-based index in the stream (so the second token
    has pos 1).  Inputs t0..t(N-1) predict t1..tN, then the next N, ...
    hf_zero_mems: start from mem_len zero vectors as HF's init_mems does
    (default: an empty memory, as the official release and libtxl do)."""
    ids = [int(x) for x in ids]
    out = []
    mems = _first_mems(model, mem_len, hf_zero_mems)
    for a, b in _segments(len(ids) - 1, segment):
        h, mems = model.forward(ids[a:b], mems, mem_len, same_length, clamp_len)
        lp = model.target_logprobs(h, ids[a + 1:b + 1])
        for j, v in enumerate(lp.tolist()):
            out.append((a + 1 + j, ids[a + 1 + j], v))
    return out


def stream_logprobs(model, ids, segment, mem_len=None, same_length=None,
                    clamp_len=None, hf_zero_mems=False):
    """Every token of ids is an input (segments of `segment` from t0);
    row t is the log-distribution of the token following ids[t]."""
    ids = [int(x) for x in ids]
    rows = []
    mems = _first_mems(model, mem_len, hf_zero_mems)
    for a, b in _segments(len(ids), segment):
        h, mems = model.forward(ids[a:b], mems, mem_len, same_length, clamp_len)
        rows.append(model.log_probs(h))
    return torch.cat(rows, 0)


def next_token_logprobs(model, ids, segment, mem_len=None, same_length=None,
                        clamp_len=None):
    """Log-distribution (n_token,) of the token after the whole stream."""
    return stream_logprobs(model, ids, segment, mem_len, same_length, clamp_len)[-1]

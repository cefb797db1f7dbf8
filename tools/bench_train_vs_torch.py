# SPDX-License-Identifier: LGPL-2.1-or-later
"""Training throughput of `txl train` against PyTorch on the same
configuration, batch and thread count, measured in one run.

    /usr/bin/python3 tools/bench_train_vs_torch.py [--txl build/tools/txl]
        [--steps 40] [--rounds 2]

The PyTorch side is a batched Transformer-XL training step written for this
benchmark (the test reference, tests/reference/txl_ref.py, runs one stream at a
time, which would be an unfair comparison): pre-LN, relative attention over
[memory; segment] for B streams at once, tied softmax, dropout, AdamW and
gradient clipping, as `txl train` does.  Before timing, the script checks
that this model computes the same loss as the reference on the same
weights (dropout off), so both sides do the same work.  PyTorch runs at its
best setting of torch threads x OPENBLAS_NUM_THREADS (each 1 or 2), each in
its own process; txl at its default (every core)."""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'reference'))

CFG = dict(n_token=256, d_model=256, n_head=8, d_head=32, d_inner=1024,
           n_layer=4, mem_len=64, seg=64, batch=16, dropout=0.1)


def torch_model(cfg, seed):
    import torch
    import torch.nn.functional as F

    class Layer(torch.nn.Module):
        def __init__(s):
            super().__init__()
            d, H, dh, di = cfg['d_model'], cfg['n_head'], cfg['d_head'], cfg['d_inner']
            s.qkv = torch.nn.Linear(d, 3 * H * dh, bias=False)
            s.r = torch.nn.Linear(d, H * dh, bias=False)
            s.o = torch.nn.Linear(H * dh, d, bias=False)
            s.ln1 = torch.nn.LayerNorm(d)
            s.ln2 = torch.nn.LayerNorm(d)
            s.ff1 = torch.nn.Linear(d, di)
            s.ff2 = torch.nn.Linear(di, d)
            s.rw = torch.nn.Parameter(torch.randn(H, dh) * 0.02)
            s.rr = torch.nn.Parameter(torch.randn(H, dh) * 0.02)

        def forward(s, h, mem, pos, p):
            # h (T, B, d), mem (M, B, d), pos (K, d)
            T, B, d = h.shape
            H, dh = cfg['n_head'], cfg['d_head']
            cat = torch.cat([mem, h], 0)
            K = cat.shape[0]
            w = s.qkv(s.ln1(cat)).view(K, B, 3, H, dh)
            q, k, v = w[-T:, :, 0], w[:, :, 1], w[:, :, 2]
            rk = s.r(pos).view(K, H, dh)
            ac = torch.einsum('ibnd,jbnd->bnij', q + s.rw, k)
            bd = torch.einsum('ibnd,jnd->bnij', q + s.rr, rk)
            # relative shift: row i reads column j + T - 1 - i
            bd = F.pad(bd, (1, 0)).view(B, H, K + 1, T)[:, :, 1:].view(B, H, T, K)
            score = (ac + bd) / math.sqrt(dh)
            mask = torch.ones(T, K, dtype=torch.bool).triu(1 + K - T)
            prob = torch.softmax(score.masked_fill(mask, float('-inf')), -1)  # dropatt 0, as txl train's default
            a = torch.einsum('bnij,jbnd->ibnd', prob, v).reshape(T, B, H * dh)
            h = h + F.dropout(s.o(a), p, s.training)
            f = F.dropout(torch.relu(s.ff1(s.ln2(h))), p, s.training)
            return h + F.dropout(s.ff2(f), p, s.training)

    class Model(torch.nn.Module):
        def __init__(s):
            super().__init__()
            torch.manual_seed(seed)
            s.emb = torch.nn.Embedding(cfg['n_token'], cfg['d_model'])
            s.layers = torch.nn.ModuleList([Layer() for _ in range(cfg['n_layer'])])
            s.out_b = torch.nn.Parameter(torch.zeros(cfg['n_token']))
            d = cfg['d_model']
            s.register_buffer('inv_freq', 1 / (10000 ** (torch.arange(0.0, d, 2.0) / d)))

        def forward(s, x, y, mems, p):
            T, B = x.shape
            K = mems[0].shape[0] + T
            pos_seq = torch.arange(K - 1, -1, -1.0)
            sin = torch.outer(pos_seq, s.inv_freq)
            pos = F.dropout(torch.cat([sin.sin(), sin.cos()], -1), p, s.training)
            h = F.dropout(s.emb(x) * math.sqrt(cfg['d_model']), p, s.training)
            new = []
            for l, layer in enumerate(s.layers):
                new.append(torch.cat([mems[l], h], 0)[-cfg['mem_len']:].detach())
                h = layer(h, mems[l], pos, p)
            h = F.dropout(h, p, s.training)
            logits = F.linear(h, s.emb.weight, s.out_b)
            return F.cross_entropy(logits.view(-1, cfg['n_token']), y.reshape(-1)), new

    return Model()


def check_against_reference():
    """Same weights, same ids, float64: the batched model's loss equals the
    test reference's (one stream at a time) to 1e-9."""
    import torch
    import txl_ref
    cfg = dict(CFG, d_model=32, n_head=2, d_head=16, d_inner=64, n_layer=2,
               mem_len=6, seg=5, batch=3)
    torch.set_default_dtype(torch.float64)  # only real differences show
    m = torch_model(cfg, 0)
    m.eval()
    with torch.no_grad():
        for l in m.layers:
            l.ln1.weight.add_(torch.randn(32, dtype=torch.float64) * 0.1)
            l.ff1.bias.add_(torch.randn(64, dtype=torch.float64) * 0.1)
    w = {'transformer.word_emb.emb_layers.0.weight': m.emb.weight,
         'crit.out_layers.0.bias': m.out_b}
    for i, l in enumerate(m.layers):
        p = 'transformer.layers.%d.' % i
        w.update({p + 'dec_attn.qkv_net.weight': l.qkv.weight, p + 'dec_attn.r_net.weight': l.r.weight,
                  p + 'dec_attn.o_net.weight': l.o.weight, p + 'dec_attn.layer_norm.weight': l.ln1.weight,
                  p + 'dec_attn.layer_norm.bias': l.ln1.bias, p + 'pos_ff.layer_norm.weight': l.ln2.weight,
                  p + 'pos_ff.layer_norm.bias': l.ln2.bias, p + 'pos_ff.CoreNet.0.weight': l.ff1.weight,
                  p + 'pos_ff.CoreNet.0.bias': l.ff1.bias, p + 'pos_ff.CoreNet.3.weight': l.ff2.weight,
                  p + 'pos_ff.CoreNet.3.bias': l.ff2.bias, p + 'dec_attn.r_w_bias': l.rw,
                  p + 'dec_attn.r_r_bias': l.rr})
    w = {k: v.detach().clone() for k, v in w.items()}
    hf = dict(vocab_size=256, d_model=32, d_embed=32, n_head=2, d_head=16, d_inner=64, n_layer=2,
              mem_len=6, clamp_len=0, same_length=False, pre_lnorm=True, untie_r=True, div_val=1,
              cutoffs=[], tie_word_embeddings=True, layer_norm_epsilon=1e-5)
    ref = txl_ref.TransfoXLRef(w, hf)
    # the constructor rounds to float32: put the float64 originals back
    emb = w['transformer.word_emb.emb_layers.0.weight']
    ref.w = {k: w.get(k, emb if k == 'crit.out_layers.0.weight' else v.double())
             for k, v in ref.w.items()}
    g = torch.Generator().manual_seed(1)
    data = torch.randint(0, 256, (3, 3 * 5 + 1), generator=g)
    mems = [torch.zeros(0, 3, 32, dtype=torch.float64) for _ in range(2)]
    rmems = [[torch.zeros(0, 32, dtype=torch.float64) for _ in range(2)] for _ in range(3)]
    worst = 0.0
    with torch.no_grad():
        for s in range(3):
            x = data[:, s * 5:(s + 1) * 5].t()
            y = data[:, s * 5 + 1:(s + 1) * 5 + 1].t()
            loss, mems = m(x, y, mems, 0.0)
            lps = []
            for b in range(3):
                h, rmems[b] = ref.forward(x[:, b].tolist(), rmems[b])
                lps.append(ref.target_logprobs(h, y[:, b].tolist()))
            worst = max(worst, abs(float(loss) + float(torch.cat(lps).mean())))
    torch.set_default_dtype(torch.float32)
    if worst > 1e-9:
        sys.exit('benchmark model disagrees with the reference: %g' % worst)
    return worst


def torch_worker(threads, steps):
    import torch
    torch.set_num_threads(threads)
    cfg = CFG
    m = torch_model(cfg, 0)
    m.train()
    opt = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.01)
    B, T = cfg['batch'], cfg['seg']
    g = torch.Generator().manual_seed(0)
    mems = [torch.zeros(0, B, cfg['d_model']) for _ in range(cfg['n_layer'])]
    t0 = None
    for i in range(steps + 3):
        if i == 3:
            t0 = time.perf_counter()
        data = torch.randint(0, cfg['n_token'], (T + 1, B), generator=g)
        loss, mems = m(data[:-1], data[1:], mems, cfg['dropout'])
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(m.parameters(), 0.25)
        opt.step()
    print(json.dumps({'tps': steps * B * T / (time.perf_counter() - t0)}))


def txl_tokens_per_s(txl, steps, data):
    c = CFG
    with tempfile.TemporaryDirectory() as tmp:
        args = [txl, 'train', '-o', os.path.join(tmp, 'm.gguf'), '--layers', str(c['n_layer']),
                '--d-model', str(c['d_model']), '--heads', str(c['n_head']), '--d-head', str(c['d_head']),
                '--d-inner', str(c['d_inner']), '--mem-len', str(c['mem_len']), '--segment', str(c['seg']),
                '--batch', str(c['batch']), '--dropout', str(c['dropout']), '--steps', str(steps + 3),
                '--eval-every', '0', '--eval-tokens', '100', '--checkpoint-every', '0',
                '--log-every', '1', '--warmup', '1', data]
        err = subprocess.run(args, capture_output=True, text=True, check=True).stderr
    m = re.search(r'trained (\d+) tokens in ([0-9.]+) s', err)
    if not m:
        sys.exit('txl train printed no summary:\n' + err)
    return float(m.group(1)) / float(m.group(2))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--txl', default=os.path.join(HERE, '..', 'build', 'tools', 'txl'))
    ap.add_argument('--steps', type=int, default=30)
    ap.add_argument('--rounds', type=int, default=2)
    ap.add_argument('--worker', nargs=2, type=int, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.worker:
        torch_worker(*a.worker)
        return
    diff = check_against_reference()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, 'data.txt')
        import random
        r = random.Random(0)
        with open(data, 'wb') as f:
            f.write(bytes(r.randrange(256) for _ in range(400000)))
        ours, theirs = 0.0, {}
        for _ in range(a.rounds):
            ours = max(ours, txl_tokens_per_s(a.txl, a.steps, data))
            for omp in (1, 2):
                for blas in (1, 2):
                    env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas), OMP_NUM_THREADS=str(omp))
                    out = subprocess.run([sys.executable, __file__, '--worker', str(omp), str(a.steps)],
                                         env=env, capture_output=True, text=True, check=True).stdout
                    k = 'torch%d-blas%d' % (omp, blas)
                    theirs[k] = max(theirs.get(k, 0.0), json.loads(out.strip().splitlines()[-1])['tps'])
    best = max(theirs, key=theirs.get)
    print(json.dumps({'config': CFG, 'reference_check_max_diff': diff,
                      'txl_tokens_per_s': round(ours, 1),
                      'torch_tokens_per_s': {k: round(v, 1) for k, v in theirs.items()},
                      'torch_best': best, 'ratio_vs_torch': round(ours / theirs[best], 2)}))


if __name__ == '__main__':
    main()

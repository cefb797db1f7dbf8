#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Training gradients of the C engine against PyTorch autograd.

For each configuration: write a random Hugging Face checkpoint, convert it
with `txl convert --hf`, and run tests/grad_dump (env GRAD_DUMP): B streams
x NSEG segments of T tokens, dropout off, the gradients of every segment's
mean cross-entropy summed.  The same computation runs with autograd on
tests/reference/txl_ref.py in float64 (memory detached between segments, tied
tensors one leaf).  Checks: every segment's loss to 1e-5 (relative), every
gradient tensor to ||g_c - g_t|| / ||g_t|| <= 1e-3.

Env TXL_BIN (the txl executable), GRAD_DUMP (default build/tests/...).
Prints one line per case and "N passed, N failed"; exits 1 on failure.
"""
import os
import struct
import subprocess
import sys
import tempfile

import numpy as np
import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import txl_ref  # noqa: E402
from hf_checkpoint import make_checkpoint, make_config, tie_groups  # noqa: E402
import reporting  # noqa: E402

torch.set_num_threads(1)

BUILD = os.path.join(HERE, '..', '..', 'build')
TXL = os.environ.get('TXL_BIN') or os.path.join(BUILD, 'tools', 'txl')
DUMP = os.environ.get('GRAD_DUMP') or os.path.join(BUILD, 'tests', 'grad_dump')
GRAD_TOL = 1e-3
LOSS_TOL = 1e-5


def report(name, ok, detail=''):
    reporting.report(name, ok, detail, 34)


def hf_name(name):
    """model-format tensor name -> Hugging Face name."""
    fixed = {
        'emb.0.weight': 'transformer.word_emb.emb_layers.0.weight',
        'emb_proj.0': 'transformer.word_emb.emb_projs.0',
        'r_w_bias': 'transformer.r_w_bias',
        'r_r_bias': 'transformer.r_r_bias',
        'out.0.weight': 'crit.out_layers.0.weight',
        'out.0.bias': 'crit.out_layers.0.bias',
        'out_proj.0': 'crit.out_projs.0',
    }
    if name in fixed:
        return fixed[name]
    _, l, rest = name.split('.', 2)
    per_layer = {
        'r_w_bias': 'dec_attn.r_w_bias',
        'r_r_bias': 'dec_attn.r_r_bias',
        'attn_qkv.weight': 'dec_attn.qkv_net.weight',
        'attn_r.weight': 'dec_attn.r_net.weight',
        'attn_out.weight': 'dec_attn.o_net.weight',
        'attn_norm.weight': 'dec_attn.layer_norm.weight',
        'attn_norm.bias': 'dec_attn.layer_norm.bias',
        'ffn_up.weight': 'pos_ff.CoreNet.0.weight',
        'ffn_up.bias': 'pos_ff.CoreNet.0.bias',
        'ffn_down.weight': 'pos_ff.CoreNet.3.weight',
        'ffn_down.bias': 'pos_ff.CoreNet.3.bias',
        'ffn_norm.weight': 'pos_ff.layer_norm.weight',
        'ffn_norm.bias': 'pos_ff.layer_norm.bias',
    }
    return 'transformer.layers.%s.%s' % (l, per_layer[rest])


def read_dump(path):
    with open(path, 'rb') as f:
        raw = f.read()
    if raw[:4] != b'TXLG':
        raise ValueError('bad dump magic')
    off = 4
    (nseg,) = struct.unpack_from('<I', raw, off)
    off += 4
    losses = list(struct.unpack_from('<%dd' % nseg, raw, off))
    off += 8 * nseg
    (nt,) = struct.unpack_from('<I', raw, off)
    off += 4
    grads = {}
    for _ in range(nt):
        (nl,) = struct.unpack_from('<I', raw, off)
        off += 4
        name = raw[off:off + nl].decode()
        off += nl
        nd, rows, cols = struct.unpack_from('<Iqq', raw, off)
        off += 20
        a = np.frombuffer(raw, dtype='<f4', count=rows * cols, offset=off)
        off += 4 * rows * cols
        grads[name] = a.reshape((rows, cols) if nd == 2 else (cols,)).astype(np.float64)
    if off != len(raw):
        raise ValueError('trailing bytes in dump')
    return losses, grads


def torch_grads(weights, cfg, inputs, targets):
    """inputs/targets: (nseg, B, T) int arrays.  Returns (losses, grads by
    HF name, leaves) with every tied group one float64 leaf."""
    torch.set_default_dtype(torch.float64)
    try:
        model = txl_ref.TransfoXLRef(weights, cfg)
        # one leaf per parameter: a tie group shares its first name's
        for name, t in list(model.w.items()):
            model.w[name] = t.detach().double().requires_grad_(True)
        for group in tie_groups(cfg):
            for name in group[1:]:
                model.w[name] = model.w[group[0]]
        nseg, B, T = inputs.shape
        mems = [model.init_mems() for _ in range(B)]
        losses = []
        total = 0.0
        for s in range(nseg):
            seg = 0.0
            for b in range(B):
                h, mems[b] = model.forward(inputs[s, b].tolist(), mems[b], grad=True)
                lp = model.target_logprobs(h, targets[s, b].tolist(), grad=True)
                seg = seg - lp.sum()
            seg = seg / (B * T)
            losses.append(float(seg))
            total = total + seg
        total.backward()
        grads = {n: model.w[n].grad for n in model.w if model.w[n].grad is not None}
        # the reference ignores tensors of other shapes (none here): every
        # name it holds takes part in the loss
        return losses, grads
    finally:
        torch.set_default_dtype(torch.float32)


def run_case(name, overrides, B=2, T=6, nseg=2, seed=1):
    cfg = make_config(**overrides)
    with tempfile.TemporaryDirectory() as tmp:
        ck = os.path.join(tmp, 'ckpt')
        weights = make_checkpoint(ck, cfg, seed=seed)
        model_path = os.path.join(tmp, 'model.gguf')
        p = subprocess.run([TXL, 'convert', '--hf', ck, '-o', model_path],
                           capture_output=True, timeout=120)
        if p.returncode != 0:
            report(name, False, 'convert failed: %s' % p.stderr.decode()[-400:])
            return
        rng = np.random.default_rng(seed + 100)
        seq = rng.integers(0, cfg['vocab_size'], size=(B, nseg * T + 1))
        inputs = np.stack([seq[:, s * T:(s + 1) * T] for s in range(nseg)])
        targets = np.stack([seq[:, s * T + 1:(s + 1) * T + 1] for s in range(nseg)])
        ids_path = os.path.join(tmp, 'ids.bin')
        with open(ids_path, 'wb') as f:
            for s in range(nseg):
                f.write(inputs[s].astype('<i4').tobytes())
                f.write(targets[s].astype('<i4').tobytes())
        out_path = os.path.join(tmp, 'grads.bin')
        p = subprocess.run([DUMP, model_path, ids_path, str(B), str(T), str(nseg),
                            out_path], capture_output=True, timeout=300)
        if p.returncode != 0:
            report(name, False, 'grad_dump failed: %s' % p.stderr.decode()[-400:])
            return
        c_losses, c_grads = read_dump(out_path)

    t_losses, t_grads = torch_grads(weights, cfg, inputs, targets)
    ok = True
    details = []
    worst_loss = max(abs(a - b) / max(1.0, abs(b)) for a, b in zip(c_losses, t_losses))
    if worst_loss > LOSS_TOL:
        ok = False
        details.append('loss C %s torch %s' % (c_losses, t_losses))
    worst, worst_name = 0.0, ''
    for gname, gc in c_grads.items():
        hname = hf_name(gname)
        gt = t_grads.get(hname)
        if gt is None:
            ok = False
            details.append('%s: no torch gradient for %s' % (gname, hname))
            continue
        gt = gt.numpy()
        if gt.shape != gc.shape:
            ok = False
            details.append('%s: shape %s vs %s' % (gname, gc.shape, gt.shape))
            continue
        rel = np.linalg.norm(gc - gt) / max(np.linalg.norm(gt), 1e-30)
        if rel > worst:
            worst, worst_name = rel, gname
        if rel > GRAD_TOL:
            ok = False
            details.append('%s: rel err %.2e' % (gname, rel))
    # every trainable torch tensor has its C counterpart
    if len(c_grads) != len({id(v) for v in t_grads.values()}):
        ok = False
        details.append('%d C tensors, %d torch leaves' % (len(c_grads), len(t_grads)))
    report(name, ok, 'loss err %.1e, worst grad rel err %.2e (%s)%s'
           % (worst_loss, worst, worst_name, '; ' + '; '.join(details) if details else ''))


def main():
    for exe in (TXL, DUMP):
        if not os.path.exists(exe):
            print('missing executable %s' % exe)
            return 1
    run_case('post-LN', {})
    run_case('pre-LN', {'pre_lnorm': True})
    run_case('shared r biases', {'untie_r': False})
    run_case('untied output', {'tie_word_embeddings': False, 'pre_lnorm': True})
    run_case('same_length clamp_len', {'same_length': True, 'clamp_len': 4,
                                       'mem_len': 5}, nseg=3)
    run_case('d_embed != d_model, tied proj', {'d_embed': 24, 'tie_projs': [True]})
    run_case('d_embed != d_model, untied', {'d_embed': 24, 'tie_projs': [False],
                                            'tie_word_embeddings': False,
                                            'untie_r': False, 'pre_lnorm': True})
    run_case('no memory', {'mem_len': 0}, B=3, T=5)
    return 1 if reporting.tally() else 0


if __name__ == '__main__':
    sys.exit(main())

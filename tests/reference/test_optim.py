# SPDX-License-Identifier: LGPL-2.1-or-later
"""AdamW, gradient clipping and the warm-up/cosine schedule against
torch.optim.AdamW and torch.nn.utils.clip_grad_norm_ (tests/reference/optim_dump.c
drives the C side)."""
import math
import os
import struct
import subprocess
import sys

import numpy as np
import torch

DUMP = os.environ['OPTIM_DUMP']
results = []


def check(name, cond, detail=''):
    results.append(cond)
    print(('PASS ' if cond else 'FAIL ') + name + ('' if cond else '  ' + detail))


def torch_lr(step, warmup, total, lr_max, lr_min):
    if step < warmup:
        return lr_max * (step + 1) / warmup
    frac = (step - warmup) / (total - warmup)
    return lr_min + (lr_max - lr_min) * 0.5 * (1 + math.cos(math.pi * frac))


def case(n, steps, lr, wd, max_norm, seed):
    rng = np.random.default_rng(seed)
    p0 = rng.standard_normal(n).astype(np.float32)
    grads = (rng.standard_normal((steps, n)) * rng.uniform(0.1, 3.0, (steps, 1))).astype(np.float32)
    blob = struct.pack('<qqfff', n, steps, lr, wd, max_norm) + p0.tobytes() + grads.tobytes()
    r = subprocess.run([DUMP], input=blob, capture_output=True)
    if r.returncode != 0:
        sys.exit('optim_dump failed (%d): %s' % (r.returncode, r.stderr.decode()[-2000:]))
    out = r.stdout
    got = np.frombuffer(out[:4 * n], dtype=np.float32)
    lrs = np.frombuffer(out[4 * n:4 * (n + steps)], dtype=np.float32)
    norms = np.frombuffer(out[4 * (n + steps):], dtype=np.float32)

    p = torch.nn.Parameter(torch.from_numpy(p0.copy()))
    opt = torch.optim.AdamW([p], lr=lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=wd)
    want_norms = []
    for s in range(steps):
        for gr in opt.param_groups:
            gr['lr'] = torch_lr(s, 2, steps, lr, lr * 0.1)
        p.grad = torch.from_numpy(grads[s].copy())
        want_norms.append(float(torch.nn.utils.clip_grad_norm_([p], max_norm)))
        opt.step()
    want = p.detach().numpy()
    err = np.max(np.abs(got - want)) / max(np.max(np.abs(want)), 1e-12)
    check('adamw n=%d steps=%d wd=%g clip=%g: rel err %.2e' % (n, steps, wd, max_norm, err), err < 1e-5)
    want_lrs = [torch_lr(s, 2, steps, lr, lr * 0.1) for s in range(steps)]
    check('schedule', np.allclose(lrs, want_lrs, rtol=1e-6), '%s vs %s' % (lrs, want_lrs))
    check('clip norms', np.allclose(norms, want_norms, rtol=1e-5))


def main():
    case(1000, 12, 1e-2, 0.1, 1.0, 1)
    case(37, 30, 3e-3, 0.0, 1e9, 2)
    case(500, 8, 1e-2, 0.5, 0.5, 3)
    failed = results.count(False)
    print('%d passed, %d failed' % (len(results) - failed, failed))
    sys.exit(1 if failed else 0)


if __name__ == '__main__':
    main()

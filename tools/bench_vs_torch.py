# SPDX-License-Identifier: LGPL-2.1-or-later
"""Scoring throughput of txl against the PyTorch reference on the same
weights, measured in one run (shared machines are noisy: only ratios taken
together are meaningful).

Usage: /usr/bin/python3 tools/bench_vs_torch.py [--txl build/tools/txl]
       [--preset small|wt103|all] [--seconds S] [--against OLD_TXL]

--against OLD_TXL: no PyTorch; `txl bench --json` of --txl and of another
build of txl (an earlier commit, say) on the same models, alternating
rounds, and the ratio of their best tokens/s.

For each preset it writes a random Hugging Face style checkpoint, converts
it, runs `txl bench --json` and times the vectorised float32 PyTorch
reference (tests/reference/txl_ref.py) at its best thread count.  Debian's torch
does its matrix products in OpenBLAS, whose threads torch.set_num_threads
does not govern, so each setting runs in its own process with both set:
torch (OpenMP) threads x OPENBLAS_NUM_THREADS, each 1 or 2.  Shared
machines are noisy, so every setting (ours and each of torch's) is run in
--rounds interleaved rounds and keeps its best."""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'tests', 'reference'))
import hf_checkpoint  # noqa: E402
import torch  # noqa: E402
import txl_ref  # noqa: E402

PRESETS = {
    'small': dict(vocab_size=256, d_model=256, d_embed=256, n_head=8, d_head=32,
                  d_inner=1024, n_layer=4, mem_len=256, tgt_len=64),
    'wt103': dict(vocab_size=256, d_model=1024, d_embed=1024, n_head=16,
                  d_head=64, d_inner=4096, n_layer=4, mem_len=640, tgt_len=64),
}


def torch_tokens_per_s(model, cfg, threads, seconds):
    torch.set_num_threads(threads)
    seg, mem_len, V = cfg['tgt_len'], cfg['mem_len'], cfg['vocab_size']
    g = torch.Generator().manual_seed(0)
    mems = model.init_mems()

    def step(mems):
        ids = torch.randint(0, V, (seg + 1,), generator=g).tolist()
        h, mems = model.forward(ids[:seg], mems, mem_len, False, 0)
        model.target_logprobs(h, ids[1:])
        return mems

    for _ in range(mem_len // seg + 2):  # fill the memory first
        mems = step(mems)
    n, t0 = 0, time.perf_counter()
    while True:
        mems = step(mems)
        n += 1
        dt = time.perf_counter() - t0
        if dt >= seconds and n >= 3:
            return n * seg / dt


def torch_worker(d, cfg, threads, seconds):
    model = txl_ref.load_checkpoint(d)
    print(json.dumps({'tps': torch_tokens_per_s(model, cfg, threads, seconds)}))


def torch_best(d, cfg, seconds):
    out = {}
    for omp in (1, 2):
        for blas in (1, 2):
            env = dict(os.environ, OPENBLAS_NUM_THREADS=str(blas), OMP_NUM_THREADS=str(omp))
            r = subprocess.run([sys.executable, __file__, '--worker', d, json.dumps(cfg),
                                str(omp), str(seconds)],
                               env=env, check=True, capture_output=True, text=True)
            out['torch%d-blas%d' % (omp, blas)] = json.loads(r.stdout.strip().splitlines()[-1])['tps']
    return out


def tokens_per_s(txl, model_path):
    return json.loads(subprocess.run([txl, 'bench', '-m', model_path, '--json'], check=True,
                                     capture_output=True, text=True).stdout)['tokens_per_s']


def against(args, name, d, model_path):
    """--against: each build converts the checkpoint itself (its own
    format), then the two take turns, the first to go alternating."""
    old_path = os.path.join(d, 'old.gguf')
    subprocess.run([args.against, 'convert', '--hf', d, '-o', old_path],
                   check=True, capture_output=True)
    runs = {'new': [], 'old': []}
    pair = [('new', args.txl, model_path), ('old', args.against, old_path)]
    for r in range(args.rounds):
        for k, txl, m in (pair if r % 2 == 0 else pair[::-1]):
            runs[k].append(round(tokens_per_s(txl, m)))
    med = {k: statistics.median(v) for k, v in runs.items()}
    print(json.dumps({'preset': name, 'tokens_per_s': runs,
                      'best_new_over_old': round(max(runs['new']) / max(runs['old']), 3),
                      'median_new_over_old': round(med['new'] / med['old'], 3)}))
    sys.stdout.flush()


def main():
    if len(sys.argv) > 1 and sys.argv[1] == '--worker':
        torch_worker(sys.argv[2], json.loads(sys.argv[3]), int(sys.argv[4]),
                     float(sys.argv[5]))
        return
    ap = argparse.ArgumentParser()
    ap.add_argument('--txl', default=os.path.join(HERE, '..', 'build', 'tools', 'txl'))
    ap.add_argument('--preset', default='all', choices=['all'] + list(PRESETS))
    ap.add_argument('--seconds', type=float, default=3.0)
    ap.add_argument('--rounds', type=int, default=3)
    ap.add_argument('--against', help='another txl binary to compare with, instead of PyTorch')
    args = ap.parse_args()
    names = list(PRESETS) if args.preset == 'all' else [args.preset]
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            cfg = hf_checkpoint.make_config(**PRESETS[name], clamp_len=0,
                                            same_length=False, div_val=1,
                                            cutoffs=[], untie_r=True)
            d = os.path.join(tmp, name)
            hf_checkpoint.make_checkpoint(d, cfg, seed=3)
            model_path = os.path.join(d, 'model.gguf')
            subprocess.run([args.txl, 'convert', '--hf', d, '-o', model_path],
                           check=True, capture_output=True)
            if args.against:
                against(args, name, d, model_path)
                continue
            ours, theirs = None, {}
            for _ in range(args.rounds):
                o = json.loads(subprocess.run(
                    [args.txl, 'bench', '-m', model_path, '--json'],
                    check=True, capture_output=True, text=True).stdout)
                if ours is None or o['tokens_per_s'] > ours['tokens_per_s']:
                    ours = o
                for k, v in torch_best(d, cfg, args.seconds).items():
                    theirs[k] = max(theirs.get(k, 0.0), v)
            best_t = max(theirs, key=theirs.get)
            print(json.dumps({
                'preset': name, 'txl_tokens_per_s': round(ours['tokens_per_s'], 1),
                'torch_tokens_per_s': {k: round(v, 1) for k, v in theirs.items()},
                'torch_best': best_t,
                'ratio_vs_torch': round(ours['tokens_per_s'] / theirs[best_t], 2),
                'txl_gflops': ours['gflops'], 'sgemm_peak_gflops': ours['sgemm_peak_gflops'],
                'blas_peak_gflops': ours['blas_peak_gflops'],
                'own_gemm_peak_gflops': ours['own_gemm_peak_gflops'],
                'peak_ratio': ours['peak_ratio'], 'threads': ours['threads']}))
            sys.stdout.flush()


if __name__ == '__main__':
    main()

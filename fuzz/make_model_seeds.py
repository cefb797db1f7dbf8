#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes the seed corpora of fuzz_model, fuzz_safetensors and fuzz_hf_config.

Usage: /usr/bin/python3 fuzz/make_model_seeds.py [TXL] (TXL: the txl tool,
default build/tools/txl).  Needs numpy.  Each model seed is a tiny random
Hugging Face checkpoint (tests/reference/hf_checkpoint.py) that the C converter
turns into a model file, so the seeds are exactly what `txl convert --hf`
writes; the BPE seed comes from a 2-step `txl train`; hostile seeds (issue
12: huge lengths, inf and NaN weights, deep JSON) are patched or written
by hand.  Rewrites fuzz/corpus-model/, fuzz/corpus-safetensors/ and
fuzz/corpus-hfconfig/.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, 'tests', 'reference'))
from hf_checkpoint import make_checkpoint, make_config  # noqa: E402
from safetensors_io import write_safetensors  # noqa: E402

# Every seed is small: a few KB each, so that libFuzzer's default max_len
# (the largest seed) stays small and each execution stays fast.
TINY = dict(vocab_size=16, d_model=8, d_embed=8, n_head=2, d_head=4,
            d_inner=16, n_layer=1, mem_len=4, tgt_len=4, clamp_len=0)

MODELS = {
    # plain softmax, one layer, per-layer r biases
    'plain': (dict(TINY), {}),
    # adaptive input and softmax, div_val 2: cluster dims 8, 4, 2
    'adaptive_div2': (dict(TINY, vocab_size=24, cutoffs=[8, 16], div_val=2,
                           tie_projs=[False, True, False]), {}),
    # d_embed != d_model with div_val 1: projections, untied output layer
    'proj_untied': (dict(TINY, d_embed=4, cutoffs=[8],
                         tie_projs=[False, False],
                         tie_word_embeddings=False), {'store_tied': 'out'}),
    # shared r biases, pre-LN, same_length, clamping, two layers
    'shared_r_prelnorm': (dict(TINY, untie_r=False, pre_lnorm=True,
                               same_length=True, clamp_len=2, n_layer=2),
                          {}),
    # no memory at all
    'no_memory': (dict(TINY, mem_len=0, same_length=False), {}),
    # word vocabulary (with <eos> and <unk>), lower-casing
    'word': (dict(TINY, vocab_size=12, cutoffs=[6]),
             {'vocab': True, 'lower_case': True}),
    # 256 ids: patched below into a byte tokenizer
    'byte': (dict(TINY, vocab_size=256, d_embed=2, d_model=4, n_head=1,
                  d_inner=4), {'byte': True}),
}


def convert(txl, name, cfg, opts, workdir):
    d = os.path.join(workdir, name)
    make_checkpoint(d, make_config(**cfg), seed=len(name),
                    store_tied=opts.get('store_tied', 'emb'),
                    vocab=opts.get('vocab', False))
    if opts.get('lower_case'):
        with open(os.path.join(d, 'tokenizer_config.json'), 'w') as f:
            json.dump({'lower_case': True}, f)
    out = os.path.join(workdir, name + '.gguf')
    subprocess.run([txl, 'convert', '--hf', d, '-o', out], check=True,
                   stdout=subprocess.DEVNULL)
    with open(out, 'rb') as f:
        blob = f.read()
    if opts.get('byte'):
        # "none" and "byte" are both 4 bytes: the layout does not move
        old = struct.pack('<Q', 14) + b'tokenizer.type' + struct.pack(
            '<I', 8) + struct.pack('<Q', 4) + b'none'
        assert blob.count(old) == 1, name
        blob = blob.replace(old, old[:-4] + b'byte')
    return d, blob


def poison(blob, value):
    """The blob with its last float (the end of the last tensor) set to value: a
    flipped exponent (inf) or NaN, which the converter no longer writes."""
    # tensors are written in order and the last one ends the file
    # (F32, so its last float's 4 bytes are the file's last 4)
    return blob[:-4] + struct.pack('<f', value)


def hostile_model_seeds(txl, workdir):
    """Issue 12: lengths that ask for more than the fuzzer's 32 MiB budget
    (TXL_MEMORY_LIMIT, set by fuzz_model.c) and just under it, and one
    inf and one NaN weight."""
    seeds = {}
    env = dict(os.environ, TXL_MEMORY_LIMIT='64G')
    for name, cfg in (('huge_mem', dict(TINY, mem_len=1 << 20)),
                      ('mem_edge', dict(TINY, mem_len=30000)),
                      ('plain_again', dict(TINY))):
        d = os.path.join(workdir, name)
        make_checkpoint(d, make_config(**cfg), seed=len(name))
        out = d + '.gguf'
        subprocess.run([txl, 'convert', '--hf', d, '-o', out], check=True,
                       stdout=subprocess.DEVNULL, env=env)
        with open(out, 'rb') as f:
            seeds[name] = f.read()
    plain = seeds.pop('plain_again')
    seeds['inf_weight'] = poison(plain, float('inf'))
    seeds['nan_weight'] = poison(plain, float('nan'))
    return seeds


def bpe_model(txl, workdir):
    """A byte-level BPE model with log normalisation, from `txl train` (the
    converter only writes word or no vocabularies): 20 merges, 2 steps."""
    logs = os.path.join(workdir, 'logs.txt')
    with open(logs, 'w') as f:
        for i in range(40):
            f.write('2024-01-0%d 10:0%d:00 req %d GET /api/v1/item/%d '
                    'status 200 time %dms\n' % (i % 9 + 1, i % 10, i,
                                                 i * 37, i))
    out = os.path.join(workdir, 'bpe.gguf')
    subprocess.run([txl, 'train', '-o', out, '--tokenizer', 'bpe',
                    '--vocab', '276', '--normalize', '--layers', '1',
                    '--d-model', '4', '--heads', '1', '--d-head', '4',
                    '--d-inner', '4', '--mem-len', '4', '--segment', '4',
                    '--batch', '2', '--steps', '2', '--eval-every', '0',
                    '--eval-tokens', '16', '--checkpoint-every', '0', logs],
                   check=True, stdout=subprocess.DEVNULL,
                   env=dict(os.environ, TXL_NUM_THREADS='1'))
    with open(out, 'rb') as f:
        return f.read()


def raw_safetensors(header, data):
    h = json.dumps(header, separators=(',', ':')).encode()
    h += b' ' * ((8 - len(h) % 8) % 8)
    return struct.pack('<Q', len(h)) + h + data


def safetensors_seeds(workdir):
    seeds = {}
    p = os.path.join(workdir, 'mixed.safetensors')
    write_safetensors(p, {
        'a32': np.arange(6, dtype=np.float32).reshape(2, 3) - 2.5,
        'b16': np.array([0.5, -1.0, 65504.0, 6e-8], dtype=np.float16),
        'c64': np.array([[1e300, -1e-300], [np.inf, 0.25]], dtype=np.float64),
        'scalar': np.array(3.0, dtype=np.float32),
    }, metadata={'format': 'pt'})
    with open(p, 'rb') as f:
        seeds['mixed.safetensors'] = f.read()
    bf16 = struct.pack('<4H', 0x3f80, 0xbf00, 0x7f80, 0x7fc1)
    i32 = struct.pack('<2i', -1, 7)
    seeds['bf16_int_empty.safetensors'] = raw_safetensors({
        '__metadata__': {'k': 'v'},
        'bf': {'dtype': 'BF16', 'shape': [2, 2], 'data_offsets': [0, 8]},
        'ints': {'dtype': 'I32', 'shape': [2], 'data_offsets': [8, 16]},
        'empty': {'dtype': 'F32', 'shape': [0, 5], 'data_offsets': [16, 16]},
        'u8': {'dtype': 'U8', 'shape': [1, 1, 1], 'data_offsets': [16, 17]},
    }, bf16 + i32 + b'\x05')
    seeds['no_tensors.safetensors'] = raw_safetensors(
        {'__metadata__': {}}, b'')
    # issue 12: nesting past the limit of 64 (refused before json-glib
    # parses it), and non-finite F32 and F16 values among finite ones
    h = b'{"__metadata__":{"k":"[[{"},"t":' + b'[' * 80 + b']' * 80 + b'}'
    seeds['deep_header.safetensors'] = struct.pack('<Q', len(h)) + h
    seeds['nonfinite.safetensors'] = raw_safetensors({
        'f': {'dtype': 'F32', 'shape': [4], 'data_offsets': [0, 16]},
        'h': {'dtype': 'F16', 'shape': [3], 'data_offsets': [16, 22]},
    }, struct.pack('<4f', 1.0, float('inf'), float('nan'), -2.0) +
        struct.pack('<3H', 0x3c00, 0xfc00, 0x7e00))
    return seeds


def main():
    txl = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        ROOT, 'build', 'tools', 'txl')
    dirs = {k: os.path.join(HERE, 'corpus-' + k)
            for k in ('model', 'safetensors', 'hfconfig')}
    for d in dirs.values():
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    with tempfile.TemporaryDirectory() as work:
        for name, (cfg, opts) in MODELS.items():
            ckpt, blob = convert(txl, name, cfg, opts, work)
            with open(os.path.join(dirs['model'], name + '.gguf'), 'wb') as f:
                f.write(blob)
            if name == 'plain':
                # the checkpoint fuzz_hf_config converts with every config
                shutil.copy(os.path.join(ckpt, 'model.safetensors'),
                            os.path.join(dirs['safetensors'],
                                         'hf_plain.safetensors'))
            if name in ('plain', 'adaptive_div2'):
                with open(os.path.join(ckpt, 'config.json'), 'rb') as f:
                    text = f.read()
                configs = {name: text}
                if name == 'plain':
                    # a NUL asks for vocab.txt; tokenizer_config.json after it
                    configs['plain_vocab'] = text + b'\0{"lower_case": true}'
                for cname, ctext in configs.items():
                    with open(os.path.join(dirs['hfconfig'], cname + '.json'),
                              'wb') as f:
                        f.write(ctext)
        for name, blob in hostile_model_seeds(txl, work).items():
            with open(os.path.join(dirs['model'], name + '.gguf'), 'wb') as f:
                f.write(blob)
        with open(os.path.join(dirs['model'], 'bpe_normalize.gguf'),
                  'wb') as f:
            f.write(bpe_model(txl, work))
        # the same with an anomaly calibration (txl.anomaly.*, txl calibrate)
        subprocess.run([txl, 'calibrate',
                        os.path.join(dirs['model'], 'bpe_normalize.gguf'),
                        '-o', os.path.join(dirs['model'], 'calibrated.gguf'),
                        '--session-key', 'blk_(-?[0-9]+)', '--key-group', '1',
                        '--score', 'max-token', '--end-marker',
                        '--session-threshold', '0.29', '--line-threshold', '1.5',
                        '--rule', 'seed'], check=True)
        for name, blob in safetensors_seeds(work).items():
            with open(os.path.join(dirs['safetensors'], name), 'wb') as f:
                f.write(blob)
    # old-style keys: n_token, tie_weight, proj_share_all_but_first
    old = make_config(**TINY)
    old['n_token'] = old.pop('vocab_size')
    old['tie_weight'] = old.pop('tie_word_embeddings')
    old['proj_share_all_but_first'] = True
    del old['tie_projs']
    with open(os.path.join(dirs['hfconfig'], 'old_keys.json'), 'w') as f:
        json.dump(old, f)
    # issue 12: nesting 80 deep (refused) and 64 deep with the root (the
    # most accepted), and lengths over the memory budget (refused once the
    # converter loads what it wrote)
    plain = make_config(**TINY)
    with open(os.path.join(dirs['hfconfig'], 'deep.json'), 'w') as f:
        f.write(json.dumps(plain)[:-1] + ', "x": ' + '[' * 80 + ']' * 80 + '}')
    with open(os.path.join(dirs['hfconfig'], 'deep_edge.json'), 'w') as f:
        f.write(json.dumps(plain)[:-1] + ', "x": ' + '[' * 63 + ']' * 63 + '}')
    with open(os.path.join(dirs['hfconfig'], 'huge_mem.json'), 'w') as f:
        json.dump(make_config(**dict(TINY, mem_len=1 << 20, tgt_len=200)), f)


if __name__ == '__main__':
    main()

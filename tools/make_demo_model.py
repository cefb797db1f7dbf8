# SPDX-License-Identifier: LGPL-2.1-or-later
"""Writes a small randomly initialised Hugging Face style TransfoXL
checkpoint whose word vocabulary is taken from a text file, so the demo
can score that text.  Usage: make_demo_model.py TEXT OUTDIR"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'tests', 'reference'))
import hf_checkpoint  # noqa: E402


def main():
    text, out = sys.argv[1], sys.argv[2]
    words = []
    seen = set()
    with open(text, encoding='utf-8', errors='replace') as f:
        for w in f.read().split():
            if w not in seen:
                seen.add(w)
                words.append(w)
    vocab = ['<eos>', '<unk>'] + words
    cfg = hf_checkpoint.make_config(vocab_size=len(vocab), d_model=64,
                                    d_embed=64, n_head=4, d_head=16,
                                    d_inner=128, n_layer=2, mem_len=32,
                                    tgt_len=16, same_length=True)
    hf_checkpoint.make_checkpoint(out, cfg, seed=7)
    with open(os.path.join(out, 'vocab.txt'), 'w', encoding='utf-8') as f:
        f.write('\n'.join(vocab) + '\n')


if __name__ == '__main__':
    main()

#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Mixes log files into one training text and one validation text for
tools/make-default-model.sh.

  tools/corpus/mix.py [--scramble P] OUT_TRAIN OUT_VAL FILE...

Each file is one source.  Its last 5% of lines go to validation.  The rest
is cut into blocks of 64 consecutive lines, and the blocks of all sources are
interleaved in a fixed pseudo-random order (seed 1), so that the trainer's
parallel streams each see many services while every block keeps a log's own
line-to-line context.  A source larger than CAP lines contributes its first
CAP lines, so that no one service dominates.  Deterministic.

--scramble P (an experiment, docs/notes/2026-11-29-copying.md; off for the
bundled model): in a random half of the training blocks, each distinct
alphabetic word of 4 or more letters is, with probability P, replaced by a
random word of the same length and capitalisation, the same throughout the
block, so that only the context tells what comes back."""
import random
import re
import string
import sys

BLOCK = 64
CAP = 40000


WORD = re.compile(r"[A-Za-z]{4,}")


def scramble(block, p, rnd):
    """block with some of its words replaced, each the same way throughout."""
    new = {}

    def swap(m):
        w = m.group(0)
        if w not in new:
            if rnd.random() < p:
                r = "".join(rnd.choice(string.ascii_lowercase) for _ in w)
                new[w] = "".join(c.upper() if o.isupper() else c for c, o in zip(r, w))
            else:
                new[w] = w
        return new[w]
    return [WORD.sub(swap, line) for line in block]


def main():
    args = sys.argv[1:]
    p = 0.0
    if args[:1] == ["--scramble"]:
        try:
            p, args = float(args[1]), args[2:]
        except (IndexError, ValueError):
            p = -1.0
        if not 0.0 <= p <= 1.0:
            sys.exit("mix.py: --scramble takes a probability from 0 to 1")
    if len(args) < 3:
        sys.exit(__doc__)
    out_train, out_val, files = args[0], args[1], args[2:]
    blocks, val = [], []
    for path in files:
        with open(path, encoding="utf-8", errors="replace") as f:
            lines = [l.rstrip("\r\n") for l in f]
        lines = [l for l in lines if l.strip()][:CAP]
        n_val = max(1, len(lines) // 20)
        body, tail = lines[:-n_val], lines[-n_val:]
        val.extend(tail)
        blocks.extend(body[i:i + BLOCK] for i in range(0, len(body), BLOCK))
        print("%-40s %7d lines" % (path, len(lines)), file=sys.stderr)
    random.Random(1).shuffle(blocks)
    if p > 0:
        rnd = random.Random(1)
        blocks = [scramble(b, p, rnd) if rnd.random() < 0.5 else b for b in blocks]
    with open(out_train, "w", encoding="utf-8") as f:
        for b in blocks:
            f.write("\n".join(b) + "\n")
    with open(out_val, "w", encoding="utf-8") as f:
        f.write("\n".join(val) + "\n")


if __name__ == "__main__":
    main()

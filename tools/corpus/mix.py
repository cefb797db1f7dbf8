#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Mixes log files into one training text and one validation text for
tools/make-default-model.sh.

  tools/corpus/mix.py OUT_TRAIN OUT_VAL FILE...

Each file is one source.  Its last 5% of lines go to validation.  The rest
is cut into blocks of 64 consecutive lines, and the blocks of all sources are
interleaved in a fixed pseudo-random order (seed 1), so that the trainer's
parallel streams each see many services while every block keeps a log's own
line-to-line context.  A source larger than CAP lines contributes its first
CAP lines, so that no one service dominates.  Deterministic."""
import random
import sys

BLOCK = 64
CAP = 40000


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    out_train, out_val, files = sys.argv[1], sys.argv[2], sys.argv[3:]
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
    with open(out_train, "w", encoding="utf-8") as f:
        for b in blocks:
            f.write("\n".join(b) + "\n")
    with open(out_val, "w", encoding="utf-8") as f:
        f.write("\n".join(val) + "\n")


if __name__ == "__main__":
    main()

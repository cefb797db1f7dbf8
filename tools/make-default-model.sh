#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Reproduces models/default.gguf, the bundled default model: a small
# Transformer-XL over a byte-level BPE (with log-field normalisation)
# trained by `txl train` on real log text whose licenses allow shipping a
# model trained on it (docs/default-model.md names every source):
#   - logs of real software run on a Debian 12 machine (data/corpus/, made
#     by tools/corpus/collect.sh);
#   - fail2ban's test logs (GPL-2+), fetched from Debian's package by
#     tools/corpus/fail2ban.sh at build time, not kept in this repository;
#   - a minority of synthetic lines from tools/loggen.py.
# The Loghub samples are never used: they are licensed for research only
# (docs/quality-logs.md evaluates on them).
#
#   ./tools/make-default-model.sh [OUT]      (default: models/default.gguf)
#
# For experiments that need logs the model has never seen, EXCLUDE names
# corpus sources to leave out (e.g. EXCLUDE="apache2 nginx"); the bundled
# model is made without it. SCRAMBLE=P passes --scramble P to
# tools/corpus/mix.py and STEPS=N trains N steps instead of 2,400
# (docs/notes/2026-11-29-copying.md); the bundled model is made without
# either.
#
# Deterministic: the same build, inputs and TXL_NUM_THREADS give the same
# file.  About 17 minutes on 2 cores.
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-models/default.gguf}
# a name that is no corpus source would leave in what an experiment
# means to hold out
for src in ${EXCLUDE:-}; do
  [ -f "data/corpus/$src.log.zst" ] ||
    { echo "make-default-model: EXCLUDE: no corpus source \"$src\" (data/corpus/*.log.zst)" >&2; exit 1; }
done
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/src"
for f in data/corpus/*.log.zst; do
  src=$(basename "$f" .log.zst)
  case " ${EXCLUDE:-} " in *" $src "*) continue ;; esac
  zstd -q -dc "$f" > "$tmp/src/$src.log"
done
./tools/corpus/fail2ban.sh "$tmp/src"
rm -f "$tmp/src/fail2ban.copyright"
/usr/bin/python3 tools/loggen.py --lines 4000 --seed 101 > "$tmp/src/synthetic.log"
/usr/bin/python3 tools/corpus/mix.py ${SCRAMBLE:+--scramble "$SCRAMBLE"} "$tmp/train.log" "$tmp/val.log" \
  $(ls "$tmp"/src/*.log | LC_ALL=C sort)
TXL_NUM_THREADS=${TXL_NUM_THREADS:-2} build/tools/txl train -o "$tmp/model.gguf" \
  --val "$tmp/val.log" --tokenizer bpe --vocab 1024 --normalize \
  --layers 4 --d-model 256 --heads 8 --d-head 32 --d-inner 1024 \
  --mem-len 128 --segment 64 --batch 16 --dropout 0.1 \
  --steps "${STEPS:-2400}" --warmup 150 --lr 1e-3 --min-lr 1e-4 --seed 1 \
  --eval-every 600 --eval-tokens 60000 --checkpoint-every 0 --log-every 200 \
  "$tmp/train.log"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/model.gguf" "$OUT"
echo "wrote $OUT"

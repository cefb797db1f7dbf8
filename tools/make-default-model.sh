#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Reproduces models/default.gguf, the bundled default model: a small
# Transformer-XL over a byte-level BPE (with log-field normalisation)
# trained by `txl train` on synthetic multi-service logs from
# tools/loggen.py, which the repository may redistribute.
#
#   ./tools/make-default-model.sh [OUT]      (default: models/default.gguf)
#
# Deterministic: the same build and TXL_NUM_THREADS give the same file.
set -eu
cd "$(dirname "$0")/.."
OUT=${1:-models/default.gguf}
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tools/loggen.py --lines 30000 --seed 101 > "$tmp/train.log"
/usr/bin/python3 tools/loggen.py --lines 3000 --seed 202 > "$tmp/val.log"
TXL_NUM_THREADS=${TXL_NUM_THREADS:-2} build/tools/txl train -o "$tmp/model.gguf" \
  --val "$tmp/val.log" --tokenizer bpe --vocab 1024 --normalize \
  --layers 4 --d-model 256 --heads 8 --d-head 32 --d-inner 1024 \
  --mem-len 128 --segment 64 --batch 16 --dropout 0.1 \
  --steps 1200 --warmup 100 --lr 1e-3 --min-lr 1e-4 --seed 1 \
  --eval-every 300 --eval-tokens 30000 --checkpoint-every 0 \
  "$tmp/train.log"
mkdir -p "$(dirname "$OUT")"
cp "$tmp/model.gguf" "$OUT"
echo "wrote $OUT"

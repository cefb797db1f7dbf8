#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The Tiny Shakespeare recipe of docs/quality.md: character level (bytes),
# nanoGPT's split (first 90% train, last 10% validation), at most 30
# minutes on a 2-core machine.
#
#   ./tools/recipe-shakespeare.sh [../shared/data/text/tinyshakespeare.txt] [OUT]
#
# Writes OUT (default build/shakespeare.gguf) and OUT.log (the training log,
# which tools/plot_loss.py turns into a loss curve).
set -eu
cd "$(dirname "$0")/.."
DATA=${1:-../shared/data/text/tinyshakespeare.txt}
OUT=${2:-build/shakespeare.gguf}
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
n=$(wc -c < "$DATA")
cut=$((n * 9 / 10))
head -c "$cut" "$DATA" > "$tmp/train.txt"
tail -c +"$((cut + 1))" "$DATA" > "$tmp/val.txt"
build/tools/txl train -o "$OUT" --val "$tmp/val.txt" --tokenizer byte \
  --layers 4 --d-model 256 --heads 8 --d-head 32 --d-inner 1024 \
  --mem-len 128 --segment 64 --batch 16 --dropout 0.1 \
  --steps 4000 --warmup 200 --lr 2e-3 --min-lr 1e-4 --weight-decay 0.01 \
  --clip 0.25 --seed 1 --eval-every 500 --eval-tokens 111540 \
  --checkpoint-every 1000 --log-every 50 --time-limit 30 \
  "$tmp/train.txt" 2>&1 | tee "$OUT.log"

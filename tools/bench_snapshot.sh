#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Snapshot size, save/load time and lossy-mode drift (docs/performance.md):
# the bundled default model with its memory full of log text, and a
# random model with a WikiText-103-sized memory (18 layers x 1600 positions
# x d_model 1024; d_inner is kept small since it does not change the state,
# only the file to build).  Usage: tools/bench_snapshot.sh [BUILD_DIR]
set -eu
cd "$(dirname "$0")/.."
BUILD=${1:-build}
TXL="$BUILD/tools/txl"
PY=/usr/bin/python3
TMP=$(mktemp -d /dev/shm/txl-snapbench-XXXXXX 2>/dev/null || mktemp -d)
trap 'rm -rf "$TMP"' EXIT
$PY tools/loggen.py --lines 3000 --seed 1 > "$TMP/log.txt"
echo "# default model, memory filled with generated logs"
"$TXL" snapshot bench -m models/default.gguf --text "$TMP/log.txt"
"$TXL" snapshot bench -m models/default.gguf --text "$TMP/log.txt" --memory hidden
$PY - "$TMP/wt103" <<'PYEOF'
import os, sys
sys.path.insert(0, os.path.join('tests', 'reference'))
import hf_checkpoint
cfg = hf_checkpoint.make_config(vocab_size=256, d_model=1024, d_embed=1024, n_head=16, d_head=64,
                                d_inner=256, n_layer=18, mem_len=1600, tgt_len=128, cutoffs=[],
                                div_val=1, same_length=True, clamp_len=1000)
hf_checkpoint.make_checkpoint(sys.argv[1], cfg, seed=3)
PYEOF
"$TXL" convert --hf "$TMP/wt103" -o "$TMP/wt103.gguf" >/dev/null
rm -rf "$TMP/wt103"
echo "# WikiText-103-sized memory: 18 layers x 1600 x 1024, random weights"
"$TXL" snapshot bench -m "$TMP/wt103.gguf" --memory hidden --after 128
"$TXL" snapshot bench -m "$TMP/wt103.gguf" --after 128

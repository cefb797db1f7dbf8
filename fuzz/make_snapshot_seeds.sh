#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Seeds for fuzz_snapshot: the fixed model and a few valid snapshots of it.
set -eu
cd "$(dirname "$0")/.."
TXL=${TXL:-build/tools/txl}
D=fuzz/corpus-snapshot
mkdir -p "$D"
cp fuzz/corpus-model/byte.gguf "$D/model.gguf"
echo "1 2 3 4 5" | "$TXL" score -m "$D/model.gguf" --ids --segment 3 --save-snapshot "$D/short.snap" >/dev/null 2>&1
seq 1 60 | "$TXL" score -m "$D/model.gguf" --ids --segment 4 --save-snapshot "$D/full.snap" >/dev/null 2>&1
seq 1 30 | "$TXL" score -m "$D/model.gguf" --ids --segment 5 --memory hidden --save-snapshot "$D/hidden.snap" >/dev/null 2>&1

# format 2: lossy precisions, and a text snapshot with its sections
seq 1 60 | "$TXL" score -m "$D/model.gguf" --ids --segment 4 --snapshot-precision f16 --save-snapshot "$D/f16.snap" >/dev/null 2>&1
seq 1 60 | "$TXL" score -m "$D/model.gguf" --ids --segment 4 --snapshot-precision bf16 --save-snapshot "$D/bf16.snap" >/dev/null 2>&1
printf 'some text\nand a line in progr\303' | "$TXL" score -m "$D/model.gguf" --segment 4 --save-snapshot "$D/text.snap" - >/dev/null 2>&1
ls -la "$D"

# sessions snapshots (txl_sessions_save), with fuzz_snapshot's options
BUILD=${BUILD:-build}
cc -o "$BUILD/make_sessions_seed" fuzz/make_sessions_seed.c -Ilib -Iinclude \
  $(pkg-config --cflags --libs glib-2.0) -L"$BUILD/lib" -ltxl -Wl,-rpath,"$PWD/$BUILD/lib"
"$BUILD/make_sessions_seed" "$D/model.gguf" "$D/sessions"
ls -la "$D"/sessions*

# forged: sizes beyond the budget, non-finite memory (and fuzz_state's
# baseline seeds in fuzz/corpus-state/)
/usr/bin/python3 fuzz/make_budget_seeds.py

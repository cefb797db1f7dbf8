#!/bin/sh
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
ls -la "$D"

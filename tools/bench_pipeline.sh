#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Pipeline overhead: the same model and input through `txl score` and
# through gst-launch-1.0 (txltokenizer ! txlmodel ! txlsink), interleaved,
# best of ROUNDS each; prints both times and their ratio.
#   ./tools/bench_pipeline.sh [MODEL] [LINES] [ROUNDS]
set -eu
cd "$(dirname "$0")/.."
MODEL=${1:-models/default.gguf}
LINES=${2:-5000}
ROUNDS=${3:-3}
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tools/loggen.py --lines "$LINES" --seed 5 > "$tmp/in.log"
export GST_PLUGIN_PATH="$PWD/build/plugins"
now() { date +%s.%N; }
best_cli=999999; best_gst=999999
i=0
while [ $i -lt "$ROUNDS" ]; do
  t0=$(now); build/tools/txl score -m "$MODEL" "$tmp/in.log" > "$tmp/cli.jsonl" 2>/dev/null; t1=$(now)
  gst-launch-1.0 -q filesrc location="$tmp/in.log" ! txltokenizer model="$MODEL" \
    ! txlmodel model="$MODEL" ! txlsink location="$tmp/gst.jsonl"; t2=$(now)
  best_cli=$(echo "$t0 $t1 $best_cli" | awk '{d=$2-$1; print (d<$3)?d:$3}')
  best_gst=$(echo "$t1 $t2 $best_gst" | awk '{d=$2-$1; print (d<$3)?d:$3}')
  i=$((i + 1))
done
bytes=$(wc -c < "$tmp/in.log")
echo "$LINES lines, $bytes bytes, model $MODEL, best of $ROUNDS"
echo "txl score:   $best_cli s"
echo "gst-launch:  $best_gst s"
echo "$best_cli $best_gst" | awk '{printf "pipeline throughput = %.1f%% of txl score\n", 100*$1/$2}'

#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job: build, then run a GStreamer scoring pipeline with the bundled
# default model (models/default.gguf, made by tools/make-default-model.sh)
# over a log stream with a few injected anomalies, and show the lines it
# flags.
set -e
cd "$(dirname "$0")/.."
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
mkdir -p build/demo
/usr/bin/python3 tools/loggen.py --lines 400 --seed 77 --anomalies 0.02 \
  --labels build/demo/labels.txt > build/demo/sample.log
export GST_PLUGIN_PATH="$PWD/build/plugins"
MODEL=models/default.gguf
echo "gst-launch-1.0 filesrc location=build/demo/sample.log ! txltokenizer model=$MODEL ! txlmodel model=$MODEL ! txlsink threshold=2.5 location=build/demo/scores.jsonl"
gst-launch-1.0 -q filesrc location=build/demo/sample.log ! txltokenizer model=$MODEL \
  ! txlmodel model=$MODEL ! txlsink threshold=2.5 location=build/demo/scores.jsonl
echo "flagged lines (worst part above 2.5 bits per normalised byte, docs/anomaly.md):"
/usr/bin/python3 -c '
import json, sys
for l in open(sys.argv[1]):
    r = json.loads(l)
    if r["flag"]:
        print("  line %4d  %5.2f bits/byte  %s" % (r["line"], r["worst"], r["text"][:110]))
' build/demo/scores.jsonl
echo "injected anomalies: lines $(grep -n 1 build/demo/labels.txt | cut -d: -f1 | tr '\n' ' ')"

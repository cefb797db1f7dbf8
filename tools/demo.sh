#!/bin/sh
# The main job: build, then score a log stream with a few injected anomalies
# using the bundled default model (models/default.gguf, trained by
# tools/make-default-model.sh), and show the lines it flags.
set -e
cd "$(dirname "$0")/.."
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
mkdir -p build/demo
/usr/bin/python3 tools/loggen.py --lines 400 --seed 77 --anomalies 0.02 \
  --labels build/demo/labels.txt > build/demo/sample.log
echo "scoring build/demo/sample.log (400 lines) with models/default.gguf ..."
build/tools/txl score -m models/default.gguf --flag-bpb 2.5 build/demo/sample.log \
  > build/demo/scores.jsonl
echo "flagged lines (bits per byte > 2.5):"
grep '"flag": true' build/demo/scores.jsonl | sed -e 's/^{"line": \([0-9]*\),.*"bpb": \([0-9.]*\), "flag": true, "text": "\(.*\)"}$/  line \1  \2 bits\/byte  \3/'
echo "(injected anomalies at lines: $(grep -n 1 build/demo/labels.txt | cut -d: -f1 | tr '\n' ' '))"

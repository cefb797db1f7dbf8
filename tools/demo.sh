#!/bin/sh
# The main job as it stands: build, make a demo model, score a sample text.
# Until a trained default model is bundled, the demo model has random
# weights: the numbers show the pipeline working, not a trained model.
set -e
cd "$(dirname "$0")/.."
[ -d build ] || meson setup build >/dev/null
ninja -C build >/dev/null
mkdir -p build/demo
/usr/bin/python3 tools/make_demo_model.py data/sample.txt build/demo/hf
build/tools/txl convert --hf build/demo/hf -o build/demo/demo.gguf
build/tools/txl score -m build/demo/demo.gguf data/sample.txt

#!/bin/sh
# Runs the test suite under AddressSanitizer + UBSan, then txl score and the
# stream tests under valgrind (a build without -march=native: valgrind does
# not decode AVX-512).  Exits non-zero on any finding.
set -eu
cd "$(dirname "$0")/.."
[ -d build-san ] || meson setup build-san -Db_sanitize=address,undefined \
  -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null
ninja -C build-san
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C build-san --print-errorlogs
[ -d build-vg ] || meson setup build-vg -Dnative=false -Dbuildtype=debugoptimized >/dev/null
ninja -C build-vg
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tools/make_demo_model.py data/sample.txt "$tmp/hf"
build-vg/tools/txl convert --hf "$tmp/hf" -o "$tmp/m.gguf"
VG="valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=3"
$VG build-vg/tools/txl score -m "$tmp/m.gguf" data/sample.txt >/dev/null
$VG build-vg/tests/test_stream >/dev/null
$VG build-vg/tests/test_tokenizer >/dev/null
echo "check-memory: sanitizers and valgrind clean"

#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Runs the test suite under AddressSanitizer + UBSan, then txl score and the
# stream tests under valgrind (a build without -march=native: valgrind does
# not decode AVX-512, and reports a CPU without it, so there the AVX2 kernels
# run; the stream and product tests again on OpenBLAS's, TXL_CPU=generic).
# Exits non-zero on any finding.
set -eu
cd "$(dirname "$0")/.."
[ -d build-san ] || meson setup build-san -Db_sanitize=address,undefined \
  -Db_lundef=false -Dbuildtype=debugoptimized >/dev/null
ninja -C build-san
# ASan makes the tests several times slower: their timeouts x3.
# every test but those that run the system's gst-launch-1.0 with our
# (instrumented) plugin: they need the ASan runtime preloaded, and
# GStreamer's own exit-time allocations are not ours to report
launch='test_txlsink test_bursts test_pipelines_net test_snapshot_pipeline test_sessions_snapshot_pipeline test_txlsessions test_txld test_txld_hostile test_line_scores test_learn_pipeline test_old_snapshots test_session_rule test_sessions_learn test_syslog_clients test_records test_journal test_alerts test_txljson test_ingest test_otlp_sdk test_alert_retry test_default_model test_demo' # these run the system gst-launch-1.0 (or gst-plugin-scanner)
tests=$(meson test -C build-san --list 2>/dev/null | grep -E '^test_[a-z0-9_]+$' |
        grep -vxE "$(echo $launch | tr ' ' '|')")
ASAN_OPTIONS=detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  meson test -C build-san --timeout-multiplier 3 --print-errorlogs $tests
have=$(meson test -C build-san --list 2>/dev/null | grep -xE "$(echo $launch | tr ' ' '|')" || true)
if [ -n "$have" ]; then
  # a registry written without the ASan runtime lists our plugin as broken
  # for good: let these tests write theirs afresh
  rm -f build-san/tests/*registry*.bin
  LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 TXL_TEST_SLOW=3 \
    UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    meson test -C build-san --timeout-multiplier 3 --print-errorlogs $have
fi
[ -d build-vg ] || meson setup build-vg -Dnative=false -Dbuildtype=debugoptimized >/dev/null
ninja -C build-vg
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tools/make_demo_model.py data/sample.txt "$tmp/hf"
build-vg/tools/txl convert --hf "$tmp/hf" -o "$tmp/m.gguf"
VG="valgrind -q --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=3"
$VG build-vg/tools/txl score -m "$tmp/m.gguf" data/sample.txt >/dev/null
$VG build-vg/tests/test_stream >/dev/null
$VG build-vg/tests/test_gemm >/dev/null
TXL_CPU=generic $VG build-vg/tests/test_stream >/dev/null
TXL_CPU=generic $VG build-vg/tests/test_gemm >/dev/null
$VG build-vg/tests/test_tokenizer >/dev/null
if [ -f build-vg/plugins/libgsttxl.so ]; then
  GST_PLUGIN_PATH="$PWD/build-vg/plugins" GST_REGISTRY="$tmp/registry.bin" \
    $VG gst-launch-1.0 -q filesrc location=data/sample.txt ! txltokenizer model="$tmp/m.gguf" \
    ! txlmodel model="$tmp/m.gguf" ! txlsink location="$tmp/scores.jsonl"
fi
echo "check-memory: sanitizers and valgrind clean"

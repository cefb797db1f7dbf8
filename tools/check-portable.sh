#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# A -Dnative=false build runs on any x86-64 CPU.  Under qemu-user (Debian's
# qemu-user package) emulating a CPU without AVX (Nehalem) and one with AVX2
# but not AVX-512 (Haswell), it must pick that CPU's kernel (lib/kernels/
# cpu.c), pass the product, gradient, training, stream and learner tests and
# the parity test against the PyTorch reference (tests/reference/
# test_parity.py, on `txl` run under qemu), and score lines as the same
# build does natively with TXL_CPU set to that level.  Not part of ./tests/run.sh: the suite builds for its own machine
# (-march=native), which such a CPU could not run.  Exits non-zero on any
# failure.
set -eu
cd "$(dirname "$0")/.."
if ! command -v qemu-x86_64 >/dev/null; then
  echo "check-portable: needs qemu-x86_64 (apt-get install qemu-user)" >&2
  exit 2
fi
B=build-portable
[ -d $B ] || meson setup $B -Dnative=false >/dev/null
ninja -C $B >/dev/null
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
/usr/bin/python3 tools/loggen.py --lines 8 --seed 9 > "$tmp/app.log"
fail=0
for pair in Nehalem:generic Haswell-noTSX:avx2; do
  cpu=${pair%%:*}
  level=${pair#*:}
  Q="qemu-x86_64 -cpu $cpu"
  got=$($Q $B/tools/txl bench --json --segments 1 --peak-size 64 |
        /usr/bin/python3 -c 'import json, sys; j = json.load(sys.stdin); print(j["kernel"], j["cpu"])')
  if [ "$got" = "$level $level" ]; then
    echo "PASS $cpu: txl bench runs the $level kernel"
  else
    echo "FAIL $cpu: txl bench says kernel, cpu = $got; expected $level"
    fail=1
  fi
  for t in test_gemm test_grad test_train test_stream test_learner; do
    if $Q $B/tests/$t > "$tmp/out" 2>&1; then
      echo "PASS $cpu: $t ($(grep -c '^ok' "$tmp/out") ok)"
    else
      echo "FAIL $cpu: $t"
      tail -20 "$tmp/out"
      fail=1
    fi
  done
  # the engine against PyTorch, txl run under the emulated CPU
  printf '#!/bin/sh\nexec %s %s/%s/tools/txl "$@"\n' "$Q" "$PWD" $B > "$tmp/txl"
  chmod +x "$tmp/txl"
  if TXL_BIN="$tmp/txl" /usr/bin/python3 tests/reference/test_parity.py > "$tmp/out" 2>&1; then
    echo "PASS $cpu: test_parity ($(tail -1 "$tmp/out"))"
  else
    echo "FAIL $cpu: test_parity"
    grep FAIL "$tmp/out" | head -20
    fail=1
  fi
  $Q $B/tools/txl score "$tmp/app.log" > "$tmp/emulated.jsonl" 2>/dev/null
  TXL_CPU=$level $B/tools/txl score "$tmp/app.log" > "$tmp/native.jsonl" 2>/dev/null
  if /usr/bin/python3 - "$tmp/emulated.jsonl" "$tmp/native.jsonl" <<'EOF'
import json, sys
a, b = ([json.loads(l)['bpb'] for l in open(p)] for p in sys.argv[1:])
worst = max(abs(x - y) for x, y in zip(a, b))
print('  %d lines, largest difference %.1e bits/byte' % (len(a), worst))
sys.exit(0 if len(a) == len(b) == 8 and worst <= 1e-4 else 1)
EOF
  then
    echo "PASS $cpu: txl score as natively with TXL_CPU=$level"
  else
    echo "FAIL $cpu: txl score differs from TXL_CPU=$level natively"
    fail=1
  fi
done
[ $fail = 0 ] && echo "check-portable: the portable build runs and agrees on every CPU level"
exit $fail

#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# Builds and runs the whole test suite; ends with "N passed, N failed".
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
[ -d "$BUILD" ] || meson setup "$BUILD" >/dev/null || exit 1
ninja -C "$BUILD" || exit 1
meson test -C "$BUILD" --print-errorlogs "$@" > "$BUILD/test-output.txt" 2>&1
rc=$?
cat "$BUILD/test-output.txt"
ok=$(sed -n 's/^Ok: *\([0-9]*\).*/\1/p' "$BUILD/test-output.txt" | tail -1)
fail=$(sed -n 's/^Fail: *\([0-9]*\).*/\1/p' "$BUILD/test-output.txt" | tail -1)
skip=$(sed -n 's/^Skipped: *\([0-9]*\).*/\1/p' "$BUILD/test-output.txt" | tail -1)
to=$(sed -n 's/^Timeout: *\([0-9]*\).*/\1/p' "$BUILD/test-output.txt" | tail -1)
echo "${ok:-0} passed, $(( ${fail:-0} + ${to:-0} )) failed, ${skip:-0} skipped"
exit $rc

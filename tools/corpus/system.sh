#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# This machine's own logs: dpkg, apt (history and terminal output),
# update-alternatives, and the kernel ring buffer (dmesg). They record the
# package installs the other collectors made, among others.
. "$(dirname "$0")/common.sh"
f=""
for l in /var/log/dpkg.log /var/log/apt/history.log /var/log/apt/term.log /var/log/alternatives.log; do
    [ -r "$l" ] && f="$f $l"
done
# term.log contains carriage returns from progress output: keep it line-based
# Leave out what describes the host's sandbox rather than the kernel: the boot
# command lines and the init program with its arguments.
dmesg 2>/dev/null | awk '
    /[Cc]ommand line:/ { next }
    /as init process/ { skip = 1; next }
    skip && /^\[ *[0-9.]+\]  / { next }
    /process_api/ { next }
    { skip = 0; print }' > "$WORK/dmesg.log" || true
cat $f | tr -d '\r' > "$WORK/machine.log"
# the kernel log goes first so that capping keeps it whole
emit system "$WORK/dmesg.log" "$WORK/machine.log"

# SPDX-License-Identifier: LGPL-2.1-or-later
# Helpers shared by the per-source corpus collectors (sourced, not run).
# Each collector is called as:  tools/corpus/<source>.sh OUTDIR
# and writes OUTDIR/<source>.log with the raw log text the software produced.

set -eu

OUTDIR=${1:?usage: $0 OUTDIR}
mkdir -p "$OUTDIR"
OUTDIR=$(cd "$OUTDIR" && pwd)
export DEBIAN_FRONTEND=noninteractive

# Per-collector scratch dir; removed on exit together with started daemons.
WORK=$(mktemp -d /tmp/txl-corpus.XXXXXX)
chmod 755 "$WORK"
PIDS=""
cleanup() {
    for p in $PIDS; do kill "$p" 2>/dev/null || true; done
    sleep 1
    for p in $PIDS; do kill -9 "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

say() { printf '[%s] %s\n' "$(basename "$0" .sh)" "$*" >&2; }

# ensure_pkg PKG...: install missing Debian packages without letting their
# maintainer scripts start services (we start our own copies on loopback).
ensure_pkg() {
    missing=""
    for p in "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' ||
            missing="$missing $p"
    done
    [ -z "$missing" ] && return 0
    say "installing$missing"
    had_policy=0
    [ -e /usr/sbin/policy-rc.d ] && had_policy=1
    if [ $had_policy = 0 ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod 755 /usr/sbin/policy-rc.d
    fi
    # postfix asks a question on install; answer it.
    echo "postfix postfix/main_mailer_type select Local only" | debconf-set-selections
    echo "postfix postfix/mailname string txl-corpus.localdomain" | debconf-set-selections
    apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1 ||
        { apt-get update -qq >/dev/null 2>&1 &&
          apt-get install -y -qq --no-install-recommends $missing >/dev/null; }
    [ $had_policy = 0 ] && rm -f /usr/sbin/policy-rc.d
    return 0
}

pkgver() { dpkg-query -W -f='${Version}' "$1" 2>/dev/null || echo unknown; }

# wait_port PORT [SECONDS]: wait until something listens on 127.0.0.1:PORT.
wait_port() {
    i=0
    while [ $i -lt "${2:-30}" ]; do
        if (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null; then return 0; fi
        sleep 1; i=$((i + 1))
    done
    say "port $1 never opened"
    return 1
}

# bg CMD...: start a daemon in the background, remember its pid for cleanup.
bg() {
    "$@" &
    PIDS="$PIDS $!"
    LASTPID=$!
}

# emit NAME FILE...: append the log files to OUTDIR/NAME.log, keeping at most
# CAP bytes (default 3 MB) of whole leading lines.
emit() {
    name=$1; shift
    cap=${CAP:-3000000}
    cat "$@" 2>/dev/null | head -c "$cap" > "$OUTDIR/$name.log.tmp" || true
    # cut at the cap: drop the (probably partial) last line
    if [ "$(wc -c < "$OUTDIR/$name.log.tmp")" -ge "$cap" ]; then
        sed -i '$d' "$OUTDIR/$name.log.tmp"
    fi
    mv "$OUTDIR/$name.log.tmp" "$OUTDIR/$name.log"
    say "$name: $(wc -l < "$OUTDIR/$name.log") lines, $(wc -c < "$OUTDIR/$name.log") bytes"
}

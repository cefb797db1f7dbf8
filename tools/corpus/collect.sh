#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Collect the corpus of real log text: run every per-source collector (each
# installs its Debian package if missing, starts the software on loopback with
# a private config, drives traffic and faults, stops it), then compress each
# source's log with zstd -19 into data/corpus/<source>.log.zst.
#
#   tools/corpus/collect.sh [RAWDIR] [SOURCE...]
#
# RAWDIR (default /tmp/txl-corpus-raw) receives the uncompressed logs.
# Must run as root (packages, users, daemons). Takes about 10 minutes.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
RAW=${1:-/tmp/txl-corpus-raw}
shift || true
SOURCES=${*:-zookeeper tomcat10 nginx apache2 postgresql redis memcached squid sshd auth postfix dovecot vsftpd system}
[ "$(id -u)" = 0 ] || { echo "collect.sh must run as root" >&2; exit 1; }
mkdir -p "$RAW" "$ROOT/data/corpus"
apt-get update -qq >/dev/null 2>&1 || true
command -v zstd >/dev/null || apt-get install -y -qq zstd >/dev/null
failed=""
t0=$(date +%s)
for s in $SOURCES; do
    t=$(date +%s)
    rm -f "$RAW/$s.log"
    if bash "$HERE/$s.sh" "$RAW" && [ -s "$RAW/$s.log" ]; then
        zstd -q -19 -f "$RAW/$s.log" -o "$ROOT/data/corpus/$s.log.zst"
        echo "== $s: $(wc -l < "$RAW/$s.log") lines, $(wc -c < "$RAW/$s.log") bytes," \
             "$(wc -c < "$ROOT/data/corpus/$s.log.zst") compressed, $(( $(date +%s) - t )) s" >&2
    else
        echo "== $s: FAILED after $(( $(date +%s) - t )) s" >&2
        failed="$failed $s"
    fi
done
echo "== all done in $(( $(date +%s) - t0 )) s${failed:+; failed:$failed}" >&2
[ -z "$failed" ]

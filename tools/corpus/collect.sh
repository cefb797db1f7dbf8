#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Collect the corpus of real log text: run every per-source collector (each
# installs its Debian package if missing, starts the software on loopback with
# a private config, drives traffic and faults, stops it), then compress each
# source's log with zstd -19 into data/corpus/<source>.log.zst.
#
#   tools/corpus/collect.sh [--held-out | --held-out-2 | --held-out-3] [RAWDIR] [SOURCE...]
#
# RAWDIR (default /tmp/txl-corpus-raw) receives the uncompressed logs.
# --held-out collects instead the logs of software that is in neither the
# corpus nor Loghub, into data/held-out/: judging data, never trained on
# (data/held-out/README.md). --held-out-2 collects a second such set, of
# other software, into data/held-out-2/ (data/held-out-2/README.md), and
# --held-out-3 a third, into data/held-out-3/ (data/held-out-3/README.md).
# Must run as root (packages, users, daemons). Takes about 10 minutes.
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
DEST=corpus
SOURCES="zookeeper tomcat10 nginx apache2 postgresql redis memcached squid sshd auth postfix dovecot vsftpd system"
if [ "${1:-}" = --held-out ]; then
    DEST=held-out
    SOURCES="named haproxy mosquitto slapd"
    shift
elif [ "${1:-}" = --held-out-2 ]; then
    DEST=held-out-2
    SOURCES="freeradius rsyncd cups unbound"
    shift
elif [ "${1:-}" = --held-out-3 ]; then
    DEST=held-out-3
    SOURCES="mariadb lighttpd supervisor spamd"
    shift
fi
RAW=${1:-/tmp/txl-corpus-raw}
shift || true
SOURCES=${*:-$SOURCES}
[ "$(id -u)" = 0 ] || { echo "collect.sh must run as root" >&2; exit 1; }
mkdir -p "$RAW" "$ROOT/data/$DEST"
apt-get update -qq >/dev/null 2>&1 || true
command -v zstd >/dev/null || apt-get install -y -qq zstd >/dev/null
failed=""
t0=$(date +%s)
for s in $SOURCES; do
    t=$(date +%s)
    rm -f "$RAW/$s.log"
    if bash "$HERE/$s.sh" "$RAW" && [ -s "$RAW/$s.log" ]; then
        zstd -q -19 -f "$RAW/$s.log" -o "$ROOT/data/$DEST/$s.log.zst"
        echo "== $s: $(wc -l < "$RAW/$s.log") lines, $(wc -c < "$RAW/$s.log") bytes," \
             "$(wc -c < "$ROOT/data/$DEST/$s.log.zst") compressed, $(( $(date +%s) - t )) s" >&2
    else
        echo "== $s: FAILED after $(( $(date +%s) - t )) s" >&2
        failed="$failed $s"
    fi
done
echo "== all done in $(( $(date +%s) - t0 )) s${failed:+; failed:$failed}" >&2
[ -z "$failed" ]

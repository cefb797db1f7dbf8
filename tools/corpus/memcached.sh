#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# memcached (Debian package memcached) with -vv on loopback.
# Traffic: text-protocol set/get/incr/delete from several connections.
# Faults: unknown commands, bad data chunks, values over the item size limit,
# incr on non-numbers, too many connections.
. "$(dirname "$0")/common.sh"
ensure_pkg memcached netcat-openbsd
bg sh -c "exec memcached -u memcache -l 127.0.0.1 -p 11311 -U 0 -m 8 -c 40 -I 512k -vv > '$WORK/memcached.log' 2>&1"
MCPID=$LASTPID
wait_port 11311
say "traffic"
client() {
    c=$1
    {
        for k in $(seq 1 8); do
            key="obj:$(( (c * 7 + k) % 97 ))"
            printf 'set %s 0 300 5\r\nhello\r\n' "$key"
            printf 'get %s obj:%d\r\n' "$key" $((k * 3))
            printf 'incr counter:%d 1\r\n' $((c % 5))
        done
        printf 'add counter:%d 0 0 1\r\n0\r\n' $((c % 5))
        printf 'delete obj:%d\r\n' $c
        case $((c % 6)) in
            0) printf 'bogus command here\r\n' ;;
            1) printf 'set bad 0 0 3\r\ntoolong\r\n' ;;
            2) printf 'incr obj:%d 1\r\n' $(( (c * 7 + 1) % 97 )) ;;
            3) printf 'set huge 0 0 600000\r\n%s\r\n' "$(head -c 600000 /dev/zero | tr '\0' z)" ;;
            4) printf 'stats\r\n' ;;
            5) printf 'touch obj:1 10\r\ngat 0 obj:2\r\n' ;;
        esac
        printf 'quit\r\n'
    } | nc -q1 127.0.0.1 11311 >/dev/null 2>&1 || true
}
# 60 client sessions, six at a time
for g in $(seq 0 9); do
    bp=""
    for j in 1 2 3 4 5 6; do client $((g * 6 + j)) & bp="$bp $!"; done
    for p in $bp; do wait "$p" || true; done
done
bp=""
for c in $(seq 1 50); do (printf 'version\r\n'; sleep 2) | nc -q3 127.0.0.1 11311 >/dev/null 2>&1 & bp="$bp $!"; done
for p in $bp; do wait $p || true; done
kill "$MCPID"; sleep 1
emit memcached "$WORK/memcached.log"

#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Redis (Debian package redis-server): a primary and a replica on loopback.
# Traffic: writes/reads from many short client connections, BGSAVE/SAVE,
# BGREWRITEAOF, replica full sync. Faults: the primary goes away under the
# replica, a replica pointed at a dead primary, wrong AUTH, client kills,
# protocol errors, maxmemory pressure.
. "$(dirname "$0")/common.sh"
ensure_pkg redis-server redis-tools netcat-openbsd
mkdir -p "$WORK/p" "$WORK/r"
chown -R redis "$WORK" 2>/dev/null || true
start_redis() { # name port extra...
    n=$1 port=$2; shift 2
    bg redis-server --bind 127.0.0.1 --port "$port" --dir "$WORK/$n" --daemonize no \
        --logfile "$WORK/$n.log" --loglevel verbose --save "5 10" --appendonly yes \
        --maxmemory 4mb --maxmemory-policy noeviction "$@"
}
start_redis p 16379 --requirepass redispw
PPID_=$LASTPID
wait_port 16379
start_redis r 16380 --replicaof 127.0.0.1 16379 --masterauth redispw
wait_port 16380
say "traffic"
R="redis-cli -p 16379 -a redispw --no-auth-warning"
for i in $(seq 1 150); do $R SET "session:$i" "user$i" EX 600 >/dev/null; $R GET "session:$((i / 2))" >/dev/null; done
for i in $(seq 1 40); do redis-cli -p 16379 -a "bad$i" --no-auth-warning PING >/dev/null 2>&1; done
$R DEBUG POPULATE 20000 key 100 >/dev/null 2>&1 || true
$R SET big "$(head -c 300000 /dev/zero | tr '\0' x)" >/dev/null 2>&1 || true
$R BGSAVE >/dev/null; sleep 2; $R BGREWRITEAOF >/dev/null; sleep 2
$R CONFIG SET loglevel debug >/dev/null; sleep 3; $R CONFIG SET loglevel verbose >/dev/null
printf 'PING\r\n*1\r\n$x\r\n' | nc -q1 127.0.0.1 16379 >/dev/null 2>&1 || true
printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' | nc -q1 127.0.0.1 16379 >/dev/null 2>&1 || true
$R CLIENT KILL TYPE replica >/dev/null 2>&1 || true; sleep 3
$R SAVE >/dev/null 2>&1 || true
# the primary dies: the replica keeps retrying
kill "$PPID_"; sleep 6
start_redis p 16379 --requirepass redispw
wait_port 16379; sleep 4
redis-cli -p 16380 REPLICAOF 127.0.0.1 16999 >/dev/null; sleep 4
redis-cli -p 16380 REPLICAOF NO ONE >/dev/null; sleep 1
$R FLUSHALL >/dev/null; $R SHUTDOWN >/dev/null 2>&1 || true
redis-cli -p 16380 SHUTDOWN NOSAVE >/dev/null 2>&1 || true
sleep 2
emit redis "$WORK/p.log" "$WORK/r.log"

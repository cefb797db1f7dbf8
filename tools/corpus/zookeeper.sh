#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# ZooKeeper (Debian package zookeeper): a 3-node ensemble on loopback with the
# package's log4j layout. Traffic: a kazoo client creating, reading, updating,
# watching and deleting znodes, ephemeral nodes and expiring sessions.
# Faults: the leader is killed and restarted, a follower is killed, unknown
# four-letter words, a client talking garbage to the client port.
. "$(dirname "$0")/common.sh"
ensure_pkg zookeeper python3-kazoo netcat-openbsd
CP=$WORK/conf:/usr/share/java/zookeeper.jar:/usr/share/java/slf4j-log4j12.jar:/usr/share/java/log4j-1.2.jar
mkdir -p "$WORK/conf"
cp /etc/zookeeper/conf_example/log4j.properties "$WORK/conf/"
for i in 1 2 3; do
    mkdir -p "$WORK/n$i/data" "$WORK/n$i/log"
    echo $i > "$WORK/n$i/data/myid"
    cat > "$WORK/n$i/zoo.cfg" <<CFG
tickTime=500
initLimit=10
syncLimit=5
dataDir=$WORK/n$i/data
clientPort=2218$i
clientPortAddress=127.0.0.1
maxClientCnxns=20
admin.enableServer=false
4lw.commands.whitelist=srvr,stat,ruok,mntr
server.1=127.0.0.1:2888$i:3888$i
server.2=127.0.0.1:28882:38882
server.3=127.0.0.1:28883:38883
CFG
    sed -i "s/^server.1=.*/server.1=127.0.0.1:28881:38881/" "$WORK/n$i/zoo.cfg"
done
declare -A ZPID
start_node() {
    bg java -Xmx256m -cp "$CP" -Dzookeeper.log.dir="$WORK/n$1/log" \
        -Dzookeeper.root.logger=INFO,ROLLINGFILE \
        -Dlog4j.configuration="file:$WORK/conf/log4j.properties" \
        org.apache.zookeeper.server.quorum.QuorumPeerMain "$WORK/n$1/zoo.cfg" >/dev/null 2>&1
    ZPID[$1]=$LASTPID
}
for i in 1 2 3; do start_node $i; sleep 1; done
for i in 1 2 3; do wait_port 2218$i 60; done
sleep 3
leader() { for i in 1 2 3; do echo srvr | nc -q1 127.0.0.1 2218$i 2>/dev/null | grep -q 'Mode: leader' && { echo $i; return; }; done; echo 1; }

cat > "$WORK/client.py" <<'PY'
import sys, time, logging
from kazoo.client import KazooClient
from kazoo.exceptions import NodeExistsError, NoNodeError, NotEmptyError, BadVersionError
logging.basicConfig(level=logging.CRITICAL)
hosts, phase = sys.argv[1], sys.argv[2]
zk = KazooClient(hosts=hosts, timeout=4.0)
zk.start(timeout=20)
base = "/txl/" + phase
zk.ensure_path(base)
for i in range(40):
    p = "%s/job-%04d" % (base, i)
    zk.create(p, b"state=new")
    zk.set(p, b"state=running")
    try:
        zk.create(p, b"dup")
    except NodeExistsError:
        pass
    zk.get(p, watch=lambda ev: None)
    try:
        zk.set(p, b"x", version=99)
    except BadVersionError:
        pass
    try:
        zk.delete(p + "/missing")
    except NoNodeError:
        pass
for i in range(5):
    zk.create(base + "/lock-", b"", ephemeral=True, sequence=True)
try:
    zk.delete(base)
except NotEmptyError:
    pass
zk.delete(base, recursive=True)
# a session that is never closed: the ensemble expires it
lost = KazooClient(hosts=hosts, timeout=2.0)
lost.start(timeout=20)
lost.create(base + "-eph", b"", ephemeral=True, makepath=True)
lost.stop()  # stop without close(): server sees the socket drop
zk.stop(); zk.close()
PY
PY=/usr/bin/python3
ALL=127.0.0.1:22181,127.0.0.1:22182,127.0.0.1:22183
say "traffic"
$PY "$WORK/client.py" $ALL a || say "client a failed"
for w in conf dump wchs cons envi; do echo $w | nc -q1 127.0.0.1 22181 >/dev/null 2>&1 || true; done
printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' | nc -q1 127.0.0.1 22182 >/dev/null 2>&1 || true
head -c 4096 /dev/zero | tr '\0' 'A' | nc -q1 127.0.0.1 22183 >/dev/null 2>&1 || true
L=$(leader); say "killing leader $L"
kill "${ZPID[$L]}"; sleep 6
$PY "$WORK/client.py" $ALL b || say "client b failed"
start_node "$L"; sleep 8
F=$(( L % 3 + 1 )); say "killing follower $F"
kill -9 "${ZPID[$F]}"; sleep 3
$PY "$WORK/client.py" 127.0.0.1:2218$F,$ALL c || say "client c failed"
start_node "$F"; sleep 8
$PY "$WORK/client.py" $ALL d || say "client d failed"
for i in 1 2 3; do echo stat | nc -q1 127.0.0.1 2218$i >/dev/null 2>&1 || true; done
sleep 2
for i in 1 2 3; do kill "${ZPID[$i]}" 2>/dev/null || true; done
sleep 3
emit zookeeper "$WORK"/n1/log/zookeeper.log "$WORK"/n2/log/zookeeper.log "$WORK"/n3/log/zookeeper.log

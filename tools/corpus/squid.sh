#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Squid (Debian package squid): a caching proxy on loopback in front of a
# small local origin server. Traffic: repeated GETs (misses then hits),
# HEAD and conditional requests. Faults: denied domains and ports, an origin
# that refuses connections, names that do not resolve, bad requests, reconfigure.
. "$(dirname "$0")/common.sh"
ensure_pkg squid curl netcat-openbsd python3
mkdir -p "$WORK/www/static" "$WORK/run"
for f in index.html news.html static/app.js static/logo.png; do head -c 2000 /dev/zero | tr '\0' a > "$WORK/www/$f"; done
chown -R proxy "$WORK" 2>/dev/null || true
cat > "$WORK/squid.conf" <<CFG
http_port 127.0.0.1:13128
pid_filename $WORK/run/squid.pid
access_log daemon:$WORK/access.log squid
cache_log $WORK/cache.log
cache_store_log none
coredump_dir $WORK/run
cache_mem 8 MB
dns_nameservers 127.0.0.1
dns_timeout 3 seconds
connect_timeout 3 seconds
debug_options ALL,1
acl SSL_ports port 443
acl Safe_ports port 80 443 18995 18999 21
acl blocked dstdomain .ads.example .tracker.example
acl CONNECT method CONNECT
http_access deny !Safe_ports
http_access deny CONNECT !SSL_ports
http_access deny blocked
http_access allow localhost
http_access deny all
refresh_pattern . 1 20% 10
shutdown_lifetime 1 seconds
CFG
bg sh -c "cd '$WORK/www' && exec /usr/bin/python3 -m http.server -b 127.0.0.1 18995 >/dev/null 2>&1"
squid -N -z -f "$WORK/squid.conf" >/dev/null 2>&1 || true
bg squid -N -f "$WORK/squid.conf"
wait_port 13128 60
say "traffic"
X=px
px() { curl -s -o /dev/null -m 8 -x http://127.0.0.1:13128 "$@" || true; }
O=http://127.0.0.1:18995
for i in $(seq 1 80); do
    for f in / /index.html /news.html /static/app.js /static/logo.png /missing$((i % 7)).html; do $X "$O$f"; done
    $X -I "$O/index.html"
    $X -H "If-Modified-Since: Wed, 01 Jan 2025 00:00:00 GMT" "$O/news.html"
    case $((i % 8)) in
        0) $X http://127.0.0.1:18999/api ;;
        1) $X http://ads.example/banner.js ;;
        2) $X http://no-such-host.invalid/ ;;
        3) $X http://127.0.0.1:25/ ;;
        4) $X -p https://127.0.0.1:22/ ;;
        5) $X http://www.tracker.example/pixel.gif ;;
        6) $X -X POST -d a=1 "$O/form" ;;
        7) $X "ftp://127.0.0.1/pub/file" ;;
    esac
done
raw_http 127.0.0.1 13128
squid -k reconfigure -f "$WORK/squid.conf" 2>/dev/null || true; sleep 2
for i in $(seq 1 20); do $X "$O/index.html"; $X http://no-such-host.invalid/x$i; done
squid -k shutdown -f "$WORK/squid.conf" 2>/dev/null || true; sleep 4
emit squid "$WORK/access.log" "$WORK/cache.log"

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
# (a fixed path, so that paths in the logs are the same on every run)
WORK=/tmp/txl-corpus/$(basename "$0" .sh)
rm -rf "$WORK"; mkdir -p "$WORK"
chmod 755 /tmp/txl-corpus "$WORK"
cd "$WORK"
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

# web_traffic BASEURL N [SEED]: a fixed pseudo-random sequence of N HTTP
# requests (pages, static files, missing files, probes, bad methods, forms
# with wrong credentials, huge headers) sent with curl to BASEURL.
web_traffic() {
    base=$1; n=$2; RANDOM=${3:-1234}
    paths=(/ /index.html /about.html /static/app.js /static/style.css /img/logo.png
           /api/v1/items /api/v1/items/17 /api/v1/users/42 /login /search?q=error
           /admin/ /wp-login.php /.env /phpmyadmin/index.php /cgi-bin/test.cgi
           /robots.txt /favicon.ico /private/ /private/report.txt /slow
           /backend/status /backend/orders/9 /../../etc/passwd /%2e%2e/%2e%2e/etc/shadow
           /server-status /download/file.tar.gz /missing/page.php /index.php?id=1%27%20OR%201=1)
    agents=("Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Firefox/115.0"
            "curl/7.88.1" "Wget/1.21.3" "python-requests/2.28.1"
            "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
            "Go-http-client/1.1" "-")
    i=0
    while [ $i -lt "$n" ]; do
        p=${paths[$((RANDOM % ${#paths[@]}))]}
        a=${agents[$((RANDOM % ${#agents[@]}))]}
        r=$((RANDOM % 20))
        case $r in
            0) curl -s -o /dev/null -m 5 -X POST -d "user=admin&pass=guess$i" -A "$a" "$base/login" ;;
            1) curl -s -o /dev/null -m 5 -u "admin:wrong$i" -A "$a" "$base/private/" ;;
            2) curl -s -o /dev/null -m 5 -u "alice:alicepw" -A "$a" "$base/private/report.txt" ;;
            3) curl -s -o /dev/null -m 5 -X DELETE -A "$a" "$base$p" ;;
            4) curl -s -o /dev/null -m 5 -H "Range: bytes=0-99" -A "$a" "$base$p" ;;
            5) curl -s -o /dev/null -m 5 -I -A "$a" "$base$p" ;;
            *) curl -s -o /dev/null -m 5 --path-as-is -e "$base/" -A "$a" "$base$p" ;;
        esac
        i=$((i + 1))
    done
    return 0
}

# raw_http HOST PORT: a few malformed requests straight on the socket.
raw_http() {
    for req in 'GARBAGE\r\n\r\n' 'GET /\r\n\r\n' 'GET / HTTP/1.1\r\n\r\n' \
               'GET / HTTP/9.9\r\nHost: x\r\n\r\n' '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03' \
               'POST /login HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab' \
               'GET /%%%% HTTP/1.1\r\nHost: x\r\n\r\n'; do
        printf "$req" | timeout 3 nc -q1 "$1" "$2" >/dev/null 2>&1 || true
    done
}

# burst URL N: N simultaneous requests (waits only for its own curls).
burst() {
    bp=""
    for _ in $(seq 1 "$2"); do curl -s -o /dev/null -m 10 "$1" & bp="$bp $!"; done
    for p in $bp; do wait "$p" || true; done
}

# start_rsyslog FILE: run rsyslogd (Debian package rsyslog) on /dev/log, writing
# every message in the traditional syslog file format to FILE.
start_rsyslog() {
    ensure_pkg rsyslog
    mkdir -p "$WORK/rsyslog"
    cat > "$WORK/rsyslog.conf" <<CFG
global(workDirectory="$WORK/rsyslog")
module(load="imuxsock" SysSock.Name="/dev/log")
*.* action(type="omfile" file="$1" template="RSYSLOG_TraditionalFileFormat")
CFG
    rm -f /dev/log
    bg rsyslogd -n -f "$WORK/rsyslog.conf" -i "$WORK/rsyslog.pid"
    RSYSLOG_PID=$LASTPID
    i=0; while [ ! -S /dev/log ] && [ $i -lt 20 ]; do sleep 0.5; i=$((i + 1)); done
}
stop_rsyslog() { sleep 1; kill "$RSYSLOG_PID" 2>/dev/null || true; sleep 1; rm -f /dev/log; }

#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# lighttpd (Debian package lighttpd, with lighttpd-mod-openssl and
# lighttpd-mod-deflate) on loopback over HTTP and HTTPS, writing its error
# log (with its own stderr and the stderr of its CGI scripts appended to
# it, and debug options turned on for some phases) and its access log; the
# log is the error log followed by the access log (lighttpd loses access
# lines when both name one file, so they are kept apart and concatenated).
# HELD OUT (third set): never trained on (collect.sh --held-out-3).
# Traffic: pages, static files, directory listings, compressed and range
# requests, HEAD and conditional requests, CGI scripts (GET and POST
# uploads), rewrites and redirects, a proxied python backend, logins with
# basic (htpasswd) and digest (htdigest) auth, the status pages, HTTPS
# with a self-signed certificate, keep-alive, a log reopen and graceful
# reloads that switch request-handling, file-not-found, condition,
# header, timeout and TLS debug logging on and off.
# Faults: missing files, denied paths and a banned client, wrong passwords
# and unknown users, CGI scripts that write to stderr, fail, crash, send
# bad headers, hang past their limit or cannot be run, a proxy backend that
# is down and one that never answers, a FastCGI socket nobody serves,
# uploads over the request size limit, oversized headers, malformed
# requests, plain HTTP and old or garbage TLS on the HTTPS port, clients
# over the connection limit, slow and idle clients timed out, a start with
# a missing certificate, a start on a port already taken, a restart.
. "$(dirname "$0")/common.sh"
ensure_pkg lighttpd lighttpd-mod-openssl lighttpd-mod-deflate curl openssl netcat-openbsd python3
P=18400      # HTTP
S=18443      # HTTPS
BE=18401     # python backend
DOWN=18402   # a backend nobody runs
HANG=18403   # a backend that accepts and never answers
PY=/usr/bin/python3
[ -x $PY ] || PY=python3
W=$WORK/www
ELOG=$WORK/error.log
ALOG=$WORK/access.log
RANDOM=18400

# --- content --------------------------------------------------------------
mkdir -p "$W"/{static,img,files/reports,files/empty,docs,downloads,private,admin,cgi-bin,new,.git,tmp} \
         "$WORK"/backend/api/v1/items "$WORK"/backend/api/v1/users "$WORK"/deflate-cache "$WORK"/upload
page() { printf '<!DOCTYPE html>\n<html><head><title>%s</title></head>\n<body><h1>%s</h1>\n%s\n</body></html>\n' "$2" "$2" "$3" > "$1"; }
page "$W/index.html" "Example Corp" "<p>Welcome.</p>"
page "$W/about.html" "About us" "<p>We make widgets since 1998.</p>"
page "$W/contact.html" "Contact" "<form method=post action=/cgi-bin/contact.cgi><input name=email></form>"
page "$W/new/pricing.html" "Pricing" "<p>Plans start at 9 EUR.</p>"
page "$W/new/index.html" "New site" "<p>Moved here.</p>"
page "$W/admin/index.html" "Admin" "<p>Dashboard</p>"
page "$W/private/index.html" "Private" "<p>Staff only</p>"
seq 1 400 | sed 's/^/Quarterly figures row /' > "$W/private/report.txt"
for i in $(seq 1 300); do echo "function f$i(a, b) { return a * $i + b; }"; done > "$W/static/app.js"
for i in $(seq 1 200); do echo ".c$i { margin: ${i}px; color: #$((100000 + i)); }"; done > "$W/static/style.css"
seq 1 3000 | sed 's/^/The manual, paragraph /' > "$W/docs/manual.txt"
head -c 20000 /dev/urandom > "$W/img/logo.png"
head -c 4000 /dev/urandom > "$W/favicon.ico"
head -c 300000 /dev/urandom > "$W/downloads/release-1.2.tar.gz"
head -c 120000 /dev/urandom > "$W/downloads/release-1.1.zip"
printf 'User-agent: *\nDisallow: /private/\n' > "$W/robots.txt"
for f in q1-2024.csv q2-2024.csv q3-2024.csv summary.pdf notes.txt; do
    seq 1 50 | sed "s/^/$f,/" > "$W/files/reports/$f"
done
echo 'Shared files. Ask IT for access.' > "$W/files/README.txt"
seq 1 20 > "$W/files/list.txt"
echo '<?php $db_pass = "s3cret"; ?>' > "$W/config.inc"
cp "$W/index.html" "$W/index.html~"
cp "$W/about.html" "$W/about.html.bak"
printf '[core]\n\trepositoryformatversion = 0\n' > "$W/.git/config"
echo 'unused' > "$W/tmp/cache.dat"
echo '{"items":[{"id":1},{"id":2}]}' > "$WORK/backend/api/v1/items/index.html"
for i in 3 9 17 42; do echo "{\"id\":$i}" > "$WORK/backend/api/v1/items/$i"; done
for i in 1 7 42; do echo "{\"user\":$i}" > "$WORK/backend/api/v1/users/$i"; done
echo 'backend ok' > "$WORK/backend/status"

# CGI scripts: some write to stderr (lighttpd copies it to its error log),
# some fail
cgi() { cat > "$W/cgi-bin/$1"; chmod 755 "$W/cgi-bin/$1"; }
cgi env.cgi <<'EOF'
#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n'
echo "method=$REQUEST_METHOD query=$QUERY_STRING remote=$REMOTE_ADDR"
EOF
cgi search.cgi <<'EOF'
#!/bin/sh
case "$QUERY_STRING" in
  *%27*|*\'*) echo "search.cgi: SQL syntax error near '$QUERY_STRING' at line 1" >&2
     printf 'Status: 500 Internal Server Error\r\nContent-Type: text/plain\r\n\r\ndatabase error\n'; exit 1 ;;
  *q=error*) echo "search.cgi[$$]: warning: index segment 7 is stale, rebuilding" >&2 ;;
  "") echo "search.cgi: empty query from $REMOTE_ADDR" >&2 ;;
esac
printf 'Content-Type: text/html\r\n\r\n<ul><li>result for %s</li></ul>\n' "$QUERY_STRING"
EOF
cgi contact.cgi <<'EOF'
#!/bin/sh
body=$(head -c "${CONTENT_LENGTH:-0}")
case "$body" in
  *email=*@*) printf 'Status: 303 See Other\r\nLocation: /about.html\r\n\r\n' ;;
  *) echo "contact.cgi: rejected form without a valid email (${CONTENT_LENGTH:-0} bytes)" >&2
     printf 'Status: 422 Unprocessable Entity\r\nContent-Type: text/plain\r\n\r\nbad email\n' ;;
esac
EOF
cgi upload.cgi <<'EOF'
#!/bin/sh
n=$(cat | wc -c)
echo "upload.cgi: stored $n bytes for ${HTTP_X_USER:-anonymous}" >&2
printf 'Content-Type: text/plain\r\n\r\nreceived %s bytes\n' "$n"
EOF
cgi broken.cgi <<'EOF'
#!/bin/sh
echo "this is not a header line"
echo "Traceback (most recent call last): KeyError: 'PATH_INFO'" >&2
EOF
cgi die.cgi <<'EOF'
#!/bin/sh
echo "die.cgi: cannot open /var/lib/app/state.db: Permission denied" >&2
exit 3
EOF
cgi crash.cgi <<'EOF'
#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\npartial'
kill -SEGV $$
EOF
cgi slow.cgi <<'EOF'
#!/bin/sh
sleep 8
printf 'Content-Type: text/plain\r\n\r\nfinally\n'
EOF
cgi redirect.cgi <<'EOF'
#!/bin/sh
printf 'Location: /new/index.html\r\n\r\n'
EOF
cgi report.py <<'EOF'
#!/usr/bin/python3
import os, sys
q = os.environ.get("QUERY_STRING", "")
if "year=" not in q:
    sys.stderr.write("report.py: missing parameter 'year', using default\n")
if "year=1999" in q:
    raise ValueError("no data for year 1999")
sys.stdout.write("Content-Type: application/json\r\n\r\n{\"rows\": 12}\n")
EOF
cgi legacy.pl <<'EOF'
#!/usr/bin/perl
print "Content-Type: text/plain\n\nold\n";
EOF
chmod 644 "$W/cgi-bin/legacy.pl"

# passwords: htpasswd (crypt and apr1) for /admin, htdigest for /private
{ echo "admin:$(openssl passwd -apr1 -salt 9x1LqA0f adminpw)"
  echo "ops:$(openssl passwd -6 -salt Qm2v7yTnE1 opspw)"
  echo "deploy:$(openssl passwd -5 -salt Zr8kW3p deploypw)"; } > "$WORK/htpasswd"
dig_line() { printf '%s:%s:%s\n' "$1" "$2" "$(printf '%s:%s:%s' "$1" "$2" "$3" | md5sum | cut -d' ' -f1)"; }
{ dig_line alice Staff alicepw; dig_line bob Staff bobpw; dig_line carol Staff carolpw; } > "$WORK/htdigest"
printf 'monitor:statuspw\n' > "$WORK/plain.user"
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=www.example.test" \
    -keyout "$WORK/server.key" -out "$WORK/server.crt" >/dev/null 2>&1
cat "$WORK/server.crt" "$WORK/server.key" > "$WORK/server.pem"

# --- backends ---------------------------------------------------------------
bg sh -c "exec $PY -m http.server $BE --bind 127.0.0.1 --directory '$WORK/backend' >/dev/null 2>&1"
bg $PY -c '
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", '$HANG'))
s.listen(64)
held = []
while True:
    held.append(s.accept()[0])
'
wait_port $BE; wait_port $HANG

# --- configuration ------------------------------------------------------------
cat > "$WORK/lighttpd.conf" <<CFG
server.modules = ("mod_access", "mod_auth", "mod_authn_file", "mod_rewrite",
                  "mod_redirect", "mod_alias", "mod_setenv", "mod_expire",
                  "mod_openssl", "mod_deflate", "mod_status", "mod_dirlisting",
                  "mod_proxy", "mod_fastcgi", "mod_cgi", "mod_accesslog")
server.document-root = "$W"
server.bind = "127.0.0.1"
server.port = $P
server.tag = "lighttpd"
server.pid-file = "$WORK/lighttpd.pid"
server.errorlog = "$ELOG"
server.breakagelog = "$ELOG"
accesslog.filename = "$ALOG"
server.upload-dirs = ("$WORK/upload")
index-file.names = ("index.html")
mimetype.assign = (".html" => "text/html", ".txt" => "text/plain",
                   ".css" => "text/css", ".js" => "application/javascript",
                   ".png" => "image/png", ".ico" => "image/x-icon",
                   ".csv" => "text/csv", ".pdf" => "application/pdf",
                   ".gz" => "application/gzip", ".zip" => "application/zip",
                   "" => "application/octet-stream")
server.max-connections = 48
server.max-request-size = 512
server.max-request-field-size = 4096
server.max-read-idle = 6
server.max-write-idle = 10
server.max-keep-alive-idle = 4
server.max-keep-alive-requests = 20
server.feature-flags = ("server.graceful-shutdown-timeout" => 4)
server.http-parseopts = ("header-strict" => "enable", "host-strict" => "enable",
                         "host-normalize" => "enable", "url-path-2f-decode" => "enable",
                         "url-path-dotseg-remove" => "enable")
url.access-deny = ("~", ".inc", ".bak", "/.git/")
\$HTTP["remoteip"] == "127.0.0.66" { url.access-deny = ("") }
\$HTTP["url"] =~ "^/tmp/" { url.access-deny = ("") }
url.redirect = ("^/old/(.*)\$" => "/new/\$1",
                "^/blog/?\$" => "https://127.0.0.1:$S/new/index.html")
url.rewrite-once = ("^/search/(.*)\$" => "/cgi-bin/search.cgi?q=\$1",
                    "^/reports/([0-9]+)\$" => "/cgi-bin/report.py?year=\$1")
\$HTTP["url"] =~ "^/admin" {
    auth.backend = "htpasswd"
    auth.backend.htpasswd.userfile = "$WORK/htpasswd"
    auth.require = ("/admin" => ("method" => "basic", "realm" => "Admin", "require" => "valid-user"))
}
\$HTTP["url"] =~ "^/private" {
    auth.backend = "htdigest"
    auth.backend.htdigest.userfile = "$WORK/htdigest"
    auth.require = ("/private" => ("method" => "digest", "realm" => "Staff", "require" => "user=alice|user=bob"))
}
\$HTTP["url"] =~ "^/server-" {
    auth.backend = "plain"
    auth.backend.plain.userfile = "$WORK/plain.user"
    auth.require = ("/server-" => ("method" => "basic", "realm" => "Status", "require" => "valid-user"))
}
status.status-url = "/server-status"
status.statistics-url = "/server-statistics"
status.config-url = "/server-config"
\$HTTP["url"] =~ "^/files/" { dir-listing.activate = "enable" }
deflate.mimetypes = ("text/html", "text/plain", "text/css", "application/javascript", "text/csv")
deflate.allowed-encodings = ("brotli", "zstd", "gzip", "deflate")
deflate.cache-dir = "$WORK/deflate-cache"
expire.url = ("/static/" => "access plus 1 days")
setenv.add-response-header = ("X-Served-By" => "web1")
cgi.assign = (".cgi" => "/bin/sh", ".py" => "$PY", ".pl" => "/usr/bin/perl-5.8")
cgi.limits = ("read-timeout" => 3, "write-timeout" => 3)
\$HTTP["url"] =~ "^/api/" {
    proxy.server = ("" => (("host" => "127.0.0.1", "port" => $BE)))
}
\$HTTP["url"] =~ "^/legacy/" {
    proxy.server = ("" => (("host" => "127.0.0.1", "port" => $DOWN)))
}
\$HTTP["url"] =~ "^/slow/" {
    proxy.server = ("" => (("host" => "127.0.0.1", "port" => $HANG, "read-timeout" => 3, "connect-timeout" => 2)))
}
fastcgi.server = (".php" => (("socket" => "$WORK/php-fpm.sock", "check-local" => "disable")))
\$SERVER["socket"] == "127.0.0.1:$S" {
    ssl.engine = "enable"
    ssl.pemfile = "$WORK/server.pem"
    ssl.openssl.ssl-conf-cmd = ("MinProtocol" => "TLSv1.2")
}
include "$WORK/phase.conf"
CFG
phase() { # phase NAME: the debug settings of the next run, then a graceful reload
    case $1 in
        quiet) : > "$WORK/phase.conf" ;;
        handling) printf '%s\n' 'debug.log-request-handling = "enable"' \
                     'debug.log-file-not-found = "enable"' 'proxy.debug = 1' 'fastcgi.debug = 1' \
                     > "$WORK/phase.conf" ;;
        condition) printf '%s\n' 'debug.log-condition-handling = "enable"' > "$WORK/phase.conf" ;;
        headers) printf '%s\n' 'debug.log-request-header = "enable"' 'debug.log-response-header = "enable"' \
                     'debug.log-request-header-on-error = "enable"' > "$WORK/phase.conf" ;;
        timeouts) printf '%s\n' 'debug.log-timeouts = "enable"' 'debug.log-request-handling = "enable"' 'debug.log-ssl-noise = "enable"' \
                     'debug.log-request-header-on-error = "enable"' 'debug.log-file-not-found = "enable"' \
                     > "$WORK/phase.conf" ;;
    esac
}
phase quiet
start_lighttpd() {
    bg sh -c "exec lighttpd -D -f '$WORK/lighttpd.conf' 2>>'$ELOG'"
    LPID=$LASTPID
    wait_port $P; wait_port $S
}
reload() { phase "$1"; kill -USR1 "$LPID"; sleep 2; wait_port $P; wait_port $S; }

# --- traffic ------------------------------------------------------------------
H=http://127.0.0.1:$P
T=https://127.0.0.1:$S
agents=("Mozilla/5.0 (X11; Linux x86_64; rv:115.0) Gecko/20100101 Firefox/115.0"
        "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/120.0 Safari/537.36"
        "curl/7.88.1" "Wget/1.21.3" "python-requests/2.28.1"
        "Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)"
        "Go-http-client/1.1" "Prometheus/2.42.0" "-")
pages=(/ /index.html /about.html /contact.html /static/app.js /static/style.css /img/logo.png
       /favicon.ico /robots.txt /docs/manual.txt /files/ /files/reports/ /files/empty/
       /files/reports/q1-2024.csv /files/README.txt /new/pricing.html /old/pricing.html
       /old/about /blog /downloads/release-1.2.tar.gz /downloads/release-1.1.zip
       /api/v1/items/ /api/v1/items/17 /api/v1/items/99 /api/v1/users/42 /api/v1/users/5
       /search/widgets /search/error%20codes /reports/2024 /reports/1999 /reports
       /cgi-bin/env.cgi?x=1 /cgi-bin/search.cgi?q=lamp /cgi-bin/search.cgi?q=error
       /cgi-bin/search.cgi?q=1%27%20OR%201=1 /cgi-bin/search.cgi /cgi-bin/report.py
       /cgi-bin/redirect.cgi /cgi-bin/broken.cgi /cgi-bin/die.cgi /cgi-bin/crash.cgi
       /cgi-bin/legacy.pl /cgi-bin/missing.cgi /index.php /wp-login.php /xmlrpc.php
       /.env /.git/config /config.inc /about.html.bak /index.html~ /tmp/cache.dat
       /phpmyadmin/index.php /legacy/orders /legacy/ /admin/ /private/ /private/report.txt
       /server-status /server-statistics /../../etc/passwd /%2e%2e/%2e%2e/etc/shadow
       /docs//manual.txt /static/../index.html /nope.html /img/missing.png)
wantauth=(admin:adminpw ops:opspw deploy:deploypw admin:admin123 root:toor ops:Opspw guest:)
digauth=(alice:alicepw bob:bobpw carol:carolpw alice:wrong mallory:letmein)
K=""   # -k while the traffic goes to the self-signed HTTPS port
c() { curl -s -o /dev/null -m 6 $K "$@" 2>/dev/null || true; }
methods=(DELETE PUT OPTIONS PROPFIND TRACE)
traffic() { # traffic N [BASE]
    base=${2:-$H}
    for _ in $(seq 1 "$1"); do
        p=${pages[$((RANDOM % ${#pages[@]}))]}
        a=${agents[$((RANDOM % ${#agents[@]}))]}
        case $((RANDOM % 24)) in
            0) c -A "$a" -u "${wantauth[$((RANDOM % ${#wantauth[@]}))]}" "$base/admin/" ;;
            1) c -A "$a" --digest -u "${digauth[$((RANDOM % ${#digauth[@]}))]}" "$base/private/report.txt" ;;
            2) c -A "$a" -u "monitor:statuspw" "$base/server-status?auto" ;;
            3) c -A "$a" -X POST -d "email=user$RANDOM@example.org&msg=hello" "$base/cgi-bin/contact.cgi" ;;
            4) c -A "$a" -X POST -d "msg=no+address" "$base/cgi-bin/contact.cgi" ;;
            5) c -A "$a" -r "$((RANDOM % 5000))-$((5000 + RANDOM % 20000))" "$base/docs/manual.txt" ;;
            6) c -A "$a" -r "0-1023,4096-8191" "$base/downloads/release-1.2.tar.gz" ;;
            7) c -A "$a" --compressed "$base/static/app.js" ;;
            8) c -A "$a" -H "Accept-Encoding: br" "$base/docs/manual.txt" ;;
            9) c -A "$a" -I "$base$p" ;;
            10) c -A "$a" -H "If-Modified-Since: $(date -u -R)" "$base/static/style.css" ;;
            11) c -A "$a" -X "${methods[$((RANDOM % ${#methods[@]}))]}" "$base$p" ;;
            12) c -A "$a" -H "X-User: u$((RANDOM % 40))" --data-binary @"$W/img/logo.png" "$base/cgi-bin/upload.cgi" ;;
            13) c -A "$a" -H "Host: static.example.test" "$base$p" ;;
            *) c -A "$a" --path-as-is -e "$base/" "$base$p" ;;
        esac
    done
}
tls_traffic() { # mixed good and bad TLS clients
    for _ in $(seq 1 "$1"); do
        case $((RANDOM % 9)) in
            0) printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' | timeout 3 nc -q1 127.0.0.1 $S >/dev/null 2>&1 || true ;;
            1) c --tlsv1 --tls-max 1.1 "$T/" ;;
            2) head -c 200 /dev/urandom | timeout 3 nc -q1 127.0.0.1 $S >/dev/null 2>&1 || true ;;
            3) c "$T/index.html" ;;  # the certificate is not trusted: the client gives up
            4) echo | timeout 3 openssl s_client -connect 127.0.0.1:$S -cipher 'RC4-MD5:NULL' -tls1_2 >/dev/null 2>&1 || true ;;
            *) K=-k; traffic 3 "$T"; c "$T/"; K="" ;;
        esac
    done
}
raw() { printf "$1" | timeout "${2:-3}" nc -q1 127.0.0.1 $P >/dev/null 2>&1 || true; }
malformed() {
    raw 'GARBAGE\r\n\r\n'
    raw 'GET /\r\n\r\n'
    raw 'GET / HTTP/1.1\r\n\r\n'
    raw 'GET / HTTP/9.9\r\nHost: x\r\n\r\n'
    raw 'GET / HTTP/1.1\r\nHost: bad host name\r\n\r\n'
    raw 'GET / HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n'
    raw 'GET /index.html HTTP/1.1\r\nHost: x\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'
    raw 'POST /cgi-bin/upload.cgi HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n'
    raw 'POST /cgi-bin/upload.cgi HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\nab' 8
    raw 'GET /%%00 HTTP/1.1\r\nHost: x\r\n\r\n'
    raw 'GET /index.html HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n'
    raw '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03'
    raw 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n'
    # a request line and headers far over the field limit
    c -H "X-Junk: $(head -c 6000 /dev/zero | tr '\0' a)" "$H/index.html"
    c -H "Cookie: $(head -c 70000 /dev/zero | tr '\0' b)" "$H/index.html"
    c "$H/$(head -c 9000 /dev/zero | tr '\0' z)"
}
uploads() { # bodies over server.max-request-size (512 KB)
    head -c 2000000 /dev/urandom > "$WORK/big.bin"
    head -c 400000 /dev/urandom > "$WORK/ok.bin"
    c -H "X-User: backup" --data-binary @"$WORK/ok.bin" "$H/cgi-bin/upload.cgi"
    c -H "X-User: backup" --data-binary @"$WORK/big.bin" "$H/cgi-bin/upload.cgi"
    c -H "X-User: media" -F "file=@$WORK/big.bin" "$H/cgi-bin/upload.cgi"
    c -H "Transfer-Encoding: chunked" --data-binary @"$WORK/big.bin" "$H/cgi-bin/upload.cgi"
    c -T "$WORK/big.bin" "$H/files/big.bin"
    c -H "X-User: media" --data-binary @"$WORK/big.bin" "$H/api/v1/items/"
}
holders() { # holders N SECONDS: idle clients that send half a request
    hp=""
    for i in $(seq 1 "$1"); do
        { printf 'GET /docs/manual.txt HTTP/1.1\r\nHost: 127.0.0.1\r\n'; sleep "$2"; } |
            timeout $(($2 + 2)) nc 127.0.0.1 $P >/dev/null 2>&1 & hp="$hp $!"
    done
}
wait_holders() { for p in $hp; do wait "$p" 2>/dev/null || true; done; }
slow_clients() {
    # one that trickles its request, one that reads nothing of a big reply
    { printf 'GET /index.html HTTP/1.1\r\n'; sleep 3; printf 'Host: 127.0.0.1\r\n'; sleep 8; } |
        timeout 12 nc 127.0.0.1 $P >/dev/null 2>&1 &
    sp1=$!
    $PY - "$P" <<'EOF' &
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
s.sendall(b"GET /downloads/release-1.2.tar.gz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
time.sleep(13)
EOF
    sp2=$!
    # keep-alive connections left open after their request
    $PY - "$P" <<'EOF' &
import socket, sys, time
ss = []
for i in range(6):
    s = socket.create_connection(("127.0.0.1", int(sys.argv[1])))
    s.sendall(b"GET /about.html HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    ss.append(s)
time.sleep(7)
EOF
    sp3=$!
    c "$H/slow/report"; c "$H/slow/export?fmt=csv"
    c "$H/cgi-bin/slow.cgi"
    wait $sp1 $sp2 $sp3 2>/dev/null || true
}
over_limit() { # more clients than server.max-connections (48)
    holders 60 6
    sleep 1
    burst "$H/index.html" 5
    wait_holders
    sleep 1
}

# --- the run ------------------------------------------------------------------
# a start that fails: the certificate is missing
mv "$WORK/server.pem" "$WORK/server.pem.new"
lighttpd -D -f "$WORK/lighttpd.conf" 2>>"$ELOG" || true
mv "$WORK/server.pem.new" "$WORK/server.pem"
# a start that fails: the port is taken by the backend
sed "s/^server.port = $P\$/server.port = $BE/" "$WORK/lighttpd.conf" > "$WORK/typo.conf"
lighttpd -D -f "$WORK/typo.conf" 2>>"$ELOG" || true
start_lighttpd
say "traffic"
traffic 500
tls_traffic 30
c -u monitor:statuspw "$H/server-statistics"; c -u monitor:statuspw "$H/server-config"
c -u monitor:wrong "$H/server-status"; c -u nobody:x "$H/server-status"
c --interface 127.0.0.66 "$H/index.html"; c --interface 127.0.0.66 "$H/files/"
malformed
uploads
say "debug ($SECONDS s)"
reload handling
traffic 45
c "$H/index.php"; c "$H/legacy/orders"; c "$H/api/v1/items/9"; c --interface 127.0.0.66 "$H/about.html"
reload condition
traffic 6
reload quiet
traffic 350
kill -HUP "$LPID"; sleep 1
tls_traffic 25
tls_traffic 15
say "timeouts ($SECONDS s)"
reload timeouts
slow_clients
over_limit
for _ in 1 2; do
    printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' | timeout 3 nc -q1 127.0.0.1 $S >/dev/null 2>&1 || true
    c --tlsv1 --tls-max 1.1 "$T/"
    echo | timeout 3 openssl s_client -connect 127.0.0.1:$S -cipher 'RC4-MD5:NULL' -tls1_2 >/dev/null 2>&1 || true
    curl -s -o /dev/null -m 3 "$T/index.html" || true
    echo | timeout 3 openssl s_client -connect 127.0.0.1:$S -servername www.example.test -tls1_3 >/dev/null 2>&1 || true
done
malformed
reload headers
traffic 15
reload quiet
traffic 300
say "restart ($SECONDS s)"
# a restart
kill -TERM "$LPID"; wait "$LPID" 2>/dev/null || true
sleep 1
start_lighttpd
traffic 400
tls_traffic 20
uploads
malformed
traffic 200
kill -INT "$LPID"; wait "$LPID" 2>/dev/null || true
sleep 1
emit lighttpd "$ELOG" "$ALOG"

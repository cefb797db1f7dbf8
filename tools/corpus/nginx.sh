#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# nginx (Debian package nginx): static site, basic auth, a proxy to a backend
# that is up, one that is down and one that is too slow, request limiting.
# Traffic: a fixed pseudo-random sequence of requests; malformed requests.
. "$(dirname "$0")/common.sh"
ensure_pkg nginx curl netcat-openbsd python3
mkdir -p "$WORK/www/static" "$WORK/www/private" "$WORK/www/img" "$WORK/tmp"
echo '<html><body>hello</body></html>' > "$WORK/www/index.html"
echo 'body{}' > "$WORK/www/static/style.css"
echo 'report' > "$WORK/www/private/report.txt"
# htpasswd entry for alice:alicepw
echo "alice:$(openssl passwd -apr1 -salt txlcorps alicepw)" > "$WORK/htpasswd"
chmod -R a+rX "$WORK"
cat > "$WORK/nginx.conf" <<CFG
user www-data;
worker_processes 2;
pid $WORK/nginx.pid;
error_log $WORK/error.log info;
events { worker_connections 64; }
http {
    access_log $WORK/access.log combined;
    keepalive_timeout 0;
    client_body_temp_path $WORK/tmp; proxy_temp_path $WORK/tmp;
    fastcgi_temp_path $WORK/tmp; uwsgi_temp_path $WORK/tmp; scgi_temp_path $WORK/tmp;
    limit_req_zone \$binary_remote_addr zone=api:1m rate=5r/s;
    client_max_body_size 1k;
    large_client_header_buffers 2 1k;
    upstream dead { server 127.0.0.1:18999; }
    upstream slow { server 127.0.0.1:18998; }
    server {
        listen 127.0.0.1:18080;
        server_name localhost;
        root $WORK/www;
        location /private/ { auth_basic "private"; auth_basic_user_file $WORK/htpasswd; }
        location /api/ { limit_req zone=api burst=2 nodelay; proxy_pass http://127.0.0.1:18997; }
        location /backend/ { proxy_pass http://dead; }
        location /slow { proxy_read_timeout 1s; proxy_pass http://slow; }
        location /login { proxy_pass http://127.0.0.1:18997; }
        location ~ \.php\$ { fastcgi_pass 127.0.0.1:18996; include /etc/nginx/fastcgi_params; }
        location /admin/ { deny all; }
    }
}
CFG
# backends: a working one and one that never answers in time
cat > "$WORK/backend.py" <<'PY'
import sys, time, http.server
class H(http.server.BaseHTTPRequestHandler):
    def log_message(self, *a): pass
    def _go(self):
        if sys.argv[2] == "slow": time.sleep(3)
        code = 200 if "items" in self.path else (401 if "login" in self.path else 404)
        self.send_response(code); self.send_header("Content-Length", "2"); self.end_headers()
        self.wfile.write(b"ok")
    do_GET = do_POST = do_DELETE = do_HEAD = _go
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), H).serve_forever()
PY
bg /usr/bin/python3 "$WORK/backend.py" 18997 fast >/dev/null 2>&1
bg /usr/bin/python3 "$WORK/backend.py" 18998 slow >/dev/null 2>&1
bg nginx -c "$WORK/nginx.conf" -g 'daemon off;'
wait_port 18080
say "traffic"
web_traffic http://127.0.0.1:18080 900 101
raw_http 127.0.0.1 18080
curl -s -o /dev/null -d "$(head -c 5000 /dev/zero | tr '\0' x)" http://127.0.0.1:18080/login
curl -s -o /dev/null -H "Cookie: $(head -c 3000 /dev/zero | tr '\0' c)" http://127.0.0.1:18080/
burst http://127.0.0.1:18080/api/v1/items 30
# configuration reload and a broken config test, then stop
nginx -c "$WORK/nginx.conf" -s reload; sleep 1
web_traffic http://127.0.0.1:18080 150 202
nginx -c "$WORK/nginx.conf" -s quit; sleep 2
emit nginx "$WORK/access.log" "$WORK/error.log"

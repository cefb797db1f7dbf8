#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Apache httpd (Debian package apache2): static site, basic auth, a CGI script
# that fails, a reverse proxy to a dead backend, access control.
# Traffic: the same kind of fixed request sequence as nginx, malformed requests.
. "$(dirname "$0")/common.sh"
ensure_pkg apache2 apache2-utils curl netcat-openbsd
M=/usr/lib/apache2/modules
mkdir -p "$WORK/www/private" "$WORK/www/static" "$WORK/cgi-bin" "$WORK/run"
echo '<html><body>hello</body></html>' > "$WORK/www/index.html"
echo 'report' > "$WORK/www/private/report.txt"
htpasswd -cb "$WORK/htpasswd" alice alicepw >/dev/null 2>&1
printf '#!/bin/sh\necho "Content-Type: text/plain"\necho\nls /nonexistent-dir\nexit 1\n' > "$WORK/cgi-bin/test.cgi"
chmod 755 "$WORK/cgi-bin/test.cgi"; chmod -R a+rX "$WORK"
cat > "$WORK/httpd.conf" <<CFG
ServerRoot /etc/apache2
ServerName localhost
Listen 127.0.0.1:18081
PidFile $WORK/run/httpd.pid
Mutex file:$WORK/run default
DefaultRuntimeDir $WORK/run
User www-data
Group www-data
LoadModule mpm_event_module $M/mod_mpm_event.so
LoadModule authz_core_module $M/mod_authz_core.so
LoadModule authz_host_module $M/mod_authz_host.so
LoadModule authz_user_module $M/mod_authz_user.so
LoadModule authn_core_module $M/mod_authn_core.so
LoadModule authn_file_module $M/mod_authn_file.so
LoadModule auth_basic_module $M/mod_auth_basic.so
LoadModule mime_module $M/mod_mime.so
LoadModule dir_module $M/mod_dir.so
LoadModule alias_module $M/mod_alias.so
LoadModule cgid_module $M/mod_cgid.so
LoadModule proxy_module $M/mod_proxy.so
LoadModule proxy_http_module $M/mod_proxy_http.so
LoadModule status_module $M/mod_status.so
LoadModule reqtimeout_module $M/mod_reqtimeout.so
ScriptSock $WORK/run/cgisock
TypesConfig /etc/mime.types
ErrorLog $WORK/error.log
LogLevel info
LogFormat "%h %l %u %t \"%r\" %>s %O \"%{Referer}i\" \"%{User-Agent}i\"" combined
CustomLog $WORK/access.log combined
DocumentRoot $WORK/www
LimitRequestFieldSize 1024
<Directory $WORK/www>
    Require all granted
    Options -Indexes
</Directory>
<Location /private>
    AuthType Basic
    AuthName private
    AuthUserFile $WORK/htpasswd
    Require valid-user
</Location>
<Location /admin>
    Require ip 10.0.0.0/8
</Location>
<Location /server-status>
    SetHandler server-status
    Require ip 192.0.2.1
</Location>
ScriptAlias /cgi-bin/ $WORK/cgi-bin/
ProxyPass /backend/ http://127.0.0.1:18999/
ProxyPass /api/ http://127.0.0.1:18999/api/
ProxyPass /slow http://127.0.0.1:18999/slow
CFG
export APACHE_LOG_DIR=$WORK
bg apache2 -f "$WORK/httpd.conf" -DFOREGROUND
wait_port 18081
say "traffic"
web_traffic http://127.0.0.1:18081 900 303
raw_http 127.0.0.1 18081
curl -s -o /dev/null -H "X-Big: $(head -c 3000 /dev/zero | tr '\0' c)" http://127.0.0.1:18081/
burst http://127.0.0.1:18081/cgi-bin/test.cgi 10
apache2 -f "$WORK/httpd.conf" -k graceful; sleep 2
web_traffic http://127.0.0.1:18081 150 404
apache2 -f "$WORK/httpd.conf" -k stop; sleep 2
emit apache2 "$WORK/access.log" "$WORK/error.log"

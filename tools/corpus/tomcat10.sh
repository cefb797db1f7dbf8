#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Apache Tomcat 10 (Debian package tomcat10): a private CATALINA_BASE on
# loopback with three webapps: a working one, one whose pages throw
# exceptions or fail to compile, and one with a broken deployment descriptor.
# Traffic: the fixed request sequence, JSP requests, hot redeploy.
# Faults: runtime exceptions, JSP compile errors, a webapp that fails to
# start, a servlet class that does not exist, malformed HTTP requests.
. "$(dirname "$0")/common.sh"
ensure_pkg tomcat10 curl netcat-openbsd
B=$WORK/base
mkdir -p "$B/logs" "$B/temp" "$B/work" "$B/webapps"
cp -r /etc/tomcat10 "$B/conf"
sed -i 's/port="8080"/port="18082" address="127.0.0.1"/' "$B/conf/server.xml"
cp -r /var/lib/tomcat10/webapps/ROOT "$B/webapps/ROOT"
A=$B/webapps/shop
mkdir -p "$A/WEB-INF" "$A/api"
cat > "$A/index.jsp" <<'JSP'
<%@ page contentType="text/plain" %>items=<%= application.getAttribute("n") %>
<% application.log("shop index served to " + request.getRemoteAddr()); %>
JSP
cat > "$A/order.jsp" <<'JSP'
<%@ page contentType="text/plain" %>
<% String id = request.getParameter("id");
   int n = Integer.parseInt(id);
   Object[] a = new Object[2];
   out.println(a[n].toString()); %>
JSP
cat > "$A/broken.jsp" <<'JSP'
<%@ page contentType="text/plain" %>
<% int x = "text"; undefinedMethod(); %>
JSP
cat > "$A/WEB-INF/web.xml" <<'XML'
<?xml version="1.0" encoding="UTF-8"?>
<web-app xmlns="https://jakarta.ee/xml/ns/jakartaee" version="6.0">
  <servlet><servlet-name>report</servlet-name><servlet-class>com.example.ReportServlet</servlet-class></servlet>
  <servlet-mapping><servlet-name>report</servlet-name><url-pattern>/report</url-pattern></servlet-mapping>
</web-app>
XML
mkdir -p "$B/webapps/legacy/WEB-INF"
printf '<?xml version="1.0"?>\n<web-app><servlet><servlet-name>x</servlet-name>\n</web-app>\n' > "$B/webapps/legacy/WEB-INF/web.xml"
chown -R tomcat "$B" 2>/dev/null || true
export CATALINA_HOME=/usr/share/tomcat10 CATALINA_BASE=$B CATALINA_TMPDIR=$B/temp
export JAVA_OPTS="-Xmx256m -Djava.awt.headless=true"
bg sh -c "exec $CATALINA_HOME/bin/catalina.sh run > '$B/logs/catalina.out' 2>&1"
wait_port 18082 90
sleep 2
say "traffic"
U=http://127.0.0.1:18082
web_traffic "$U" 300 505
web_traffic "$U/shop" 300 606
for i in $(seq 0 30); do
    curl -s -o /dev/null "$U/shop/order.jsp?id=$((i % 4))"
    curl -s -o /dev/null "$U/shop/order.jsp?id=abc$i"
    curl -s -o /dev/null "$U/shop/index.jsp"
    [ $((i % 10)) = 0 ] && { curl -s -o /dev/null "$U/shop/broken.jsp"; curl -s -o /dev/null "$U/shop/report"; curl -s -o /dev/null "$U/legacy/"; }
done
raw_http 127.0.0.1 18082
# hot redeploy of the shop webapp
touch "$A/WEB-INF/web.xml"; sleep 12
curl -s -o /dev/null "$U/shop/index.jsp"
kill "$LASTPID"; sleep 5
emit tomcat10 "$B/logs/catalina.out" "$B"/logs/localhost.*.log "$B"/logs/localhost_access_log.*

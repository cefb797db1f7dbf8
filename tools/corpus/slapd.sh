#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# OpenLDAP (Debian package slapd), a directory on loopback with its own
# configuration, logging at level stats through rsyslog as a packaged slapd
# does. HELD OUT: never trained on (collect.sh --held-out).
# Traffic: binds, searches of many filters, adds, modifies, deletes,
# compares, password changes. Faults: wrong passwords, unknown entries,
# entries that exist already, schema violations, searches over the size
# limit, a bad base, a malformed request, a restart.
. "$(dirname "$0")/common.sh"
ensure_pkg slapd ldap-utils netcat-openbsd
P=3890
U="ldap://127.0.0.1:$P/"
B="dc=example,dc=test"
mkdir -p "$WORK/db"
chown -R openldap "$WORK/db" 2>/dev/null || true
cat > "$WORK/slapd.conf" <<CFG
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/nis.schema
include /etc/ldap/schema/inetorgperson.schema
pidfile $WORK/slapd.pid
modulepath /usr/lib/ldap
moduleload back_mdb
loglevel stats
sizelimit 50
database mdb
maxsize 10485760
suffix "$B"
rootdn "cn=admin,$B"
rootpw adminpw
directory $WORK/db
index objectClass eq
index uid eq
access to attrs=userPassword by self write by anonymous auth by * none
access to * by * read
CFG
start_rsyslog "$WORK/slapd.log"
start_slapd() {
    slapd -h "$U" -f "$WORK/slapd.conf" -l LOCAL4
    wait_port $P
    PIDS="$PIDS $(cat "$WORK/slapd.pid")"  # it forks away: stopped on exit too
}
start_slapd
say "traffic"
A="-x -H $U -D cn=admin,$B -w adminpw"
{
    printf 'dn: %s\nobjectClass: dcObject\nobjectClass: organization\ndc: example\no: Example\n\n' "$B"
    for ou in people groups hosts; do printf 'dn: ou=%s,%s\nobjectClass: organizationalUnit\nou: %s\n\n' $ou "$B" $ou; done
} | ldapadd $A >/dev/null 2>&1 || true
RANDOM=3890
for i in $(seq 1 80); do
    printf 'dn: uid=user%d,ou=people,%s\nobjectClass: inetOrgPerson\nobjectClass: posixAccount\nuid: user%d\ncn: User %d\nsn: Number%d\nmail: user%d@example.test\nuidNumber: %d\ngidNumber: 100\nhomeDirectory: /home/user%d\nuserPassword: pw%d\n\n' \
        $i "$B" $i $i $i $i $((10000 + i)) $i $i
done | ldapadd -c $A >/dev/null 2>&1 || true
round() {
    for j in $(seq 1 60); do
        u=$((RANDOM % 100 + 1))
        case $((RANDOM % 14)) in
            0|1) ldapsearch -x -H "$U" -b "ou=people,$B" "(uid=user$u)" cn mail >/dev/null 2>&1 ;;
            2) ldapsearch -x -H "$U" -D "uid=user$u,ou=people,$B" -w "pw$u" -b "$B" "(mail=user$u@*)" >/dev/null 2>&1 ;;
            3) ldapsearch -x -H "$U" -D "uid=user$u,ou=people,$B" -w "bad$j" -b "$B" "(uid=*)" >/dev/null 2>&1 ;;
            4) ldapsearch -x -H "$U" -b "$B" "(objectClass=*)" dn >/dev/null 2>&1 ;;  # over the size limit
            5) ldapsearch -x -H "$U" -b "ou=nowhere,$B" "(cn=*)" >/dev/null 2>&1 ;;
            6) ldapsearch -x -H "$U" -b "$B" "(&(objectClass=posixAccount)(uidNumber>=$((10000 + u))))" uid >/dev/null 2>&1 ;;
            7) printf 'dn: uid=user%d,ou=people,%s\nchangetype: modify\nreplace: mail\nmail: u%d.%d@example.test\n\n' $u "$B" $u $j |
                   ldapmodify $A >/dev/null 2>&1 ;;
            8) printf 'dn: uid=user%d,ou=people,%s\nchangetype: modify\nadd: shoeSize\nshoeSize: 42\n\n' $u "$B" |
                   ldapmodify $A >/dev/null 2>&1 ;;  # no such attribute in the schema
            9) ldapcompare -x -H "$U" "uid=user$u,ou=people,$B" "sn:Number$u" >/dev/null 2>&1 ;;
            10) ldapdelete $A "uid=user$((u + 50)),ou=people,$B" >/dev/null 2>&1 ;;
            11) printf 'dn: uid=user%d,ou=people,%s\nobjectClass: inetOrgPerson\nuid: user%d\ncn: Again\nsn: Again\n\n' $u "$B" $u |
                    ldapadd $A >/dev/null 2>&1 ;;
            12) ldappasswd -x -H "$U" -D "uid=user$u,ou=people,$B" -w "pw$u" -s "pw$u" >/dev/null 2>&1 ;;
            *) ldapwhoami -x -H "$U" -D "uid=user$u,ou=people,$B" -w "pw$u" >/dev/null 2>&1 ;;
        esac || true
    done
}
round; round; round
printf '0\x84\xff\xff\xff\xff' | timeout 2 nc -q1 127.0.0.1 $P >/dev/null 2>&1 || true
printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' | timeout 2 nc -q1 127.0.0.1 $P >/dev/null 2>&1 || true
round; round
kill "$(cat "$WORK/slapd.pid")"; sleep 2
start_slapd
round; round; round
kill "$(cat "$WORK/slapd.pid")"; sleep 2
stop_rsyslog
emit slapd "$WORK/slapd.log"

#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# BIND 9 (Debian package bind9), authoritative only, on loopback, logging
# queries, transfers, updates and errors to a file. HELD OUT: never trained
# on (collect.sh --held-out).
# Traffic: queries of every common type over UDP and TCP, dynamic updates,
# reloads. Faults: names and zones that do not exist, recursion asked of a
# server that refuses it, zone transfers and updates from a client that is
# not allowed, a zone file with errors, a zone file that is missing,
# malformed packets.
. "$(dirname "$0")/common.sh"
ensure_pkg bind9 bind9-dnsutils netcat-openbsd
P=5353
mkdir -p "$WORK/zones"
cat > "$WORK/zones/example.test" <<'Z'
$TTL 300
@       IN SOA ns1.example.test. hostmaster.example.test. ( 2026112901 3600 600 86400 300 )
        IN NS  ns1.example.test.
        IN MX  10 mail.example.test.
        IN TXT "v=spf1 mx -all"
ns1     IN A   127.0.0.1
mail    IN A   192.0.2.25
www     IN A   192.0.2.80
www     IN AAAA 2001:db8::80
api     IN CNAME www
db      IN A   192.0.2.54
_ldap._tcp IN SRV 0 5 389 db
Z
cp "$WORK/zones/example.test" "$WORK/zones/dyn.test"
sed -i 's/example\.test/dyn.test/g' "$WORK/zones/dyn.test"
cat > "$WORK/zones/broken.test" <<'Z'
$TTL 300
@   IN SOA ns1.broken.test. hostmaster.broken.test. ( 1 3600 600 86400 300 )
    IN NS ns1.broken.test.
ns1 IN A 999.0.0.1
www IN CNAME
Z
tsig=$(tsig-keygen -a hmac-sha256 upd-key)
echo "$tsig" > "$WORK/upd.key"
rndc-confgen -a -A hmac-sha256 -k rndc-key -c "$WORK/rndc.key" >/dev/null 2>&1
cat > "$WORK/named.conf" <<CFG
include "$WORK/rndc.key";
$tsig
controls { inet 127.0.0.1 port 9953 allow { 127.0.0.1; } keys { "rndc-key"; }; };
options {
    directory "$WORK";
    pid-file "$WORK/named.pid";
    listen-on port $P { 127.0.0.1; };
    listen-on-v6 { none; };
    recursion no;
    allow-transfer { none; };
    dnssec-validation no;
    notify no;
};
logging {
    channel file { file "$WORK/named.log"; print-time yes; print-category yes; print-severity yes; severity info; };
    category default { file; };
    category queries { file; };
    category query-errors { file; };
    category xfer-out { file; };
    category update { file; };
    category update-security { file; };
    category security { file; };
};
zone "example.test" { type primary; file "zones/example.test"; allow-transfer { key upd-key; }; };
zone "dyn.test" { type primary; file "zones/dyn.test"; allow-update { key upd-key; }; };
zone "broken.test" { type primary; file "zones/broken.test"; };
zone "gone.test" { type primary; file "zones/gone.test"; };
CFG
bg named -f -c "$WORK/named.conf"
wait_port $P
sleep 1
say "traffic"
RNDC="rndc -k $WORK/rndc.key -s 127.0.0.1 -p 9953"
$RNDC querylog on >/dev/null 2>&1 || true
# a fixed pseudo-random batch of queries, run by one dig process each round
RANDOM=4242
names=(www.example.test mail.example.test api.example.test db.example.test example.test
       ns1.example.test nope.example.test _ldap._tcp.example.test www.dyn.test dyn.test
       www.broken.test gone.test www.google.com example.org localhost 1.2.0.192.in-addr.arpa)
types=(A A A AAAA MX TXT NS SOA SRV CNAME ANY CAA)
for round in $(seq 1 12); do
    : > "$WORK/batch"
    for i in $(seq 1 220); do
        n=${names[$((RANDOM % ${#names[@]}))]}
        t=${types[$((RANDOM % ${#types[@]}))]}
        case $((RANDOM % 10)) in
            0) echo "$n $t +tcp" ;;
            1) echo "$n $t +norecurse" ;;
            2) echo "$n $t +dnssec" ;;
            3) echo "x$RANDOM.$n $t" ;;
            *) echo "$n $t +recurse" ;;
        esac >> "$WORK/batch"
    done
    dig @127.0.0.1 -p $P +tries=1 +time=2 -f "$WORK/batch" >/dev/null 2>&1 || true
    case $((round % 4)) in
        0) # transfers: refused without the key, allowed with it
           dig @127.0.0.1 -p $P example.test AXFR >/dev/null 2>&1 || true
           dig @127.0.0.1 -p $P dyn.test AXFR >/dev/null 2>&1 || true
           dig @127.0.0.1 -p $P -k "$WORK/upd.key" example.test AXFR >/dev/null 2>&1 || true ;;
        1) # updates: with the key, without it, to a zone that takes none
           printf 'server 127.0.0.1 %d\nzone dyn.test\nupdate add host%d.dyn.test 300 A 192.0.2.%d\nsend\n' \
               $P "$round" $((round + 100)) | nsupdate -k "$WORK/upd.key" >/dev/null 2>&1 || true
           printf 'server 127.0.0.1 %d\nzone dyn.test\nupdate delete www.dyn.test A\nsend\n' $P |
               nsupdate >/dev/null 2>&1 || true
           printf 'server 127.0.0.1 %d\nzone example.test\nupdate add evil.example.test 60 A 203.0.113.6\nsend\n' $P |
               nsupdate -k "$WORK/upd.key" >/dev/null 2>&1 || true ;;
        2) # reloads, and a zone file that comes back
           $RNDC reload >/dev/null 2>&1 || true
           [ $round = 6 ] && cp "$WORK/zones/example.test" "$WORK/zones/gone.test" &&
               sed -i 's/example\.test/gone.test/g' "$WORK/zones/gone.test" &&
               $RNDC reload gone.test >/dev/null 2>&1 || true
           $RNDC reload nosuch.test >/dev/null 2>&1 || true ;;
        3) # malformed packets over UDP and TCP
           printf '\x12\x34\x01\x00\x00\x01' | timeout 2 nc -u -q1 127.0.0.1 $P >/dev/null 2>&1 || true
           printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' | timeout 2 nc -q1 127.0.0.1 $P >/dev/null 2>&1 || true
           $RNDC flush >/dev/null 2>&1 || true
           $RNDC status >/dev/null 2>&1 || true ;;
    esac
done
$RNDC freeze dyn.test >/dev/null 2>&1 || true
$RNDC thaw dyn.test >/dev/null 2>&1 || true
$RNDC stop >/dev/null 2>&1 || true
sleep 2
emit named "$WORK/named.log"

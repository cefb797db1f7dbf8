#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Unbound (Debian package unbound), a caching resolver on loopback serving
# local data, logging queries, replies, local actions and servfails to a
# file; clients are dig (bind9-dnsutils), unbound-host and unbound-control.
# HELD OUT (second set): never trained on (collect.sh --held-out-2).
# Traffic: queries of every common type over UDP and TCP for names in local
# zones of every kind, unbound-control commands (stats, lookups, cache
# flushes and dumps, local data and zones added and removed, forwards added
# and removed, verbosity changes, reloads). Faults: names that do not exist,
# refused, dropped, blocked and redirected zones, a forwarder and a stub
# server that are down (connection refused, timeouts, servfail), client
# addresses the access control refuses or drops, a client over the rate
# limit, malformed packets over UDP and TCP, zone transfers asked of a
# resolver, a control connection without TLS, bad control commands, a
# restart.
. "$(dirname "$0")/common.sh"
ensure_pkg unbound unbound-host openssl bind9-dnsutils netcat-openbsd
P=18553
CP=18953
unbound-control-setup -d "$WORK" >/dev/null 2>&1
chmod 644 "$WORK"/unbound_*.key "$WORK"/unbound_*.pem
cat > "$WORK/unbound.conf" <<CFG
server:
    interface: 127.0.0.1@$P
    port: $P
    do-ip4: yes
    do-ip6: no
    do-udp: yes
    do-tcp: yes
    num-threads: 1
    so-reuseport: no
    chroot: ""
    username: ""
    directory: "$WORK"
    pidfile: "$WORK/unbound.pid"
    logfile: "$WORK/unbound.log"
    use-syslog: no
    log-time-ascii: yes
    verbosity: 2
    log-queries: yes
    log-replies: yes
    log-servfail: yes
    log-local-actions: yes
    val-log-level: 2
    module-config: "iterator"
    do-not-query-localhost: no
    ip-ratelimit: 0
    access-control: 127.0.0.0/8 allow
    access-control: 127.0.0.2/32 refuse
    access-control: 127.0.0.3/32 deny
    access-control: 127.0.0.5/32 allow_snoop
    local-zone: "test." nodefault
    local-zone: "corp.example." static
    local-data: "corp.example. 3600 IN SOA ns1.corp.example. hostmaster.corp.example. 2026112901 3600 600 86400 300"
    local-data: "corp.example. 3600 IN NS ns1.corp.example."
    local-data: "corp.example. 3600 IN MX 10 mail.corp.example."
    local-data: "corp.example. 3600 IN MX 20 mx2.corp.example."
    local-data: 'corp.example. 3600 IN TXT "v=spf1 mx -all"'
    local-data: 'corp.example. 3600 IN CAA 0 issue "letsencrypt.org"'
    local-data: "ns1.corp.example. 3600 IN A 192.0.2.53"
    local-data: "mail.corp.example. 3600 IN A 192.0.2.25"
    local-data: "mx2.corp.example. 3600 IN A 192.0.2.26"
    local-data: "www.corp.example. 300 IN A 192.0.2.80"
    local-data: "www.corp.example. 300 IN A 192.0.2.81"
    local-data: "www.corp.example. 300 IN AAAA 2001:db8::80"
    local-data: "api.corp.example. 300 IN CNAME www.corp.example."
    local-data: "db.corp.example. 300 IN A 192.0.2.54"
    local-data: "_ldap._tcp.corp.example. 300 IN SRV 0 5 389 db.corp.example."
    local-data: "_sip._udp.corp.example. 300 IN SRV 10 60 5060 voip.corp.example."
    local-data: "voip.corp.example. 300 IN A 192.0.2.60"
    local-data: "git.corp.example. 300 IN SSHFP 1 2 0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
    local-data: "git.corp.example. 300 IN A 192.0.2.90"
    local-data: 'printer.corp.example. 300 IN TXT "floor=2" "model=laser"'
    local-data: "printer.corp.example. 300 IN HINFO \"LASER\" \"EMBEDDED\""
    local-zone: "2.0.192.in-addr.arpa." static
    local-data-ptr: "192.0.2.25 mail.corp.example."
    local-data-ptr: "192.0.2.53 ns1.corp.example."
    local-data-ptr: "192.0.2.80 www.corp.example."
    local-data-ptr: "192.0.2.54 db.corp.example."
    local-zone: "office.lan." transparent
    local-data: "nas.office.lan. 600 IN A 10.1.0.20"
    local-data: "router.office.lan. 600 IN A 10.1.0.1"
    local-data: "router.office.lan. 600 IN AAAA fd00:1::1"
    local-data: "cam1.office.lan. 600 IN A 10.1.0.31"
    local-zone: "partner.example." typetransparent
    local-data: "portal.partner.example. 300 IN A 198.51.100.10"
    local-zone: "tracker.example." redirect
    local-data: "tracker.example. 60 IN A 127.0.0.9"
    local-zone: "ads.example." always_nxdomain
    local-zone: "blocked.example." refuse
    local-data: "allowed.blocked.example. 60 IN A 198.51.100.99"
    local-zone: "gambling.example." always_refuse
    local-zone: "sinkhole.example." always_null
    local-zone: "empty.example." always_nodata
    local-zone: "watch.example." inform
    local-data: "c2.watch.example. 60 IN A 203.0.113.66"
    local-zone: "malware.example." inform_deny
    local-zone: "phish.example." inform_redirect
    local-data: "phish.example. 60 IN A 127.0.0.10"
    local-zone: "dropped.example." deny

remote-control:
    control-enable: yes
    control-interface: 127.0.0.1
    control-port: $CP
    server-key-file: "$WORK/unbound_server.key"
    server-cert-file: "$WORK/unbound_server.pem"
    control-key-file: "$WORK/unbound_control.key"
    control-cert-file: "$WORK/unbound_control.pem"

stub-zone:
    name: "dc.internal."
    stub-addr: 127.0.0.1@18598

forward-zone:
    name: "."
    forward-addr: 127.0.0.1@18599
    forward-tcp-upstream: yes
CFG
unbound-checkconf "$WORK/unbound.conf" >/dev/null
# unbound-host (libunbound) sends everything to the resolver under test
cat > "$WORK/host.conf" <<CFG
server:
    do-not-query-localhost: no
    module-config: "iterator"
forward-zone:
    name: "."
    forward-addr: 127.0.0.1@$P
CFG
start_unbound() { bg unbound -d -c "$WORK/unbound.conf"; UPID=$LASTPID; wait_port $P; sleep 1; }
start_unbound
say "traffic"
UC="unbound-control -c $WORK/unbound.conf"
ctl() { $UC "$@" >/dev/null 2>&1 || true; }
DIG="dig @127.0.0.1 -p $P +tries=1 +time=1"
names=(www.corp.example mail.corp.example api.corp.example db.corp.example corp.example
       ns1.corp.example nope.corp.example _ldap._tcp.corp.example _sip._udp.corp.example
       git.corp.example printer.corp.example 80.2.0.192.in-addr.arpa 99.2.0.192.in-addr.arpa
       nas.office.lan router.office.lan cam9.office.lan portal.partner.example
       shop.partner.example tracker.example cdn.tracker.example x.ads.example ads.example
       allowed.blocked.example www.blocked.example casino.gambling.example
       a.sinkhole.example www.empty.example c2.watch.example beacon.watch.example
       login.phish.example dc1.dc.internal www.example.com debian.org localhost
       1.0.0.127.in-addr.arpa 10.1.168.192.in-addr.arpa printer.local www.invalid)
types=(A A A A AAAA MX TXT NS SOA SRV CNAME PTR ANY CAA SSHFP HINFO)
# a fixed pseudo-random batch of queries, run by one dig process
batch() {
    : > "$WORK/batch"
    for i in $(seq 1 "$1"); do
        n=${names[$((RANDOM % ${#names[@]}))]}
        t=${types[$((RANDOM % ${#types[@]}))]}
        case $((RANDOM % 12)) in
            0|1) echo "$n $t +tcp" ;;
            2) echo "$n $t +norecurse" ;;
            3) echo "$n $t +dnssec" ;;
            4) echo "x$RANDOM.$n $t" ;;
            5) echo "$n $t +cd" ;;
            *) echo "$n $t" ;;
        esac >> "$WORK/batch"
    done
    $DIG -f "$WORK/batch" >/dev/null 2>&1 || true
}
RANDOM=5353
round() {
    batch 62
    case $((RANDOM % 8)) in
        0) ctl stats_noreset; ctl lookup www.example.com; ctl list_local_zones ;;
        1) ctl flush_zone corp.example; ctl flush www.example.com; ctl flush_bogus ;;
        2) ctl local_data "tmp$RANDOM.corp.example. 60 IN A 192.0.2.$((RANDOM % 250))"
           ctl local_data "new.office.lan. 60 IN A 10.1.0.77"
           $DIG new.office.lan A >/dev/null 2>&1 || true
           ctl local_data_remove new.office.lan
           ctl local_zone "temp.example." static
           ctl local_zone_remove temp.example. ;;
        3) ctl dump_cache; ctl flush_infra all; ctl flush_requestlist; ctl stats ;;
        4) # the refused client, and one that may snoop the cache
           $DIG -b 127.0.0.2 www.corp.example A >/dev/null 2>&1 || true
           $DIG -b 127.0.0.2 +tcp mail.corp.example MX >/dev/null 2>&1 || true
           $DIG -b 127.0.0.5 +norecurse www.corp.example A >/dev/null 2>&1 || true
           $DIG -b 127.0.0.5 +norecurse www.example.com A >/dev/null 2>&1 || true ;;
        5) ctl forward_add example.net 127.0.0.1@18597
           $DIG www.example.net A >/dev/null 2>&1 || true
           ctl forward_remove example.net; ctl list_forwards; ctl dump_requestlist ;;
        6) # control: not TLS, bad commands
           printf 'UBCT1 status\n' | timeout 2 nc -q1 127.0.0.1 $CP >/dev/null 2>&1 || true
           ctl frobnicate; ctl local_data "bad.corp.example. IN A 999.1.2.3"
           ctl flush_zone; ctl set_option "no-such-option:" 1 ;;
        7) for h in www.corp.example mail.corp.example dc1.dc.internal x.ads.example; do
               unbound-host -C "$WORK/host.conf" -t A "$h" >/dev/null 2>&1 || true
           done
           ctl list_stubs; ctl status ;;
    esac
}
# odd and malformed requests, logged in detail at verbosity 3
oddities() {
    ctl verbosity 3
    printf '\x12\x34\x01\x00\x00\x01' | timeout 2 nc -u -w1 127.0.0.1 $P >/dev/null 2>&1 || true
    printf '\x12\x34\x81\x00\x00\x01\x00\x00\x00\x00\x00\x00\x03www\x00\x00\x01\x00\x01' |
        timeout 2 nc -u -w1 127.0.0.1 $P >/dev/null 2>&1 || true
    printf '\x12\x34\x01\x00\x00\x02\x00\x00\x00\x00\x00\x00\x03www\x00\x00\x01\x00\x01' |
        timeout 2 nc -u -w1 127.0.0.1 $P >/dev/null 2>&1 || true
    head -c 300 /dev/urandom | timeout 2 nc -u -w1 127.0.0.1 $P >/dev/null 2>&1 || true
    printf 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' | timeout 2 nc -q1 127.0.0.1 $P >/dev/null 2>&1 || true
    $DIG -b 127.0.0.3 db.corp.example A >/dev/null 2>&1 || true
    $DIG x.malware.example A >/dev/null 2>&1 || true
    $DIG www.dropped.example A >/dev/null 2>&1 || true
    $DIG +tcp corp.example AXFR >/dev/null 2>&1 || true
    $DIG +tcp corp.example IXFR=1 >/dev/null 2>&1 || true
    $DIG www.corp.example A CH >/dev/null 2>&1 || true
    $DIG version.bind TXT CH >/dev/null 2>&1 || true
    $DIG +opcode=status www.corp.example >/dev/null 2>&1 || true
    $DIG +edns=1 www.corp.example >/dev/null 2>&1 || true
    $DIG www.example.org A >/dev/null 2>&1 || true
    $DIG dc2.dc.internal A >/dev/null 2>&1 || true
    ctl verbosity 2
}
round; round; round; round
ctl verbosity 1
round; round; round
ctl verbosity 2
kill -HUP "$UPID"; sleep 1
round; round; round
oddities
# a client over the rate limit
ctl set_option ip-ratelimit: 10
batch 60
ctl set_option ip-ratelimit: 0
round
# the resolver restarts
ctl stop
sleep 2
start_unbound
round; round; round; round
ctl reload
round; round
oddities
round
ctl stop
sleep 2
emit unbound "$WORK/unbound.log"

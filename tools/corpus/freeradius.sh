#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# FreeRADIUS (Debian package freeradius, clients from freeradius-utils), a
# RADIUS server on loopback with a private copy of the packaged configuration,
# logging to its own file with auth logging on, followed by the accounting
# detail file it writes. HELD OUT (second set): never trained on (collect.sh
# --held-out-2).
# Traffic: PAP, CHAP and MS-CHAP logins of several users, accounting Start,
# Interim-Update and Stop of wireless sessions, Accounting-On/Off, Status-
# Server. Faults: wrong passwords, unknown users, malformed user names, an
# expired and a locked account, a second login over Simultaneous-Use, a wrong
# shared secret, packets from unknown clients, garbage datagrams, a realm
# whose home server never answers, a user who logs in before she is added,
# HUPs, a second server on a busy port, a restart.
. "$(dirname "$0")/common.sh"
ensure_pkg freeradius freeradius-utils netcat-openbsd
PA=18121
PC=18122
R=$WORK/raddb
LOG=$WORK/log/radius.log
cp -a /etc/freeradius/3.0 "$R"
mkdir -p "$WORK/log" "$WORK/run"
sed -i -e "s|^logdir = .*|logdir = $WORK/log|" -e "s|^raddbdir = .*|raddbdir = $R|" \
    -e "s|^run_dir = .*|run_dir = $WORK/run|" \
    -e 's|^\(\s*\)auth = no|\1auth = yes|' -e 's|^\(\s*\)auth_badpass = no|\1auth_badpass = yes|' \
    -e 's|^\(\s*\)auth_goodpass = no|\1auth_goodpass = yes|' \
    -e 's|^\(\s*\)reject_delay = 1|\1reject_delay = 0|' "$R/radiusd.conf"
# the packaged default site on loopback only (its IPv6 listeners dropped),
# with radutmp for Simultaneous-Use; the inner tunnel without a listener
rm -f "$R"/sites-enabled/*
sed '/^\s*#/d; /^\s*$/d' "$R/sites-available/default" | awk '
    /^listen {/ { inl = 1; buf = "" }
    inl { buf = buf $0 "\n"; if ($0 ~ /^}/) { inl = 0; if (buf !~ /ipv6addr/) printf "%s", buf } next }
    { print }' |
    sed -e 's|ipaddr = \*|ipaddr = 127.0.0.1|' -e "0,/port = 0/s//port = $PA/" -e "0,/port = 0/s//port = $PC/" \
        -e 's|^\(\s*\)unix$|&\n\1radutmp|' -e 's|^session {|&\n\tradutmp|' > "$R/sites-enabled/txl"
sed '/^\s*#/d; /^\s*$/d' "$R/sites-available/inner-tunnel" |
    awk '/^listen {/ { inl = 1 } inl { if ($0 ~ /^}/) inl = 0; next } { print }' > "$R/sites-enabled/inner-tunnel"
sed -i 's/check_with_nas = yes/check_with_nas = no/' "$R/mods-available/radutmp"
# one realm, whose home server (our own accounting port) never answers
cat > "$R/proxy.conf" <<CFG
proxy server {
	default_fallback = no
}
home_server roaming {
	type = auth
	ipaddr = 127.0.0.1
	port = $PC
	secret = testing123
	response_window = 3
	zombie_period = 6
	revive_interval = 20
	status_check = none
}
home_server_pool roaming_pool {
	type = fail-over
	home_server = roaming
}
realm roaming.test {
	auth_pool = roaming_pool
}
realm LOCAL {
}
CFG
{
    cat <<'USERS'
alice	Cleartext-Password := "alice-pw1"
	Reply-Message := "Hello, %{User-Name}"
bob	Cleartext-Password := "bob-pw2"
	Framed-IP-Address := 10.20.0.12
carol	Cleartext-Password := "carol-pw3", Simultaneous-Use := 1
dave	Cleartext-Password := "dave-pw4", Expiration := "Jan 01 2020"
erin	Cleartext-Password := "erin-pw5"
	Session-Timeout := 3600, Idle-Timeout := 600
frank	Auth-Type := Reject
	Reply-Message := "Account frank is locked"
printer	Cleartext-Password := "printer-pw6"
	Service-Type := Administrative-User
USERS
    cat "$R/mods-config/files/authorize"
} > "$WORK/authorize"
mv "$WORK/authorize" "$R/mods-config/files/authorize"
chown -R freerad:freerad "$R" "$WORK/log" "$WORK/run"

start_radius() {
    bg freeradius -f -d "$R"
    RPID=$LASTPID
    i=0
    until echo 'Message-Authenticator = 0x00' |
          radclient -q -t 1 -r 1 127.0.0.1:$PA status testing123 >/dev/null 2>&1; do
        i=$((i + 1)); [ $i -lt 30 ] || { say "radiusd never answered"; return 1; }
    done
}
start_radius
say "traffic"
CL=""
# rad KIND SECRET ATTRS: one request (accounting to its own port);
# rad_bg TIMEOUT KIND SECRET ATTRS: the same without waiting for the answer
port() { if [ "$1" = acct ]; then echo $PC; else echo $PA; fi; }
rad() { echo "$3" | radclient -t 2 -r 1 127.0.0.1:"$(port "$1")" "$1" "$2" >/dev/null 2>&1 || true; }
rad_bg() { echo "$4" | radclient -t "$1" -r 1 127.0.0.1:"$(port "$2")" "$2" "$3" >/dev/null 2>&1 & CL="$CL $!"; }
waitc() { for p in $CL; do wait "$p" || true; done; CL=""; }
# raw SRC PORT BYTES: one UDP datagram from SRC, written as printf escapes
raw() { printf "$3" | timeout 2 nc -u -q0 -s "$1" 127.0.0.1 "$2" >/dev/null 2>&1 || true; }
# BARE: an Access-Request of only a User-Name $1 (no password), as escapes
bare() {
    printf -v BARE '\\x01\\x%02x\\x00\\x%02x%04x%04x%04x%04x\\x01\\x%02x%s' $((RANDOM % 256)) \
        $((22 + ${#1})) $RANDOM $RANDOM $RANDOM $RANDOM $((2 + ${#1})) "$1"
}
good=(alice bob carol erin printer)
declare -A pw=([alice]=alice-pw1 [bob]=bob-pw2 [carol]=carol-pw3 [dave]=dave-pw4 [erin]=erin-pw5
               [frank]=frank-pw [printer]=printer-pw6 [grace]=grace-pw7)
unknown=(admin root test guest oracle ubnt support user1 administrator pi mallory)
oddnames=("al ice" "bob@@corp.test" "erin@localhost" "carol@corp..test" "printer@corp.test." "../../etc/passwd")
junk=('GET / HTTP/1.0\r\n\r\n' 'SSH-2.0-OpenSSH_9.2p1\r\n' '\x00\x00\x00\x00' '\x01'
      '\x01\x01\x00\x40AAAAAAAAAAAAAAAA\x01\x05bob' '\x04\x11\x00\x14BBBBBBBBBBBBBBBB'
      '\x2a\x00\x00\x14CCCCCCCCCCCCCCCC' '\x01\x22\x00\x1aDDDDDDDDDDDDDDDD\x01\x00abcd'
      '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03')
# station: a client MAC in MAC, the NAS that asks in NAS
station() {
    printf -v MAC '02-1a-%02x-%02x-%02x-%02x' $((RANDOM % 256)) $((RANDOM % 256)) $((RANDOM % 256)) $((RANDOM % 256))
    n=$((RANDOM % 4 + 1))
    NAS="NAS-IP-Address = 127.0.0.1, NAS-Identifier = \"ap-floor$n\", NAS-Port = $((RANDOM % 48 + 1)), NAS-Port-Type = Wireless-802.11, Called-Station-Id = \"00-11-22-33-44-0$n:corp-wifi\""
}
# accounting sessions: six slots of user, session id, station, NAS, address,
# time, octets
SU=(); SI=(); SM=(); SN=(); SA=(); ST=(); SO=()
acct() {
    k=$((RANDOM % 6))
    if [ -z "${SU[$k]:-}" ]; then
        SU[$k]=${good[$((RANDOM % ${#good[@]}))]}; printf -v "SI[$k]" '%08X' $((RANDOM * 32768 + RANDOM))
        station; SM[$k]=$MAC; SN[$k]=$NAS; SA[$k]=10.20.$((RANDOM % 4)).$((RANDOM % 250 + 2)); ST[$k]=0; SO[$k]=0
        rad acct testing123 "User-Name = \"${SU[$k]}\", Acct-Status-Type = Start, Acct-Session-Id = \"${SI[$k]}\", Calling-Station-Id = \"${SM[$k]}\", Framed-IP-Address = ${SA[$k]}, Acct-Authentic = RADIUS, $NAS"
        return
    fi
    ST[$k]=$((ST[$k] + RANDOM % 600 + 30)); SO[$k]=$((SO[$k] + RANDOM * 37))
    base="User-Name = \"${SU[$k]}\", Acct-Session-Id = \"${SI[$k]}\", Calling-Station-Id = \"${SM[$k]}\", Framed-IP-Address = ${SA[$k]}, Acct-Session-Time = ${ST[$k]}, Acct-Input-Octets = $((SO[$k] / 3)), Acct-Output-Octets = ${SO[$k]}, ${SN[$k]}"
    if [ $((RANDOM % 3)) != 0 ]; then
        rad acct testing123 "$base, Acct-Status-Type = Interim-Update"
    else
        causes=(User-Request Idle-Timeout Lost-Carrier Session-Timeout Admin-Reset NAS-Reboot Port-Error)
        rad acct testing123 "$base, Acct-Status-Type = Stop, Acct-Terminate-Cause = ${causes[$((RANDOM % ${#causes[@]}))]}"
        SU[$k]=""
    fi
}
RANDOM=1812
round() {
    for j in $(seq 1 160); do
        u=${good[$((RANDOM % ${#good[@]}))]}
        station; st="Calling-Station-Id = \"$MAC\", $NAS"
        case $((RANDOM % 60)) in
            [0-9]|1[0-9]|2[0-4]) rad auth testing123 "User-Name = \"$u\", User-Password = \"${pw[$u]}\", $st" ;;
            2[5-9]) rad auth testing123 "User-Name = \"$u\", CHAP-Password = \"${pw[$u]}\", $st" ;;
            3[0-2]) rad auth testing123 "User-Name = \"$u\", MS-CHAP-Password = \"${pw[$u]}\", $st" ;;
            3[3-6]) rad auth testing123 "User-Name = \"$u\", User-Password = \"${pw[$u]}x$j\", $st" ;;
            37) rad auth testing123 "User-Name = \"$u\", CHAP-Password = \"guess$j\", $st" ;;
            38) rad auth testing123 "User-Name = \"$u\", MS-CHAP-Password = \"Winter$((2020 + j % 5))\", $st" ;;
            39|40|41) v=${unknown[$((RANDOM % ${#unknown[@]}))]}
                      rad auth testing123 "User-Name = \"$v\", User-Password = \"$v$((RANDOM % 1000))\", $st" ;;
            42) for v in dave frank grace; do
                    if [ $((RANDOM % 2)) = 0 ]; then rad auth testing123 "User-Name = \"$v\", User-Password = \"${pw[$v]}\", $st"; fi
                done ;;
            43) v=${oddnames[$((RANDOM % ${#oddnames[@]}))]}
                rad auth testing123 "User-Name = \"$v\", User-Password = \"x$j\", $st" ;;
            44) acct ;;
            45) case $((RANDOM % 8)) in
                    [0-3]) rad status testing123 'Message-Authenticator = 0x00' ;;
                    [4-6]) echo 'Message-Authenticator = 0x00' | radclient -t 2 -r 1 127.0.0.1:$PC status testing123 >/dev/null 2>&1 || true ;;
                    *) rad acct testing123 "Acct-Status-Type = Accounting-On, $NAS" ;;
                esac ;;
            46) case $((RANDOM % 3)) in  # a NAS with the wrong shared secret
                    0) rad_bg 1 auth s3cret-old "User-Name = \"$u\", User-Password = \"${pw[$u]}\", $st" ;;
                    1) rad_bg 1 acct s3cret-old "User-Name = \"$u\", Acct-Status-Type = Interim-Update, Acct-Session-Id = \"DEAD$j\", $st" ;;
                    *) rad_bg 1 status s3cret-old 'Message-Authenticator = 0x00' ;;
                esac ;;
            47) raw 127.0.0.1 $((RANDOM % 2 ? PA : PC)) "${junk[$((RANDOM % ${#junk[@]}))]}" ;;
            48) bare "$u"; raw 127.0.0.$((RANDOM % 6 + 2)) $((RANDOM % 3 ? PA : PC)) "$BARE" ;;
            49) v=${unknown[$((RANDOM % ${#unknown[@]}))]}; bare "$v"; raw 127.0.0.1 $PA "$BARE" ;;
            50) rad_bg 8 auth testing123 "User-Name = \"$u@roaming.test\", User-Password = \"${pw[$u]}\", $st" ;;
            *) rad auth testing123 "User-Name = \"$u\", User-Password = \"${pw[$u]}\", $st" ;;
        esac
    done
}
round; round; round; round; round
# grace is added to the users file, and the server told to reload (twice)
printf 'grace\tCleartext-Password := "grace-pw7"\n' >> "$R/mods-config/files/authorize"
touch "$R/mods-available/files"
kill -HUP "$RPID"; sleep 1; kill -HUP "$RPID"
round; round; round
# a second server is started by mistake on the same ports
timeout 20 freeradius -f -d "$R" >/dev/null 2>&1 || true
round; round
kill -HUP "$RPID"; sleep 6
round
# a NAS reboots: its sessions end
station; rad acct testing123 "Acct-Status-Type = Accounting-Off, $NAS"
round
waitc
# the server restarts under its clients
kill "$RPID"; sleep 2
start_radius
rad acct testing123 "Acct-Status-Type = Accounting-On, $NAS"
round; round; round; round
waitc
kill "$RPID"; sleep 2
emit freeradius "$LOG" "$WORK"/log/radacct/*/detail-*

#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# The rsync daemon (Debian package rsync) on loopback with its own
# rsyncd.conf, writing its log file with transfer logging on. HELD OUT
# (second set): never trained on (collect.sh --held-out-2).
# Traffic: module listings, downloads of single files, directories and whole
# trees (fresh and incremental, some compressed), uploads and mirrors with
# --delete to a write-only module, authenticated reads and writes.
# Faults: wrong passwords, unknown and denied users, a secrets file others
# can read, unknown modules, a module that refuses the host, a module whose
# path does not exist, refused options, writes to read-only modules and reads
# from the write-only one, missing files, clients over the connection limit,
# transfers killed midway, garbage and stalled clients on the socket, a
# second daemon started by mistake, a typo in the configuration, a restart.
. "$(dirname "$0")/common.sh"
ensure_pkg rsync netcat-openbsd
P=18730
R=rsync://127.0.0.1:$P
S=$WORK/srv
RANDOM=18730

# --- the trees the daemon serves ---------------------------------------
mkdir -p "$S"/pub/{docs/guides,docs/api,src/libfoo/include,src/libfoo/tests,src/tools,images/icons,images/photos,misc} \
         "$S"/releases/{1.0,1.1,2.0} "$S"/secure/{payroll,keys,reports/2023,reports/2024} \
         "$S"/incoming "$S"/backup
text() {  # text FILE LINES: a text file of LINES numbered lines
    seq 1 "$2" | sed "s|^|$(basename "$1") line |" > "$1"
}
blob() { head -c "$2" /dev/urandom > "$1"; }
for n in install-guide upgrade-notes faq troubleshooting networking security \
         quickstart configuration backup-howto tuning; do
    text "$S/pub/docs/guides/$n.txt" $((RANDOM % 400 + 5))
done
for n in client server protocol errors filters checksums; do
    text "$S/pub/docs/api/$n.md" $((RANDOM % 200 + 10))
    text "$S/pub/docs/api/$n.html" $((RANDOM % 300 + 10))
done
for n in CHANGES-1.0 CHANGES-1.1 CHANGES-2.0 README COPYING; do
    text "$S/pub/docs/$n" $((RANDOM % 150 + 3))
done
for n in main util io hash list buffer config log socket compress; do
    text "$S/pub/src/libfoo/$n.c" $((RANDOM % 900 + 20))
    text "$S/pub/src/libfoo/include/$n.h" $((RANDOM % 80 + 5))
    text "$S/pub/src/libfoo/tests/test_$n.c" $((RANDOM % 300 + 10))
done
for n in sync-tool watchdog rotate-logs mkindex; do text "$S/pub/src/tools/$n.sh" $((RANDOM % 60 + 5)); done
text "$S/pub/src/libfoo/Makefile" 40
for i in $(seq 1 24); do blob "$S/pub/images/icons/icon-$i.png" $((RANDOM % 4000 + 200)); done
for i in $(seq 1 12); do blob "$S/pub/images/photos/IMG_20240$((i % 9 + 1))$((RANDOM % 20 + 10))_$i.jpg" $((RANDOM * 4 + 20000)); done
text "$S/pub/misc/Read Me First.txt" 12
text "$S/pub/misc/café-menu.txt" 8
text "$S/pub/misc/report (final) v2.txt" 30
text "$S/pub/misc/.hidden-config" 3
text "$S/pub/misc/scratch.tmp" 5
blob "$S/pub/misc/archive.tar.gz" 150000
ln -s ../docs/README "$S/pub/misc/README.link"
for v in 1.0 1.1 2.0; do
    for a in amd64 arm64; do blob "$S/releases/$v/foo-$v-$a.tar.gz" $((RANDOM % 3 * 1000000 + 2000000)); done
    (cd "$S/releases/$v" && sha256sum ./*.tar.gz > SHA256SUMS)
done
for m in jan feb mar apr may jun jul aug sep oct nov dec; do text "$S/secure/payroll/$m.csv" $((RANDOM % 100 + 20)); done
for k in host-a host-b host-c deploy; do blob "$S/secure/keys/$k.key" 3243; done
for y in 2023 2024; do for q in q1 q2 q3 q4; do text "$S/secure/reports/$y/$q-summary.txt" $((RANDOM % 90 + 10)); done; done
chown nobody:nogroup "$S/incoming" "$S/backup"
chmod -R a+rX "$S"

# --- configuration ------------------------------------------------------
printf 'alice:alicepw\nbob:bobpw\ncarol:carolpw\n' > "$WORK/rsyncd.secrets"
chmod 600 "$WORK/rsyncd.secrets"
printf 'dave:davepw\n' > "$WORK/ledger.secrets"
chmod 644 "$WORK/ledger.secrets"  # other-readable: refused under strict modes
write_conf() {
    cat > "$WORK/rsyncd.conf" <<CFG
# rsyncd.conf for the txl corpus (loopback only)
address = 127.0.0.1
port = $P
pid file = $WORK/rsyncd.pid
lock file = $WORK/rsyncd.lock
log file = $WORK/rsyncd.log
transfer logging = yes
log format = %o %h [%a] %m (%u) %i %f %l %b
timeout = 8
use chroot = yes
uid = nobody
gid = nogroup
$1

[pub]
    path = $S/pub
    comment = public mirror
    read only = yes
    exclude = *.tmp
    refuse options = checksum
    dont compress = *.gz *.png *.jpg

[releases]
    path = $S/releases
    comment = release tarballs (one client at a time)
    read only = yes
    max connections = 1

[secure]
    path = $S/secure
    comment = staff only
    read only = yes
    auth users = alice:ro, bob:rw, carol:deny
    secrets file = $WORK/rsyncd.secrets
    uid = root
    gid = root

[ledger]
    path = $S/secure/payroll
    comment = accounting
    auth users = dave
    secrets file = $WORK/ledger.secrets

[incoming]
    path = $S/incoming
    comment = drop box
    read only = no
    write only = yes
    incoming chmod = Du=rwx,Dgo=rx,Fu=rw,Fgo=r
    refuse options = delete-excluded

[backup]
    path = $S/backup
    read only = no
    list = no
    auth users = bob
    secrets file = $WORK/rsyncd.secrets

[intranet]
    path = $S/pub/docs
    comment = internal docs
    hosts allow = 10.0.0.0/8
    hosts deny = 127.0.0.1

[archive]
    path = $S/archive-2019
    comment = old archive
CFG
}
write_conf ""
start_daemon() { bg rsync --daemon --no-detach --config="$WORK/rsyncd.conf"; DPID=$LASTPID; wait_port $P; }
start_daemon
say "traffic"

# --- client side ------------------------------------------------------------
C=$WORK/client
mkdir -p "$C"/up
for i in $(seq 1 30); do text "$C/up/note-$i.txt" $((RANDOM % 50 + 1)); done
mkdir -p "$C/up/photos" "$C/up/logs"
for i in $(seq 1 10); do blob "$C/up/photos/p$i.jpg" $((RANDOM % 30000 + 1000)); done
for i in $(seq 1 8); do text "$C/up/logs/app.log.$i" $((RANDOM % 300 + 10)); done
rs() { timeout 20 rsync "$@" >/dev/null 2>&1 || true; }
auth() { pw=$1; shift; RSYNC_PASSWORD=$pw timeout 20 rsync "$@" >/dev/null 2>&1 || true; }
PUBDIRS=(docs docs/guides docs/api src src/libfoo src/libfoo/include src/tools images/icons images/photos misc)
PUBFILES=(docs/README docs/CHANGES-2.0 docs/guides/faq.txt docs/api/protocol.md src/libfoo/main.c
          src/libfoo/Makefile misc/archive.tar.gz "misc/Read Me First.txt" images/icons/icon-3.png
          docs/guides/missing.txt src/libfoo/old.c misc/scratch.tmp)
USERS=(alice bob carol mallory root admin)
NOMODS=(pubs mirror backups ftp home)
# the server side changes between syncs (a maintainer at work)
churn() {
    for _ in 1 2 3; do
        n=$((RANDOM % 70 + 1)); e=$RANDOM
        f=$(find "$S/pub/docs" "$S/pub/src" -type f | sort | sed -n "${n}p")
        [ -n "$f" ] && echo "edit $e" >> "$f"
    done
    text "$S/pub/docs/guides/new-$((RANDOM % 6)).txt" $((RANDOM % 40 + 2))
    rm -f "$S/pub/docs/guides/new-$((RANDOM % 6)).txt"
}
round() {
    for j in $(seq 1 36); do
        d=${PUBDIRS[$((RANDOM % ${#PUBDIRS[@]}))]}
        f=${PUBFILES[$((RANDOM % ${#PUBFILES[@]}))]}
        u=${USERS[$((RANDOM % ${#USERS[@]}))]}
        k=$((RANDOM % 4))
        case $((RANDOM % 26)) in
            0) rs "$R/" ;;
            1) rs "$R/pub/$d/" ;;
            2) rs -a "$R/pub/$d/" "$C/mirror-$k/$d/" ;;
            3) rm -rf "$C/full-$k"
               if [ $((RANDOM % 8)) = 0 ]; then rs -a "$R/pub/" "$C/full-$k/"
               else rs -a "$R/pub/$d/" "$C/full-$k/"; fi ;;
            4) rs -az --delete "$R/pub/" "$C/mirror-$k/" ;;
            5) rs -a "$R/pub/$f" "$C/one/" ;;
            6) rs -ac "$R/pub/docs/" "$C/sum/" ;;   # refused option
            7) rs -a "$C/up/note-$((RANDOM % 30 + 1)).txt" "$R/pub/" ;;  # read only
            8) rs -a "$C/up/" "$R/incoming/host$k/" ;;
            9) rm -f "$C/up/note-$((RANDOM % 30 + 1)).txt"
               rs -a --delete "$C/up/" "$R/incoming/host$k/" ;;
            10) rs "$R/incoming/" ;;   # write only
            11) auth "${u}pw" -a "rsync://$u@127.0.0.1:$P/secure/payroll/" "$C/sec-$u/" ;;
            12) auth "wrong$j" "rsync://$u@127.0.0.1:$P/secure/" ;;
            13) auth bobpw -a "$C/up/logs/" "rsync://bob@127.0.0.1:$P/secure/reports/uploaded/" ;;
            14) auth alicepw -a "$C/up/logs/" "rsync://alice@127.0.0.1:$P/secure/reports/uploaded/" ;;
            15) auth bobpw -a --delete "$C/up/" "rsync://bob@127.0.0.1:$P/backup/daily-$k/" ;;
            16) auth davepw "rsync://dave@127.0.0.1:$P/ledger/" ;;
            17) rs "$R/intranet/" ;;
            18) rs "$R/archive/" ;;
            19) rs "$R/${NOMODS[$((RANDOM % ${#NOMODS[@]}))]}/" ;;
            20) rs -a "$R/releases/1.$((RANDOM % 2))/SHA256SUMS" "$C/rel/" ;;
            21) rs -a --protocol=29 "$R/pub/docs/" "$C/old-proto/" ;;
            22) rs -a --delete-excluded --exclude='*.log.*' "$C/up/" "$R/incoming/host$k/" ;;
            23) churn ;;
            24) rs -a -n "$R/pub/src/" "$C/dry/" ;;
            *) rs -a --update "$R/pub/docs/" "$C/mirror-$k/docs/" ;;
        esac
    done
}
# clients over the connection limit: one slow download holds the only slot
crowd() {
    rs -a --bwlimit=400 --timeout=5 "$R/releases/2.0/" "$C/rel-slow/" & cp=$!
    sleep 1
    for _ in 1 2 3; do rs -a "$R/releases/1.0/SHA256SUMS" "$C/rel/" & cp="$cp $!"; done
    sleep 2
    rs "$R/releases/"
    for p in $cp; do wait "$p" || true; done
    rm -rf "$C/rel-slow"
}
# transfers killed midway (downloads and an upload)
cut_short() { sig=$1; shift; { timeout -s "$sig" 2 rsync "$@" >/dev/null 2>&1 || true; } 2>/dev/null; }
killed() {
    cut_short INT -a --bwlimit=500 "$R/releases/1.$((RANDOM % 2))/" "$C/rel-int/"
    sleep 1
    cut_short KILL -a --bwlimit=300 "$R/releases/2.0/" "$C/rel-kill/"
    cut_short KILL -a --bwlimit=300 "$C/up/photos/" "$S/releases/1.1/" "$R/incoming/slow/"
    sleep 1
    rm -rf "$C"/rel-int "$C"/rel-kill
}
# garbage and stalled clients on the socket
junk() {
    for req in 'GARBAGE\n' '@RSYNCD: 99.0\n' '@RSYNCD: 31.0\n\n' '@RSYNCD: 31.0\nnosuchmodule\n' \
               '@RSYNCD: 31.0\npub\n--server\n\n' 'GET / HTTP/1.1\r\nHost: x\r\n\r\n' \
               '\x16\x03\x01\x00\xa5\x01\x00\x00\xa1\x03\x03' '@RSYNCD: 31.0\n#list\n'; do
        printf "$req" | timeout 3 nc -q1 127.0.0.1 $P >/dev/null 2>&1 || true
    done
    # says hello, then nothing: the daemon's handshake timeout
    (printf '@RSYNCD: 31.0\n'; sleep 11) | timeout 12 nc 127.0.0.1 $P >/dev/null 2>&1 &
    STALLED="$STALLED $!"
    (sleep 11) | timeout 12 nc 127.0.0.1 $P >/dev/null 2>&1 &
    STALLED="$STALLED $!"
}
STALLED=""
round; round; churn; round
junk
crowd
round; killed; round
# a second daemon started by mistake: the pid file is locked
timeout 5 rsync --daemon --no-detach --config="$WORK/rsyncd.conf" >/dev/null 2>&1 || true
round; churn; round
# the daemon restarts under its clients
rs -a --bwlimit=300 "$R/releases/1.1/" "$C/rel-restart/" & STALLED="$STALLED $!"
sleep 1
kill "$DPID"; sleep 2
start_daemon
round; crowd; round
# an operator's typo in the configuration (re-read on every connection)
write_conf "max conections = 10
transfer loging = yes"
round
write_conf ""
junk
round; killed; round
for p in $STALLED; do wait "$p" || true; done
kill "$DPID"; sleep 2
emit rsyncd "$WORK/rsyncd.log"

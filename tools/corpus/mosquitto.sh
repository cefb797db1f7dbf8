#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Mosquitto (Debian package mosquitto), an MQTT broker on loopback, logging
# everything it logs to a file. HELD OUT: never trained on (collect.sh
# --held-out).
# Traffic: publishers and subscribers with QoS 0, 1 and 2, retained
# messages, persistent sessions. Faults: wrong passwords, unknown users,
# topics the ACL denies, a client id taken over, clients killed (their
# wills), payloads over the size limit, a protocol error, a restart.
. "$(dirname "$0")/common.sh"
ensure_pkg mosquitto mosquitto-clients netcat-openbsd
P=18830
: > "$WORK/passwd"
for u in sensor1 sensor2 dashboard ops; do mosquitto_passwd -b "$WORK/passwd" "$u" "${u}pw"; done
cat > "$WORK/acl" <<'ACL'
user sensor1
topic write plant/+/temp
topic write plant/+/status
user sensor2
topic write plant/+/temp
user dashboard
topic read plant/#
topic read $SYS/#
user ops
topic readwrite #
ACL
chmod 644 "$WORK/passwd" "$WORK/acl"
mkdir -p "$WORK/db"; chown mosquitto "$WORK/db" "$WORK" 2>/dev/null || true
cat > "$WORK/mosquitto.conf" <<CFG
per_listener_settings false
listener $P 127.0.0.1
allow_anonymous false
password_file $WORK/passwd
acl_file $WORK/acl
persistence true
persistence_location $WORK/db/
log_dest file $WORK/mosquitto.log
log_type all
log_timestamp true
log_timestamp_format %Y-%m-%dT%H:%M:%S
connection_messages true
message_size_limit 4096
max_keepalive 60
CFG
start_broker() { bg mosquitto -c "$WORK/mosquitto.conf"; MPID=$LASTPID; wait_port $P; }
start_broker
say "traffic"
pub() { mosquitto_pub -p $P "$@" >/dev/null 2>&1 || true; }
# subscribers that stay, with a will
bg mosquitto_sub -p $P -u dashboard -P dashboardpw -i dash-main -q 1 -t 'plant/#' -c \
    --will-topic plant/dash/status --will-payload offline
SUB1=$LASTPID
bg sh -c "exec mosquitto_sub -p $P -u ops -P opspw -i ops-audit -q 2 -t '#' -v > /dev/null"
SUB2=$LASTPID
sleep 1
RANDOM=8080
round() {
    for i in $(seq 1 40); do
        line=$((RANDOM % 4 + 1))
        case $((RANDOM % 12)) in
            0) pub -u sensor1 -P sensor1pw -i "s1-$i" -q 1 -t "plant/l$line/temp" -m "$((RANDOM % 40)).$((RANDOM % 10))" ;;
            1) pub -u sensor1 -P sensor1pw -q 2 -r -t "plant/l$line/status" -m running ;;
            2) pub -u sensor2 -P sensor2pw -t "plant/l$line/temp" -m "$((RANDOM % 40))" ;;
            3) pub -u sensor2 -P sensor2pw -t "plant/l$line/status" -m stopped ;; # denied by the ACL
            4) pub -u sensor1 -P wrong$i -t "plant/l$line/temp" -m 1 ;;
            5) pub -u intruder -P guess -t 'plant/#' -m x ;;
            6) pub -u ops -P opspw -q 1 -t "ops/cmd/l$line" -m restart ;;
            7) pub -u ops -P opspw -t ops/blob -m "$(head -c 6000 /dev/zero | tr '\0' b)" ;;
            8) timeout 3 mosquitto_sub -p $P -u dashboard -P dashboardpw -t '$SYS/broker/uptime' -C 1 >/dev/null 2>&1 || true ;;
            9) timeout 2 mosquitto_sub -p $P -u sensor1 -P sensor1pw -t 'ops/#' -C 1 -W 1 >/dev/null 2>&1 || true ;;
            10) printf '\x10\xff\xff\xff\xff\x01' | timeout 2 nc -q1 127.0.0.1 $P >/dev/null 2>&1 || true ;;
            *) pub -u sensor1 -P sensor1pw -i "s1-fixed" -c -q 1 -t "plant/l$line/temp" -m "$((RANDOM % 40))" ;;
        esac
    done
}
round; round
# a client id taken over while its first connection is open
bg mosquitto_sub -p $P -u dashboard -P dashboardpw -i twin -t 'plant/#'
sleep 1
timeout 2 mosquitto_sub -p $P -u dashboard -P dashboardpw -i twin -t 'plant/#' -W 1 >/dev/null 2>&1 || true
round
# the persistent subscriber dies without a goodbye: its will is sent
kill -9 "$SUB1"; sleep 2
round; round
# the broker restarts under its clients
kill "$MPID"; sleep 2
start_broker; sleep 2
bg mosquitto_sub -p $P -u dashboard -P dashboardpw -i dash-main -q 1 -t 'plant/#' -c
round; round; round
kill -HUP "$MPID"; sleep 1
round; round
kill "$SUB2" 2>/dev/null || true
kill "$MPID"; sleep 2
emit mosquitto "$WORK/mosquitto.log"

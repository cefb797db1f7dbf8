#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# OpenSSH server (Debian package openssh-server) on loopback, logging through
# rsyslogd at LogLevel VERBOSE. Traffic: password and key logins that run
# commands, scp. Faults: wrong passwords, unknown users, root login refused,
# too many authentication failures, wrong keys, clients that hang up
# before authenticating, protocol garbage, no common cipher.
. "$(dirname "$0")/common.sh"
ensure_pkg openssh-server openssh-client sshpass netcat-openbsd
start_rsyslog "$WORK/syslog"
U=txlssh
id "$U" >/dev/null 2>&1 || useradd -m -s /bin/bash "$U"
echo "$U:sshpass123" | chpasswd
mkdir -p /run/sshd "$WORK/keys"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/hostkey"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/keys/good"
ssh-keygen -q -t ed25519 -N '' -f "$WORK/keys/bad"
install -d -o "$U" -m 700 "/home/$U/.ssh"
install -o "$U" -m 600 "$WORK/keys/good.pub" "/home/$U/.ssh/authorized_keys"
cat > "$WORK/sshd_config" <<CFG
Port 12222
ListenAddress 127.0.0.1
HostKey $WORK/hostkey
PidFile $WORK/sshd.pid
LogLevel VERBOSE
SyslogFacility AUTH
PermitRootLogin no
PasswordAuthentication yes
KbdInteractiveAuthentication no
UsePAM yes
MaxAuthTries 3
LoginGraceTime 5
Subsystem sftp internal-sftp
CFG
bg /usr/sbin/sshd -D -f "$WORK/sshd_config"
wait_port 12222
say "traffic"
O="-p 12222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectTimeout=5 -o LogLevel=QUIET"
for i in $(seq 1 12); do
    BP=""
    sshpass -p sshpass123 ssh $O -o PubkeyAuthentication=no "$U@127.0.0.1" "uptime; ls /nonexistent" >/dev/null 2>&1 &
    BP="$BP $!"
    ssh $O -i "$WORK/keys/good" -o BatchMode=yes "$U@127.0.0.1" "id" >/dev/null 2>&1 &
    BP="$BP $!"
    sshpass -p "wrong$i" ssh $O -o PubkeyAuthentication=no "$U@127.0.0.1" true >/dev/null 2>&1 &
    BP="$BP $!"
    for bad in admin oracle test ubuntu pi; do
        sshpass -p "123456" ssh $O -o PubkeyAuthentication=no -o NumberOfPasswordPrompts=1 "$bad@127.0.0.1" true >/dev/null 2>&1 &
    BP="$BP $!"
    done
    sshpass -p root ssh $O -o PubkeyAuthentication=no root@127.0.0.1 true >/dev/null 2>&1 &
    BP="$BP $!"
    ssh $O -i "$WORK/keys/bad" -o BatchMode=yes "$U@127.0.0.1" true >/dev/null 2>&1 &
    BP="$BP $!"
    printf 'SSH-2.0-Go\r\n' | timeout 2 nc -q1 127.0.0.1 12222 >/dev/null 2>&1 &
    BP="$BP $!"
    echo 'GET / HTTP/1.0' | timeout 2 nc -q1 127.0.0.1 12222 >/dev/null 2>&1 &
    BP="$BP $!"
    ssh $O -c aes128-cbc "$U@127.0.0.1" true >/dev/null 2>&1 &
    BP="$BP $!"
    for p in $BP; do wait "$p" || true; done
done
sshpass -p sshpass123 scp -P 12222 -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null "$WORK/sshd_config" "$U@127.0.0.1:" >/dev/null 2>&1 || true
(sleep 7) | timeout 8 nc 127.0.0.1 12222 >/dev/null 2>&1 || true
sleep 1
kill "$(cat "$WORK/sshd.pid")" 2>/dev/null || true
stop_rsyslog
userdel -r "$U" >/dev/null 2>&1 || true
emit sshd "$WORK/syslog"

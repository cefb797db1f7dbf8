#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Account and privilege tools logging through rsyslogd (Debian packages
# passwd, login, sudo, util-linux, rsyslog): useradd/groupadd/usermod/
# chpasswd/chage/userdel, su and sudo sessions, sudo with wrong passwords and
# by users not in sudoers, su to a locked account.
. "$(dirname "$0")/common.sh"
ensure_pkg sudo passwd login util-linux
start_rsyslog "$WORK/syslog"
say "traffic"
for g in txldev txlops; do groupadd "$g" 2>/dev/null || true; done
for u in txlalice txlbob txlcarol; do
    useradd -m -s /bin/bash -G txldev "$u" 2>/dev/null || true
    echo "$u:pw-$u-1" | chpasswd
done
usermod -aG txlops txlalice; usermod -aG sudo txlalice
chage -M 90 -W 7 txlbob
passwd -l txlcarol >/dev/null
useradd -M -s /usr/sbin/nologin txlsvc 2>/dev/null || true
for i in $(seq 1 8); do
    su - txlalice -c "id -un" >/dev/null 2>&1 || true
    su -s /bin/sh txlsvc -c true >/dev/null 2>&1 || true
    sudo -u txlbob true 2>/dev/null || true
    runuser -u txlbob -- true
    # wrong password for sudo, a user not allowed to use sudo
    runuser -u txlalice -- sh -c "echo wrong$i | sudo -S -k true" >/dev/null 2>&1 || true
    runuser -u txlalice -- sh -c "echo pw-txlalice-1 | sudo -S -k ls /root" >/dev/null 2>&1 || true
    runuser -u txlbob -- sh -c "echo pw-txlbob-1 | sudo -S -k cat /etc/shadow" >/dev/null 2>&1 || true
    runuser -u txlbob -- sh -c "echo nope | su -c true txlalice" >/dev/null 2>&1 || true
    sudo -u nosuchuser true >/dev/null 2>&1 || true
    useradd txlalice >/dev/null 2>&1 || true
    groupadd txldev >/dev/null 2>&1 || true
done
gpasswd -d txlalice txlops >/dev/null 2>&1 || true
for u in txlalice txlbob txlcarol txlsvc; do userdel -r "$u" >/dev/null 2>&1 || true; done
for g in txldev txlops; do groupdel "$g" 2>/dev/null || true; done
userdel nosuchuser >/dev/null 2>&1 || true
stop_rsyslog
emit auth "$WORK/syslog"

#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# vsftpd (Debian package vsftpd) on loopback with its own log file (protocol
# log plus xferlog). Traffic: anonymous listings and downloads, a local user
# uploading, downloading, renaming and deleting files. Faults: wrong
# passwords, unknown users, missing files, forbidden writes, bad commands.
. "$(dirname "$0")/common.sh"
ensure_pkg vsftpd python3
U=txlftp
id "$U" >/dev/null 2>&1 || useradd -m -s /bin/bash "$U"
echo "$U:ftppass123" | chpasswd
mkdir -p "$WORK/anon/pub" /var/run/vsftpd/empty
for f in README.txt pub/release-1.0.tar.gz pub/release-1.1.tar.gz; do head -c 3000 /dev/urandom > "$WORK/anon/$f"; done
chmod -R a+rX "$WORK/anon"; chmod 555 "$WORK/anon"
cat > "$WORK/vsftpd.conf" <<CFG
listen=YES
listen_address=127.0.0.1
listen_port=10021
background=NO
anonymous_enable=YES
anon_root=$WORK/anon
no_anon_password=YES
local_enable=YES
write_enable=YES
xferlog_enable=YES
xferlog_file=$WORK/xferlog
dual_log_enable=YES
vsftpd_log_file=$WORK/vsftpd.log
log_ftp_protocol=YES
syslog_enable=NO
secure_chroot_dir=/var/run/vsftpd/empty
pam_service_name=vsftpd
pasv_enable=YES
pasv_min_port=10100
pasv_max_port=10200
seccomp_sandbox=NO
delay_failed_login=0
max_login_fails=2
CFG
bg vsftpd "$WORK/vsftpd.conf"
wait_port 10021
say "traffic"
cat > "$WORK/ftp.py" <<'PY'
import ftplib, io, socket
H, P = "127.0.0.1", 10021
def session(user, pw, fn):
    try:
        f = ftplib.FTP(); f.connect(H, P, timeout=10); f.login(user, pw)
        fn(f); f.quit()
    except Exception:
        pass
def anon(f):
    f.nlst(); f.cwd("pub"); f.retrbinary("RETR release-1.0.tar.gz", lambda b: None)
    try: f.retrbinary("RETR release-9.9.tar.gz", lambda b: None)
    except ftplib.error_perm: pass
    try: f.storbinary("STOR evil.sh", io.BytesIO(b"x"))
    except ftplib.error_perm: pass
def local(i):
    def go(f):
        f.storbinary("STOR upload-%d.txt" % i, io.BytesIO(b"line\n" * (50 * i + 1)))
        f.retrbinary("RETR upload-%d.txt" % i, lambda b: None)
        f.rename("upload-%d.txt" % i, "done-%d.txt" % i)
        try: f.mkd("incoming")
        except ftplib.error_perm: pass
        try: f.delete("nothere-%d.txt" % i)
        except ftplib.error_perm: pass
        try: f.sendcmd("SITE CHMOD 777 done-%d.txt" % i)
        except ftplib.error_perm: pass
        try: f.sendcmd("XYZZY")
        except ftplib.error_perm: pass
        f.delete("done-%d.txt" % i)
    return go
for i in range(1, 13):
    session("anonymous", "", anon)
    session("txlftp", "ftppass123", local(i))
    session("txlftp", "wrong%d" % i, lambda f: None)
    session(["admin", "root", "test", "ftp"][i % 4], "123456", lambda f: None)
    if i % 5 == 0:
        s = socket.create_connection((H, P)); s.recv(200); s.send(b"GET / HTTP/1.0\r\n\r\n"); s.recv(200); s.close()
PY
/usr/bin/python3 "$WORK/ftp.py"
sleep 1
kill "$LASTPID" 2>/dev/null || true
userdel -r "$U" >/dev/null 2>&1 || true
emit vsftpd "$WORK/vsftpd.log"

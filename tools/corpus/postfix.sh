#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Postfix (Debian package postfix): a private instance (own config, queue and
# mail spool) with SMTP on loopback, logging through rsyslogd.
# Traffic: SMTP sessions delivering to local users, multi-recipient mail.
# Faults: unknown local recipients, relay attempts, unresolvable external
# domains (no DNS here), bad SMTP commands, clients hanging up mid-session,
# oversized messages, malformed addresses.
. "$(dirname "$0")/common.sh"
ensure_pkg postfix python3
start_rsyslog "$WORK/syslog"
E=$WORK/etc
cp -r /etc/postfix "$E"
mkdir -p "$WORK/spool" "$WORK/data" "$WORK/mail"; chmod 1777 "$WORK/mail"
chown postfix "$WORK/data"
postconf -c "$E" -e "queue_directory=$WORK/spool" "data_directory=$WORK/data" \
    "inet_interfaces=127.0.0.1" "inet_protocols=ipv4" "myhostname=mx.txl-corpus.test" \
    "mydomain=txl-corpus.test" "mydestination=localhost, txl-corpus.test, mx.txl-corpus.test" \
    "mynetworks=127.0.0.2/32" "alias_maps=" "alias_database=" "relayhost=" \
    "mail_spool_directory=$WORK/mail" "home_mailbox=" "mailbox_command=" \
    "message_size_limit=20000" "smtpd_banner=\$myhostname ESMTP" \
    "smtpd_helo_required=yes" "smtpd_helo_restrictions=reject_invalid_helo_hostname" \
    "smtpd_recipient_restrictions=reject_unauth_destination" "compatibility_level=3.6" \
    "maximal_queue_lifetime=1m" "bounce_queue_lifetime=1m" "smtp_connect_timeout=3s" \
    "syslog_name=postfix" "maillog_file=" "smtputf8_enable=no"
postconf -c "$E" -F '*/*/chroot = n'
postconf -c "$E" -M 'smtp/inet=127.0.0.1:10025 inet n - n - - smtpd'
postfix -c "$E" check >/dev/null 2>&1 || true
postfix -c "$E" start >/dev/null 2>&1
wait_port 10025
id txlmail >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin txlmail
say "traffic"
cat > "$WORK/smtp.py" <<'PY'
import smtplib, socket, time
H, P = "127.0.0.1", 10025
def send(frm, rcpts, body="Subject: report\r\n\r\nnightly job finished\r\n", helo="client.txl-corpus.test"):
    try:
        s = smtplib.SMTP(H, P, local_hostname=helo, timeout=10)
        s.sendmail(frm, rcpts, body)
        s.quit()
    except Exception:
        pass
for i in range(25):
    send("cron@txl-corpus.test", ["txlmail@txl-corpus.test"], "Subject: job %d\r\n\r\nok\r\n" % i)
    send("alerts@txl-corpus.test", ["root@localhost", "nobody-here@txl-corpus.test"])
    send("spam%d@example.com" % i, ["victim%d@example.net" % i])
    send("ops@txl-corpus.test", ["txlmail@txl-corpus.test", "ghost%d@txl-corpus.test" % i])
    if i % 5 == 0:
        send("big@txl-corpus.test", ["txlmail@txl-corpus.test"], "Subject: big\r\n\r\n" + "x" * 30000)
        send("a@txl-corpus.test", ["txlmail@txl-corpus.test"], helo="bad_helo!!")
        s = socket.create_connection((H, P)); s.recv(512)
        for cmd in [b"EHLO x.test\r\n", b"MAIL FROM:<>\r\n", b"RCPT TO:<<bad>>\r\n", b"DATA\r\n", b"WHATEVER\r\n", b"AUTH LOGIN\r\n"]:
            s.send(cmd); time.sleep(0.05)
        s.close()
        s = socket.create_connection((H, P)); s.recv(512); s.send(b"EHLO y.test\r\nMAIL FROM:<x@y.test>\r\n"); time.sleep(0.2); s.close()
# mail via the local pickup path, to an external domain: deferred (no DNS)
send("ops@txl-corpus.test", ["someone@example.org"], helo="client.txl-corpus.test")
PY
/usr/bin/python3 "$WORK/smtp.py"
sleep 8
postqueue -c "$E" -f >/dev/null 2>&1 || true
sleep 4
postfix -c "$E" stop >/dev/null 2>&1 || true
sleep 2
stop_rsyslog
userdel txlmail 2>/dev/null || true
emit postfix "$WORK/syslog"

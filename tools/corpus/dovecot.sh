#!/bin/bash
# SPDX-License-Identifier: LGPL-2.1-or-later
# Dovecot (Debian packages dovecot-imapd, dovecot-pop3d): IMAP and POP3 on
# loopback with a private config and its own log file. Traffic: logins that
# append, list, fetch, flag and expunge mail, POP3 retrieval. Faults: wrong
# passwords, unknown users, bad commands, clients dropping the connection,
# mailboxes that do not exist.
. "$(dirname "$0")/common.sh"
ensure_pkg dovecot-imapd dovecot-pop3d python3
U=txlimap
id "$U" >/dev/null 2>&1 || useradd -m -s /usr/sbin/nologin "$U"
UID_=$(id -u "$U"); GID_=$(id -g "$U")
mkdir -p "$WORK/run" "$WORK/home"
chown "$U" "$WORK/home"
printf 'alice:{PLAIN}alicepw::::::\nbob:{PLAIN}bobpw::::::\n' > "$WORK/users"
cat > "$WORK/dovecot.conf" <<CFG
base_dir = $WORK/run
state_dir = $WORK/run/state
log_path = $WORK/dovecot.log
protocols = imap pop3
listen = 127.0.0.1
ssl = no
disable_plaintext_auth = no
auth_mechanisms = plain login
auth_verbose = yes
auth_failure_delay = 0
mail_location = maildir:~/Maildir
first_valid_uid = $UID_
mail_plugins = \$mail_plugins notify mail_log
plugin {
  mail_log_events = delete undelete expunge copy mailbox_delete mailbox_rename save mailbox_create flag_change
  mail_log_fields = uid box msgid size from subject
}
passdb {
  driver = passwd-file
  args = scheme=PLAIN $WORK/users
}
userdb {
  driver = static
  args = uid=$UID_ gid=$GID_ home=$WORK/home/%u
}
namespace inbox {
  inbox = yes
  mailbox Trash {
    special_use = \Trash
    auto = create
  }
}
service imap-login {
  inet_listener imap {
    port = 10143
  }
  inet_listener imaps {
    port = 0
  }
}
service pop3-login {
  inet_listener pop3 {
    port = 10110
  }
  inet_listener pop3s {
    port = 0
  }
}
service stats {
  unix_listener stats-reader {
    mode = 0666
  }
  unix_listener stats-writer {
    mode = 0666
  }
}
CFG
bg dovecot -F -c "$WORK/dovecot.conf"
wait_port 10143
say "traffic"
cat > "$WORK/mail.py" <<'PY'
import imaplib, poplib, socket, time
H = "127.0.0.1"
def imap(user, pw, i):
    try:
        m = imaplib.IMAP4(H, 10143); m.login(user, pw)
        m.select("INBOX")
        for k in range(3):
            m.append("INBOX", None, None, ("From: cron@example.org\r\nSubject: job %d.%d\r\n\r\ndone\r\n" % (i, k)).encode())
        m.search(None, "ALL"); m.fetch("1:*", "(FLAGS BODY.PEEK[HEADER])")
        m.store("1", "+FLAGS", "\\Deleted"); m.expunge()
        try: m.select("Archive/%d" % i)
        except Exception: pass
        try: m.create("Archive")
        except Exception: pass
        m.list(); m.logout()
    except Exception:
        pass
def pop(user, pw):
    try:
        p = poplib.POP3(H, 10110); p.user(user); p.pass_(pw)
        n = len(p.list()[1])
        if n: p.retr(1); p.dele(1)
        p.quit()
    except Exception:
        pass
import threading
for i in range(16):
    # failed logins are delayed by the server: run them side by side
    bad = [threading.Thread(target=imap, args=("alice", "wrong%d" % i, i)),
           threading.Thread(target=imap, args=(["admin", "test", "info", "support"][i % 4], "123456", i)),
           threading.Thread(target=pop, args=("carol", "secret"))]
    for t in bad: t.start()
    for k in range(3):
        imap("alice", "alicepw", i)
        imap("bob", "bobpw", i)
        pop("bob", "bobpw")
    for t in bad: t.join()
    if i % 5 == 0:
        s = socket.create_connection((H, 10143)); s.recv(200); s.send(b"a1 FOO\r\nGET / HTTP/1.1\r\n"); time.sleep(0.1); s.close()
        s = socket.create_connection((H, 10110)); s.recv(200); s.close()
        s = socket.create_connection((H, 10143)); s.recv(200); s.send(b"a1 LOGIN alice alicepw\r\na2 SELECT INBOX\r\n"); time.sleep(0.2); s.close()
PY
/usr/bin/python3 "$WORK/mail.py"
sleep 1
doveadm -c "$WORK/dovecot.conf" stop 2>/dev/null || kill "$LASTPID" 2>/dev/null || true
sleep 2
userdel -r "$U" >/dev/null 2>&1 || true
emit dovecot "$WORK/dovecot.log"

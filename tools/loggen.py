# SPDX-License-Identifier: LGPL-2.1-or-later
"""Synthetic multi-service logs, ours to redistribute: syslog/cron, sshd,
kernel, web access, and HDFS-like storage-node lines with realistic
variable fields (timestamps, pids, IPs, ports, block ids, sizes, paths,
latencies).  Optionally injects anomalous lines and writes their labels.

    /usr/bin/python3 tools/loggen.py --lines 20000 --seed 1 > normal.log
    /usr/bin/python3 tools/loggen.py --lines 2000 --seed 9 \\
        --anomalies 0.01 --labels labels.txt > test.log

Deterministic for a given seed.  Standard library only."""
import argparse
import datetime
import random
import sys

HOSTS = ['web-01', 'web-02', 'db-01', 'store-03', 'store-04', 'edge-01']
USERS = ['deploy', 'backup', 'alice', 'bob', 'monitor', 'ci']
PATHS = ['/api/v1/orders', '/api/v1/users', '/api/v1/cart', '/static/app.js',
         '/static/style.css', '/healthz', '/login', '/api/v1/search',
         '/api/v2/inventory', '/favicon.ico']
AGENTS = ['Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101 Firefox/118.0',
          'curl/7.88.1', 'python-requests/2.31.0',
          'Mozilla/5.0 (Macintosh; Intel Mac OS X 13_5) AppleWebKit/605.1.15',
          'kube-probe/1.27']
DAEMONS = ['CRON', 'systemd', 'rsyslogd', 'chronyd', 'dhclient']
IFACES = ['eth0', 'eth1', 'ens3']


class Gen:
    def __init__(self, seed, start):
        self.r = random.Random(seed)
        self.t = start
        self.pid = {h: self.r.randrange(800, 30000) for h in HOSTS}
        self.blocks = []

    # -- field helpers ----------------------------------------------------
    def tick(self):
        self.t += datetime.timedelta(milliseconds=self.r.expovariate(1 / 180.0))
        return self.t

    def syslog_ts(self):
        t = self.tick()
        return t.strftime('%b %d %H:%M:%S').replace(' 0', '  ', 1) if t.day < 10 \
            else t.strftime('%b %d %H:%M:%S')

    def ip(self, internal=True):
        r = self.r
        if internal:
            return '10.%d.%d.%d' % (r.randrange(0, 4), r.randrange(0, 32), r.randrange(2, 250))
        return '%d.%d.%d.%d' % (r.choice([34, 52, 81, 93, 145, 185, 203]),
                                r.randrange(256), r.randrange(256), r.randrange(1, 255))

    def newpid(self, host):
        self.pid[host] += self.r.randrange(1, 40)
        return self.pid[host]

    def block(self):
        if self.blocks and self.r.random() < 0.7:
            return self.r.choice(self.blocks)
        b = 'blk_%s%d' % ('-' if self.r.random() < 0.5 else '', self.r.randrange(10 ** 17, 10 ** 19))
        self.blocks.append(b)
        if len(self.blocks) > 200:
            self.blocks.pop(0)
        return b

    # -- normal lines ----------------------------------------------------
    def sshd(self, host):
        r = self.r
        pid = self.newpid(host)
        kind = r.random()
        if kind < 0.55:
            return '%s sshd[%d]: Accepted publickey for %s from %s port %d ssh2: ED25519 SHA256:%s' % (
                host, pid, r.choice(USERS), self.ip(), r.randrange(32768, 61000),
                ''.join(r.choice('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') for _ in range(43)))
        if kind < 0.8:
            return '%s sshd[%d]: pam_unix(sshd:session): session opened for user %s(uid=%d) by (uid=0)' % (
                host, pid, r.choice(USERS), r.choice([1000, 1001, 1002, 998]))
        if kind < 0.95:
            return '%s sshd[%d]: pam_unix(sshd:session): session closed for user %s' % (host, pid, r.choice(USERS))
        return '%s sshd[%d]: Received disconnect from %s port %d:11: disconnected by user' % (
            host, pid, self.ip(), r.randrange(32768, 61000))

    def cron(self, host):
        r = self.r
        d = r.choice(DAEMONS)
        if d == 'CRON':
            return '%s CRON[%d]: (%s) CMD (%s)' % (host, self.newpid(host), r.choice(['root', 'backup']), r.choice(
                ['/usr/local/bin/rotate-logs --keep 7', 'run-parts /etc/cron.hourly',
                 '/opt/backup/snapshot.sh --incremental', 'test -x /usr/sbin/anacron']))
        if d == 'systemd':
            unit = r.choice(['logrotate.service', 'apt-daily.service', 'fstrim.service', 'certbot.timer'])
            return '%s systemd[1]: %s %s.' % (host, r.choice(['Starting', 'Finished', 'Started']), unit)
        if d == 'chronyd':
            return '%s chronyd[%d]: Selected source %s (ntp%d.example.net)' % (
                host, self.pid[host], self.ip(False), r.randrange(1, 4))
        if d == 'dhclient':
            return '%s dhclient[%d]: DHCPACK of %s from %s (xid=0x%08x)' % (
                host, self.pid[host], self.ip(), self.ip(), r.randrange(1 << 32))
        return '%s rsyslogd[%d]: action \'action-%d-builtin:omfwd\' resumed (module \'builtin:omfwd\')' % (
            host, self.pid[host], r.randrange(0, 8))

    def kernel(self, host):
        r = self.r
        up = (self.t - START).total_seconds() + 1234.5
        k = r.random()
        if k < 0.4:
            return '%s kernel: [%12.6f] %s: link up, %d Mbps, full duplex' % (
                host, up, r.choice(IFACES), r.choice([1000, 10000]))
        if k < 0.7:
            return '%s kernel: [%12.6f] EXT4-fs (sda%d): re-mounted. Opts: (null). Quota mode: none.' % (
                host, up, r.randrange(1, 4))
        return '%s kernel: [%12.6f] audit: type=1400 audit(%d.%03d:%d): apparmor="STATUS" operation="profile_replace" name="%s"' % (
            host, up, int(self.t.timestamp()), r.randrange(1000), r.randrange(100, 999),
            r.choice(['/usr/sbin/ntpd', '/usr/bin/man', 'nvidia_modprobe']))

    def access(self, host):
        r = self.r
        t = self.tick()
        method = r.choices(['GET', 'POST', 'PUT', 'DELETE'], [80, 14, 4, 2])[0]
        path = r.choice(PATHS)
        if '?' not in path and r.random() < 0.2:
            path += '?page=%d&limit=%d' % (r.randrange(1, 40), r.choice([10, 20, 50]))
        status = r.choices([200, 201, 204, 301, 304, 404], [78, 6, 3, 2, 8, 3])[0]
        return '%s nginx: %s - - [%s +0000] "%s %s HTTP/1.1" %d %d "-" "%s" rt=%.3f' % (
            host, self.ip(False), t.strftime('%d/%b/%Y:%H:%M:%S'), method, path, status,
            r.randrange(120, 48000), r.choice(AGENTS), r.lognormvariate(-3.5, 0.6))

    def storage(self, host):
        r = self.r
        t = self.tick()
        ts = t.strftime('%y%m%d %H%M%S')
        blk = self.block()
        k = r.random()
        if k < 0.3:
            return '%s %d INFO dfs.DataNode$DataXceiver: Receiving block %s src: /%s:%d dest: /%s:50010' % (
                ts, r.randrange(10, 400), blk, self.ip(), r.randrange(30000, 60000), self.ip())
        if k < 0.55:
            return '%s %d INFO dfs.DataNode$PacketResponder: PacketResponder %d for block %s terminating' % (
                ts, r.randrange(10, 400), r.randrange(0, 3), blk)
        if k < 0.8:
            return '%s %d INFO dfs.FSNamesystem: BLOCK* NameSystem.addStoredBlock: blockMap updated: %s:50010 is added to %s size %d' % (
                ts, r.randrange(10, 40), self.ip(), blk, r.choice([67108864, r.randrange(1000, 67108864)]))
        return '%s %d INFO dfs.DataNode$PacketResponder: Received block %s of size %d from /%s' % (
            ts, r.randrange(10, 400), blk, r.choice([67108864, r.randrange(1000, 67108864)]), self.ip())

    def normal(self):
        r = self.r
        host = r.choice(HOSTS)
        kind = r.choices(['access', 'storage', 'sshd', 'cron', 'kernel'], [45, 25, 12, 12, 6])[0]
        if kind == 'storage':
            return self.storage(host)
        if kind == 'access':
            return self.syslog_ts() + ' ' + self.access(host)
        return self.syslog_ts() + ' ' + getattr(self, kind)(host)

    # -- anomalies ---------------------------------------------------------
    def anomaly(self):
        r = self.r
        host = r.choice(HOSTS)
        ts = self.syslog_ts()
        up = (self.t - START).total_seconds() + 1234.5
        k = r.randrange(7)
        if k == 0:
            return '%s %s kernel: [%12.6f] Out of memory: Killed process %d (java) total-vm:%dkB, anon-rss:%dkB' % (
                ts, host, up, self.newpid(host), r.randrange(10 ** 7, 10 ** 8), r.randrange(10 ** 6, 10 ** 7))
        if k == 1:
            return '%s %s sshd[%d]: Failed password for invalid user %s from %s port %d ssh2' % (
                ts, host, self.newpid(host), r.choice(['admin', 'oracle', 'test', 'ubnt']), self.ip(False),
                r.randrange(1024, 65000))
        if k == 2:
            t = self.tick().strftime('%y%m%d %H%M%S')
            return '%s %d WARN dfs.DataNode$DataXceiver: %s:50010:Got exception while serving %s to /%s: java.io.IOException: Connection reset by peer' % (
                t, r.randrange(10, 400), self.ip(), self.block(), self.ip())
        if k == 3:
            return '%s %s kernel: [%12.6f] EXT4-fs error (device sda%d): ext4_find_entry:1463: inode #%d: comm nginx: reading directory lblock 0' % (
                ts, host, up, r.randrange(1, 4), r.randrange(10 ** 5, 10 ** 7))
        if k == 4:
            return '%s %s nginx: %s - - [%s +0000] "GET /../../etc/passwd HTTP/1.1" 400 0 "-" "sqlmap/1.7" rt=0.000' % (
                ts, host, self.ip(False), self.t.strftime('%d/%b/%Y:%H:%M:%S'))
        if k == 5:
            return '%s %s systemd[1]: postgresql.service: Main process exited, code=killed, status=9/KILL' % (ts, host)
        return '%s %s kernel: [%12.6f] BUG: unable to handle page fault for address: %016x' % (
            ts, host, up, r.randrange(1 << 63))


START = datetime.datetime(2026, 11, 3, 8, 0, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--lines', type=int, default=10000)
    ap.add_argument('--seed', type=int, default=1)
    ap.add_argument('--anomalies', type=float, default=0.0,
                    help='fraction of lines replaced by anomalous ones')
    ap.add_argument('--labels', help='write one 0/1 label per line here')
    args = ap.parse_args()
    if args.lines < 0 or not 0.0 <= args.anomalies <= 1.0:
        ap.error('--lines must be >= 0 and --anomalies in [0, 1]')
    g = Gen(args.seed, START)
    labels = []
    out = sys.stdout
    for _ in range(args.lines):
        bad = args.anomalies > 0 and g.r.random() < args.anomalies
        out.write((g.anomaly() if bad else g.normal()) + '\n')
        labels.append('1' if bad else '0')
    if args.labels:
        with open(args.labels, 'w') as f:
            f.write('\n'.join(labels) + ('\n' if labels else ''))


if __name__ == '__main__':
    main()

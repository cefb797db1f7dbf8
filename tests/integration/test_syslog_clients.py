# SPDX-License-Identifier: LGPL-2.1-or-later
"""txlsyslogsrc against real syslog software on loopback: util-linux
`logger` (RFC 5424 and RFC 3164, TCP with newline framing and with octet
counting, UDP), several clients at once, and a real rsyslogd that receives
from logger and forwards over TCP with octet counting.  Every message must
be scored exactly once, its header's fields in "fields" and only its
message as "text"; clients hanging up do not end the stream; a malformed
frame is warned about and its connection keeps working."""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import gstlaunch
from checks import check, tally, tool_env

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
MODEL = os.path.join(ROOT, 'models', 'default.gguf')
sys.path.insert(0, os.path.join(ROOT, 'tools'))
from freeport import free_port  # noqa: E402

M = 25  # messages per client



def listening(port):
    try:
        socket.create_connection(('127.0.0.1', port), timeout=1).close()
        return True
    except OSError:
        return False


def wait_for(cond, seconds):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


class Pipeline:
    """gst-launch-1.0 running pipelines/syslog.txt's source into txlsink,
    its JSON lines read as they come."""

    def __init__(self, port):
        # max-message-size 8 KiB (rsyslog's default): the cut frame below
        # stays cheap to score under ASan, where a 64 KiB line of one
        # word outlasted the 10 s drain at the end of stream
        desc = ('txlsyslogsrc address=127.0.0.1 port=%d max-message-size=8192 ! txltokenizer model=%s ! '
                'txlmodel model=%s flush-on-newline=true ! txlsink' % (port, MODEL, MODEL))
        self.p = subprocess.Popen(['gst-launch-1.0', '-e'] + desc.split(), stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, env=gstlaunch.ENV)
        self.rows, self.other = [], []
        self.reader = threading.Thread(target=self._read)
        self.reader.start()

    def _read(self):
        for line in iter(self.p.stdout.readline, b''):
            line = line.decode(errors='replace')
            if line.startswith('{'):
                self.rows.append(json.loads(line))
            else:
                self.other.append(line)   # gst-launch's own messages

    def stop(self):
        self.p.send_signal(signal.SIGINT)
        try:
            _, err = self.p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            self.p.kill()
            _, err = self.p.communicate()
        self.reader.join(timeout=30)
        return ''.join(self.other) + err.decode(errors='replace')


def logger_clients(port, tmp):
    """Starts every logger client at once; returns [(process, tag, ids)]."""
    kinds = [('tcp5424', ['--tcp', '--rfc5424'])] * 3 + \
            [('tcpoctet', ['--tcp', '--octet-count', '--rfc5424'])] * 2 + \
            [('tcp3164', ['--tcp', '--rfc3164'])] * 2 + \
            [('udp3164', ['--udp', '--rfc3164']), ('udp5424', ['--udp', '--rfc5424'])]
    procs = []
    for i, (kind, args) in enumerate(kinds):
        tag = 'app%d-%s' % (i, kind)
        ids = ['c%02dm%03d' % (i, j) for j in range(M)]
        path = os.path.join(tmp, tag + '.txt')
        with open(path, 'w') as f:
            for k in ids:
                f.write('worker %s finished job %s in 12 ms\n' % (tag, k))
        procs.append((subprocess.Popen(['logger', '-n', '127.0.0.1', '-P', str(port), '-t', tag,
                                        '-f', path] + args, stderr=subprocess.PIPE, env=tool_env()),
                      tag, ids))
    return procs


def rsyslog_forwarder(port, tmp):
    """rsyslogd taking TCP on a port of its own and forwarding everything to
    ours with octet counting.  Returns (process, its port) or (None, None)."""
    rsyslogd = shutil.which('rsyslogd') or ('/usr/sbin/rsyslogd' if os.path.exists('/usr/sbin/rsyslogd') else None)
    if not rsyslogd:
        return None, None
    rport = free_port()
    work = os.path.join(tmp, 'rsyslog')
    os.makedirs(work)
    conf = os.path.join(tmp, 'rsyslog.conf')
    with open(conf, 'w') as f:
        f.write('global(workDirectory="%s")\n' % work)
        f.write('module(load="imtcp")\n')
        f.write('input(type="imtcp" address="127.0.0.1" port="%d")\n' % rport)
        f.write('*.* action(type="omfwd" target="127.0.0.1" port="%d" protocol="tcp" '
                'TCP_Framing="octet-counted" template="RSYSLOG_SyslogProtocol23Format")\n' % port)
    p = subprocess.Popen([rsyslogd, '-n', '-f', conf, '-i', os.path.join(tmp, 'rsyslog.pid')],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=tool_env())
    if not wait_for(lambda: listening(rport) or p.poll() is not None, 20) or p.poll() is not None:
        print('rsyslogd did not start: %r' % p.communicate()[1][-400:])
        return None, None
    return p, rport


def malformed_client(port):
    """One connection: a frame whose octet count is over max-message-size
    (cut, counted), then a good message on the same connection."""
    s = socket.create_connection(('127.0.0.1', port))
    big = b'<13>1 - h bigapp - - - ' + b'x' * 10000
    s.sendall(b'%d %s' % (len(big), big))
    s.sendall(b'<13>1 - h afterbad - - - the connection still works id-after\n')
    time.sleep(0.3)
    s.close()


def run_session_field(tmp):
    """txlsessions session-field=app: record lines grouped by a field of
    their header, session bytes without the header."""
    path = os.path.join(tmp, 'records.txt')
    apps = ['sshd', 'cron', 'nginx']
    with open(path, 'w') as f:
        for i in range(30):
            f.write('\x1ehost=h%d\x1fapp=%s\x1eevent %d happened\n' % (i % 2, apps[i % 3], i))
    rc, out = gstlaunch.run(['gst-launch-1.0', '-q', 'filesrc', 'location=' + path, '!', 'txltokenizer',
                             'model=' + MODEL, '!', 'txlsessions', 'model=' + MODEL, 'session-field=app',
                             '!', 'txlsink'])
    rows = [json.loads(l) for l in out.splitlines() if l.startswith('{')]
    sess = {r['session']: r for r in rows if 'session' in r}
    lines = [r for r in rows if 'line' in r and 'session' not in r]
    check('session-field=app: one session per app', rc == 0 and sorted(sess) == sorted(apps), out[-300:])
    want = sum(len(('event %d happened\n' % i).encode()) for i in range(0, 30, 3))
    check('session-field: session bytes count messages only',
          sess.get('sshd', {}).get('bytes') == want, (sess.get('sshd'), want))
    check('session-field: every line scored, its text the message',
          len(lines) == 30 and all(l['text'].startswith('event') for l in lines))
    rc, out = gstlaunch.run(['gst-launch-1.0', '-q', 'filesrc', 'location=' + path, '!', 'txltokenizer',
                             'model=' + MODEL, '!', 'txlsessions', 'model=' + MODEL, 'session-field=a b',
                             '!', 'fakesink'])
    check('session-field: a bad name is a clear error', rc != 0 and 'session-field takes a field name' in out,
          out[-300:])


def cpu_seconds(pid):
    with open('/proc/%d/stat' % pid) as f:
        fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


def run_descriptor_exhaustion(tmp):
    """Out of descriptors (gst-launch under prlimit --nofile=64, 100 clients
    connecting): the source warns, does not spin, and takes new clients
    once the others leave."""
    if not shutil.which('prlimit'):
        print('SKIP descriptor exhaustion: no prlimit')
        return
    port, out = free_port(), os.path.join(tmp, 'fds.txt')
    p = subprocess.Popen(['prlimit', '--nofile=64:64', 'gst-launch-1.0', '-e', 'txlsyslogsrc',
                          'port=%d' % port, 'udp=false', '!', 'filesink', 'location=' + out],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=gstlaunch.ENV)
    if not check('descriptors: the source listens', wait_for(lambda: listening(port), 30)):
        p.kill()
        return
    held = []
    for _ in range(100):
        try:
            held.append(socket.create_connection(('127.0.0.1', port), timeout=2))
        except OSError:
            break
    time.sleep(0.5)
    c0 = cpu_seconds(p.pid)
    time.sleep(2.0)
    used = cpu_seconds(p.pid) - c0
    check('descriptors exhausted: no busy loop (%.2f s of CPU in 2 s)' % used, used < 0.5)
    for s in held:
        s.close()
    c = socket.create_connection(('127.0.0.1', port), timeout=5)
    c.sendall(b'<13>1 - h app - - - after the flood id-fds\n')
    c.close()
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)  # filesink writes its buffer at EOS
    text = p.communicate(timeout=30)[0].decode(errors='replace')
    got = os.path.exists(out) and b'id-fds' in open(out, 'rb').read()
    check('descriptors: a client after the flood is served', got, text[-300:])
    check('descriptors: the shortage was warned about', 'Cannot accept syslog clients' in text,
          text[-300:])


def run_drain_at_eos(tmp):
    """Ctrl-C (EOS) while downstream is slow and messages wait in the
    source's queue: every message already received is still written."""
    port, out = free_port(), os.path.join(tmp, 'drain.txt')
    p = subprocess.Popen(['gst-launch-1.0', '-e', 'txlsyslogsrc', 'port=%d' % port, 'udp=false', '!',
                          'identity', 'sleep-time=1000000', '!', 'filesink', 'location=' + out],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=gstlaunch.ENV)
    if not check('drain: the source listens', wait_for(lambda: listening(port), 30)):
        p.kill()
        return
    c = socket.create_connection(('127.0.0.1', port), timeout=5)
    for i in range(40):
        c.sendall(b'<13>1 - h app - - - queued message id-q%03d\n' % i)
        time.sleep(0.04)
    # identity holds each buffer a second: the last messages wait in the
    # source's queue when the end of stream comes
    time.sleep(0.1)
    p.send_signal(signal.SIGINT)
    text = p.communicate(timeout=60)[0].decode(errors='replace')
    c.close()
    data = open(out, 'rb').read() if os.path.exists(out) else b''
    missing = [i for i in range(40) if b'id-q%03d' % i not in data]
    check('EOS with a slow downstream: every received message written', not missing,
          (missing[:10], text[-300:]))


def main():
    tmp = tempfile.mkdtemp(prefix='txl-syslog-')
    run_session_field(tmp)
    run_descriptor_exhaustion(tmp)
    run_drain_at_eos(tmp)
    port = free_port()
    pipe = Pipeline(port)
    if not check('the source listens', wait_for(lambda: listening(port), 30)):
        print(pipe.stop()[-600:])
        sys.exit(tally())
    time.sleep(0.3)  # the UDP socket is bound with the TCP one
    want = {}
    clients = logger_clients(port, tmp)
    fwd, rport = rsyslog_forwarder(port, tmp)
    if fwd:
        ids = ['rsm%03d' % j for j in range(M)]
        path = os.path.join(tmp, 'rsyslog-in.txt')
        with open(path, 'w') as f:
            for k in ids:
                f.write('relayed by rsyslog job %s done\n' % k)
        subprocess.run(['logger', '--tcp', '-n', '127.0.0.1', '-P', str(rport), '-t', 'viarsyslog',
                        '-f', path], check=True, timeout=60, env=tool_env())
        want.update({k: 'viarsyslog' for k in ids})
    else:
        print('SKIP rsyslog forwarding: rsyslogd not available')
    for p, tag, ids in clients:
        p.wait(timeout=60)
        check('logger %s sent its messages' % tag, p.returncode == 0, p.stderr.read()[-300:])
        want.update({k: tag for k in ids})
    malformed_client(port)
    want['id-after'] = 'afterbad'

    def seen():
        return sum(1 for r in pipe.rows for k in want if k in (r.get('text') or '')) >= len(want)
    wait_for(seen, 60)
    check('the hang-ups did not end the stream', pipe.p.poll() is None)
    messages = pipe.stop()
    if fwd:
        fwd.terminate()
        fwd.wait(timeout=30)

    rows = pipe.rows
    count = {k: 0 for k in want}
    wrong = []
    for r in rows:
        text = r.get('text') or ''
        for k in want:
            if k in text.split():
                count[k] += 1
                app = (r.get('fields') or {}).get('app')
                if app != want[k]:
                    wrong.append((k, app))
    missing = [k for k, c in count.items() if c == 0]
    twice = [k for k, c in count.items() if c > 1]
    check('every message scored exactly once (%d messages, %d clients)' % (len(want), len(clients) + 2),
          not missing and not twice, 'missing %s, twice %s' % (missing[:10], twice[:10]))
    check('each message under its own app field', not wrong, wrong[:5])
    by_tag = {}
    for r in rows:
        f = r.get('fields') or {}
        by_tag.setdefault(f.get('app'), []).append(r)
    for tag in sorted(t for t in set(want.values()) if t != 'afterbad'):
        rs = by_tag.get(tag, [])
        ok = rs and all(r['text'].startswith(('worker', 'relayed')) and
                        r['fields'].get('severity') == 'notice' and
                        r['fields'].get('facility') == 'user' and r['fields'].get('host') and
                        r['fields'].get('time') for r in rs)
        check('%s: header parsed into fields, the message alone is text' % tag, ok,
              rs[:1])
    plain = [r for r in rows if '\x1e' in (r.get('text') or '')]
    check('no header bytes in any text', not plain, plain[:1])
    cut = [r for r in rows if (r.get('fields') or {}).get('app') == 'bigapp']
    check('bytes count the message, not the header',
          all(r['bytes'] == len(r['text'].encode()) + 1 for r in rows if r.get('fields') and r not in cut),
          [(r['bytes'], len(r['text'])) for r in rows[:3]])
    # txlsink writes at most 4 KiB of a line's text; bytes count all of it
    check('an oversized frame is cut at max-message-size, not lost',
          len(cut) == 1 and 8000 < cut[0]['bytes'] <= 8193, [r['bytes'] for r in cut])
    check('the malformed frame was warned about', 'malformed syslog frame' in messages,
          messages[-500:])
    shutil.rmtree(tmp, ignore_errors=True)
    sys.exit(1 if tally() else 0)


if __name__ == '__main__':
    main()

# SPDX-License-Identifier: LGPL-2.1-or-later
"""pipelines/*.txt run as written: score-live.txt following a growing
file, generate.txt against `txl generate`, and syslog.txt over UDP and
TCP with gst-launch-1.0 on loopback: every message sent comes out as one
scored line, in order, with its text, and the injected anomalies score
highest.  (Real syslog clients and servers: test_syslog.py.)"""
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time

import checks
from checks import check, tally

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
MODEL = os.path.join(ROOT, 'models', 'default.gguf')
PLUGINS = os.environ.get('TXL_PLUGIN_DIR', os.path.join(ROOT, 'build', 'plugins'))
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import loggen  # noqa: E402


def free_port(kind):
    s = socket.socket(socket.AF_INET, kind)
    s.bind(('127.0.0.1', 0))
    port = s.getsockname()[1]
    s.close()
    return port


def description(name, port):
    with open(os.path.join(ROOT, 'pipelines', name)) as f:
        text = ' '.join(l.strip() for l in f if not l.startswith('#'))
    return text.replace('$PORT', str(port)).replace('$MODEL', MODEL).split()


def messages():
    g = loggen.Gen(11, loggen.START)
    r = random.Random(3)
    lines = [g.normal() for _ in range(160)]
    bad = sorted(r.sample(range(120, 160), 3))
    for i in bad:
        lines[i] = g.anomaly()
    return lines, bad


def start(name, port):
    env = dict(os.environ, GST_PLUGIN_PATH=PLUGINS)
    return subprocess.Popen(['gst-launch-1.0', '-q', '-e'] + description(name, port),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)


def finish(p):
    try:
        out, err = p.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGINT)   # -e: EOS, then the sink flushes
        out, err = p.communicate(timeout=30)
    return out.decode(), err.decode()


def verify(name, out, err, lines, bad):
    rows = [json.loads(l) for l in out.splitlines() if l.strip()]
    check('%s: one scored line per message' % name, len(rows) == len(lines),
          '%d rows for %d messages; stderr %r' % (len(rows), len(lines), err[-300:]))
    check('%s: texts in order' % name, [r['text'] for r in rows] == lines)
    if len(rows) == len(lines):
        top = sorted(range(len(rows)), key=lambda i: -rows[i]['bpb'])[:3]
        check('%s: the injected anomalies score highest' % name, sorted(top) == bad,
              'top %s, injected %s' % (sorted(top), bad))
        flagged = [i for i, r in enumerate(rows) if r['flag']]
        check('%s: the anomalies are flagged' % name, set(bad) <= set(flagged),
              'flagged %s' % flagged)


def udp_bound(port):
    """Whether a socket is bound to this UDP port (datagrams sent before
    udpsrc binds are lost, and a slow, e.g. sanitised, start can take a
    while)."""
    for table in ('/proc/net/udp', '/proc/net/udp6'):
        try:
            with open(table) as f:
                next(f)
                for row in f:
                    if int(row.split()[1].split(':')[1], 16) == port:
                        return True
        except OSError:
            pass
    return False


def run_udp(lines, bad):
    port = free_port(socket.SOCK_DGRAM)
    p = start('syslog.txt', port)
    deadline = time.time() + 30
    while not udp_bound(port) and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    time.sleep(0.2)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    for l in lines:
        s.sendto(l.encode(), ('127.0.0.1', port))
        time.sleep(0.002)
    s.close()
    out, err = collect(p, len(lines))
    verify('udp', out, err, lines, bad)


def collect(p, n, check_alive=None):
    """The rows of a live pipeline once n have come (every message is scored
    as it arrives: wait for the rows rather than a fixed time, which a slow,
    sanitised build may need), then Ctrl-C; (rows text, stderr)."""
    rows = []
    reader = threading.Thread(target=lambda: rows.extend(iter(p.stdout.readline, b'')))
    reader.start()
    deadline = time.time() + 30
    while len(rows) < n and time.time() < deadline and p.poll() is None:
        time.sleep(0.05)
    time.sleep(0.3)
    if check_alive:
        check(check_alive, p.poll() is None)
    p.send_signal(signal.SIGINT)
    reader.join(timeout=30)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        _, err = p.communicate()
    return b''.join(rows).decode(), err.decode()


def run_tcp(lines, bad):
    port = free_port(socket.SOCK_STREAM)
    p = start('syslog.txt', port)
    deadline = time.time() + 15
    while True:
        try:
            s = socket.create_connection(('127.0.0.1', port), timeout=1)
            break
        except OSError:
            if time.time() > deadline or p.poll() is not None:
                check('tcp: server listens', False, finish(p)[1][-300:])
                return
            time.sleep(0.1)
    data = ''.join(l + '\n' for l in lines).encode()
    for i in range(0, len(data), 977):  # arbitrary packet boundaries
        s.sendall(data[i:i + 977])
    s.close()                           # a hang-up: the stream goes on
    out, err = collect(p, len(lines), 'tcp: the hang-up did not end the stream')
    verify('tcp', out, err, lines, bad)


def run_follow(lines):
    """pipelines/score-live.txt behind `tail -F`: a line appended to a
    growing file is scored before the next one is written."""
    import select
    import tempfile
    d = tempfile.mkdtemp(prefix='txl-follow-')
    path = os.path.join(d, 'app.log')
    open(path, 'w').close()
    with open(os.path.join(ROOT, 'pipelines', 'score-live.txt')) as f:
        desc = ' '.join(l.strip() for l in f if not l.startswith('#')).replace('$MODEL', MODEL)
    env = dict(os.environ, GST_PLUGIN_PATH=PLUGINS)
    p = subprocess.Popen('tail -n +1 -F %s 2>/dev/null | exec gst-launch-1.0 -q %s' % (path, desc),
                         shell=True, stdout=subprocess.PIPE, env=env, start_new_session=True)
    got, worst = [], 0.0
    with open(path, 'a') as log:
        for l in lines[:25]:
            log.write(l + '\n')
            log.flush()
            t0 = time.time()
            ready, _, _ = select.select([p.stdout], [], [], 10.0)
            if not ready:
                break
            got.append(json.loads(p.stdout.readline())['text'])
            worst = max(worst, time.time() - t0)
    os.killpg(p.pid, signal.SIGTERM)   # our own process group: tail and gst-launch
    p.wait(timeout=10)
    check('follow: each appended line is scored before the next is written',
          got == lines[:25], '%d of 25 lines' % len(got))
    print('follow: worst latency from append to score %.3f s' % worst)
    os.remove(path)
    os.rmdir(d)


def run_generate():
    """pipelines/generate.txt: deterministic, and the same text as
    `txl generate` with the same prompt, settings and seed."""
    import tempfile
    txl = os.environ.get('TXL_BIN', os.path.join(ROOT, 'build', 'tools', 'txl'))
    d = tempfile.mkdtemp(prefix='txl-gen-')
    prompt = os.path.join(d, 'prompt.txt')
    with open(prompt, 'w') as f:
        f.write('Nov  3 08:00:01 web-01 sshd[2211]: Accepted publickey for deploy\n')
    with open(os.path.join(ROOT, 'pipelines', 'generate.txt')) as f:
        desc = ' '.join(l.strip() for l in f if not l.startswith('#'))
    desc = desc.replace('$PROMPT', prompt).replace('$MODEL', MODEL).split()
    env = dict(os.environ, GST_PLUGIN_PATH=PLUGINS)
    outs = [subprocess.run(['gst-launch-1.0', '-q'] + desc, capture_output=True, env=env,
                           timeout=120).stdout for _ in range(2)]
    cli = subprocess.run([txl, 'generate', '-m', MODEL, '--prompt-file', prompt, '-n', '200',
                          '--temperature', '0.8', '--top-k', '40', '--seed', '1'],
                         capture_output=True, timeout=120).stdout
    check('generate: the pipeline writes text', len(outs[0]) > 100, repr(outs[0][:100]))
    check('generate: deterministic for a seed', outs[0] == outs[1])
    # txl generate ends with a line end when the text does not
    check('generate: same text as txl generate', cli.rstrip(b'\n') == outs[0].rstrip(b'\n'),
          '%r vs %r' % (cli[:80], outs[0][:80]))
    os.remove(prompt)
    os.rmdir(d)


def main():
    lines, bad = messages()
    run_follow(lines)
    run_generate()
    run_tcp(lines, bad)
    run_udp(lines, bad)
    failed = tally()
    sys.exit(1 if failed else (77 if not checks.results else 0))


if __name__ == '__main__':
    main()

# SPDX-License-Identifier: LGPL-2.1-or-later
"""txld against hostile clients and hostile configuration (docs/txld.md,
"HTTP limits" and "Configuration files"; issue 12, breaks 1, 2, 7 and 8).

1. Descriptor exhaustion: under a limit of 64 descriptors, 150 idle
   connections exhaust them; the failed accept is logged, and once they
   close /metrics answers again (twice over, so recovery is not a one-off).
2. Connection cap and timeouts: the connection over --http-max-connections
   gets 503 and one log line, however many come; an idle connection and a
   half-sent request dribbled byte by byte are closed at --http-timeout.
3. Request bodies: a POST declaring 300 MB, to any path, gets 413 before the
   body is read; a chunked body is cut at the limit; 4 x 250 MB attempts do
   not grow txld's resident memory.
4. Configuration: a FIFO named *.conf at start and another added before
   SIGHUP are refused with a message and nothing blocks (HTTP answers,
   SIGTERM exits at once); a 20 MB file and an over-long value are refused
   and never echoed whole; two pipelines sharing a snapshot file through
   another spelling, a symbolic link (dangling too), a symlinked directory,
   a hard link or a second element's NAME.1 are refused, naming both.

The pipelines here are fakesrc ! fakesink: nothing scores, the checks are
about txld itself.  About 20 s."""
import os
import shutil
import signal
import socket
import sys
import threading
import time

from checks import check
from txld_daemon import Daemon, run_cases

LIGHT = '[pipeline]\nlaunch = fakesrc num-buffers=1 ! fakesink\nrestart = never\n'


def closed_within(s, seconds, t):
    """Seconds from t until the peer closed s, or None if it stayed open."""
    s.settimeout(0.1)
    while time.time() - t < seconds:
        try:
            if s.recv(4096) == b'':
                return time.time() - t
        except socket.timeout:
            continue
        except OSError:
            return time.time() - t
    return None


def fresh(tmp, files=()):
    for d in ('conf', 'state'):
        shutil.rmtree(os.path.join(tmp, d), ignore_errors=True)
        os.makedirs(os.path.join(tmp, d))
    for name, text in files:
        with open(os.path.join(tmp, 'conf', name), 'w') as f:
            f.write(text)


# ---- 1. descriptor exhaustion ---------------------------------------------------

def test_exhaustion(tmp):
    fresh(tmp, [('a.conf', LIGHT)])
    d = Daemon(tmp, 'nofile', ['--http-max-connections', '1000', '--http-timeout', '60'],
               nofile=64)
    try:
        check('64 descriptors: /metrics answers before', d.get('/metrics')[0] == 200)
        for cycle in (1, 2):
            socks = []
            for _ in range(150):
                try:
                    socks.append(socket.create_connection(('127.0.0.1', d.port),
                                                          timeout=2))
                except OSError:
                    break
            time.sleep(0.3)
            st, _ = d.get('/metrics', timeout=1)
            check('cycle %d: %d connections held, descriptors exhausted: /metrics '
                  'does not answer' % (cycle, len(socks)), st is None and len(socks) > 64,
                  st)
            for s in socks:
                s.close()
            t = time.time()
            st = None
            while st != 200 and time.time() - t < 5:
                st, _ = d.get('/metrics', timeout=1)
            check('cycle %d: once they close, /metrics answers again (%.2f s)'
                  % (cycle, time.time() - t), st == 200)
        check('/pipelines answers too', d.json('/pipelines') is not None)
        log = d.logtext()
        check('the failed accept is logged, naming the limit and LimitNOFILE',
              'cannot accept a connection' in log and 'descriptor limit 64' in log
              and 'LimitNOFILE' in log, log[-1500:])
        check('... once per 10 s, not once per failure',
              log.count('cannot accept a connection') <= 2,
              log.count('cannot accept a connection'))
        errs = d.metric('txld_http_accept_errors_total')
        check('txld_http_accept_errors_total counts them', errs and errs > 0, errs)
    finally:
        rc, dt = d.stop()
        check('SIGTERM: exit 0', rc == 0, rc)


# ---- 2. connection cap and timeouts --------------------------------------------

def test_cap_and_timeouts(tmp):
    fresh(tmp, [('a.conf', LIGHT)])
    d = Daemon(tmp, 'cap', ['--http-max-connections', '5', '--http-timeout', '1.5'])
    try:
        held = [socket.create_connection(('127.0.0.1', d.port), timeout=2)
                for _ in range(5)]
        time.sleep(0.2)
        answers = [d.get('/metrics')[0] for _ in range(20)]
        check('at the cap (5 held): 20 more connections get 503', answers == [503] * 20,
              answers)
        log = d.logtext()
        check('the cap is logged once, naming the option',
              log.count('the limit (--http-max-connections 5)') == 1, log[-1500:])
        for s in held:
            s.close()
        time.sleep(0.2)
        check('below the cap again: /metrics answers', d.get('/metrics')[0] == 200)
        check('txld_http_refused_total == 20', d.metric('txld_http_refused_total') == 20,
              d.metric('txld_http_refused_total'))

        t0 = time.time()
        idle = socket.create_connection(('127.0.0.1', d.port), timeout=2)
        half = socket.create_connection(('127.0.0.1', d.port), timeout=2)
        half.sendall(b'GET /metrics HTTP/1.1\r\nHost: x\r\n')
        stop = threading.Event()

        def dribble():
            # one header byte every 0.2 s: a per-read timeout would never fire
            try:
                while not stop.is_set():
                    half.sendall(b'X')
                    time.sleep(0.2)
            except OSError:
                pass
        th = threading.Thread(target=dribble)
        th.start()
        t_idle = closed_within(idle, 6, t0)
        t_half = closed_within(half, 6, t0)
        stop.set()
        th.join()
        check('an idle connection is closed at --http-timeout 1.5 s (%.2f s)'
              % (t_idle or -1), t_idle is not None and 1.4 <= t_idle <= 3.5, t_idle)
        check('a request dribbled byte by byte is closed then too (%.2f s)'
              % (t_half or -1), t_half is not None and 1.4 <= t_half <= 3.5, t_half)
        idle.close()
        half.close()
        check('txld_http_timeouts_total counts both',
              (d.metric('txld_http_timeouts_total') or 0) >= 2,
              d.metric('txld_http_timeouts_total'))
        time.sleep(0.2)
        check('txld_http_connections: back to 1 (this request)',
              d.metric('txld_http_connections') == 1, d.metric('txld_http_connections'))
    finally:
        rc, dt = d.stop()
        check('SIGTERM: exit 0', rc == 0, rc)


# ---- 3. request bodies ---------------------------------------------------------

def post_huge(port, path, declared, send_mb, chunked=False):
    """Sends a POST declaring `declared` bytes and then up to send_mb MB of
    body; returns (status or None, MB sent before the server stopped it,
    seconds)."""
    try:
        s = socket.create_connection(('127.0.0.1', port), timeout=3)
    except OSError:
        return None, 0, 0.0
    head = 'POST %s HTTP/1.1\r\nHost: x\r\n' % path
    head += ('Transfer-Encoding: chunked\r\n' if chunked
             else 'Content-Length: %d\r\n' % declared)
    t = time.time()
    s.sendall((head + '\r\n').encode())
    block = b'x' * (1 << 20)
    if chunked:
        block = b'100000\r\n' + block + b'\r\n'
    sent = 0
    s.settimeout(2)
    try:
        while sent < send_mb:
            s.sendall(block)
            sent += 1
    except OSError:
        pass
    data = b''
    try:
        while True:
            b = s.recv(65536)
            if not b:
                break
            data += b
    except OSError:
        pass
    s.close()
    try:
        st = int(data.split(b' ', 2)[1])
    except (IndexError, ValueError):
        st = None
    return st, sent, time.time() - t


def test_bodies(tmp):
    fresh(tmp, [('a.conf', LIGHT)])
    d = Daemon(tmp, 'body', ['--http-max-body', '65536'])
    try:
        st, _ = d.get('/metrics')
        rss0 = d.rss_kb()
        st, sent, dt = post_huge(d.port, '/no/such/path', 300 << 20, 1)
        check('POST declaring 300 MB to an unknown path: 413 in %.2f s' % dt,
              st == 413 and dt < 2.5, (st, sent, dt))
        st, sent, dt = post_huge(d.port, '/reload', 0, 50, chunked=True)
        check('chunked POST /reload: cut at the limit (%d MB sent of 50)' % sent,
              sent < 50 and dt < 5, (st, sent, dt))
        for i in range(4):
            post_huge(d.port, '/pipelines/a/snapshot', 250 << 20, 250)
        rss1 = d.rss_kb()
        check('4 x 250 MB bodies: resident memory %d -> %d kB' % (rss0, rss1),
              rss1 - rss0 < 20 * 1024, (rss0, rss1))
        st, data = d.request(b'POST /reload HTTP/1.1\r\nHost: x\r\nContent-Length: 10'
                             b'\r\n\r\n0123456789')
        check('a small body is fine: POST /reload 200', st == 200, data[:200])
        check('txld_http_body_refused_total >= 6',
              (d.metric('txld_http_body_refused_total') or 0) >= 6,
              d.metric('txld_http_body_refused_total'))
        check('the refusal is logged with the option',
              '(--http-max-body)' in d.logtext(), d.logtext()[-1000:])
    finally:
        rc, dt = d.stop()
        check('SIGTERM: exit 0', rc == 0, rc)


# ---- 4. configuration ----------------------------------------------------------

def snap_conf(snapshot):
    return LIGHT + 'snapshot = %s\n' % snapshot


def test_config(tmp):
    state = os.path.join(tmp, 'state')
    files = [('good.conf', LIGHT),
             # a long launch within the 64 KiB limit: runs, echoed bounded
             ('wide.conf', '[pipeline]\nlaunch = fakesrc num-buffers=1 ! fakesink '
              'name=w%s\nrestart = never\n' % ('w' * (60 << 10)))]
    # break 2: one snapshot file under two names (the later file is refused)
    files += [('a1.conf', LIGHT),                           # STATE/a1.snap
              ('a2.conf', snap_conf('./a1.snap')),          # another spelling
              ('b1.conf', snap_conf('b1.snap')),
              ('b2.conf', snap_conf('link-to-b1.snap')),     # dangling symlink
              ('c1.conf', snap_conf('c1.snap')),
              ('c2.conf', snap_conf('c1.snap.1')),           # c1's second element
              ('d1.conf', snap_conf('d1.snap')),
              ('d2.conf', snap_conf('hard.snap')),           # hard link to d1.snap
              ('e1.conf', snap_conf('e1.snap')),
              ('e2.conf', snap_conf('sub/e1.snap')),         # sub -> STATE
              ('f1.conf', snap_conf(os.path.join(state, 'f1.snap'))),
              ('f2.conf', snap_conf('f1.snap')),             # absolute and relative
              ('g1.conf', snap_conf('g.snap')),
              ('g2.conf', snap_conf('g.snapx')),             # not the same: both run
              ('g3.conf', snap_conf('g.snap.1x'))]           # nor this
    fresh(tmp, files)
    os.symlink('b1.snap', os.path.join(state, 'link-to-b1.snap'))
    open(os.path.join(state, 'd1.snap'), 'wb').write(b'x')
    os.link(os.path.join(state, 'd1.snap'), os.path.join(state, 'hard.snap'))
    os.symlink('.', os.path.join(state, 'sub'))
    conf = os.path.join(tmp, 'conf')
    # break 7: a FIFO, a directory, an oversized file, an over-long value,
    # and a symbolic link to a regular file (accepted)
    os.mkfifo(os.path.join(conf, 'fifo.conf'))
    os.mkdir(os.path.join(conf, 'dir.conf'))
    with open(os.path.join(conf, 'huge.conf'), 'w') as f:
        f.write('[pipeline]\nlaunch = fakesrc ! fakesink\noutput = ' + 'y' * (20 << 20)
                + '\n')
    with open(os.path.join(conf, 'long.conf'), 'w') as f:
        f.write('[pipeline]\nlaunch = fakesrc name=' + 'z' * (100 << 10) + ' ! fakesink\n')
    with open(os.path.join(tmp, 'real-file'), 'w') as f:
        f.write(LIGHT)
    os.symlink(os.path.join(tmp, 'real-file'), os.path.join(conf, 'linked.conf'))

    t = time.time()
    d = Daemon(tmp, 'conf')
    try:
        p = d.json('/pipelines')
        check('FIFO *.conf at start: txld serves HTTP (%.2f s)' % (time.time() - t),
              p is not None)
        if p is None:
            return
        errs = p['config_errors']
        names = sorted(x['name'] for x in p['pipelines'])

        def err(file):
            m = [e for e in errs if e.startswith(os.path.join(conf, file) + ':')]
            return m[0] if m else ''
        check('the FIFO is refused, named', 'a FIFO, not a regular file' in err('fifo.conf'),
              errs)
        check('a directory is refused', 'a directory' in err('dir.conf'), errs)
        check('a 20 MB file is refused at the 1 MiB limit',
              '1 MiB' in err('huge.conf'), errs)
        check('a 100 KiB launch value is refused, with the limit',
              "key 'launch'" in err('long.conf') and 'over the limit of 65536'
              in err('long.conf'), err('long.conf')[:300])
        check('a symbolic link to a regular file is read', 'linked' in names, names)
        pairs = [('a2', 'a1', 'another spelling (./a1.snap)'),
                 ('b2', 'b1', 'a symbolic link (dangling)'),
                 ('c2', 'c1', "the other's second element (c1.snap.1)"),
                 ('d2', 'd1', 'a hard link'),
                 ('e2', 'e1', 'a symlinked directory'),
                 ('f2', 'f1', 'an absolute and a relative path')]
        for late, early, how in pairs:
            e = err(late + '.conf')
            check('shared snapshot through %s: refused, naming both' % how,
                  "key 'snapshot'" in e and "'%s'" % late in e and "'%s'" % early in e
                  and late not in names and early in names, e or errs)
        check('different files: g1, g2, g3 all run',
              {'g1', 'g2', 'g3', 'good', 'wide'} <= set(names), names)
        wide = [x for x in p['pipelines'] if x['name'] == 'wide']
        check('a 60 KiB launch runs, and /pipelines carries 4 KiB of it with a marker',
              wide and len(wide[0]['launch']) < 4200 and
              wide[0]['launch'].endswith('[truncated, %d bytes]' % (len('fakesrc '
                                         'num-buffers=1 ! fakesink name=w') + (60 << 10))),
              wide and wide[0]['launch'][-80:])
        text = d.get('/pipelines')[1]
        check('/pipelines stays small (%d bytes)' % len(text), len(text) < 64 << 10)
        check('the log stays small (%d bytes)' % len(d.logtext()),
              len(d.logtext()) < 64 << 10)
        check('txld_config_errors counts every bad file',
              d.metric('txld_config_errors') == len(errs) and len(errs) == 10,
              (d.metric('txld_config_errors'), errs))

        os.mkfifo(os.path.join(conf, 'late.conf'))
        d.p.send_signal(signal.SIGHUP)
        time.sleep(0.3)
        t = time.time()
        p = d.json('/pipelines')
        check('FIFO added, SIGHUP: HTTP answers (%.2f s)' % (time.time() - t),
              p is not None and any('late.conf' in e and 'FIFO' in e
                                    for e in p['config_errors']),
              p and p['config_errors'])
    finally:
        rc, dt = d.stop(timeout=10)
        check('SIGTERM exits promptly (%.2f s) with 0' % dt, rc == 0 and dt < 5, (rc, dt))


def main():
    return run_cases('txld-hostile-', [test_exhaustion, test_cap_and_timeouts, test_bodies, test_config])


if __name__ == '__main__':
    sys.exit(main())

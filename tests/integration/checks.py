# SPDX-License-Identifier: LGPL-2.1-or-later
"""What the integration tests share: one PASS or FAIL line per check (the
detail only when it fails) and the tally that decides the exit status."""

import os
import random
import shutil
import subprocess
import time

results = []


def check(name, cond, detail=''):
    """cond, after printing its line (flushed: long tests show progress);
    a failure's detail is cut to its last 1500 characters."""
    results.append(bool(cond))
    print(('PASS ' if cond else 'FAIL ') + name + ('' if cond else '  ' + str(detail)[-1500:]),
          flush=True)
    return cond


def tally():
    """Prints how many checks passed and failed; returns the number failed."""
    failed = results.count(False)
    print('%d passed, %d failed' % (len(results) - failed, failed))
    return failed


def finish(tmp):
    """The end of a test: the tally, and tmp removed when every check
    passed (kept to look at otherwise).  The exit status."""
    failed = tally()
    if not failed:
        shutil.rmtree(tmp, ignore_errors=True)
    return 1 if failed else 0


def write_text(path, text=''):
    """Writes text (nothing: an empty file) to path; returns path."""
    with open(path, 'w') as f:
        f.write(text)
    return path


def tiny_byte_model(txl, tmp, lines):
    """A one-layer byte model trained briefly on lines (a few seconds): a
    start for tests of learning on the stream.  Returns its path, checked."""
    train = write_text(os.path.join(tmp, 'train.log'), '\n'.join(lines) + '\n')
    model = os.path.join(tmp, 'm.gguf')
    p = subprocess.run([txl, 'train', '-o', model, '--tokenizer', 'byte', '--layers', '1', '--d-model', '32',
                        '--heads', '2', '--d-head', '16', '--d-inner', '64', '--mem-len', '32', '--segment', '32',
                        '--batch', '4', '--steps', '40', '--lr', '3e-3', '--eval-every', '0',
                        '--checkpoint-every', '0', train], capture_output=True, timeout=300)
    check('a small byte model to start from', p.returncode == 0, p.stderr)
    return model


def sshd_lines(n, seed, sessions=0):
    """n sshd-like log lines for the learning tests.  With sessions, each
    carries sess=N: a few sessions at a time, interleaved, a new set every
    60 lines."""
    r = random.Random(seed)
    out = []
    for i in range(n):
        sess = 'sess=%d ' % (r.randrange(sessions) + 10 * (i // 60)) if sessions else ''
        out.append('Nov 25 10:%02d:%02d host sshd[%d]: %sAccepted publickey for %s from 10.0.%d.%d port %d ssh2'
                   % (i // 60 % 60, i % 60, 1000 + r.randrange(9000), sess, r.choice(['alice', 'bob', 'carol']),
                      r.randrange(4), r.randrange(256), 40000 + r.randrange(20000)))
    return out


def learn_input(txl, tmp, bug, sessions=0):
    """Where the learning tests start, in tmp: tiny_byte_model trained on
    200 sshd lines, and 300 others whose line 251 is `bug` (an anomaly),
    also written to in.log.  Returns (model, the 300 lines as bytes, the
    path of in.log)."""
    model = tiny_byte_model(txl, tmp, sshd_lines(200, 1, sessions))
    lines = sshd_lines(300, 2, sessions)
    lines[250] = bug
    data = ('\n'.join(lines) + '\n').encode()
    src = os.path.join(tmp, 'in.log')
    with open(src, 'wb') as f:
        f.write(data)
    return model, data, src


def txld_port(p, portfile, logtext, timeout=15):
    """The port that txld (process p) writes to portfile once it listens.
    When it exits first, or takes longer than timeout seconds, it is killed
    and RuntimeError carries the end of logtext()."""
    deadline = time.time() + timeout
    while not (os.path.exists(portfile) and open(portfile).read().strip()):
        if time.time() > deadline or p.poll() is not None:
            p.kill()
            raise RuntimeError('txld did not start: ' + logtext()[-2000:])
        time.sleep(0.02)
    return int(open(portfile).read())


# A session log for txlsessions session-key=SESSION_KEY: `before`
# sessions S0.. of `per` normal lines each (gen: a tools/loggen.py Gen),
# then 3 lines of `foreign` as session S99, then `after` normal sessions.
# The default model scores the normal ones under 2 nats per token, S99's
# foreign lines about 5: session-threshold 3.5 flags S99 alone.
SESSION_KEY = 'sid=S[0-9]+'


def write_session_log(path, gen, before, per, foreign, after=0):
    with open(path, 'w') as f:
        for k in range(before):
            f.write(''.join('%s sid=S%d\n' % (gen.normal(), k) for _ in range(per)))
        f.write(''.join('%s sid=S99\n' % foreign for _ in range(3)))
        for k in range(before, before + after):
            f.write(''.join('%s sid=S%d\n' % (gen.normal(), k) for _ in range(per)))


# Waits stretch by this factor: tools/check-memory.sh sets it, since
# sanitized builds run several times slower (a busy machine too).
SLOW = float(os.environ.get('TXL_TEST_SLOW', '1') or 1)


def wait_for(cond, timeout=10, step=0.05):
    """cond()'s first true value within timeout x SLOW seconds (polled
    every step seconds), or its value at the end."""
    deadline = time.time() + timeout * SLOW
    while time.time() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def tool_env():
    """The environment for the real clients and servers a test starts
    (logger, rsyslogd, Alertmanager, Prometheus): without the sanitizer
    runtime tools/check-memory.sh preloads for gst-launch-1.0."""
    return {k: v for k, v in os.environ.items() if k not in ('LD_PRELOAD', 'ASAN_OPTIONS')}

# SPDX-License-Identifier: LGPL-2.1-or-later
"""txlmodel learn=true through gst-launch-1.0 and txld (docs/learning.md), on a
small model trained here: warm-up lines are marked and never flagged by
txlsink's default threshold, the round lands right after the warm-up
(txl-learn message), two runs write the same bytes, a stream cut before, at
and after the warm-up and continued from its snapshot in a new process
writes exactly the uninterrupted run, the adapted model file loads, a
snapshot is continued only the way it was written, txld reports the
rounds on /metrics, a learning pipeline stopped under txld and started by
a new txld continues from its snapshot byte for byte, and learn-warmup-seconds
ends the warm-up by the time lines arrived, from a real `logger` through
txlsyslogsrc and POSTed to txld's ingest."""
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
PLUGINS = os.environ.get('TXL_PLUGIN_DIR', os.path.join(ROOT, 'build', 'plugins'))
TXL = os.environ.get('TXL_BIN', os.path.join(ROOT, 'build', 'tools', 'txl'))
TXLD = os.environ.get('TXLD_BIN') or os.path.join(ROOT, 'build', 'tools', 'txld')
ENV = dict(os.environ, GST_PLUGIN_PATH=PLUGINS, TXL_NUM_THREADS='1')
WARMUP = 150
sys.path.insert(0, HERE)
from checks import check, finish, learn_input, tool_env  # noqa: E402


def launch(model, src, out, extra=''):
    return (['gst-launch-1.0', '-m', 'filesrc', 'location=' + src, 'blocksize=997', '!',
             'txltokenizer', 'model=' + model, '!', 'txlmodel', 'model=' + model, 'learn=true',
             'learn-warmup=%d' % WARMUP] + extra.split() + ['!', 'txlsink', 'location=' + out, 'append=true'])


def run(args):
    p = subprocess.run(args, capture_output=True, env=ENV, timeout=300)
    return p.returncode, p.stdout.decode(errors='replace'), p.stderr.decode(errors='replace')


def txld_rounds(tmp, model, src):
    """Runs the learning chain under txld: the learn rounds on /metrics."""
    conf = os.path.join(tmp, 'conf')
    os.makedirs(conf, exist_ok=True)
    with open(os.path.join(conf, 'learn.conf'), 'w') as f:
        f.write('[pipeline]\nlaunch = filesrc location=%s ! txltokenizer model=%s ! txlmodel model=%s '
                'learn=true learn-warmup=%d ! txlsink location=/dev/null\nrestart = never\n'
                'snapshot = none\n' % (src, model, model, WARMUP))
    portfile = os.path.join(tmp, 'port')
    p = subprocess.Popen([TXLD, '--config', conf, '--state-dir', os.path.join(tmp, 'state'),
                          '--port', '0', '--port-file', portfile],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)
    value, text = None, ''
    try:
        deadline = time.time() + 60
        while time.time() < deadline and value != 1:
            time.sleep(0.2)
            if not (os.path.exists(portfile) and open(portfile).read().strip()):
                continue
            port = int(open(portfile).read())
            with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=10) as r:
                text = r.read().decode()
            for l in text.splitlines():
                if l.startswith('txld_pipeline_learn_rounds{pipeline="learn"}'):
                    value = float(l.rsplit(' ', 1)[1])
    finally:
        p.terminate()
        p.wait(timeout=30)
    return value, text


def metrics(portfile):
    """txld's /metrics as {name{labels}: value}, {} before it listens."""
    if not (os.path.exists(portfile) and open(portfile).read().strip()):
        return {}
    port = int(open(portfile).read())
    try:
        with urllib.request.urlopen('http://127.0.0.1:%d/metrics' % port, timeout=10) as r:
            text = r.read().decode()
    except OSError:
        return {}
    return {l.rsplit(' ', 1)[0]: float(l.rsplit(' ', 1)[1])
            for l in text.splitlines() if l and not l.startswith('#')}


def txld_restart(tmp, model, data, cut, ref):
    """A learning pipeline under txld stops after the round landed (its
    snapshot written at the end of its input) and a new txld continues it
    from that snapshot on the rest of the input: the output is the
    uninterrupted run's, and the rounds count on.  Returns (ok, detail)."""
    conf, state = os.path.join(tmp, 'rconf'), os.path.join(tmp, 'rstate')
    os.makedirs(conf, exist_ok=True)
    src, out = os.path.join(tmp, 'r-in.log'), os.path.join(tmp, 'r-out.jsonl')
    detail = []
    for part, extra in ((data[:cut], ''), (data[cut:], ' hold-at-eos=false')):
        open(src, 'wb').write(part)
        with open(os.path.join(conf, 'learn.conf'), 'w') as f:
            f.write('[pipeline]\nlaunch = filesrc location=%s ! txltokenizer model=%s ! txlmodel '
                    'model=%s learn=true learn-warmup=%d%s ! txlsink location=%s append=true\n'
                    'restart = never\n' % (src, model, model, WARMUP, extra, out))
        portfile = os.path.join(tmp, 'rport')
        if os.path.exists(portfile):
            os.remove(portfile)
        p = subprocess.Popen([TXLD, '--config', conf, '--state-dir', state, '--port', '0',
                              '--port-file', portfile], stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, env=ENV)
        m, deadline = {}, time.time() + 120
        try:
            while time.time() < deadline:
                time.sleep(0.2)
                m = metrics(portfile)
                if m.get('txld_pipeline_up{pipeline="learn"}') == 0 and \
                        m.get('txld_pipeline_snapshots_total{pipeline="learn"}', 0) >= 1:
                    break
        finally:
            p.terminate()
            err = p.communicate(timeout=30)[1].decode(errors='replace')
        detail.append((m.get('txld_pipeline_learn_rounds{pipeline="learn"}'), err[-300:]))
    got = open(out, 'rb').read() if os.path.exists(out) else b''
    ok = got == ref and detail[0][0] == 1 and detail[1][0] == 1
    return ok, (detail, len(got), len(ref))


# the timed warm-up's element settings, and its bursts of lines
TIMED = 'flush-on-newline=true learn=true learn-warmup=1000 learn-warmup-seconds=2'


def timed_bursts(send, out, sizes):
    """Bursts of sshd lines (sizes[k] lines each) given to send(bytes), 3 s
    of silence between them; once out holds them all, the lines it marks
    warm-up and its number of lines."""
    for k, n in enumerate(sizes):
        if k:
            time.sleep(3)
        send(''.join('sshd[%d]: accepted publickey for u%d from 10.0.0.%d\n' % (100 + i, i % 3, i)
                     for i in range(n)).encode())
    deadline = time.time() + 60
    while time.time() < deadline and (not os.path.exists(out) or
                                      open(out, 'rb').read().count(b'\n') < sum(sizes)):
        time.sleep(0.1)
    recs = [json.loads(l) for l in open(out)] if os.path.exists(out) else []
    return [r['line'] for r in recs if r.get('warmup')], len(recs)


def live_warmup(tmp, model):
    """learn-warmup-seconds=2 on a live source: 40 lines sent by a real
    `logger` to txlsyslogsrc, 3 s of silence, 40 more; the buffers'
    timestamps are when the lines arrived, so the warm-up ends with the
    first line after the silence (line 41), well before learn-warmup's
    1,000 lines.  Returns the txl-learn messages, the lines marked warm-up
    and the number of lines."""
    sys.path.insert(0, os.path.join(ROOT, 'tools'))
    from freeport import free_port
    port = free_port()
    out = os.path.join(tmp, 'live.jsonl')
    desc = ('txlsyslogsrc address=127.0.0.1 port=%d ! txltokenizer model=%s ! txlmodel model=%s %s ! '
            'txlsink location=%s' % (port, model, model, TIMED, out))
    p = subprocess.Popen(['gst-launch-1.0', '-e', '-m'] + desc.split(), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=ENV)
    lines = os.path.join(tmp, 'burst')

    def send(data):
        open(lines, 'wb').write(data)
        subprocess.run(['logger', '--tcp', '-n', '127.0.0.1', '-P', str(port), '-t', 'sshd', '-f', lines],
                       check=True, timeout=30, env=tool_env())
    try:
        deadline = time.time() + 30
        while time.time() < deadline:
            try:
                socket.create_connection(('127.0.0.1', port), timeout=1).close()
                break
            except OSError:
                time.sleep(0.05)
        warm, n = timed_bursts(send, out, (40, 40))
    finally:
        p.send_signal(signal.SIGINT)
        try:
            stdout, _ = p.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            p.kill()
            stdout, _ = p.communicate()
    learnt = [l for l in stdout.decode(errors='replace').splitlines() if 'txl-learn' in l]
    return learnt, warm, n


def txld_ingest_warmup(tmp, model):
    """learn-warmup-seconds=2 under txld, lines POSTed to its ingest: 40,
    3 s of silence, 100 more; txld stamps each request's buffer with its
    arrival, so the round lands after line 41.  Returns (the lines marked
    warm-up, the number of lines, txld's standard error)."""
    conf = os.path.join(tmp, 'iconf')
    os.makedirs(conf, exist_ok=True)
    out = os.path.join(tmp, 'ingest.jsonl')
    with open(os.path.join(conf, 'learn.conf'), 'w') as f:
        f.write('[pipeline]\nlaunch = appsrc name=ingest ! txltokenizer model=%s ! txlmodel model=%s %s ! '
                'txlsink location=%s\ningest = true\nsnapshot = none\n' % (model, model, TIMED, out))
    portfile = os.path.join(tmp, 'iport')
    p = subprocess.Popen([TXLD, '--config', conf, '--state-dir', os.path.join(tmp, 'istate'),
                          '--port', '0', '--port-file', portfile],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=ENV)

    def send(data):
        port = int(open(portfile).read())
        req = urllib.request.Request('http://127.0.0.1:%d/pipelines/learn/lines' % port, data=data,
                                     headers={'Content-Type': 'text/plain'})
        with urllib.request.urlopen(req, timeout=30) as r:
            r.read()
    try:
        deadline = time.time() + 60
        while time.time() < deadline and \
                metrics(portfile).get('txld_pipeline_up{pipeline="learn"}') != 1:
            time.sleep(0.1)
        warm, n = timed_bursts(send, out, (40, 100))
    finally:
        p.terminate()
        err = p.communicate(timeout=30)[1].decode(errors='replace')
    return warm, n, err[-300:]


def main():
    tmp = tempfile.mkdtemp(prefix='txl-learnpipe-')
    model, data, src = learn_input(TXL, tmp, 'kernel: BUG: unable to handle page fault at ffff8880deadbeef '
                                   + 'x' * 40)
    whole = os.path.join(tmp, 'whole.jsonl')
    adapted = os.path.join(tmp, 'adapted.gguf')
    rc, out, err = run(launch(model, src, whole, 'learn-model=' + adapted))
    ref = open(whole, 'rb').read() if rc == 0 else b''
    recs = [json.loads(l) for l in ref.splitlines()]
    check('learn=true runs: one record per line', rc == 0 and len(recs) == 300, err)
    warm = [r['line'] for r in recs if r['warmup']]
    check('the first %d lines are warm-up, then the recent scores fill (50 lines)' % WARMUP,
          warm in (list(range(1, WARMUP + 51)), list(range(1, WARMUP + 52))), warm[-5:])
    check('warm-up lines are never flagged', not any(r['flag'] for r in recs if r['warmup']))
    flagged = [r['line'] for r in recs if r['flag']]
    check('the injected kernel line is flagged, few others', 251 in flagged and len(flagged) <= 6, flagged)
    learnt = [l for l in out.splitlines() if 'txl-learn' in l]
    check('one txl-learn message: round 1 after line %d' % WARMUP,
          len(learnt) == 1 and 'round=(int)1' in learnt[0] and 'line=(gint64)%d,' % WARMUP in learnt[0],
          learnt)
    q = subprocess.run([TXL, 'score', '-m', adapted], input=data[:2000], capture_output=True)
    check('the adapted model file loads and scores', q.returncode == 0 and q.stdout.count(b'\n') > 10,
          q.stderr)
    again = os.path.join(tmp, 'again.jsonl')
    rc, _, err = run(launch(model, src, again))
    check('two runs write the same bytes', rc == 0 and open(again, 'rb').read() == ref, err)
    # txl score --learn judges every line as the pipeline does: relative to
    # the model file's cost of it (ref_bpb), with the same flags; its
    # weights land one line later, so from after the window fills
    q = subprocess.run([TXL, 'score', '-m', model, '--learn', '--learn-warmup', str(WARMUP), src],
                       capture_output=True)
    cli = [json.loads(l) for l in q.stdout.splitlines()]
    judged = [(r['line'], r['flag'], r.get('ref_bpb')) for r in recs if r['line'] > WARMUP + 52]
    check('txl score --learn: the same flags and model-file costs (ref_bpb) on every judged line',
          q.returncode == 0 and len(judged) > 90 and all(x[2] is not None for x in judged) and
          judged == [(r['line'], r['flag'], r.get('ref_bpb')) for r in cli
                     if r['line'] > WARMUP + 52], q.stderr[-300:])

    snap = os.path.join(tmp, 's.snap')
    nl = [i + 1 for i, b in enumerate(data) if b == 10]
    cuts = [5, nl[WARMUP // 2] + 7, nl[WARMUP - 1], nl[WARMUP] - 3, nl[WARMUP + 1], nl[WARMUP + 60] + 11,
            len(data) - 3]
    a, b, out = (os.path.join(tmp, n) for n in ('a.txt', 'b.txt', 'out.jsonl'))
    for cut in cuts:
        open(a, 'wb').write(data[:cut])
        open(b, 'wb').write(data[cut:])
        for f in (snap, out):
            if os.path.exists(f):
                os.remove(f)
        rc1, _, e1 = run(launch(model, a, out, 'snapshot-location=' + snap))
        rc2, _, e2 = run(launch(model, b, out, 'snapshot-location=%s hold-at-eos=false' % snap))
        got = open(out, 'rb').read() if os.path.exists(out) else b''
        check('cut at byte %d: continued in a new process, byte for byte' % cut,
              rc1 == rc2 == 0 and got == ref, (e1 + e2)[-300:])
    open(a, 'wb').write(data[:3000])
    os.remove(snap)
    run(launch(model, a, out, 'snapshot-location=' + snap))
    plain = ['gst-launch-1.0', '-q', 'filesrc', 'location=' + b, '!', 'txltokenizer', 'model=' + model, '!',
             'txlmodel', 'model=' + model, 'snapshot-location=' + snap, '!', 'txlsink', 'location=' + out]
    rc, _, err = run(plain)
    check('a learning snapshot is refused without learn=true', rc != 0 and 'with learning' in err, err)
    os.remove(snap)
    open(a, 'wb').write(data[:3000])
    run(plain[:3] + ['location=' + a] + plain[4:])
    rc, _, err = run(launch(model, b, out, 'snapshot-location=' + snap))
    check('a snapshot without learning is refused with learn=true', rc != 0 and 'without learning' in err, err)

    learnt, warm, n = live_warmup(tmp, model)
    check('learn-warmup-seconds=2 on live syslog: the round lands after line 41, the first after '
          '3 s of silence', len(learnt) == 1 and 'line=(gint64)41,' in learnt[0], (learnt, n))
    check('learn-warmup-seconds: lines 1 to 41 scored with the model file\'s weights, marked warm-up',
          n == 80 and warm[:41] == list(range(1, 42)), (n, warm[:45]))

    if os.path.exists(TXLD):
        value, text = txld_rounds(tmp, model, src)
        check('txld: txld_pipeline_learn_rounds is 1 on /metrics', value == 1, text[-600:])
        ok, detail = txld_restart(tmp, model, data, nl[WARMUP + 60] + 11, ref)
        check('txld: a learning pipeline stopped and started again continues with its adapted '
              'weights, byte for byte', ok, detail)
        warm, n, err = txld_ingest_warmup(tmp, model)
        # the landing line is the warm-up's last; the 50 after it fill the
        # recent scores and are marked too: 1 to 91 (1 to 140 had the
        # round waited for learn-warmup's 1,000 lines)
        check('txld: learn-warmup-seconds=2 on lines POSTed to its ingest, 3 s apart: the warm-up '
              'ends after line 41', n == 140 and warm == list(range(1, 92)),
              (n, warm[-3:], err))
    else:
        print('SKIP txld: not built')
    return finish(tmp)


if __name__ == '__main__':
    sys.exit(main())

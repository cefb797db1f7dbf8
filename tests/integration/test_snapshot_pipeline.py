# SPDX-License-Identifier: LGPL-2.1-or-later
"""Pipeline snapshots across processes, with gst-launch-1.0 and the bundled
model: a stream cut anywhere (mid-line, mid-field, inside a UTF-8
character), saved at end of stream by txlmodel (hold-at-eos) and continued
by a new process that restores it, writes exactly the lines that one
uninterrupted run writes, anomaly baseline (threshold-mode=mad) included.
Then kill -9 during periodic snapshots: the file is always whole, and the
next run resumes from it.  Also the float16 mode's drift."""
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time

from checks import check, tally
from gstlaunch import cut_and_resume, through, whole_run

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.join(HERE, '..', '..')
MODEL = os.path.join(ROOT, 'models', 'default.gguf')
PLUGINS = os.environ.get('TXL_PLUGIN_DIR', os.path.join(ROOT, 'build', 'plugins'))
TXL = os.environ.get('TXL_BIN', os.path.join(ROOT, 'build', 'tools', 'txl'))
sys.path.insert(0, os.path.join(ROOT, 'tools'))
import loggen  # noqa: E402

ENV = dict(os.environ, GST_PLUGIN_PATH=PLUGINS)


def launch(src, out, snap=None, extra='', append=False, sink='threshold-mode=mad window=50 warmup=10'):
    return through(src, 997, MODEL, 'txlmodel model=%s segment=32 %s' % (MODEL, extra), out, snap,
                   sink + (' append=true' if append else ''))


def run(args):
    p = subprocess.run(args, capture_output=True, env=ENV, timeout=120)
    return p.returncode, p.stderr.decode()


def text():
    g = loggen.Gen(5, loggen.START)
    r = random.Random(9)
    lines = [g.normal() for _ in range(260)]
    for i in r.sample(range(60, 260), 4):
        lines[i] = g.anomaly()
    lines[100] = 'Größe überschritten ☃ naïve café € 10.1.2.3'
    lines[180] = '日本語のログ行 — ошибка диска'
    return ('\n'.join(lines) + '\nunterminated last line é').encode()


def file_id(path):
    """What changes when a snapshot is renamed over path (None: no file)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    return (st.st_ino, st.st_mtime_ns)


def main():
    tmp = tempfile.mkdtemp(prefix='txl-snappipe-')
    data = text()
    src, whole, rc, err = whole_run(tmp, data, launch, run)
    ref = open(whole, 'rb').read()
    check('uninterrupted run', rc == 0 and ref.count(b'\n') == 261, err[-300:])
    inside = [i for i, b in enumerate(data) if 0x80 <= b < 0xC0]
    cuts = [1, 40, data.index(b'\n') + 1, len(data) // 3, inside[0], inside[5], inside[-3],
            len(data) - 1]
    snap = os.path.join(tmp, 's.snap')
    for cut in cuts:
        ok, got, msg = cut_and_resume(data, cut, launch, tmp, append=True)
        where = 'inside a UTF-8 character' if cut in inside else 'mid-line'
        check('cut at byte %d (%s): resumed in a new process, identical output' % (cut, where),
              ok and got == ref, msg + ' %d vs %d bytes' % (len(got), len(ref)))
    info = json.loads(subprocess.run([TXL, 'snapshot', 'info', snap], capture_output=True).stdout or b'{}')
    check('the file holds the tokenizer, model and sink state',
          set(info.get('sections', {})) == {'txltokenizer', 'txlmodel', 'txlsink', 'txl.writer'}, str(info))
    # gst-launch-1.0's pipeline is named automatically: the identity must not
    # depend on the counter, so that every run of this line is the same writer
    check('the file names its writer: gst-launch pipeline, element txlmodel0',
          info.get('writer') == 'an unnamed pipeline, element "txlmodel0"', str(info.get('writer')))
    q = subprocess.run([TXL, 'score', '-m', MODEL, '--load-snapshot', snap, '-'], input=b'more\n',
                       capture_output=True)
    check('txl score refuses a pipeline snapshot, saying why',
          q.returncode == 1 and b'GStreamer element' in q.stderr, q.stderr.decode()[-200:])
    # a restored stream adds to txlsink's file even without append=true:
    # the first run's lines are not wiped; a new stream still replaces it
    ok, got, msg = cut_and_resume(data, len(data) // 3, launch, tmp)
    check('a restored stream appends to the output by itself', ok and got == ref, msg)
    a, b = os.path.join(tmp, 'a.txt'), os.path.join(tmp, 'b.txt')
    out = os.path.join(tmp, 'out.jsonl')
    rc3, e3 = run(launch(b, out))  # no snapshot-location: a new stream
    check('a new stream replaces the output', rc3 == 0 and not open(out, 'rb').read().startswith(ref[:200]),
          e3[-300:])

    # float16 memory: smaller, close but not exact
    cut = len(data) // 2
    open(a, 'wb').write(data[:cut])
    open(b, 'wb').write(data[cut:])
    os.remove(snap)
    run(launch(a, out, snap, extra='snapshot-precision=f16'))
    size16 = os.path.getsize(snap)
    run(launch(b, out, snap, extra='hold-at-eos=false', append=True))
    got = [json.loads(l) for l in open(out)]
    want = [json.loads(l) for l in ref.splitlines()]
    drift = max(abs(g['nll'] - w['nll']) for g, w in zip(got, want) if g['nll'] is not None)
    os.remove(snap)
    run(launch(a, out, snap))
    size32 = os.path.getsize(snap)
    check('f16 snapshot: smaller (%d vs %d bytes), per-line NLL drift %.2e < 0.01' % (size16, size32, drift),
          size16 < size32 * 0.75 and len(got) == len(want) and drift < 1e-2)

    # generation: txlsampler's memory and random state continue too
    lines = data.split(b'\n')
    p_all, p1, p2 = (os.path.join(tmp, n) for n in ('p.txt', 'p1.txt', 'p2.txt'))
    open(p_all, 'wb').write(b'\n'.join(lines[:5]) + b'\n')
    open(p1, 'wb').write(b'\n'.join(lines[:2]) + b'\n')
    open(p2, 'wb').write(b'\n'.join(lines[2:5]) + b'\n')
    gsnap = os.path.join(tmp, 'g.snap')

    def gen(src, out, snap=None):
        args = ['gst-launch-1.0', '-q', 'filesrc', 'location=' + src, '!', 'txltokenizer', 'model=' + MODEL,
                '!', 'txlsampler', 'model=' + MODEL, 'per-line=true', 'max-tokens=12', 'seed=5',
                'temperature=0.9']
        if snap:
            args.append('snapshot-location=' + snap)
        return run(args + ['!', 'txlsink', 'location=' + out])
    g_all, g1, g2 = (os.path.join(tmp, n) for n in ('g.txt', 'g1.txt', 'g2.txt'))
    r0, e0 = gen(p_all, g_all)
    r1, e1 = gen(p1, g1, gsnap)
    r2, e2 = gen(p2, g2, gsnap)
    want, got = open(g_all, 'rb').read(), open(g1, 'rb').read() + open(g2, 'rb').read()
    check('generation resumed in a new process samples the same text (%d bytes)' % len(want),
          r0 == r1 == r2 == 0 and len(want) > 50 and got == want, (e0 + e1 + e2)[-300:])

    # an empty continuation pushes nothing (it pushed a NULL buffer: a crash)
    e_out = os.path.join(tmp, 'empty.txt')
    r_e, e_e = run(['gst-launch-1.0', '-q', 'filesrc', 'location=' + p_all, '!', 'txltokenizer',
                    'model=' + MODEL, '!', 'txlsampler', 'model=' + MODEL, 'max-tokens=0', '!',
                    'filesink', 'location=' + e_out])
    check('generation: max-tokens=0 writes nothing, no critical, status 0',
          r_e == 0 and 'CRITICAL' not in e_e and os.path.getsize(e_out) == 0, e_e[-300:])

    # a snapshot-location no snapshot can be written to is refused at start
    # (with hold-at-eos the last lines are left to the end-of-stream one)
    for bad in (os.path.join(tmp, 'no', 'such', 'x.snap'), tmp, '/dev/null'):
        r_b, e_b = run(launch(a, os.path.join(tmp, 'bad.jsonl'), bad, extra='restore=false'))
        check('snapshot-location %s: refused at start with a message' % bad,
              r_b != 0 and 'Snapshots cannot be written' in e_b, (r_b, e_b[-300:]))

    # the end-of-stream snapshot fails after the start's check passed (here
    # a directory takes the file's place; a full disk is the same): the
    # stream ends instead of pausing, and every line is scored, the
    # tokenizer's unterminated last one and the sink's unfinished ones too
    for element in ('txlmodel model=%s segment=32' % MODEL,
                    'txlsessions model=%s session-key=blk_-?[0-9]+' % MODEL):
        def fails_at_eos(src, out, snap=None, extra=''):
            return through(src, 997, MODEL, element + ' ' + extra, out, snap,
                           'threshold-mode=mad window=50 warmup=10')
        w_rc, w_err = run(fails_at_eos(src, os.path.join(tmp, 'w.jsonl')))
        want = open(os.path.join(tmp, 'w.jsonl'), 'rb').read()
        fifo, gone = os.path.join(tmp, 'in.fifo'), os.path.join(tmp, 'gone.snap')
        os.mkfifo(fifo)
        args = [a for a in fails_at_eos(fifo, os.path.join(tmp, 'f.jsonl'), gone, 'restore=false')
                if a != '-q']  # -q would hide the warning
        p = subprocess.Popen(args, env=ENV, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        with open(fifo, 'wb') as f:  # opened: every element has started
            os.mkdir(gone)
            f.write(data)
        f_out, f_err = p.communicate(timeout=120)
        got = open(os.path.join(tmp, 'f.jsonl'), 'rb').read()
        check('%s: end-of-stream snapshot fails: %d of %d lines scored, a warning, status 0'
              % (element.split()[0], got.count(b'\n'), want.count(b'\n')),
              w_rc == 0 and p.returncode == 0 and want.count(b"\n") >= 261 and got == want and
              b'the stream ends here instead' in f_out + f_err, (w_err + (f_out + f_err).decode())[-400:])
        os.remove(fifo)
        os.rmdir(gone)

    # kill -9 while snapshots are written every few tokens
    big = os.path.join(tmp, 'big.txt')
    g = loggen.Gen(8, loggen.START)
    open(big, 'w').write('\n'.join(g.normal() for _ in range(3000)) + '\n')
    os.remove(snap)
    r = random.Random(4)
    seen, whole_files, resumed = [], 0, 0
    for k in range(6):
        args = launch(big, os.path.join(tmp, 'k.jsonl'), snap, extra='snapshot-tokens=40 hold-at-eos=false')
        before = file_id(snap)
        p = subprocess.Popen(args, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        # the kill lands at a random moment after this run's first snapshot,
        # however long the start took on a busy machine
        deadline = time.time() + 60
        while file_id(snap) == before and p.poll() is None and time.time() < deadline:
            time.sleep(0.01)
        time.sleep(r.random() * 0.3)
        p.send_signal(signal.SIGKILL)
        p.wait()
        q = subprocess.run([TXL, 'snapshot', 'info', snap], capture_output=True)
        if q.returncode == 0:
            whole_files += 1
            seen.append(json.loads(q.stdout)['tokens_seen'])
        for f in os.listdir(tmp):
            if f.startswith('s.snap.'):
                os.remove(os.path.join(tmp, f))  # a temporary file a kill left behind
    resumed = sum(1 for x, y in zip(seen, seen[1:]) if y > x)
    check('kill -9 six times: every snapshot file whole (%d/6), each run resumed and went further (%d/5)'
          % (whole_files, resumed), whole_files == 6 and resumed == 5, str(seen))
    sys.exit(1 if tally() else 0)


if __name__ == '__main__':
    main()

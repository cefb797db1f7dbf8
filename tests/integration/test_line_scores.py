# SPDX-License-Identifier: LGPL-2.1-or-later
"""Line scores that padding cannot dilute and that are never invalid JSON
(issue 12, breaks 5 and 6; docs/anomaly.md "Line scores").

Padding: an anomalous log line (the demo's killed postgresql service after
100 normal lines of tools/loggen.py, scored by the bundled default model)
is flagged at 2.5 bits per byte; the same line with 5,000 digits, 5,000
spaces or one word repeated 1,000 times appended must still be flagged,
through `txl score --flag-bpb`, `txltokenizer ! txlmodel ! txlsink` and
`txltokenizer ! txlsessions ! txlsink`.  (Before lib/anomaly/lines.c, the digits
folded into one <NUM> token while the byte count kept all 5,000: 8.06 bits
per byte fell to 0.22.)

Non-finite: a model whose finite output bias of +-3e38 overflows the
log-softmax to -inf for most tokens.  Every line of every output must
parse with a strict JSON parser (no NaN, no Infinity), every line with a
non-finite score must be flagged, every session too, and `txl score` must
fail (exit 1) after printing everything.
"""
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(HERE, '..', 'reference'))
import hf_checkpoint  # noqa: E402
from checks import check, tally  # noqa: E402
from safetensors_io import read_safetensors, write_safetensors  # noqa: E402
import numpy as np  # noqa: E402

PLUGINS = os.environ.get('TXL_PLUGIN_DIR', os.path.join(ROOT, 'build', 'plugins'))
TXL = os.environ.get('TXL_BIN', os.path.join(ROOT, 'build', 'tools', 'txl'))
TXLD = os.environ.get('TXLD_BIN', os.path.join(ROOT, 'build', 'tools', 'txld'))
if not os.path.exists(TXLD):
    TXLD = None
ENV = dict(os.environ, GST_PLUGIN_PATH=PLUGINS)
MODEL = os.path.join(ROOT, 'models', 'default.gguf')
THRESHOLD = 2.5


def no_constant(name):
    raise ValueError('not JSON (RFC 8259): %s' % name)


def strict_rows(text):
    """Every line parsed strictly: NaN, Infinity and -Infinity refused."""
    rows, bad = [], []
    for line in text.splitlines():
        try:
            rows.append(json.loads(line, parse_constant=no_constant))
        except ValueError as e:
            bad.append('%s: %s' % (e, line[:120]))
    return rows, bad


def run(args, stdin=None, timeout=300):
    p = subprocess.run(args, input=stdin, capture_output=True, env=ENV, timeout=timeout)
    return p.returncode, p.stdout.decode('utf-8', 'replace'), p.stderr.decode('utf-8', 'replace')


def gst(desc, out, timeout=300):
    """A pipeline (a list of gst-launch arguments) writing JSON lines to out."""
    rc, _, err = run(['gst-launch-1.0', '-q'] + desc, timeout=timeout)
    if not os.path.exists(out):
        return rc, '', err or 'gst-launch-1.0 wrote no output'
    with open(out) as f:
        return rc, f.read(), err


def padded_log(tmp):
    """100 normal lines, then the anomalous line alone and padded 3 ways;
    returns the path and the line numbers of the four anomalous lines."""
    p = subprocess.run(['/usr/bin/python3', os.path.join(ROOT, 'tools', 'loggen.py'),
                        '--lines', '100', '--seed', '77', '--anomalies', '0'],
                       capture_output=True, check=True)
    normal = p.stdout.decode().splitlines()
    # longer than the worst-part window (128 normalised bytes), so that
    # the window can lie on anomalous text alone: a shorter anomalous line
    # padded with cheap text is diluted by the padding inside its window
    bad = ('Nov  3 08:00:26 web-01 systemd[1]: postgresql.service: Main process '
           'exited, code=killed, status=9/KILL (out of memory: the kernel killed '
           'the database with its whole cache in flight)')
    pads = [bad, bad + ' ' + '7' * 5000, bad + ' ' * 5000, bad + ' KILL' * 1000]
    lines = normal + pads
    path = os.path.join(tmp, 'padded.log')
    with open(path, 'w') as f:
        f.write('\n'.join(lines) + '\n')
    return path, list(range(len(normal) + 1, len(lines) + 1))


def check_flagged(what, rc, err, text, anomalous, names, keys, lines_only=False):
    """One way of scoring the padded log: it ran and wrote strict JSON, a
    row per line (lines_only: leaving out session rows), and flagged every
    anomalous line (detail: those keys of its row).  The rows, and the
    rows by line."""
    rows, bad = strict_rows(text)
    if lines_only:
        rows = [r for r in rows if 'line' in r and 'session' not in r]
    check(what + ': runs, strict JSON', rc == 0 and not bad and len(rows) == anomalous[-1],
          (rc, err, bad[:2], len(rows)))
    by = {r['line']: r for r in rows}
    for n, ln in zip(names, anomalous):
        r = by.get(ln, {})
        check('%s: anomalous line %s flagged' % (what, n), r.get('flag') is True,
              {k: r.get(k) for k in keys})
    return rows, by


def check_padding(tmp):
    log, anomalous = padded_log(tmp)
    names = ['alone', '+5,000 digits', '+5,000 spaces', '+1,000 x " KILL"']

    rc, out, err = run([TXL, 'score', '-m', MODEL, '--flag-bpb', str(THRESHOLD), log])
    rows, by = check_flagged('txl score', rc, err, out, anomalous, names,
                             ('bytes', 'norm_bytes', 'tokens', 'bpb', 'worst'))
    check('txl score: no normal line flagged',
          not [r['line'] for r in rows if r['flag'] and r['line'] not in anomalous],
          [r['line'] for r in rows if r['flag']])
    digits = by.get(anomalous[1], {})
    check('txl score: 5,000 digits count as one placeholder, not 5,000 bytes',
          digits.get('bytes', 0) > 5000 and digits.get('norm_bytes', 1e9) < 200, digits)
    score_rows = by

    out = os.path.join(tmp, 'model.jsonl')
    rc, text, err = gst(['filesrc', 'location=' + log, '!', 'txltokenizer', 'model=' + MODEL,
                         '!', 'txlmodel', 'model=' + MODEL, '!', 'txlsink',
                         'threshold=%g' % THRESHOLD, 'location=' + out], out)
    _, by = check_flagged('txlmodel ! txlsink', rc, err, text, anomalous, names, ('worst',))
    def same(a, b):
        return a is not None and b is not None and abs(a - b) <= 1e-5 * max(1, b)
    check('txlmodel ! txlsink: the scores of txl score',
          len(by) == len(score_rows) and
          all(same(by[k].get('worst'), score_rows[k].get('worst')) for k in score_rows if k in by))

    # each host its own session: the anomalous line is scored in web-01's memory
    out = os.path.join(tmp, 'sessions.jsonl')
    rc, text, err = gst(['filesrc', 'location=' + log, '!', 'txltokenizer', 'model=' + MODEL,
                         '!', 'txlsessions', 'model=' + MODEL,
                         'session-key=(web|store|edge|db|api)-[0-9]+', '!', 'txlsink',
                         'threshold=%g' % THRESHOLD, 'location=' + out], out)
    check_flagged('txlsessions ! txlsink', rc, err, text, anomalous, names, ('bpb', 'worst'),
                  lines_only=True)


def tweaked_model(tmp, name, change):
    """A word model with finite weights changed by change(weights, config),
    converted; the conversion must take it (its weights are finite)."""
    d = os.path.join(tmp, name)
    cfg = hf_checkpoint.make_word_checkpoint(d, 5)
    st = os.path.join(d, 'model.safetensors')
    w = read_safetensors(st)
    change(w, cfg)
    write_safetensors(st, w, metadata={'format': 'pt'})
    model = os.path.join(tmp, name + '.gguf')
    rc, _, err = run([TXL, 'convert', '--hf', d, '-o', model])
    check('%s model converts (its weights are finite)' % name, rc == 0, err)
    return model


def overflow_model(tmp):
    """The output bias +3e38 for one word and -3e38 for every other id:
    the log-softmax overflows to -inf."""
    def change(w, cfg):
        bias = np.full(cfg['vocab_size'], -3e38, dtype=np.float32)
        bias[2] = 3e38
        w['crit.out_layers.0.bias'] = bias
    return tweaked_model(tmp, 'overflow', change)


def nan_model(tmp):
    """Feed-forward output weights of 3e38: the activations overflow to inf
    and the logits to NaN."""
    def change(w, cfg):
        k = 'transformer.layers.0.pos_ff.CoreNet.3.weight'
        w[k] = np.full(w[k].shape, 3e38, dtype=np.float32)
    return tweaked_model(tmp, 'nan', change)


def check_nonfinite(tmp):
    model = overflow_model(tmp)
    text = 'the cat sat on the mat\nthe dog ran\nk1 the cat\na cat sat on a mat\n' * 3
    log = os.path.join(tmp, 'words.log')
    with open(log, 'w') as f:
        f.write(text)

    rc, out, err = run([TXL, 'score', '-m', model, '--flag-bpb', '3', log])
    rows, bad = strict_rows(out)
    check('txl score: non-finite scores are strict JSON', rows and not bad, bad[:2])
    broken = [r for r in rows if r.get('nonfinite')]
    check('txl score: lines with non-finite scores counted, null, flagged',
          broken and all(r['flag'] is True and r['worst'] is None and r['bpb'] is None
                         for r in broken), rows[:2])
    check('txl score: a non-finite score fails the run, with a message',
          rc == 1 and 'not finite' in err, (rc, err))
    for extra in ([], ['--learn', '--learn-warmup', '4']):
        rc, out, err = run([TXL, 'score', '-m', model] + extra + [log])
        rows, bad = strict_rows(out)
        broken = [r for r in rows if r.get('nonfinite')]
        check('txl score %s: non-finite lines flagged, warm-up included' % ' '.join(extra),
              rc == 1 and not bad and broken and any(r['warmup'] for r in broken) and
              all(r['flag'] is True for r in broken), (rc, rows[:2]))
    rc, out, err = run([TXL, 'generate', '-m', nan_model(tmp), '-p', 'the cat', '-n', '5'])
    check('txl generate: a distribution that is not finite fails with a message, no text',
          rc == 1 and 'not finite' in err and not out.strip(), (rc, out[:80], err[-200:]))
    rc, out, err = run([TXL, 'score', '-m', model, '--ids'], b'2 3 4 5 6 7 2 3 0 4')
    rows, bad = strict_rows(out)
    check('txl score --ids: strict JSON, null log-probs, exit 1',
          rows and not bad and any(r['logprob'] is None for r in rows) and rc == 1, (rc, bad[:2], err))

    out = os.path.join(tmp, 'nf-model.jsonl')
    rc, text_out, err = gst(['filesrc', 'location=' + log, '!', 'txltokenizer', 'model=' + model,
                             '!', 'txlmodel', 'model=' + model, '!', 'txlsink', 'threshold=1000',
                             'location=' + out], out)
    rows, bad = strict_rows(text_out)
    broken = [r for r in rows if r.get('nonfinite')]
    check('txlmodel ! txlsink: strict JSON, no null-and-unflagged line',
          rc == 0 and rows and not bad and broken and
          all(r['flag'] is True for r in broken) and
          not [r for r in rows if r['tokens'] and r['worst'] is None and not r['flag']],
          (rc, err, bad[:2], rows[:2]))
    for mode in ('threshold-mode=mad', 'threshold-mode=quantile'):
        rc, text_out, err = gst(['filesrc', 'location=' + log, '!', 'txltokenizer', 'model=' + model,
                                 '!', 'txlmodel', 'model=' + model, '!', 'txlsink', mode,
                                 'warmup=100', 'location=' + out], out)
        rows, bad = strict_rows(text_out)
        broken = [r for r in rows if r.get('nonfinite')]
        check('txlsink %s: non-finite lines flagged during the warm-up' % mode,
              rc == 0 and not bad and broken and all(r['flag'] is True for r in broken),
              (rc, bad[:2], rows[:2]))

    out = os.path.join(tmp, 'nf-sessions.jsonl')
    rc, text_out, err = gst(['filesrc', 'location=' + log, '!', 'txltokenizer', 'model=' + model,
                             '!', 'txlsessions', 'model=' + model, 'session-key=(cat|dog)',
                             'session-threshold=1000', '!', 'txlsink', 'threshold=1000',
                             'location=' + out], out)
    rows, bad = strict_rows(text_out)
    sessions = [r for r in rows if 'session' in r]
    check('txlsessions ! txlsink: strict JSON', rc == 0 and rows and not bad, (rc, err, bad[:2]))
    check('txlsessions ! txlsink: sessions with non-finite scores flagged, score null (not 0)',
          sessions and all(r['flag'] is True and r['score'] is None and r.get('nonfinite', 0) > 0
                           for r in sessions), sessions[:2])
    check_nonfinite_txld(tmp, model, log)


def check_nonfinite_txld(tmp, model, log):
    """txld's own output file: strict JSON, worst and nonfinite carried."""
    if not TXLD:
        check('txld: not built, skipped', True)
        return
    conf = os.path.join(tmp, 'txld-conf')
    os.makedirs(conf, exist_ok=True)
    out = os.path.join(tmp, 'txld-nf.jsonl')
    with open(os.path.join(conf, 'nf.conf'), 'w') as f:
        f.write('[pipeline]\nlaunch = filesrc location=%s ! txltokenizer model=%s ! '
                'txlmodel model=%s ! txlsink location=/dev/null threshold=1000\n'
                'restart = never\nsnapshot = none\noutput = %s\n' % (log, model, model, out))
    want = open(log).read().count('\n')
    p = subprocess.Popen([TXLD, '--config', conf, '--state-dir', tmp, '--no-http'],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=ENV)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            if os.path.exists(out) and open(out).read().count('\n') >= want:
                break
            time.sleep(0.1)
    finally:
        p.terminate()
        p.wait(timeout=30)
    rows, bad = strict_rows(open(out).read() if os.path.exists(out) else '')
    broken = [r for r in rows if r.get('nonfinite')]
    check('txld output: strict JSON, non-finite lines null and flagged',
          len(rows) == want and not bad and broken and
          all(r['flag'] is True and r['worst'] is None for r in broken),
          (len(rows), want, bad[:2], rows[:2]))


def check_old_snapshot():
    """A text snapshot written before lib/anomaly/lines.c (its score-text section
    version 1, saved by eeee70f's txl score from fuzz/corpus-snapshot) is
    refused with a message, not continued with wrong line scores."""
    rc, out, err = run([TXL, 'score', '-m', os.path.join(ROOT, 'fuzz', 'corpus-snapshot', 'model.gguf'),
                        '--load-snapshot', os.path.join(HERE, '..', 'data', 'score-text-v1.snap'), '-'],
                       stdin=b'ess\n')
    check('a version 1 text snapshot is refused with a message',
          rc == 1 and not out and 'version' in err,
          (rc, out, err))


def main():
    tmp = tempfile.mkdtemp(prefix='txl-lines-')
    check_padding(tmp)
    check_nonfinite(tmp)
    check_old_snapshot()
    return 1 if tally() else 0


if __name__ == '__main__':
    sys.exit(main())

# SPDX-License-Identifier: LGPL-2.1-or-later
"""txl eval end to end on a small synthetic labelled log (tools/loggen.py
with injected anomalies, lines dealt into interleaved sessions), and clear
errors with a non-zero exit for bad input.  Needs no data outside the
repository; about 15 s on two cores."""
import csv
import json
import math
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET

from checks import check, tally, write_text

HERE = os.path.dirname(os.path.abspath(__file__))
TXL = os.environ.get('TXL_BIN', os.path.join(HERE, '..', '..', 'build', 'tools', 'txl'))
LOGGEN = os.path.join(HERE, '..', '..', 'tools', 'loggen.py')
TINY = ['--layers', '1', '--d-model', '64', '--heads', '2', '--d-head', '32',
        '--d-inner', '128', '--vocab', '400', '--segment', '32', '--mem-len', '32',
        '--batch', '8', '--steps', '300', '--lr', '3e-3']
# the labelled recipe: train and validate on the normal sessions alone
NO = ['--normal-only']


def run(args, timeout=240):
    env = dict(os.environ)
    env.setdefault('TXL_NUM_THREADS', '2')
    p = subprocess.run([TXL] + args, capture_output=True, text=True, timeout=timeout, env=env)
    return p.returncode, p.stdout, p.stderr


def make_log(tmp, lines=2400, seed=3):
    """loggen lines with 2% anomalies, dealt to sessions of 12 lines, about
    eight open at a time, each line tagged 'sid=S<n>'.  A session is
    anomalous when one of its lines is."""
    lab_path = os.path.join(tmp, 'line-labels.txt')
    out = subprocess.run([sys.executable, LOGGEN, '--lines', str(lines), '--seed', str(seed),
                          '--anomalies', '0.02', '--labels', lab_path],
                         capture_output=True, text=True, check=True).stdout.splitlines()
    with open(lab_path) as f:
        line_lab = [int(x) for x in f.read().split()]
    assert len(line_lab) == len(out)
    r = random.Random(seed)
    open_s, left, nxt = [], {}, 0
    log, sess_lab = [], {}
    for text, y in zip(out, line_lab):
        while len(open_s) < 8:
            open_s.append(nxt)
            left[nxt] = 12
            nxt += 1
        s = r.choice(open_s)
        log.append('%s sid=S%d' % (text, s))
        sess_lab[s] = sess_lab.get(s, 0) | y
        left[s] -= 1
        if left[s] == 0:
            open_s.remove(s)
    log_path = os.path.join(tmp, 'app.log')
    with open(log_path, 'w') as f:
        f.write('\n'.join(log) + '\n')
    labels = os.path.join(tmp, 'labels.csv')
    with open(labels, 'w') as f:
        f.write('SessionId,Label\n')
        for s in sorted(sess_lab):
            f.write('S%d,%s\n' % (s, 'Anomaly' if sess_lab[s] else 'Normal'))
    return log_path, labels, sess_lab


def model_calibration(path, missing_ok=False):
    """The anomaly calibration a model file carries, from `txl info`."""
    if missing_ok and not os.path.exists(path):
        return None
    rc, so, se = run(['info', path])
    if rc != 0:
        return None
    return json.loads(so).get('anomaly')


def quantile(v, f):
    """v's quantile f, interpolated between order statistics."""
    v = sorted(v)
    pos = f * (len(v) - 1)
    k = int(math.floor(pos))
    return v[k] if k + 1 >= len(v) else v[k] + (pos - k) * (v[k + 1] - v[k])


def stream_rule(v):
    """The label-free line rule of lib/anomaly/baseline.h, written again:
    Q90 + 1.5 x max(Q90 - median, 0.3)."""
    return quantile(v, 0.9) + 1.5 * max(quantile(v, 0.9) - quantile(v, 0.5), 0.3)


def session_rule(v, margin=0.75):
    """Its session rule: Q95 x (1 + margin)."""
    return quantile(v, 0.95) * (1 + margin)


def label_free(tmp, log, labels, sess_lab):
    """The default: no label of the training part is read.  Its sessions
    all train, anomalies included, after cross-fitted trimming; the
    thresholds come from unlabelled validation sessions."""
    out = os.path.join(tmp, 'lf')
    lines = os.path.join(tmp, 'lf-lines.jsonl')
    rc, so, se = run(['eval', log, '--labels', labels, '-o', out, '--key', 'sid=(S[0-9]+)',
                      '--key-group', '1', '--lines', lines, '--score', 'max-line'] + TINY)
    check('label-free txl eval runs', rc == 0, se)
    if rc != 0:
        return
    with open(os.path.join(out, 'summary.json')) as f:
        s = json.load(f)
    with open(os.path.join(out, 'sessions.csv')) as f:
        rows = list(csv.DictReader(f))
    n = s['sessions']
    part = [r for r in rows if r['split'] in ('train', 'trimmed', 'calibration')]
    check('label-free: every session of the training part learns or validates, anomalies too',
          n['dropped_anomalous'] == 0 and n['train'] + n['trimmed'] + n['validation'] + n['test'] ==
          len(sess_lab) and any(r['label'] == '1' for r in part) and len(part) == len(sess_lab) // 2,
          n)
    cal_rows = [r for r in rows if r['split'] == 'calibration']
    check('label-free: validation holds the last fifth of the training part',
          len(cal_rows) == math.ceil(0.2 * len(part)), (len(cal_rows), len(part)))
    # every training session has a held-out score; the trimmed ones are
    # the top tenth of them
    tr = [float(r['score']) for r in rows if r['split'] == 'train']
    tm = [float(r['score']) for r in rows if r['split'] == 'trimmed']
    check('label-free: trimmed sessions are those above the 0.9-quantile of the held-out scores',
          len(tr) + len(tm) == n['train'] + n['trimmed'] and tm and min(tm) > max(tr) and
          abs(len(tm) - 0.1 * (len(tr) + len(tm))) <= 1, (len(tr), len(tm)))
    check('label-free: a trimmed session is more often anomalous than a kept one',
          sum(int(r['label']) for r in rows if r['split'] == 'trimmed') / max(1, len(tm)) >
          sum(int(r['label']) for r in rows if r['split'] == 'train') / max(1, len(tr)), n)
    ses = s['session']
    check('label-free: session AUROC > 0.85 (%.3f)' % ses['auroc'], ses['auroc'] > 0.85, (ses, s['all_scores']))
    val = [float(r['score']) for r in cal_rows]
    check('label-free: session threshold = 1.75 x Q95 of the unlabelled validation scores',
          abs(ses['threshold'] - session_rule(val)) < 1e-4 * max(1, ses['threshold']),
          (ses['threshold'], session_rule(val)))
    with open(lines) as f:
        lj = [json.loads(x) for x in f]
    thr = stream_rule([x['worst'] for x in lj if x['split'] == 'calibration'])
    cal = model_calibration(os.path.join(out, 'model.gguf'))
    check('label-free: line threshold by the stream rule over the validation lines',
          cal and abs(cal['line_threshold_bpb'] - thr) < 1e-4 * thr and
          abs(s['line']['threshold'] - thr) < 1e-4 * thr and
          'labels not read' in cal.get('rule', ''), (cal, thr))
    check('label-free: line flags follow it',
          all(x['flag'] == (x['worst'] > thr) for x in lj if x['split'] == 'test') and
          {x['split'] for x in lj} == {'test', 'calibration'})
    check('label-free: the fold models are not left behind',
          not any(f.startswith('fold') for f in os.listdir(out)), os.listdir(out))


def main():
    tmp = tempfile.mkdtemp(prefix='txl-eval-')
    try:
        log, labels, sess_lab = make_log(tmp)
        first = first_eval(tmp, log, labels, sess_lab)
        if first is None:
            return
        out, ses, rows, cal = first
        model = os.path.join(out, 'model.gguf')
        check_odd_session(tmp, log, labels, rows, model)
        check_calibrate(tmp, model, cal)
        check_saved_model(tmp, log, labels, model, ses, rows)
        label_free(tmp, log, labels, sess_lab)
        check_single_stream_and_errors(tmp, log, labels)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def first_eval(tmp, log, labels, sess_lab):
    """txl eval with margin 0 on the made log: its outputs and the
    calibration in its model.  (out dir, session summary, sessions.csv
    rows, the model's calibration), or None when it did not run."""
    out = os.path.join(tmp, 'out')
    lines = os.path.join(tmp, 'lines.jsonl')
    rc, so, se = run(['eval', log, '--labels', labels, '-o', out, '--key', 'sid=(S[0-9]+)',
                      '--key-group', '1', '--lines', lines, '--score', 'max-line', '--margin', '0'] + NO + TINY)
    check('txl eval runs', rc == 0, se)
    if rc != 0:
        return None
    with open(os.path.join(out, 'summary.json')) as f:
        s = json.load(f)
    ses, lin = s['session'], s['line']
    check('summary counts the split', s['sessions']['test'] == ses['n'] and
          ses['n'] + s['sessions']['train'] + s['sessions']['validation'] +
          s['sessions']['dropped_anomalous'] == len(sess_lab), s['sessions'])
    with open(os.path.join(out, 'sessions.csv')) as f:
        rows = list(csv.DictReader(f))
    test_rows = [r for r in rows if r['split'] == 'test']
    check('sessions.csv has every session', len(rows) == len(sess_lab) and
          all(int(r['label']) == sess_lab[int(r['key'][1:])] for r in rows))
    check('test sessions have anomalies', ses['anomalous'] >= 5 and
          ses['anomalous'] == sum(int(r['label']) for r in test_rows), ses)
    # the injected lines are unlike anything in training: clearly ranked
    check('session AUROC > 0.85', ses['auroc'] > 0.85, ses)
    check('session F1 > 0.6', ses['f1'] > 0.6, ses)
    check('line AUROC > 0.5 (a line takes its session label)', lin['auroc'] > 0.5, lin)
    flagged = sum(int(r['flagged']) for r in test_rows)
    check('flags in sessions.csv match the summary', flagged == ses['tp'] + ses['fp'])
    # the threshold comes from validation sessions only: the rule with
    # margin 0 puts it at their 95th percentile
    val = [float(r['score']) for r in rows if r['split'] == 'calibration']
    check('threshold = Q95 of the validation scores (margin 0)',
          abs(quantile(val, 0.95) - ses['threshold']) < 1e-4 * max(1, ses['threshold']),
          (quantile(val, 0.95), ses['threshold']))
    check('no training session scored', all(r['score'] == '' for r in rows
                                             if r['split'] in ('train', 'dropped')))
    with open(lines) as f:
        lj = [json.loads(l) for l in f]
    check('lines.jsonl covers the scored lines', len(lj) == s['scoring']['lines'] and
          {l['split'] for l in lj} == {'test', 'calibration'})
    check('test sessions are scored whole', sum(l['split'] == 'test' for l in lj) ==
          sum(int(r['lines']) for r in test_rows))
    root = ET.parse(os.path.join(out, 'scores.svg')).getroot()
    check('scores.svg is SVG with bars', root.tag.endswith('svg') and
          len([e for e in root.iter() if e.tag.endswith('rect')]) > 3)
    check('stdout has the table', 'session' in so and 'AUROC' in so and 'lines/s' in so, so)
    check('all four session scores reported', len(s['all_scores']) >= 4 and
          {a['score'] for a in s['all_scores']} == {'max-line', 'max-line-sum', 'max-token', 'mean'})
    cal = check_model_calibration(out, ses, [l['worst'] for l in lj if l['split'] == 'calibration'])
    # the validation scores' max and median, in the summary
    vs = s.get('validation_scores', {})
    check('summary: validation max and median',
          abs(vs.get('max', 0) - max(val)) < 1e-5 * max(val) and
          abs(vs.get('median', 0) - statistics.median(val)) < 1e-5 * max(val), vs)
    return out, ses, rows, cal


def check_model_calibration(out, ses, vbpb):
    """The model file carries the calibration (txl info shows it).  vbpb:
    the validation lines' `worst`, the line score every element compares
    (the worst part in bits per normalised byte, lib/anomaly/lines.h).
    Returns the calibration."""
    cal = model_calibration(os.path.join(out, 'model.gguf'))
    check('model file carries the session calibration',
          cal is not None and cal['mode'] == 'sessions' and
          cal['session_key'] == 'sid=(S[0-9]+)' and cal['session_key_group'] == 1 and
          cal['session_score'] == 'max-line' and cal['session_end_marker'] is False and
          abs(cal['session_threshold'] - ses['threshold']) < 1e-4 * max(1, ses['threshold']) and
          'validation sessions' in cal.get('rule', ''), cal)
    check('calibrated line threshold = Q95 of the validation lines, bits per byte (margin 0)',
          cal is not None and
          abs(cal['line_threshold_bpb'] - quantile(vbpb, 0.95)) < 1e-4 * max(vbpb),
          (cal and cal['line_threshold_bpb'], quantile(vbpb, 0.95)))
    return cal


def check_odd_session(tmp, log, labels, rows, model):
    """One odd validation session far above the rest does not carry the
    threshold: a quantile, not the maximum."""
    odd = max((r for r in rows if r['split'] == 'calibration'), key=lambda r: int(r['lines']))['key']
    with open(log) as f:
        raw = f.read().split('\n')
    at = max(i for i, l in enumerate(raw) if re.search(r'sid=%s\b' % odd, l))
    junk = ['%s zq#%d \x7f~~ sid=%s ~~%x' % ('@' * 9, i * 7919, odd, i * 104729) for i in range(40)]
    olog = os.path.join(tmp, 'odd.log')
    with open(olog, 'w') as f:
        f.write('\n'.join(raw[:at + 1] + junk + raw[at + 1:]))
    outt = os.path.join(tmp, 'outt')
    rc, _, set_ = run(['eval', olog, '--labels', labels, '-o', outt,
                       '--key', 'sid=(S[0-9]+)', '--key-group', '1', '--score', 'max-line',
                       '--model', model] + NO)
    ok = rc == 0
    if ok:
        with open(os.path.join(outt, 'summary.json')) as f:
            st_ = json.load(f)
        with open(os.path.join(outt, 'sessions.csv')) as f:
            vrow = [r for r in csv.DictReader(f) if r['split'] == 'calibration']
        vt = [float(r['score']) for r in vrow]
        top = max(vrow, key=lambda r: float(r['score']))
        ok = (top['key'] == odd and st_['session']['threshold'] < max(vt) and
              abs(st_['session']['threshold'] - session_rule(vt)) < 1e-4 * max(vt))
    check('one odd validation session far above the rest does not set the threshold',
          ok, set_[-500:])


def check_calibrate(tmp, model, cal):
    """txl calibrate: changed by hand, kept, cleared; bad options refused."""
    mc = os.path.join(tmp, 'hand.gguf')
    rc, _, sec = run(['calibrate', model, '-o', mc,
                      '--session-threshold', '9', '--rule', 'by hand'])
    calh = model_calibration(mc) if rc == 0 else None
    check('txl calibrate sets a threshold and keeps the rest',
          calh and calh['session_threshold'] == 9 and calh['rule'] == 'by hand' and
          calh['session_key'] == cal['session_key'] and
          calh['line_threshold_bpb'] == cal['line_threshold_bpb'], (sec, calh))
    rc, _, sec = run(['calibrate', mc, '-o', mc, '--single-stream', '--line-threshold', '2.5'])
    calh = model_calibration(mc) if rc == 0 else None
    check('txl calibrate in place: one stream',
          calh and calh['mode'] == 'single-stream' and calh['line_threshold_bpb'] == 2.5 and
          'session_key' not in calh, (sec, calh))
    rc, _, sec = run(['calibrate', mc, '-o', mc, '--clear'])
    check('txl calibrate --clear', rc == 0 and model_calibration(mc) is None, sec)
    for bad, code in ((['--session-key', 'blk_(['], 2), (['--clear', '--session-threshold', '1'], 2),
                      (['--session-threshold', '-1'], 2), (['--score', 'median'], 2),
                      (['--session-key', 'a', '--key-group', '2'], 2)):
        rc, _, sec = run(['calibrate', mc, '-o', mc + '.x'] + bad)
        check('txl calibrate refuses %s' % ' '.join(bad), rc == code and not os.path.exists(mc + '.x'), sec)
    rc, _, sec = run(['calibrate', os.path.join(tmp, 'nope.gguf'), '-o', mc])
    check('txl calibrate: a missing model', rc == 1 and 'nope.gguf' in sec, sec)


def check_saved_model(tmp, log, labels, model, ses, rows):
    """A second run on the saved model scores the same; the default margin;
    the rules that lost their experiments are refused with a pointer."""
    val = [float(r['score']) for r in rows if r['split'] == 'calibration']
    rc, so2, se2 = run(['eval', log, '--labels', labels, '-o', os.path.join(tmp, 'out2'),
                        '--key', 'sid=(S[0-9]+)', '--key-group', '1',
                        '--score', 'max-line', '--margin', '0', '--model', model] + NO)
    with open(os.path.join(tmp, 'out2', 'summary.json')) as f:
        s2 = json.load(f)
    check('--model reproduces the scores', rc == 0 and s2['session'] == ses, se2)
    # the default margin, 0.75: 1.75 x Q95
    rc, so10, se10 = run(['eval', log, '--labels', labels, '-o', os.path.join(tmp, 'out10'),
                          '--key', 'sid=(S[0-9]+)', '--key-group', '1',
                          '--score', 'max-line', '--model', model] + NO)
    ok10 = rc == 0
    if ok10:
        with open(os.path.join(tmp, 'out10', 'summary.json')) as f:
            s10 = json.load(f)
        cal10 = model_calibration(os.path.join(tmp, 'out10', 'model.gguf'))
        cal0 = model_calibration(model)
        check('--model: the calibrated copy goes to DIR, the input is left alone',
              cal10 and cal0 and
              abs(cal10['session_threshold'] - s10['session']['threshold']) < 1e-5 * cal10['session_threshold'] and
              abs(cal10['line_threshold_bpb'] - 1.75 * cal0['line_threshold_bpb']) < 1e-6 * cal10['line_threshold_bpb'] and
              abs(cal0['session_threshold'] - ses['threshold']) < 1e-4, (cal0, cal10))
        check('default threshold = 1.75 x Q95 of the validation scores (margin 0.75)',
              s10['margin'] == 0.75 and s10['threshold_rule'] == 'quantile' and
              abs(s10['session']['threshold'] - session_rule(val)) < 1e-4 * max(1, s10['session']['threshold']) and
              '(margin 0.75)' in so10, (s10['session']['threshold'], session_rule(val)))
    check('default margin runs', ok10, se10)
    # the rules that lost their experiments are gone, with a pointer
    for name, opt, value, want in (
            ('--margin auto', '--margin', 'auto', 'anomaly-experiments'),
            ('--session-rule', '--session-rule', 'live', 'session-rule'),
            ('--validation-outliers', '--validation-outliers', 'maybe', 'validation-outliers')):
        rc, _, se_b = run(['eval', log, '--labels', labels, '-o', os.path.join(tmp, 'outb'),
                           opt, value, '--model', model])
        check('error: %s was removed' % name, rc == 2 and want in se_b, se_b)


def check_single_stream_and_errors(tmp, log, labels):
    """--single-stream runs too; bad input: clear errors, non-zero exit."""
    rc, _, se3 = run(['eval', log, '--labels', labels, '-o', os.path.join(tmp, 'out3'),
                      '--key', 'sid=(S[0-9]+)', '--key-group', '1', '--single-stream'] + TINY)
    check('--single-stream', rc == 0, se3)
    cal3 = model_calibration(os.path.join(tmp, 'out3', 'model.gguf'))
    check('single stream: calibration for one stream',
          rc == 0 and cal3 and cal3['mode'] == 'single-stream' and
          'session_key' not in cal3 and cal3['line_threshold_bpb'] > 0, cal3)

    empty = write_text(os.path.join(tmp, 'empty.log'))
    badlab = write_text(os.path.join(tmp, 'bad.csv'), 'k,Normal\nS1,maybe\n')
    o = os.path.join(tmp, 'bad')
    cases = [
        ('missing labels file', [log, '--labels', os.path.join(tmp, 'nope.csv'), '-o', o], 'nope.csv'),
        ('bad label value', [log, '--labels', badlab, '-o', o], "label 'maybe'"),
        ('bad regex', [log, '--labels', labels, '-o', o, '--key', 'sid=(S['], 'bad --key regex'),
        ('bad key group', [log, '--labels', labels, '-o', o, '--key', 'sid=S[0-9]+', '--key-group', '2'],
         '--key-group'),
        ('empty log', [empty, '--labels', labels, '-o', o], 'is empty'),
        ('missing log', [os.path.join(tmp, 'none.log'), '--labels', labels, '-o', o], 'none.log'),
        ('no key in the log', [log, '--labels', labels, '-o', o, '--key', 'blk_zzz[0-9]+'], 'too few'),
        ('no labels option', [log, '-o', o], '--labels'),
        ('bad score', [log, '--labels', labels, '-o', o, '--score', 'median'], '--score'),
        ('labels of other keys', [log, '--labels', labels, '-o', o, '--key', 'sid=S[0-9]+'],
         'no session has a label'),
        ('missing model', [log, '--labels', labels, '-o', o, '--key', 'sid=(S[0-9]+)', '--key-group', '1',
                           '--model', os.path.join(tmp, 'none.gguf')], 'none.gguf'),
    ]
    for name, args, want in cases:
        rc, so, se = run(['eval'] + args)
        check('error: ' + name, rc != 0 and want in se and 'txl eval:' in se, (rc, se))


if __name__ == '__main__':
    main()
    sys.exit(1 if tally() else 0)

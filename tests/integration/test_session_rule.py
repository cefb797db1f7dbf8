# SPDX-License-Identifier: LGPL-2.1-or-later
"""txlsessions without a session threshold (none set, none in the model
file): the running session rule of lib/anomaly/baseline.h, written again
here.  Each ended session is judged against the scores of the sessions that
ended before it: "warmup" and no flag for the first 50, then flagged above
1.75 x the 95th percentile of the last 1,000, flagged or not (interpolated
between order statistics; the flagged foreign blocks move the percentile
by their count, so the thresholds after them tell the two windows apart).  A few sessions of foreign lines among HDFS-like ones are flagged; a
snapshot cut anywhere resumes the rule's window, so the output equals one
uninterrupted run byte for byte; a set session-threshold turns the rule
off.  With it runs the short-session rule: a session is also flagged
("short": true) when it has fewer lines than half the 5th percentile of the
line counts of the last 1,000 ended sessions; the three blocks that stop
after their first line are.  Each session's "level" is the larger of its
score over the threshold and that bar over its lines: above 1 exactly when
it is flagged.  gst-launch-1.0 and the bundled model."""
import json
import os
import random
import sys
import tempfile

from checks import check, tally
from gstlaunch import cut_and_resume, run, through, whole_run

HERE = os.path.dirname(os.path.abspath(__file__))
MODEL = os.path.join(HERE, '..', '..', 'models', 'default.gguf')
ODD = (62, 75, 91)
SHORT = (70, 85, 100)


def launch(src, out, snap=None, extra=''):
    return through(src, 509, MODEL, 'txlsessions model=%s session-idle-lines=12 %s' % (MODEL, extra),
                   out, snap)


def log_text():
    """110 blocks of 4 to 7 HDFS-like lines, two open at a time; blocks
    62, 75 and 91 are lines of another program, blocks 70, 85 and 100
    stop after their first line."""
    r = random.Random(5)
    lines = []
    for k in range(0, 110, 2):
        pair = []
        for j in (k, k + 1):
            b = 'blk_%d' % r.randrange(10 ** 17, 10 ** 18)
            n = r.randrange(4, 8)
            if j in ODD:
                pair.append(['kernel: [%d.%06d] usb 1-%d: device descriptor read/64, error -%d %s'
                             % (r.randrange(9999), r.randrange(10 ** 6), r.randrange(9),
                                r.randrange(200), b) for _ in range(n)])
                continue
            ls = ['INFO dfs.FSNamesystem: BLOCK* NameSystem.allocateBlock: /user/root/f%d %s'
                  % (r.randrange(999), b)]
            for _ in range(n - 2):
                ls.append('INFO dfs.DataNode$DataXceiver: Receiving block %s src: /10.250.%d.%d:%d'
                          % (b, r.randrange(255), r.randrange(255), r.randrange(30000, 60000)))
            ls.append('INFO dfs.DataNode$PacketResponder: PacketResponder %d for block %s terminating'
                      % (r.randrange(3), b))
            pair.append(ls[:1] if j in SHORT else ls)
        while pair[0] or pair[1]:
            side = r.choice([s for s in (0, 1) if pair[s]])
            lines.append('081109 2035%02d 1%d INFO ' % (r.randrange(60), r.randrange(99)) +
                         pair[side].pop(0))
    # quiet lines without a key at the end, so that the last blocks idle out
    lines += ['081109 2040%02d 143 INFO dfs.FSNamesystem: heartbeat' % i for i in range(14)]
    return ('\n'.join(lines) + '\n').encode()


def sessions(path):
    with open(path) as f:
        return [json.loads(l) for l in f if l.startswith('{"session"')]


def quantile(v, f):
    """v's quantile f, interpolated between order statistics (as
    lib/anomaly/baseline.c)."""
    v = sorted(v)
    pos = f * (len(v) - 1)
    k = int(pos)
    return v[k] if k + 1 >= len(v) else v[k] + (pos - k) * (v[k + 1] - v[k])


def rule(prev):
    """lib/anomaly/baseline.h's session rule over the window prev."""
    return 1.75 * quantile(prev, 0.95)


def main():
    tmp = tempfile.mkdtemp(prefix='txl-sessrule-')
    data = log_text()
    src, whole, rc, err = whole_run(tmp, data, launch)
    check('txlsessions runs without a threshold', rc == 0, err[-500:])
    if rc != 0:
        return 1 if tally() else 0
    ss = sessions(whole)
    keyed = [s for s in ss if s['session']]
    check('every block ends, by idleness', len(keyed) == 110 and
          all(s['reason'] == 'idle' for s in keyed), [(s['session'], s['reason']) for s in ss][-5:])
    warm_ok = all(s['warmup'] and not s['flag'] and s['threshold'] is None and s['level'] is None
                  for s in ss[:50])
    check('the first 50 sessions: warm-up, no threshold, no flag', warm_ok, ss[:2])
    bad = []
    for i, s in enumerate(ss[50:], 50):
        window = [x['score'] for x in ss[:i]][-1000:]
        thr = rule(window)
        bar = 0.5 * quantile([x['lines'] for x in ss[:i]][-1000:], 0.05)
        short = s['lines'] < bar
        # the level: how far past its bar, above 1 exactly when flagged
        level = max(s['score'] / thr, bar / s['lines'])
        if (s['warmup'] or abs(s['threshold'] - thr) > 1e-5 * thr or s['short'] != short or
                s['flag'] != (s['score'] > thr or short) or
                abs(s['level'] - level) > 1e-5 * level + 1e-6 or s['flag'] != (s['level'] > 1)):
            bad.append((i, s['score'], s['threshold'], thr, s['lines'], s['short'], s['flag'],
                        s['level'], level))
    check('after it, each session judged by the rule over those that ended before', not bad, bad[:5])
    short_keys = {s['session'] for s in keyed if s['lines'] == 1}
    check('the three blocks cut after one line are flagged as short', len(short_keys) == 3 and
          all(s['short'] and s['flag'] for s in keyed if s['session'] in short_keys) and
          not any(s['short'] for s in ss if s['session'] not in short_keys),
          [(s['session'], s['lines'], s['short']) for s in ss if s['short'] or s['lines'] == 1])
    # which blocks are the odd ones: their lines are the kernel's
    odd_keys = set()
    text = data.decode().split('\n')
    for l in text:
        if 'kernel:' in l:
            odd_keys.add(l.split()[-1])
    flagged = {s['session'] for s in ss if s['flag']}
    check('the three blocks of foreign lines are flagged', odd_keys and odd_keys <= flagged,
          (sorted(odd_keys), sorted(flagged)))
    check('few normal blocks are', len(flagged - odd_keys - short_keys) <= 2,
          sorted(flagged - odd_keys - short_keys))
    ref = open(whole, 'rb').read()
    # a snapshot cut anywhere carries the rule's window
    nls = [i for i, b in enumerate(data) if b == 10]
    for cut in (nls[120] + 1, len(data) // 2 + 7, nls[-30] + 1):
        ok, got, msg = cut_and_resume(data, cut, launch, tmp)
        check('cut at byte %d: resumed output identical' % cut, ok and got == ref, msg)
    # a threshold set turns the rule off: no warmup field, that threshold
    fixed = os.path.join(tmp, 'fixed.jsonl')
    rc, err = run(launch(src, fixed, extra='session-threshold=1e9'))
    fs = [s for s in sessions(fixed) if s['session']] if rc == 0 else []
    check('session-threshold set: the rule is off', rc == 0 and len(fs) == 110 and
          all('warmup' not in s and 'short' not in s and s['threshold'] == 1e9 and not s['flag'] and
              abs(s['level'] - s['score'] / 1e9) < 1e-6 for s in fs), err[-300:])
    return 1 if tally() else 0


if __name__ == '__main__':
    sys.exit(main())

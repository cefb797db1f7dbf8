# SPDX-License-Identifier: LGPL-2.1-or-later
"""tools/quality.py's offline analyses, on small hand-made inputs whose
answers are worked out here by hand: `hdfs-events` (event types by half
and label, the F1 bound, the blocks holding a type), `session-rule`'s "either" row, the
splits `hdfs --dev` and `--reversed` write, `hdfs-live --q`'s replay of
the session rule, `line-costs`' line summaries and `novelty`'s estimator
and windows.  The numbers in
docs/quality-logs.md and docs/notes/ come from these code paths.  Runs no
model; under a second."""
import os
import re
import subprocess
import sys
import tempfile

from checks import check, finish, write_text

HERE = os.path.dirname(os.path.abspath(__file__))
QUALITY = os.path.join(HERE, '..', '..', 'tools', 'quality.py')
sys.path.insert(0, os.path.dirname(QUALITY))
from qualitylib import common, hdfs, hdfs_live, inject, novelty, repeats  # noqa: E402  (the tool's functions)

# an HDFS-like line: date, time, thread, level, component, message
A = '081109 2036%02d 1 INFO dfs.DataNode: Receiving block %s src: /10.0.0.1:1'
B = '081109 2036%02d 2 INFO dfs.FSNamesystem: BLOCK* addStoredBlock %s size 1'
R = '081109 2036%02d 3 INFO dfs.FSNamesystem: BLOCK* ask 10.0.0.2 to replicate %s'
X = '081109 2036%02d 4 WARN dfs.DataNode: exception while serving %s'


def slice_dir(tmp):
    """Eight blocks in first-line order.  First half: three normal (A, B),
    one anomalous with a replication (A, B, R).  Second half: two normal
    (A, B), one normal with a replication (A, R, B), one anomalous (A, X).
    Each block's lines are interleaved with the next one's."""
    blocks = [('blk_1', 0, [A, B]), ('blk_2', 0, [A, B]), ('blk_3', 0, [A, B]),
              ('blk_-4', 1, [A, B, R]), ('blk_5', 0, [A, B]), ('blk_6', 0, [A, B]),
              ('blk_7', 0, [A, R, B]), ('blk_8', 1, [A, X])]
    lines, t = [], 0
    for i, (b, _, kinds) in enumerate(blocks):
        for k in kinds:
            lines.append(k % (t % 60, b))
            t += 1
    d = os.path.join(tmp, 'hdfs')
    os.makedirs(d)
    write_text(os.path.join(d, hdfs.HDFS_LOG), '\n'.join(lines) + '\n')
    write_text(os.path.join(d, hdfs.HDFS_LABELS), 'BlockId,Label\n' + ''.join(
        '%s,%s\n' % (b, 'Anomaly' if lab else 'Normal') for b, lab, _ in blocks))
    return d, blocks


def run(*args):
    p = subprocess.run([sys.executable, QUALITY] + list(args), capture_output=True,
                       text=True, timeout=60)
    return p.returncode, p.stdout + p.stderr


def test_events(tmp):
    d, _ = slice_dir(tmp)
    rc, out = run('hdfs-events', d, '--lines', '3')
    check('hdfs-events runs', rc == 0, out)
    rows = {line.split('|')[2].strip(): line for line in out.splitlines() if line.count('|') == 2}
    rep = [r for k, r in rows.items() if 'replicate' in k]
    # R: first half 0 normal, 1 anomalous; second half 1 normal, 0 anomalous
    check('hdfs-events counts a type by half and label',
          len(rep) == 1 and re.match(r'\s*0\s+1 \|\s+1\s+0 \|', rep[0]), out)
    # blk_7 holds R, which no normal first-half block holds: A = 1, N = 1
    check('hdfs-events: the bound of a detector of departures from normal blocks',
          'no normal block of the first half holds: 1; F1 at most 0.6667 (1 anomalous' in out, out)
    # X is new to the whole first half, but it is in an anomalous block only
    check('hdfs-events: the bound for types new to the whole first half',
          'no block of the first half holds: 0; F1 at most 1.0000' in out, out)
    check('hdfs-events --lines: the 3-line test block with its types',
          re.search(r'1 normal: 1 x \S+ Receiving block .*; 1 x .*replicate', out), out)
    # --holding: the blocks with R in each half, their label and length
    rc, out = run('hdfs-events', d, '--holding', 'replicate')
    held = out.split("first half's blocks holding a type with 'replicate'")[-1]
    check('hdfs-events --holding: each half\'s blocks with the type, by label and length',
          rc == 0 and re.search(r"^  1 anomalous of 3 lines: .*replicate", held, re.M)
          and re.search(r"second half's blocks .*\n  1 normal of 3 lines: .*replicate", held)
          and held.count(' of 3 lines') == 2, out)


def test_either(tmp):
    """Validation means 0.1..2.0 and worst-line sums 1..20: Q95 (interpolated)
    1.905 and 19.05, bars 1.75 x: 3.33375 and 33.3375.  Test sessions, as
    (label, mean, max_line_sum): n1 under both bars, n2 over the sum's,
    n3 just under the mean's (a 90th percentile would flag it), a1 over the
    mean's, a2 under both.  Flagged: n2 and a1, so recall 1/2, false alarms
    1 of 3, F1 0.5.  Ranked by the larger ratio: n2 1.50 > a1 1.20 > n3
    0.97 > a2 0.45 > n1 0.30: AUROC 3/6, the best F1 (threshold at a2)
    2/3."""
    d = os.path.join(tmp, 'eval')
    os.makedirs(d)
    rows = ['key,label,split,lines,score,flagged,max_line,max_line_sum,max_token,mean,end_nll']
    for i in range(1, 21):
        rows.append('v%d,0,calibration,5,%g,0,1,%g,1,%g,-1' % (i, i / 10, i, i / 10))
    for key, lab, mean, mls in (('n1', 0, 0.5, 10), ('n2', 0, 1, 50), ('n3', 0, 3.25, 10),
                                ('a1', 1, 4, 10), ('a2', 1, 1.5, 5)):
        rows.append('%s,%d,test,5,%g,0,1,%g,1,%g,-1' % (key, lab, mean, mls, mean))
    write_text(os.path.join(d, 'sessions.csv'), '\n'.join(rows) + '\n')
    rc, out = run('session-rule', d, '--q', '0.95', '--margin', '0.75')
    check('session-rule runs', rc == 0, out)
    check('session-rule: the either rule flags by each kind against its own bar',
          '| either: mean or max-line-sum, Q95 x 1.75 each | 1 (ratio) | 0.500 | 33.33 | 0.500 |'
          in out, out)
    check('session-rule: the either ranking (AUROC, best F1)',
          'either: AUROC 0.5000, best F1 of any threshold 0.667' in out, out)
    # the rule in use on the same rows: Q95 x 1.75 of the means, 3.33375
    check('session-rule: the rule in use beside it',
          '| Q95 x 1.75 | 3.3338 | 0.500 | 0.00 | 0.667 |' in out, out)


def test_short_part(tmp):
    """session-rule's short-session line: validation sessions of 10 lines
    (bar 0.5 x 10 = 5), scores 0.1..2.0 (threshold 3.33375).  Test n1
    (0.5, 10 lines) and n2 (1, 12) under both; a1 (4, 10) over the
    threshold; a2 (1.5, 2 lines) under it but short: its level 5/2 = 2.5.
    With the bar both anomalous sessions are flagged and lead the ranking."""
    d = os.path.join(tmp, 'eval')
    os.makedirs(d)
    rows = ['key,label,split,lines,score,flagged,max_line,max_line_sum,max_token,mean,end_nll']
    for i in range(1, 21):
        rows.append('v%d,0,calibration,10,%g,0,1,1,1,%g,-1' % (i, i / 10, i / 10))
    for key, lab, score, lines in (('n1', 0, 0.5, 10), ('n2', 0, 1, 12), ('a1', 1, 4, 10),
                                   ('a2', 1, 1.5, 2)):
        rows.append('%s,%d,test,%d,%g,0,1,1,1,%g,-1' % (key, lab, lines, score, score))
    write_text(os.path.join(d, 'sessions.csv'), '\n'.join(rows) + '\n')
    rc, out = run('session-rule', d, '--q', '0.95', '--margin', '0.75')
    check('session-rule: the short-session bar and the sessions under it',
          rc == 0 and 'short-session part: bar 5.0 lines; 1 test sessions under it (1 anomalous), '
          '0 of them already above the threshold' in out, out)
    check('session-rule: with the short-session part, both anomalous sessions flagged first',
          'with it: recall 1.000, false alarms 0.00%, F1 1.000; AUROC of the level 1.0000' in out, out)


def test_splits(tmp):
    d, blocks = slice_dir(tmp)
    log = os.path.join(d, hdfs.HDFS_LOG)
    lab = os.path.join(d, hdfs.HDFS_LABELS)
    out = os.path.join(tmp, 'split')
    os.makedirs(out)
    first = {b for b, _, _ in blocks[:4]}

    def keys(path):
        with open(path) as f:
            return [re.search(r'blk_-?\d+', line).group(0) for line in f]
    slog, slab = hdfs.hdfs_split(log, lab, out)
    got = keys(slog)
    check('hdfs --dev: the first half\'s blocks, all their lines, in order',
          set(got) == first and len(got) == 9, got)
    with open(slab) as f:
        check('hdfs --dev: their labels only', sorted(f.read().split()) == sorted(
            ['BlockId,Label'] + ['%s,%s' % (b, 'Anomaly' if l else 'Normal')
                                 for b, l, _ in blocks[:4]]))
    rlog, rlab = hdfs.hdfs_split(log, lab, out, reversed_=True)
    got = keys(rlog)
    check('hdfs --reversed: every line, the second half\'s blocks first',
          len(got) == 18 and set(got[:9]).isdisjoint(first) and set(got[9:]) == first, got)
    check('hdfs --reversed: every label', rlab == lab)
    llog, llab = hdfs.hdfs_split(log, lab, out, late=True)
    got = keys(llog)
    check('hdfs-live --late: the second half\'s blocks, all their lines, in order',
          len(got) == 9 and set(got).isdisjoint(first) and got == [
              k for k in keys(log) if k not in first], got)
    with open(llab) as f:
        check('hdfs-live --late: their labels only', sorted(f.read().split()) == sorted(
            ['BlockId,Label'] + ['%s,%s' % (b, 'Anomaly' if l else 'Normal')
                                 for b, l, _ in blocks[4:]]))
    qlog, qlab = hdfs.hdfs_split(log, lab, out, reversed_=True, dev=True)
    got = keys(qlog)
    check('hdfs-live --dev --reversed: the first half\'s blocks, its second half\'s lines first',
          got == [k for k in keys(log) if k in ('blk_3', 'blk_-4')] +
          [k for k in keys(log) if k in ('blk_1', 'blk_2')], got)
    with open(qlab) as f:
        check('hdfs-live --dev --reversed: their labels only',
              sorted(f.read().split()) == sorted(['BlockId,Label'] + [
                  '%s,%s' % (b, 'Anomaly' if l else 'Normal') for b, l, _ in blocks[:4]]))
    qlog, _ = hdfs.hdfs_split(log, lab, out, reversed_=True, late=True)
    got = keys(qlog)
    check('hdfs-live --late --reversed: the second half\'s blocks, its second half\'s lines first',
          got == [k for k in keys(log) if k in ('blk_7', 'blk_8')] +
          [k for k in keys(log) if k in ('blk_5', 'blk_6')], got)
    rc, msg = run('hdfs-live', d, '--dev', '--late')
    check('hdfs-live: two splits at once are refused', rc == 2 and 'not allowed with' in msg, msg)


def test_replay(tmp):
    """hdfs-live's replay of the running session rule: Q95 x 1.75 of the
    last `window` sessions it passed.  0.1 .. 0.5 start the window (Q95
    interpolated 0.48, bar 0.84): 0.9 is flagged and stays out, so the next
    0.9 is flagged too (had the first joined: Q95 0.8, bar 1.4); 0.83
    passes.  With a window of 3 (5, 5, 5, then 1, 1, 1): the bar comes from
    the last three, 1.75, and 2 is flagged (Q95 of all six: 5)."""
    recs = [{'session': 's%d' % i, 'score': x}
            for i, x in enumerate([0.1, 0.2, 0.3, 0.4, 0.5, 0.9, 0.9, 0.83])]
    got = hdfs_live.replay_sessions(recs, 0.95, 0.75, window=1000, warm=5)
    check('replay: a flagged session stays out of the window', got == {'s5', 's6'}, got)
    recs = [{'session': 's%d' % i, 'score': x} for i, x in enumerate([5, 5, 5, 1, 1, 1, 2])]
    got = hdfs_live.replay_sessions(recs, 0.95, 0.75, window=3, warm=3)
    check('replay: the bar comes from the last `window` passed', got == {'s6'}, got)
    # every session in the window: the first 0.9 joins, the bar for the
    # second is 1.75 x 0.8 = 1.4, so only the first is flagged
    recs = [{'session': 's%d' % i, 'score': x}
            for i, x in enumerate([0.1, 0.2, 0.3, 0.4, 0.5, 0.9, 0.9, 0.83])]
    got = hdfs_live.replay_sessions(recs, 0.95, 0.75, window=1000, warm=5, every=True)
    check('replay, every session: a flagged one joins the window', got == {'s5'}, got)
    d, blocks = slice_dir(tmp)
    # first lines in block order; test half: blk_5 .. blk_8 (blk_8 anomalous)
    kept = os.path.join(tmp, 'kept.jsonl')
    write_text(kept, ''.join(
        '{"session": "%s", "first_line": %d, "lines": 2, "score": %g, "flag": false, '
        '"reason": "ended", "threshold": 0, "warmup": true}\n' % (b, i, x)
        for i, ((b, _, _), x) in enumerate(zip(blocks, [0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0.5, 0.4]))))
    rc, out = run('hdfs-live', d, '--from-kept', kept, '--q', '0.95')
    check('hdfs-live --from-kept --q runs', rc == 0, out)
    # a bar at 0.4 flags blk_7 (normal, 0.5) and blk_8: P 1/2, R 1
    check('hdfs-live --q: the best fixed threshold',
          'best F1 of any fixed threshold 0.667 (flagged 2, P 0.500 R 1.000)' in out, out)
    # fewer than 50 sessions passed: the replayed rule flags nothing yet
    check('hdfs-live --q: the replayed rule\'s rows',
          '| Q95 x 1.75 | passed sessions | 0 | 0.000 | 0.000 | 0.000 |' in out and
          '| Q95 x 1.75 | every session | 0 | 0.000 | 0.000 | 0.000 |' in out, out)
    # the lower of two runs' scores: the other run scores blk_7 0.05 and
    # blk_8 null (not finite), so blk_7 takes 0.05, blk_8 keeps 0.4, and
    # one bar (0.4) finds blk_8 alone: F1 1
    other = os.path.join(tmp, 'other.jsonl')
    write_text(other, ''.join('{"session": "%s", "score": %s}\n' % (b, x) for (b, _, _), x in
                              zip(blocks, ['9'] * 6 + ['0.05', 'null'])))
    rc, out = run('hdfs-live', d, '--from-kept', kept, '--lower-of', other, '--q', '0.95')
    check('hdfs-live --lower-of: the lower score of each session',
          rc == 0 and 'best F1 of any fixed threshold 1.000 (flagged 1, P 1.000 R 1.000)' in out, out)
    # records with the pipeline's level: blk_8 scores below blk_7 (score
    # AUROC 2/3) but its level (2.0, short) is the highest; a null level
    # that is not flagged ranks last: AUROC 1
    leveled = os.path.join(tmp, 'leveled.jsonl')
    write_text(leveled, ''.join(
        '{"session": "%s", "first_line": %d, "lines": 2, "score": %g, "flag": %s, '
        '"reason": "ended", "threshold": 1, "level": %s}\n'
        % (b, i, x, 'true' if lv == '2.0' else 'false', lv)
        for i, ((b, _, _), x, lv) in enumerate(zip(
            blocks, [0.1, 0.1, 0.1, 0.1, 0.1, 0.2, 0.5, 0.4],
            ['null'] * 5 + ['0.5', '0.9', '2.0']))))
    rc, out = run('hdfs-live', d, '--from-kept', leveled)
    check('hdfs-live: the AUROC of the level beside the score\'s',
          rc == 0 and 'AUROC 0.667' in out and 'AUROC of the level 1.0000' in out, out)
    rc, out = run('hdfs-live', d, '--lower-of', other)
    check('hdfs-live --lower-of without --from-kept is refused, not ignored',
          rc != 0 and 'goes with --from-kept' in out, out)


def test_line_candidates(tmp):
    """line-costs' ways of summing a line up, on costs 1, 5, 2, 0, 3 nats
    over 10 normalised bytes: 11 / ln 2 / 10 bits per byte; the costliest
    token 5; the three costliest 5 + 3 + 2; runs of 4: 1+5+2+0 = 8 and
    5+2+0+3 = 10; a run of 8 longer than the line: the whole line."""
    c = inject.line_candidates([1, 5, 2, 0, 3], 10)
    want = {'bits per byte': 11 / 0.6931471805599453 / 10, 'costliest token': 5,
            'three costliest': 10, 'line total': 11, 'costliest 4 tokens': 10,
            'costliest 8 tokens': 11}
    check('line-costs: the candidates of a line', c.keys() == want.keys() and all(
        abs(c[k] - want[k]) < 1e-9 for k in want), c)
    c = inject.line_candidates([], 0)
    check('line-costs: a line with no scored token costs nothing',
          all(v == 0 for v in c.values()), c)

    import json
    keep = os.path.join(tmp, 'kept.jsonl')
    recs = [{'line': 1, 'norm_bytes': 4, 'worst': 0.5}, {'line': 2, 'norm_bytes': 0, 'worst': None}]
    inject.keep_line_costs(keep, recs, [0, 1], {1: [1.0, 1.7725887222397811]})
    with open(keep) as f:
        kept = [json.loads(l) for l in f]
    check('line-costs --keep: each record with its label and the bundled bits per byte',
          len(kept) == 2 and kept[0]['injected'] == 0 and kept[1]['injected'] == 1 and
          abs(kept[0]['bundled_bpb'] - 1.0) < 1e-9 and kept[1]['bundled_bpb'] == 0.0 and
          kept[0]['worst'] == 0.5, kept)

    check('judged: worst less a quarter of ref_bpb where a line has one, else worst',
          common.judged({'worst': 2.0, 'ref_bpb': 4.0}) == 1.0 and
          common.judged({'worst': 2.0}) == 2.0 and
          common.judged({'worst': None, 'ref_bpb': 1.0}) == float('inf'))


def test_novelty(tmp):
    """novelty's pieces (docs/notes/2026-11-29-novelty.md), worked out by
    hand: with 4 ids, nothing counted costs -log2(0.5 / 2) = 2 bits an id;
    after ids 0 and 1, id 0 costs -log2(1.5 / 4) and id 3 -log2(0.5 / 4);
    an id repeated in a line is costed against the counts before it."""
    import math
    v = novelty.novelty([[0, 1], [0, 3], [2, 2, 2], []], vocab=4)
    want = [2.0, (-math.log2(1.5 / 4) - math.log2(0.5 / 4)) / 2, -math.log2(0.5 / 6)]
    check('novelty: the estimator by hand', all(abs(a - b) < 1e-12 for a, b in zip(v, want)) and
          math.isnan(v[3]), v)
    check('novelty: ids no earlier line had', novelty.unseen([[1, 2], [2, 3, 3], []]) == [2, 2, 0])
    # a window of 3 that tests once it holds 2; the first value is skipped
    # (learning's warm-up): it neither joins nor is tested
    novelty.WINDOW, novelty.WARM = 3, 2
    try:
        rule = novelty.stream_rule(3.0)  # bar: Q90 + 3 x max(Q90 - median, 0.3)
        fl = novelty.over_window([9, 1, 1, 1, 2.0, 1], [True] + [False] * 5, rule)
        # [1, 1] and [1, 1, 1]: bar 1 + 3 x 0.3 = 1.9, 2.0 is flagged; then
        # [1, 1, 2]: Q90 1.8, median 1, bar 1.8 + 3 x 0.8 = 4.2
        check('novelty: the rule over a window, skipped values left out',
              fl == [False, False, False, False, True, False], fl)
        # medians of [5, 1], [5, 1, 4], [1, 4, 2]: 3, 4, 2
        med = novelty.over_window([5, 1, 4, 2, 4], [False] * 5, novelty.above_median)
        check('novelty: above the window\'s median', med == [False, False, True, False, True], med)
    finally:
        novelty.WINDOW, novelty.WARM = 1000, 50


def test_held_out_streams(tmp):
    """novelty --held-out's streams: each held-out log injected with lines
    of the others (new software) and of the corpus's sshd, postfix and
    zookeeper (known software), then as table 1; a log too short to judge
    is refused."""
    import argparse
    held, corpus, keep = (os.path.join(tmp, d) for d in ('held', 'corpus', 'keep'))
    for d in (held, corpus, keep):
        os.makedirs(d)
    for name, n in (('aa', 3000), ('bb', 3100)):
        with open(os.path.join(held, name + '.log'), 'w') as f:
            f.write(''.join('%s x y %s-line %d\n' % (name, name, i) for i in range(n)))
    for name in novelty.CHOICE_OTHER:
        with open(os.path.join(corpus, name + '.log'), 'w') as f:
            f.write(''.join('%s p q %s-known %d\n' % (name, name, i) for i in range(50)))
    a = argparse.Namespace(held_out=held, corpus=corpus, keep=keep, seed=1, loghub=None)
    got = list(novelty.streams(a))
    check('held-out: three streams a log, in order',
          [(p, n) for p, n, _, _ in got] == [(p, n) for n in ('aa', 'bb')
                                              for p in ('new software', 'known software', 'table 1')],
          [(p, n) for p, n, _, _ in got])
    ok = True
    for part, name, lines, lab in got:
        other = {'new software': ('bb' if name == 'aa' else 'aa',), 'table 1': (),
                 'known software': tuple(novelty.CHOICE_OTHER)}[part]
        put = [l for l, y in zip(lines, lab) if y]
        ok &= len(lines) == len(lab) and sum(1 for y in lab if not y) == (2000 if part == 'table 1' else 3000)
        # whole lines of another log, or this log's first fields and another's message
        ok &= all(any(o + '-' in l for o in other) for l in put) and (part == 'table 1') == (not put)
        ok &= all(l.startswith(name) for l, y in zip(lines, lab) if not y)
    check('held-out: injected lines come from the other logs, the rest is the log itself', ok)
    # records kept with another model are not read as the bundled one's
    # (the model's id set here: no txl runs)
    import json
    novelty._MODEL_IDS[common.MODEL] = 'this'
    with open(os.path.join(keep, 'r.json'), 'w') as f:
        json.dump({'recs': [], 'lab': [], 'ids': {}, 'model': 'another'}, f)
    try:
        novelty.record(keep, 'r', [], [])
        check('held-out: records of another model refused', False)
    except SystemExit as e:
        check('held-out: records of another model refused', 'another model' in str(e), str(e))
    with open(os.path.join(keep, 'r.json'), 'w') as f:
        json.dump({'recs': [], 'lab': [], 'ids': {}, 'model': novelty.model_id()}, f)
    check('held-out: records of this model read', novelty.record(keep, 'r', [], []) == ([], [], []))
    with open(os.path.join(held, 'bb.log'), 'w') as f:
        f.write('bb short\n' * 2999)
    try:
        list(novelty.streams(a))
        check('held-out: a log under 3,000 lines is refused', False)
    except SystemExit as e:
        check('held-out: a log under 3,000 lines is refused', 'fewer than 3,000' in str(e), str(e))


def test_scramble(tmp):
    """mix.py --scramble (docs/notes/2026-11-29-copying.md): a word of 4 or
    more letters is replaced the same way throughout its block, keeping its
    length and capitals; shorter words, digits and punctuation stay."""
    import random
    sys.path.insert(0, os.path.join(os.path.dirname(QUALITY), 'corpus'))
    import mix
    block = ['Proxy web stopped: conns 12', 'proxy Proxy web', 'Stopped again 7']
    got = mix.scramble(block, 1.0, random.Random(3))
    w = [l.split() for l in got]
    check('scramble: every long word replaced, the same way in the block',
          w[0][0] == w[1][1] and w[0][0] != 'Proxy' and w[1][0] != 'proxy' and
          w[0][2].rstrip(':') != 'stopped' and w[2][1] != 'again', got)
    check('scramble: length and capitals kept, short words and numbers untouched',
          [len(x) for x in w[0]] == [5, 3, 8, 5, 2] and w[0][0][0].isupper() and w[1][0][0].islower()
          and w[0][1] == 'web' and w[0][4] == '12' and w[2][2] == '7' and w[0][2].endswith(':'), got)
    check('scramble: probability 0 changes nothing', mix.scramble(block, 0.0, random.Random(3)) == block)


def test_repeats(tmp):
    """repeats (docs/notes/2026-11-29-repeats.md): what a kind is, a burst
    as one alert, and the totals over kept records, worked out by hand."""
    import json
    check('repeats: a kind masks runs of hex digits that hold a digit',
          repeats.kind('Link-1N01 ok 0x1f dead beef12 at 12:00') == 'Link-#N# ok #x# dead # at #:#')
    recs = [{'text': t} for t in ('a 1', 'a 2', 'b 1', 'a 3', 'x', 'a 4', 'a 5')]
    got = repeats.without_repeats(recs, [True, True, True, True, False, False, True], horizon=3)
    # a 2 and a 3 repeat a 1 (a 3 within 3 lines of a 2, a repeat too);
    # a 5 is 3 lines after a 3: still the burst
    check('repeats: a burst flagged once, a repeat remembered',
          got == [True, False, True, False, False, False, False], got)
    got = repeats.without_repeats(recs, [True, False, False, False, False, False, True], horizon=3)
    check('repeats: the kind flags again after the horizon', got[6] is True, got)

    # kept records: 60 lines (10 of learning's warm-up), the rule's flags
    # recorded as txl score writes them
    def stream(costly, lab=None):
        rs = []
        for i in range(70):
            rs.append({'line': i + 1, 'warmup': i < 10, 'worst': 1.0 + (i % 7) * 0.01,
                       'text': 'normal %d' % i})
        for i in costly:
            rs[i]['worst'], rs[i]['text'] = 9.0, 'odd %d' % i
        for r, f in zip(rs, inject.replay([dict(r, _gen0=r['warmup']) for r in rs], 0.9, 1.5, 0.3,
                                          warm=repeats.WARM)):
            r['flag'] = f
        return {'recs': rs, 'lab': lab or [0] * 70, 'ids': {}}
    keep = os.path.join(tmp, 'keep')
    os.makedirs(keep)
    lab = [1 if i in (66, 68) else 0 for i in range(70)]
    for name, d in (('table1-x', stream([61, 62, 63])), ('newsoftware-x', stream([64, 66, 68], lab))):
        with open(os.path.join(keep, name + '.json'), 'w') as f:
            json.dump(d, f)
    rc, out = run('repeats', keep)
    # table 1: 3 flagged, 1 without repeats; injected: the odd lines 64
    # (normal), 66 and 68 (injected) flagged, only 64 without repeats
    check('repeats: the totals of the current rule and R',
          rc == 0 and '| current | 3 / 1 of 1 | 2 of 2 / 1 of' in out and
          '| R (repeats) | 1 / 1 of 1 | 0 of 2 / 1 of' in out, out)
    rc, out = run('repeats', os.path.join(tmp, 'nothing'))
    check('repeats: a folder without records refused', rc != 0 and 'no records' in out, out)
    d = stream([61])
    d['recs'][61]['flag'] = False
    with open(os.path.join(keep, 'table1-y.json'), 'w') as f:
        json.dump(d, f)
    rc, out = run('repeats', keep)
    check('repeats: records the current rule does not replay refused',
          rc != 0 and 'differs' in out, out)


def main():
    tmp = tempfile.mkdtemp(prefix='txl-quality-tool-')
    for t in (test_events, test_either, test_short_part, test_splits, test_replay,
              test_line_candidates, test_novelty, test_held_out_streams,
              test_scramble, test_repeats):
        sub = os.path.join(tmp, t.__name__)
        os.makedirs(sub)
        t(sub)
    return finish(tmp)


if __name__ == '__main__':
    sys.exit(main())

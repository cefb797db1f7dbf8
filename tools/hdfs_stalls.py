# SPDX-License-Identifier: LGPL-2.1-or-later
"""Experiment (docs/notes/2026-11-26-stalled-sessions.md), not a product rule:
usage: /usr/bin/python3 tools/hdfs_stalls.py HDFS.log LABELS.csv [KEPT.jsonl]
(KEPT: quality.py hdfs-live --keep output, whose flags are combined).

A session is stalled when it has been quiet for longer than
K x the longest pause ever seen after its last event type, over the HDFS
slice, learning the pauses as lines arrive (no labels). Rule fixed before
its one run: K=4, floor 60 s, at least 50 observed pauses for the event type."""
import re, sys, calendar, time
from collections import defaultdict
LOG = sys.argv[1]; LAB = sys.argv[2]
K, FLOOR, MINN = 4.0, 60, 50
lab = {}
for row in open(LAB):
    k, _, v = row.strip().partition(',')
    if k.startswith('blk_'): lab[k] = v in ('Anomaly', '1', 'true')
blk = re.compile(r'blk_-?\d+')
def etype(line):
    parts = line.split(None, 5)
    msg = parts[5] if len(parts) > 5 else ''
    words = [('*' if re.search(r'[\d/]', w) else w) for w in msg.split()]
    return parts[4] + ' ' + ' '.join(words[:6])
def ts(line):
    return calendar.timegm(time.strptime(line[:13], '%y%m%d %H%M%S'))
last = {}        # block -> (time, etype)
first = {}       # block -> first line number
maxgap = defaultdict(float); n = defaultdict(int)
stalled = {}     # block -> (line no, time, etype, gap)
for i, line in enumerate(open(LOG, errors='replace')):
    try: t = ts(line)
    except Exception: continue
    e = etype(line)
    ids = set(blk.findall(line))
    for b in ids:
        first.setdefault(b, i)
        if b in last:
            t0, e0 = last[b]
            g = t - t0
            if b not in stalled:   # pauses of stalled blocks are not learnt
                maxgap[e0] = max(maxgap[e0], g); n[e0] += 1
        last[b] = (t, e)
    # sweep (every 200 lines) for stalled sessions
    if i % 200 == 0:
        for b, (t0, e0) in last.items():
            if b in stalled or n[e0] < MINN: continue
            lim = max(FLOOR, K * maxgap[e0])
            if t - t0 > lim:
                stalled[b] = (i, t, e0, t - t0, lim)
blocks = sorted((b for b in first if b in lab), key=lambda b: first[b])
test = blocks[len(blocks) // 2:]
tp = sum(1 for b in test if b in stalled and lab[b]); fp = sum(1 for b in test if b in stalled and not lab[b])
print('test blocks %d (%d anomalous): stalled %d, anomalous %d, normal %d' % (
    len(test), sum(lab[b] for b in test), tp + fp, tp, fp))
for b in test:
    if b in stalled: print(b, lab[b], stalled[b])
if len(sys.argv) > 3:  # the pipeline run's kept session records: flags combined
    import json
    recs = {}
    for l in open(sys.argv[3]):
        s = json.loads(l); recs[s['session']] = s
    fl = {b for b in test if recs.get(b, {}).get('flag')} | {b for b in test if b in stalled}
    tp = sum(lab[b] for b in fl); fp = len(fl) - tp; pos = sum(lab[b] for b in test)
    p, r = tp / max(1, len(fl)), tp / pos
    print('with the pipeline flags: flagged %d, P %.3f R %.3f F1 %.3f' % (len(fl), p, r, 2*p*r/(p+r)))

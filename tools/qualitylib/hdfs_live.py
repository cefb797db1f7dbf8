# SPDX-License-Identifier: LGPL-2.1-or-later
"""Table 3 of docs/quality-logs.md, the pipeline's side: the HDFS slice
through txlsessions learn=true in one pass, its sessions judged."""
import json
import os
import subprocess
import sys
import tempfile
import time

from qualitylib import common
from qualitylib.common import ROOT, auroc, quantile
from qualitylib.hdfs import HDFS_LABELS, HDFS_LOG, breakdown, hdfs_file, hdfs_labels, hdfs_split, prf


def replay_sessions(ss, q, margin, window=1000, warm=50, every=False):
    """The running session rule of txlsessions (lib/anomaly/baseline.h:
    Q x (1 + margin) of the last `window` ended sessions, none flagged
    before `warm` of them) with other constants, over session records in
    the order they ended; the window holds the sessions the rule passed,
    or with every=True all of them, flagged or not
    (docs/notes/2026-11-27-session-window.md).  The hand-over of the window
    to new weights' sessions is left out: with it or without, the records
    of the running rule's own constants come out the same but for a few
    sessions.  Returns the flagged sessions' keys."""
    seen, flagged = [], set()
    for s in ss:
        flag = len(seen) >= warm and s["score"] > quantile(seen[-window:], q) * (1 + margin)
        if flag:
            flagged.add(s["session"])
        if every or not flag:
            seen.append(s["score"])
    return flagged


def lower_of(ss, other):
    """Each session's lower score across two runs' records (a null score,
    not finite, counts as the higher), in the first run's order: an
    estimate of judging each session by the lower of two scores
    (docs/notes/2026-11-27-session-lower.md); the runs learnt apart, so
    it is not what a run doing so would give, and the flags stay the first
    run's."""
    with open(other) as f:
        there = {r["session"]: r["score"] for r in map(json.loads, f)}
    inf = float("inf")
    out = []
    for s in ss:
        x = dict(s)
        b = there.get(s["session"], s["score"])
        x["score"] = min(inf if s["score"] is None else s["score"], inf if b is None else b)
        out.append(x)
    return out


def cmd_hdfs_live(a):
    """filesrc ! txltokenizer ! txlsessions learn=true ! txlsink over the
    whole slice (or the records of such a run, --from-kept; --dev, --reversed:
    hdfs's other splits); the session records of the blocks that start in
    the second half (by first line) are judged against the labels.  --eval-dir: the same breakdown of a
    `txl eval -o DIR` run's test sessions (DIR/sessions.csv)."""
    if a.lower_of and not a.from_kept:
        sys.exit("quality.py hdfs-live: --lower-of combines kept records: it goes with --from-kept")
    labels = hdfs_labels(a.dir)
    mins = 0.0
    if a.from_kept:
        with open(a.from_kept) as f:
            ss = [json.loads(l) for l in f]
        if a.lower_of:
            ss = lower_of(ss, a.lower_of)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "out.jsonl")
            log = hdfs_file(a.dir, HDFS_LOG)
            if a.dev or a.reversed or a.late:
                log = hdfs_split(log, hdfs_file(a.dir, HDFS_LABELS), tmp, a.reversed,
                                 a.late, a.dev)[0]
            el = ["txlsessions", "model=" + common.MODEL, "learn=true"]
            if a.max_session_memory:
                el.append("max-session-memory=%d" % a.max_session_memory)
            t0 = time.monotonic()
            subprocess.run(["gst-launch-1.0", "-q", "filesrc",
                            "location=" + log, "!",
                            "txltokenizer", "model=" + common.MODEL, "!"] + el +
                           ["!", "txlsink", "location=" + out], check=True, capture_output=True,
                           env=dict(os.environ, GST_PLUGIN_PATH=os.path.join(ROOT, "build", "plugins")))
            mins = (time.monotonic() - t0) / 60
            with open(out) as f:
                ss = [json.loads(l) for l in f if l.startswith('{"session"')]
        if a.keep:
            with open(a.keep, "w") as f:
                f.writelines(json.dumps(s) + "\n" for s in ss)
    reasons = {}
    ss_all = ss
    for s in ss:
        reasons[s["reason"]] = reasons.get(s["reason"], 0) + 1
    ss = sorted((s for s in ss if s["session"] in labels), key=lambda s: s["first_line"])
    test = ss[len(ss) // 2:]
    pos = [s["score"] for s in test if labels[s["session"]]]
    neg = [s["score"] for s in test if not labels[s["session"]]]
    n, p, r, f1 = prf({s["session"] for s in test if s["flag"]}, labels,
                      [s["session"] for s in test])
    print("session records %d %s, test %d (%d anomalous), warm-up %d: AUROC %.3f, flagged %d, "
          "P %.3f R %.3f F1 %.3f, %.0f min" % (
              len(ss), reasons, len(test), len(pos), sum(1 for s in ss if s.get("warmup")),
              auroc(pos, neg), n, p, r, f1, mins))
    # the ranking the pipeline acts on: each session's score over the
    # threshold it was judged by (weights and window change as it learns)
    judged = [s for s in test if not s.get("warmup") and (s.get("threshold") or 0) > 0]
    print("judged by the running rule: %d; AUROC of score / threshold %.4f" % (
        len(judged), auroc([s["score"] / s["threshold"] for s in judged if labels[s["session"]]],
                           [s["score"] / s["threshold"] for s in judged if not labels[s["session"]]])))
    # and of the level the pipeline writes (score over threshold, or the
    # short-session bar over the lines: above 1 exactly when flagged); a
    # null level (warm-up, a broken score) ranks first if flagged, else last
    if all("level" in s for s in test):
        lv = [(float("inf") if s["flag"] else 0.0) if s["level"] is None else s["level"]
              for s in test]
        print("AUROC of the level %.4f" % auroc([x for x, s in zip(lv, test) if labels[s["session"]]],
                                                [x for x, s in zip(lv, test) if not labels[s["session"]]]))
    breakdown("pipeline", [(labels[s["session"]], s["lines"], s["score"], s["flag"]) for s in test])
    if a.q:
        # other constants of the running session rule, replayed over the
        # records in the order they ended: what each would have flagged
        # had the learning and the scores stayed the same (they do not
        # quite: a round learns only from sessions the rule passed)
        names = [s["session"] for s in test]
        best = max((prf({s["session"] for s in test if s["score"] >= t}, labels, names)
                    for t in {s["score"] for s in test}), key=lambda x: x[3])
        print("best F1 of any fixed threshold %.3f (flagged %d, P %.3f R %.3f)" % (
            best[3], best[0], best[1], best[2]))
        print("| rule | window | flagged | P | R | F1 |")
        print("|---|---|---|---|---|---|")
        for q in a.q:
            for m in a.margin:
                for every in (False, True):
                    fl = replay_sessions(ss_all, q, m, every=every)
                    print("| Q%g x %g | %s | %d | %.3f | %.3f | %.3f |" % (
                        (100 * q, 1 + m, "every session" if every else "passed sessions") +
                        prf(fl, labels, names)))
    if a.eval_dir:
        import csv
        with open(os.path.join(a.eval_dir, "sessions.csv")) as f:
            rows = [r for r in csv.DictReader(f) if r["split"] == "test"]
        breakdown("txl eval", [(r["label"] == "1", int(r["lines"]), float(r["score"]),
                                r["flagged"] == "1") for r in rows])


def add_commands(sub):
    s = sub.add_parser("hdfs-live")
    s.add_argument("dir")
    s.add_argument("--max-session-memory", type=int, default=0,
                   help="txlsessions' bound in bytes (default: the element's, 4 GiB)")
    s.add_argument("--keep", help="also write the session records to this file")
    s.add_argument("--from-kept", help="judge the records of an earlier --keep instead of running")
    s.add_argument("--lower-of", metavar="FILE",
                   help="with --from-kept: each session's lower score of the two runs' records")
    s.add_argument("--eval-dir", help="also break down a `txl eval -o DIR` run's test sessions")
    s.add_argument("--q", type=float, nargs="*", default=[],
                   help="also replay the running session rule with these quantiles ...")
    s.add_argument("--margin", type=float, nargs="*", default=[0.75],
                   help="... and margins over the records (default 0.75)")
    split = s.add_mutually_exclusive_group()  # one half at a time
    split.add_argument("--dev", action="store_true",
                       help="the development split (the first half's blocks) instead")
    split.add_argument("--late", action="store_true",
                       help="the second half's blocks alone, as --dev takes the first half's")
    s.add_argument("--reversed", action="store_true",
                   help="every block (or with --dev, --late: that half's), the second half's "
                   "lines first: the first half is judged")
    s.set_defaults(func=cmd_hdfs_live)

# SPDX-License-Identifier: LGPL-2.1-or-later
"""Table 3 of docs/quality-logs.md, `txl eval`'s side: the HDFS slice split
into halves, `txl eval` with and without labels, and the slice's event
types, stalls and orders that bound what a detector can do."""
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

from qualitylib import common
from qualitylib.common import TXL, auroc, quantile
from qualitylib.loghub import model_shape


HDFS_KEY = re.compile(r"blk_-?[0-9]+")


def hdfs_blocks(log):
    """The slice's lines, each line's block (its first block id, None
    without one), and the blocks in the order of their first line."""
    with open(log, encoding="utf-8", errors="replace") as f:
        lines = f.read().splitlines()
    keys = [m.group(0) if m else None for m in map(HDFS_KEY.search, lines)]
    order = {}
    for k in keys:
        if k is not None and k not in order:
            order[k] = len(order)
    return lines, keys, sorted(order, key=order.get)


def hdfs_split(log, labels, tmp, reversed_=False, late=False, dev=None):
    """A split of the HDFS slice other than txl eval's own.  The development
    split: the first half of the blocks (by first line) with all their
    lines, and their labels; the rules of txl eval were chosen on it, never
    on the second half.  late: the second half's blocks the same way (its
    first half learns, its second half is judged).  reversed_: every
    block, the second half's lines first, so that the second half learns
    and the first half is judged (docs/notes/2026-11-27-either-rule.md);
    with dev (True) or late, the same within that half's blocks.  dev
    defaults to "not late" without reversed_, to all blocks with it."""
    lines, keys, blocks = hdfs_blocks(log)
    if dev is None:
        dev = not late and not reversed_
    pool = blocks[len(blocks) // 2:] if late else blocks[:len(blocks) // 2] if dev else blocks
    first = set(pool[:len(pool) // 2])
    dlog, dlab = os.path.join(tmp, "split.log"), os.path.join(tmp, "split.labels.csv")
    with open(dlog, "w") as f:
        for part in (set(pool) - first, first) if reversed_ else (set(pool),):
            for line, k in zip(lines, keys):
                if k in part:
                    f.write(line + "\n")
    if reversed_ and not (dev or late):
        return dlog, labels
    chosen = set(pool)
    with open(labels) as f, open(dlab, "w") as g:
        for row in f:
            if row.split(",")[0] in chosen or row.startswith("BlockId"):
                g.write(row)
    return dlog, dlab


def cmd_hdfs(a):
    """txl eval's default (no label read but to judge) and its labelled
    recipe on the HDFS slice of ../shared (--dev: on its development split,
    --reversed: the halves swapped):
    one row each."""
    log = hdfs_file(a.dir, HDFS_LOG)
    labels = hdfs_file(a.dir, HDFS_LABELS)
    print("| training | threshold from | sessions trimmed | P | R | F1 | AUROC | minutes |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        if a.dev or a.reversed:
            log, labels = hdfs_split(log, labels, tmp, reversed_=a.reversed)
        for extra, what, thr in (([], "all first-half sessions, anomalies included",
                                  "unlabelled validation sessions"),
                                 (["--normal-only"], "normal first-half sessions (labels read)",
                                  "normal validation sessions")):
            out = os.path.join(a.keep or tmp, "label-free" if not extra else "labelled")
            shutil.rmtree(out, ignore_errors=True)
            t0 = time.monotonic()
            subprocess.run([TXL, "eval", log, "--labels", labels, "-o", out] + extra,
                           check=True, capture_output=True)
            mins = (time.monotonic() - t0) / 60
            with open(os.path.join(out, "summary.json")) as f:
                s = json.load(f)
            m = s["session"]
            print("| %s | %s | %d | %.4f | %.4f | %.4f | %.4f | %.1f |" % (
                what, thr, s["sessions"].get("trimmed", 0), m["precision"], m["recall"],
                m["f1"], m["auroc"], mins), flush=True)


def cmd_session_rule(a):
    """The session rule, Q x (1 + M) of each run's validation scores (labels
    unread), for several quantiles Q and margins M, judged on the run's
    test sessions; the rule it replaced (1.5 x the highest, those above 3 x
    the median left out); and the best F1 of any threshold on the same
    scores (what the ranking allows).  Before the grid, where the scores
    lie: the shift of the test sessions' median over the validation
    sessions' (labels unread), and the test sessions that overlap, by
    label and length in lines."""
    for d in a.dirs:
        with open(os.path.join(d, "sessions.csv")) as f:
            rows = list(csv.DictReader(f))
        val = sorted(float(r["score"]) for r in rows if r["split"] == "calibration")
        test = [(float(r["score"]), int(r["label"])) for r in rows if r["split"] == "test"]
        pos = sum(l for _, l in test)
        neg = len(test) - pos
        normal = [s for s, l in test if not l]
        if not val or not pos or not neg:
            sys.exit("%s: sessions.csv needs validation sessions and normal and anomalous "
                     "test sessions (a `txl eval -o DIR` run with labels)" % d)
        low = min((s for s, l in test if l), default=float("inf"))
        print("%s: test median %.4f = %.2f x the validation median %.4f; normal test sessions: "
              "Q99 %.4f, highest %.4f; lowest anomalous %.4f" % (
                  d, quantile([s for s, _ in test], 0.5),
                  quantile([s for s, _ in test], 0.5) / quantile(val, 0.5), quantile(val, 0.5),
                  quantile(normal, 0.99), max(normal), low))
        groups = {}
        for r in rows:
            if r["split"] == "test" and float(r["score"]) >= low:
                g = groups.setdefault((r["label"], int(r["lines"])), [])
                g.append(float(r["score"]))
        print("  test sessions at or above the lowest anomalous score, by label and lines: " +
              ", ".join("%s %d lines: %d at %.2f-%.2f" % ("anomalous" if k[0] == "1" else "normal",
                                                          k[1], len(g), min(g), max(g))
                        for k, g in sorted(groups.items())))

        def judge(thr, scored=test):  # recall, false alarms %, F1 of (score, label) pairs
            tp = sum(1 for s, l in scored if s > thr and l)
            fp = sum(1 for s, l in scored if s > thr and not l)
            f1 = 2 * tp / (2 * tp + fp + (pos - tp)) if tp else 0.0
            return tp / max(pos, 1), 100 * fp / max(neg, 1), f1
        best = max(judge(s - 1e-12)[2] for s, _ in test)
        print("%s: %d validation, %d test sessions (%d anomalous); best F1 of any threshold %.3f"
              % (d, len(val), len(test), pos, best))
        print("| rule | threshold | recall | false alarms % | F1 |")
        print("|---|---|---|---|---|")
        kept = [v for v in val if v <= 3 * quantile(val, 0.5)] or val[:1]
        print("| old: 1.5 x max | %.4f | %.3f | %.2f | %.3f |" % ((1.5 * kept[-1],) + judge(1.5 * kept[-1])))
        for q in a.q:
            for m in a.margin:
                thr = quantile(val, q) * (1 + m)
                print("| Q%g x %g | %.4f | %.3f | %.2f | %.3f |" % ((100 * q, 1 + m, thr) + judge(thr)))
        # the rule that lost (docs/notes/2026-11-27-either-rule.md): flagged
        # when the mean or the worst line's sum is above 1.75 x Q95 of its
        # validation values; ranked by the larger of the two ratios
        bars = {k: 1.75 * quantile(sorted(float(r[k]) for r in rows if r["split"] == "calibration"),
                                   0.95) for k in ("mean", "max_line_sum")}
        either = [(max(float(r[k]) / bars[k] for k in bars), int(r["label"]))
                  for r in rows if r["split"] == "test"]
        best = max(judge(x - 1e-12, either)[2] for x, _ in either)
        print("| either: mean or max-line-sum, Q95 x 1.75 each | 1 (ratio) | %.3f | %.2f | %.3f |"
              % judge(1, either))
        print("  either: AUROC %.4f, best F1 of any threshold %.3f" % (
            auroc([x for x, l in either if l], [x for x, l in either if not l]), best))
        short_session_part(rows, val, judge)


def short_session_part(rows, val, judge):
    """The pipeline's short-session part (lib/anomaly/baseline.h) on a txl
    eval run: the bar is half the 5th percentile of the validation
    sessions' line counts; a test session's level is the larger of its
    score over the rule in use (Q95 x 1.75) and the bar over its lines."""
    thr = 1.75 * quantile(val, 0.95)
    bar = 0.5 * quantile(sorted(int(r["lines"]) for r in rows if r["split"] == "calibration"), 0.05)
    test = [r for r in rows if r["split"] == "test"]
    under = [r for r in test if int(r["lines"]) < bar]
    level = [(max(float(r["score"]) / thr, bar / max(int(r["lines"]), 1)), int(r["label"]))
             for r in test]
    print("  short-session part: bar %.1f lines; %d test sessions under it (%d anomalous), "
          "%d of them already above the threshold" % (
              bar, len(under), sum(int(r["label"]) for r in under),
              sum(1 for r in under if float(r["score"]) > thr)))
    print("  with it: recall %.3f, false alarms %.2f%%, F1 %.3f; AUROC of the level %.4f" % (
        judge(1, level) + (auroc([x for x, l in level if l], [x for x, l in level if not l]),)))


HDFS_LOG, HDFS_LABELS = "HDFS_loglead_dev.log", "HDFS_loglead_dev.block_labels.csv"


def hdfs_file(d, name):
    """d/name; where the HDFS slice is not there, a sentence and exit 1."""
    path = os.path.join(d, name)
    if not os.path.isfile(path):
        sys.exit("%s: no %s here (the HDFS slice of ../shared/data/logs/hdfs)" % (d, name))
    return path


def hdfs_labels(d):
    """Block id -> anomalous, from the slice's label file."""
    labels = {}
    with open(hdfs_file(d, HDFS_LABELS)) as f:
        for row in f:
            k, _, v = row.strip().partition(",")
            if k.startswith("blk_"):
                labels[k] = v in ("Anomaly", "1", "true")
    return labels


def prf(flagged, labels, test):
    """(flagged, P, R, F1) of a set of flagged blocks among the test blocks."""
    fl = [b for b in test if b in flagged]
    tp = sum(1 for b in fl if labels[b])
    p, r = tp / max(1, len(fl)), tp / max(1, sum(labels[b] for b in test))
    return len(fl), p, r, 2 * p * r / max(1e-9, p + r)


def breakdown(name, rows):
    """What a ranking of test blocks gets right and wrong: rows are
    (anomalous, lines, score, flagged).  The blocks that stop after two
    lines are apart (docs/notes/2026-11-26-window-handover.md)."""
    pos = [x for y, n, x, _ in rows if y]
    neg = [x for y, n, x, _ in rows if not y]
    two = [x for y, n, x, _ in rows if y and n == 2]
    print("%s: AUROC %.4f; without the %d anomalous two-line blocks %.4f; their median "
          "score %.3f, the normal median %.3f; flagged %d of them and %d of the other %d "
          "anomalous; false alarms by lines %s" % (
              name, auroc(pos, neg), len(two),
              auroc([x for y, n, x, _ in rows if y and n != 2], neg),
              statistics.median(two) if two else float("nan"), statistics.median(neg),
              sum(1 for y, n, _, f in rows if y and n == 2 and f),
              sum(1 for y, n, _, f in rows if y and n != 2 and f), len(pos) - len(two),
              sorted(n for y, n, _, f in rows if f and not y)))


def hdfs_order_texts(log):
    """hdfs-order's training texts by name, and a validation text (the 96
    blocks after the training ones, only to satisfy txl train)."""
    lines, keys, blocks = hdfs_blocks(log)
    train = set(blocks[:len(blocks) * 2 // 5])  # txl eval: 0.5 x (1 - 0.2)
    by = {}
    for line, k in zip(lines, keys):
        if k is not None:
            by.setdefault(k, []).append(line)
    logged = [(line, k) for line, k in zip(lines, keys) if k in train]

    def windows(n, starts_only):
        """Each run of n logged lines grouped by block, an empty line before
        each group (starts_only: only before a group that holds its
        block's first line; a block's later fragment follows the group
        before it)."""
        out, seen = [], set()
        for w in range(0, len(logged), n):
            groups = {}
            for line, k in logged[w:w + n]:
                groups.setdefault(k, []).append(line)
            for b, g in groups.items():
                primer = "" if starts_only and b in seen else "\n"
                seen.add(b)
                out.append(primer + "".join(l + "\n" for l in g))
        return "".join(out)
    def prefixes(n):
        """Each run of n logged lines: every block with a line in it, by its
        last line there, an empty line and then all its lines from its
        first up to the run's end (what a learner keeping each session's
        lines from its start would see)."""
        out, so_far = [], {}
        for w in range(0, len(logged), n):
            last = {}
            for i, (line, k) in enumerate(logged[w:w + n]):
                so_far.setdefault(k, []).append(line)
                last[k] = i
            for b in sorted(last, key=last.get):
                out.append("\n" + "".join(l + "\n" for l in so_far[b]))
        return "".join(out)
    texts = {"grouped": "".join("\n".join(by[b]) + "\n\n" for b in blocks if b in train),
             "interleaved": "".join(line + "\n" for line, _ in logged),
             "windows": windows(2000, False), "window-starts": windows(2000, True),
             "prefixes": prefixes(2000)}
    rest = blocks[len(train):len(train) + 96]
    return texts, "".join("\n".join(by[b]) + "\n\n" for b in rest)


def cmd_hdfs_order(a):
    """Whether the order of the lines a model learns from decides what
    txlsessions can see (docs/notes/2026-11-27-learning-order.md): the
    bundled model fine-tuned for 600 steps (the learner's batch 8 x 64,
    rate 3e-4) on the training sessions of txl eval's split (the first
    2,304 blocks by first line) once grouped by session, each followed by
    an empty line (txl eval's training text), and once interleaved as in
    the log (what txlsessions' learner sees), and once grouped within each
    run of 2,000 logged lines (what a learner grouping its window would
    see: fragments of blocks), and so with the empty line only before a
    block's first line (window-starts); then `txl eval --model` with each,
    broken down as in hdfs-live."""
    log = hdfs_file(a.dir, HDFS_LOG)
    labels = hdfs_file(a.dir, HDFS_LABELS)
    out = a.keep or tempfile.mkdtemp(prefix="txl-hdfs-order-")
    os.makedirs(out, exist_ok=True)
    texts, val_text = hdfs_order_texts(log)
    if a.only:
        texts = {k: v for k, v in texts.items() if k in a.only}
    val = os.path.join(out, "val.txt")
    with open(val, "w") as f:
        f.write(val_text)
    shape = model_shape()
    for name, text in texts.items():
        path = os.path.join(out, name + ".txt")
        with open(path, "w") as f:
            f.write(text)
        model = os.path.join(out, name + ".gguf")
        subprocess.run([TXL, "train", "--init", common.MODEL, path, "--val", val, "-o", model] + shape +
                       ["--steps", "600", "--batch", "8", "--segment", "64", "--lr", "3e-4",
                        "--min-lr", "3e-5", "--warmup", "60", "--eval-every", "0",
                        "--checkpoint-every", "0", "--log-every", "100000"],
                       check=True, capture_output=True)
        ev = os.path.join(out, "eval-" + name)
        shutil.rmtree(ev, ignore_errors=True)
        subprocess.run([TXL, "eval", log, "--labels", labels, "--model", model, "-o", ev],
                       check=True, capture_output=True)
        with open(os.path.join(ev, "sessions.csv")) as f:
            rows = [r for r in csv.DictReader(f) if r["split"] == "test"]
        breakdown(name, [(r["label"] == "1", int(r["lines"]), float(r["score"]),
                          r["flagged"] == "1") for r in rows])


def hdfs_etype(line):
    """An HDFS line's event type: its component, then the first six words
    of its message, those with a digit or / masked."""
    parts = line.split(None, 5)
    words = ["*" if re.search(r"[\d/]", w) else w
             for w in (parts[5] if len(parts) > 5 else "").split()]
    return (parts[4] if len(parts) > 4 else "") + " " + " ".join(words[:6])


def cmd_hdfs_events(a):
    """What the labels allow on the HDFS split txl eval uses (the first
    half of the blocks by first line learns, the second half is judged):
    each event type, by how many blocks of each half and label hold it;
    then the normal test blocks holding a type that no normal block of the
    first half holds (--lines N: and the test blocks of N lines, grouped by
    label and the types they hold).  A detector that learns "normal" from
    the first half departs from it on those blocks; flagging them, and all
    else right, it reaches at most F1 = 2A / (2A + N) (A anomalous test
    blocks, N those)."""
    labels = hdfs_labels(a.dir)
    blk = re.compile(r"blk_-?\d+")
    types, order, lines = {}, {}, {}  # block -> its types (counted); first line; lines
    with open(hdfs_file(a.dir, HDFS_LOG), errors="replace") as f:
        for line in f:
            e = hdfs_etype(line)
            for b in set(blk.findall(line)):
                order.setdefault(b, len(order))
                t = types.setdefault(b, {})
                t[e] = t.get(e, 0) + 1
                lines[b] = lines.get(b, 0) + 1
    blocks = sorted((b for b in order if b in labels), key=order.get)
    first = set(blocks[:len(blocks) // 2])
    count = {}
    for b in blocks:
        for e in types[b]:
            c = count.setdefault(e, [0, 0, 0, 0])
            c[(0 if b in first else 2) + labels[b]] += 1
    print("first half: normal anomalous | second half: normal anomalous | event type")
    for e, c in sorted(count.items(), key=lambda x: -sum(x[1])):
        print("%6d %6d | %6d %6d | %s" % (c[0], c[1], c[2], c[3], e[:100]))
    test = [b for b in blocks if b not in first]
    pos = sum(labels[b] for b in test)
    for what, seen in (("no normal block of the first half", lambda c: c[0] > 0),
                       ("no block of the first half", lambda c: c[0] + c[1] > 0)):
        novel = [b for b in test if not labels[b]
                 and any(not seen(count[e]) for e in types[b])]
        print("normal test blocks holding a type %s holds: %d; F1 at most %.4f "
              "(%d anomalous test blocks)" % (what, len(novel),
                                              2 * pos / (2 * pos + len(novel)), pos))
    def show(title, chosen, length):
        shapes = {}
        for b in chosen:
            k = (labels[b], lines[b] if length else 0, tuple(sorted(types[b].items())))
            shapes[k] = shapes.get(k, 0) + 1
        print(title + ", by label%s and event types (count x type):" % (
            " and length" if length else ""))
        for (lab, n, sh), k in sorted(shapes.items(), key=lambda x: (x[0][0], x[0][1], -x[1])):
            print("  %d %s%s: %s" % (k, "anomalous" if lab else "normal",
                                     " of %d lines" % n if length else "",
                                     "; ".join("%d x %s" % (c, e[:60]) for e, c in sh)))
    for n in a.lines or []:
        show("test blocks of %d lines" % n, [b for b in test if lines[b] == n], False)
    for text in a.holding or []:
        for half, chosen in (("first", [b for b in blocks if b in first]), ("second", test)):
            show("%s half's blocks holding a type with %r" % (half, text),
                 [b for b in chosen if any(text in e for e in types[b])], True)


def cmd_hdfs_stalls(a):
    """A simulation, not a product rule (docs/notes/2026-11-26-stalled-
    sessions.md): a block is stalled when it has been quiet (log time) for
    longer than max(FLOOR, K x the longest pause ever seen after its last
    event type), once that type has MINN observed pauses; the pauses are
    learnt as lines arrive, no label read but to judge.  Fixed before its
    one run: K 4, FLOOR 60 s (--floor), MINN 50.  --eps E: a quiet spell past the
    limit is a timeout of its type, and a stall only while that type's
    timeouts (this one included) are at most E of its outcomes (pauses and
    timeouts): types that often end a session are not stalls.  Both halves
    are reported (the first: the development half).  --kept: the flags of a
    hdfs-live run's records are combined with the stalls."""
    import calendar
    K, FLOOR, MINN = 4.0, a.floor, 50
    labels = hdfs_labels(a.dir)
    blk = re.compile(r"blk_-?\d+")

    etype = hdfs_etype
    last, first, stalled = {}, {}, {}  # block -> (time, type); first line; (line, quiet, limit, type)
    maxgap, n, timeouts, out = {}, {}, {}, set()  # out: blocks past their limit
    with open(hdfs_file(a.dir, HDFS_LOG), errors="replace") as f:
        for i, line in enumerate(f):
            try:
                t = calendar.timegm(time.strptime(line[:13], "%y%m%d %H%M%S"))
            except ValueError:
                continue
            e = etype(line)
            for b in set(blk.findall(line)):
                first.setdefault(b, i)
                if b in last and b not in stalled and b not in out:  # stalled blocks teach nothing
                    t0, e0 = last[b]
                    maxgap[e0] = max(maxgap.get(e0, 0), t - t0)
                    n[e0] = n.get(e0, 0) + 1
                out.discard(b)
                last[b] = (t, e)
            if i % 200 == 0:  # a sweep every 200 lines
                for b, (t0, e0) in last.items():
                    lim = max(FLOOR, K * maxgap.get(e0, 0))
                    if b in stalled or b in out or n.get(e0, 0) < MINN or t - t0 <= lim:
                        continue
                    if a.eps is None:
                        stalled[b] = (i, t - t0, lim, e0)
                        continue
                    out.add(b)
                    timeouts[e0] = timeouts.get(e0, 0) + 1
                    if timeouts[e0] <= a.eps * (n[e0] + timeouts[e0]):
                        stalled[b] = (i, t - t0, lim, e0)
    blocks = sorted((b for b in first if b in labels), key=lambda b: first[b])
    flags = set()
    if a.kept:
        with open(a.kept) as f:
            flags = {r["session"] for r in map(json.loads, f) if r.get("flag")}
    for half, part in (("first half", blocks[:len(blocks) // 2]),
                       ("test half", blocks[len(blocks) // 2:])):
        n_st, _, _, _ = prf(stalled, labels, part)
        tp = sum(1 for b in part if b in stalled and labels[b])
        print("%s: blocks %d (%d anomalous): stalled %d, anomalous %d, normal %d" % (
            half, len(part), sum(labels[b] for b in part), n_st, tp, n_st - tp))
        if a.verbose:
            for b in part:
                if b in stalled:
                    print("  %s %s line %d, quiet %d s > %d s after %s" % (
                        (b, "anomalous" if labels[b] else "normal") + stalled[b]))
        if a.kept:
            print("  with the pipeline's flags: flagged %d, P %.3f R %.3f F1 %.3f" %
                  prf(flags | set(stalled), labels, part))


def add_commands(sub):
    s = sub.add_parser("hdfs")
    s.add_argument("dir")
    split = s.add_mutually_exclusive_group()
    split.add_argument("--dev", action="store_true",
                       help="the development split (the first half's blocks) instead")
    split.add_argument("--reversed", action="store_true",
                       help="the second half's blocks learn, the first half's are judged")
    s.add_argument("--keep", help="keep txl eval's output in DIR/label-free and DIR/labelled")
    s.set_defaults(func=cmd_hdfs)
    s = sub.add_parser("session-rule")
    s.add_argument("dirs", nargs="+")
    s.add_argument("--q", type=float, nargs="*", default=[0.9, 0.95, 0.99])
    s.add_argument("--margin", type=float, nargs="*", default=[0.25, 0.5, 0.75, 1])
    s.set_defaults(func=cmd_session_rule)
    s = sub.add_parser("hdfs-stalls")
    s.add_argument("dir")
    s.add_argument("--kept", help="a hdfs-live --keep file whose flags are combined")
    s.add_argument("--eps", type=float, help="stall only types that time out at most this often")
    s.add_argument("--floor", type=float, default=60, help="the shortest limit, seconds (60)")
    s.add_argument("-v", "--verbose", action="store_true", help="list the stalled blocks")
    s.set_defaults(func=cmd_hdfs_stalls)
    s = sub.add_parser("hdfs-order")
    s.add_argument("dir")
    s.add_argument("--keep", help="keep the texts, models and txl eval outputs in this folder")
    s.add_argument("--only", nargs="*",
                   choices=["grouped", "interleaved", "windows", "window-starts", "prefixes"],
                   help="only these texts (default: all four)")
    s.set_defaults(func=cmd_hdfs_order)
    s = sub.add_parser("hdfs-events")
    s.add_argument("dir")
    s.add_argument("--holding", nargs="*", help="also both halves' blocks with an event "
                   "type containing this text, by label, length and event types")
    s.add_argument("--lines", type=int, nargs="*",
                   help="also the event types of the test blocks of these lengths")
    s.set_defaults(func=cmd_hdfs_events)

#!/usr/bin/python3
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Measures what the bundled model and learning on the stream do on real
logs, and regenerates the tables of docs/quality-logs.md.

  tools/quality.py loghub DIR        out of the box, and learning on the first
                                     1,000 lines of each sample (table 1)
  tools/quality.py inject LOG... --other LOG...
                                     recall of injected anomalies and false
                                     alarms, learning on the stream (table 2)
  tools/quality.py hdfs DIR [--dev | --reversed]
                                     txl eval on the HDFS slice (--dev: on
                                     its development split, --reversed: the
                                     halves swapped), without labels
                                     (its default) and with them
                                     (--normal-only) (table 3)
  tools/quality.py offline LOG... [--minutes 10]
                                     bits per byte of the last 1,000 lines:
                                     learning on the stream against the same
                                     model fine-tuned offline on the first
                                     1,000 for 10 minutes (table 1b)
  tools/quality.py hdfs-live DIR [--dev | --late] [--reversed] [--max-session-memory BYTES]
                                     the pipeline path on the HDFS slice in
                                     one pass: txlsessions learn=true, the
                                     running session rule, the bundled model;
                                     the second half's sessions judged
                                     (docs/notes/2026-11-25-label-free-eval.md);
                                     --keep FILE / --from-kept FILE, --eval-dir
                                     DIR: a breakdown against `txl eval`;
                                     --q Q... --margin M...: the running
                                     session rule replayed with other
                                     constants over the records
  tools/quality.py hdfs-stalls DIR [--kept FILE]
                                     a timeout by a block's last event,
                                     simulated (docs/notes/2026-11-26-
                                     stalled-sessions.md)
  tools/quality.py hdfs-events DIR  the HDFS slice's event types by half and
                                     label, and the F1 the labels allow a
                                     detector of departures from the first
                                     half (docs/quality-logs.md, table 3)
  tools/quality.py hdfs-order DIR [--keep K]
                                     the bundled model fine-tuned on the
                                     HDFS training sessions grouped by
                                     session, and interleaved as logged:
                                     what each lets txl eval see
  tools/quality.py line-costs LOG --other LOG... [--show N] [--keep FILE]
                                     the injected stream's token costs, and
                                     other ways of summing a line up, ranked
                                     against the injected labels
                                     (docs/notes/2026-11-27-injected-lines.md)
  tools/quality.py rule LOG... --other LOG...
                                     the grid the label-free rule's constants
                                     were chosen from (docs/anomaly.md)
  tools/quality.py session-rule DIR...
                                     the session rule's quantile and margin
                                     replayed on `txl eval -o DIR` runs
                                     (hdfs --keep keeps them): recall, false
                                     alarms and F1 of each, and the best F1
                                     any threshold reaches

Every run of txl here is `txl score` with its defaults (plus --learn where
learning is measured); the label-free rule is lib/anomaly/baseline.h's,
re-played here only by `rule`, to see its constants' neighbours."""
import argparse
import csv
import hashlib
import json
import math
import os
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TXL = os.path.join(ROOT, "build", "tools", "txl")
MODEL = os.path.join(ROOT, "models", "default.gguf")


def score(path, learn=False, warmup=1000):
    """txl score's records of every line of path, and its wall time."""
    cmd = [TXL, "score", "-m", MODEL, path]
    if learn:
        cmd[2:2] = ["--learn", "--learn-warmup", str(warmup)]
    t0 = time.monotonic()
    out = subprocess.run(cmd, check=True, capture_output=True, text=True)
    return [json.loads(l) for l in out.stdout.splitlines()], \
        time.monotonic() - t0, out.stderr


def read_lines(path, limit=None):
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [l.rstrip("\n") for l in f if l.strip()]
    return lines[:limit] if limit else lines


def inject(lines, others, rate, seed):
    """lines with a fraction `rate` of anomalies put among them: a line of
    another service, or a line of this log whose message after its first
    few fields is replaced by another service's text (an error that never
    occurs here), half each.  Returns (lines, labels)."""
    rnd = random.Random(seed)
    out, lab = [], []
    for line in lines:
        if rnd.random() < rate:
            other = rnd.choice(others)
            if rnd.random() < 0.5:
                out.append(other)
            else:
                head = " ".join(line.split(" ")[:3])
                tail = " ".join(other.split(" ")[3:]) or other
                out.append(head + " " + tail)
            lab.append(1)
        out.append(line)
        lab.append(0)
    return out, lab


def flag_rate(recs, first=None):
    recs = recs[first:] if first else recs
    return sum(r["flag"] for r in recs) / max(1, len(recs))


def mean_bpb(recs):
    v = [r["bpb"] for r in recs if r["bpb"] is not None]
    return statistics.fmean(v) if v else float("nan")


def cmd_loghub(a):
    rows = []
    for name in sorted(os.listdir(a.dir)):
        if not name.endswith(".log"):
            continue
        path = os.path.join(a.dir, name)
        lines = read_lines(path)
        with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
            f.write("\n".join(lines[:2000]) + "\n")
            f.flush()
            box, _, _ = score(f.name)
            learnt, secs, err = score(f.name, learn=True, warmup=1000)
        last = learnt[-1000:]
        # the round's own time, as txl score prints it
        m = re.search(r"learnt round 1 after line \d+ \(\d+ steps, [^)]*?([0-9.]+) s\)", err)
        rows.append((name[:-4], mean_bpb(box), 100 * flag_rate(box),
                     mean_bpb(last), 100 * flag_rate(last),
                     sum(r["warmup"] for r in last), float(m.group(1)) if m else float("nan"),
                     secs))
        print("%-12s box %.3f bpb %5.1f%% | learnt %.3f bpb %5.1f%% flagged "
              "(%d warm-up) round %.0f s, run %.0f s" % rows[-1], file=sys.stderr)
    print("| log | bundled model: bits/byte | flagged | learning on the first "
          "1,000 lines, last 1,000: bits/byte | flagged | round (s) | run (s) |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        print("| %s | %.3f | %.1f%% | %.3f | %.1f%% | %.0f | %.0f |" %
              (r[0], r[1], r[2], r[3], r[4], r[6], r[7]))


def injected_stream(path, others, seed, rate=0.02, n=3000):
    """The first n lines of path with a fraction `rate` of lines of the
    other logs injected (inject): the stream of table 2, and its labels."""
    return inject(read_lines(path, n), [l for o in others for l in read_lines(o)], rate, seed)


def injected_run(path, others, seed, rate=0.02, n=3000):
    what = repr((os.path.abspath(path), sorted(others), MODEL, seed, rate, n,
                 os.path.getmtime(MODEL), os.path.getmtime(TXL)))
    key = os.path.join(tempfile.gettempdir(), "txl-quality-%s.json" %
                       hashlib.sha256(what.encode()).hexdigest()[:16])
    if os.path.exists(key):
        with open(key) as f:
            return tuple(json.load(f))
    stream, lab = injected_stream(path, others, seed, rate, n)
    with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
        f.write("\n".join(stream) + "\n")
        f.flush()
        recs, secs, _ = score(f.name, learn=True, warmup=1000)
    with open(key, "w") as f:
        json.dump([recs, lab, secs], f)
    return recs, lab, secs


def recall_fa(recs, lab, start):
    tp = sum(1 for r, y in zip(recs[start:], lab[start:]) if y and r["flag"])
    pos = sum(lab[start:])
    fp = sum(1 for r, y in zip(recs[start:], lab[start:]) if not y and r["flag"])
    neg = len(lab[start:]) - pos
    return tp, pos, fp, neg


def found_at_one_percent(pos, neg):
    """How many of the scores pos lie above the best threshold that leaves
    at most 1% of the scores neg above it: a bound on the ranking, not a
    rule."""
    neg = sorted(neg, reverse=True)
    cut = neg[int(0.01 * len(neg))] if neg else float("inf")
    return sum(1 for x in pos if x > cut)


REF_WEIGHT = 0.25  # lib/anomaly/reference.h's TXL_LINE_REF_WEIGHT


def judged(r):
    """What txl's line rule judges: `worst`, less a quarter of the model
    file's cost where the line was judged relative to it (`ref_bpb`,
    learning)."""
    w = r["worst"] if r["worst"] is not None else float("inf")
    return w - REF_WEIGHT * r["ref_bpb"] if r.get("ref_bpb") is not None else w


def best_at_one_percent(recs, lab, start):
    """Injected lines above the best threshold the labels allow at <= 1%
    false alarms, by what txl judges."""
    return found_at_one_percent([judged(r) for r, y in zip(recs[start:], lab[start:]) if y],
                                [judged(r) for r, y in zip(recs[start:], lab[start:]) if not y])


def cmd_inject(a):
    print("| log | injected after warm-up | found | false alarms | "
          "found at <= 1% false alarms by the best threshold the labels allow |")
    print("|---|---|---|---|---|")
    for path in a.logs:
        recs, lab, _ = injected_run(path, a.other, a.seed)
        start = next(i for i, r in enumerate(recs) if not r["warmup"])
        tp, pos, fp, neg = recall_fa(recs, lab, start)
        print("| %s | %d | %d (%.1f%%) | %d of %d (%.2f%%) | %d |" %
              (os.path.basename(path), pos, tp, 100 * tp / max(pos, 1), fp,
               neg, 100 * fp / max(neg, 1), best_at_one_percent(recs, lab, start)))


def quantile(v, q):
    """v's quantile q, interpolated between order statistics (as
    lib/anomaly/baseline.c)."""
    v = sorted(v)
    pos = q * (len(v) - 1)
    k = int(pos)
    hi = v[k + 1] if k + 1 < len(v) else v[k]
    return v[k] + (pos - k) * (hi - v[k])


def replay(recs, q, margin, floor, window=1000, warm=50):
    """lib/anomaly/baseline.h's rule (txl_baseline_judge) over recorded
    scores (what txl judges: judged()), with other constants: every
    finite score joins the window,
    and the threshold is the window's q-quantile plus margin times its
    distance from the median (at least floor)."""
    ring, flags = [], []
    for r in recs:
        x = judged(r)
        if r.get("_gen0", False):
            flags.append(False)
            continue
        if len(ring) < warm:
            flags.append(False)
        else:
            hi, med = quantile(ring, q), quantile(ring, 0.5)
            flags.append(not x <= hi + margin * max(hi - med, floor))
        if x != float("inf"):
            ring.append(x)
        ring = ring[-window:]
    return flags


def cmd_rule(a):
    runs = []
    for path in a.logs:
        recs, lab, _ = injected_run(path, a.other, a.seed)
        # lines scored by the model file's weights (learning's warm-up)
        first = next(i for i, r in enumerate(recs) if not r["warmup"]) - 50
        for i, r in enumerate(recs):
            r["_gen0"] = i < first
        runs.append((os.path.basename(path), recs, lab, first + 50))
    print("Q margin floor | " + " | ".join(n for n, _, _, _ in runs) +
          "   (recall%/false-alarm%)")
    for q in a.q:
      for k in a.margin:
        for floor in a.floor:
            cells = []
            for _, recs, lab, start in runs:
                fl = replay(recs, q, k, floor)
                tp = sum(1 for f, y in zip(fl[start:], lab[start:]) if f and y)
                fp = sum(1 for f, y in zip(fl[start:], lab[start:]) if f and not y)
                pos = sum(lab[start:])
                neg = len(lab) - start - pos
                cells.append("%5.1f/%4.2f" % (100 * tp / max(pos, 1),
                                              100 * fp / max(neg, 1)))
            print("%5.3f %4.2f %4.2f | %s" % (q, k, floor, " | ".join(cells)))


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


def model_shape():
    """txl train's options for the bundled model's tokenizer and shape."""
    info = json.loads(subprocess.run([TXL, "info", MODEL], check=True,
                                     capture_output=True, text=True).stdout)
    return ["--tokenizer", "bpe", "--vocab", str(info["n_token"]), "--normalize",
            "--layers", str(info["n_layer"]), "--d-model", str(info["d_model"]),
            "--heads", str(info["n_head"]), "--d-head", str(info["d_head"]),
            "--d-inner", str(info["d_inner"]), "--mem-len", str(info["mem_len"])]


def offline_cmd(inputs, val, out):
    """txl train --init: the bundled model's shape, the learner's batch
    8 x 64 and rate 3e-4 (about constant: the cosine spans a million
    steps), validation only when a piece stops."""
    return [TXL, "train", "--init", MODEL] + inputs + ["--val", val, "-o", out] + model_shape() + \
        ["--steps", "1000000", "--batch", "8", "--segment", "64", "--lr", "3e-4",
         "--min-lr", "3e-5", "--warmup", "100", "--eval-every", "0",
         "--checkpoint-every", "0", "--log-every", "100000"]


def offline_train(first, val, model, minutes, every=25, patience=6):
    """The bundled model fine-tuned offline (txl train --init, the learner's
    batch 8 x 64 and rate 3e-4) on `first`, validated on `val` every `every`
    steps.  The best model by validation is kept; training stops after
    `patience` validations without a better one, or after `minutes` of CPU
    time (one thread), so that a busy machine does not cut it short.  It
    runs in pieces of `every` steps (--stop-after, then --resume), so that
    each piece's model can be kept.  Returns (steps of the best model, steps
    run, CPU minutes)."""
    run = model + ".run.gguf"
    base = offline_cmd([first], val, run)
    def cpu():  # of the finished txl train runs
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        return ru.ru_utime + ru.ru_stime
    best, best_step, step, since, t0 = float("inf"), 0, 0, 0, cpu()
    while since < patience and cpu() - t0 < minutes * 60:
        step += every
        out = subprocess.run(base + ["--stop-after", str(step)] + (["--resume"] if step > every else []),
                             check=True, capture_output=True, text=True, env=dict(os.environ, TXL_NUM_THREADS="1"))
        v = [float(l.split()[5]) for l in out.stderr.splitlines() if l.startswith("validation step")]
        if v[-1] < best:
            best, best_step, since = v[-1], step, 0
            shutil.copyfile(run, model)
        else:
            since += 1
    return best_step, step, (cpu() - t0) / 60


def cmd_offline(a):
    """Learning on the stream (txl score --learn, as table 1) against the
    bundled model fine-tuned offline on the same first 1,000 lines: lines
    1-900 to train, 901-1,000 to find the best number of steps by
    validation (at most --minutes of CPU), then that many steps again on
    all 1,000 lines (the learner trains on all of them too).  Each scores
    the last 1,000 lines after reading the first 1,000 (the same memory).
    --steps N skips the learning run and the search: only the refit."""
    env = dict(os.environ, TXL_NUM_THREADS="1")
    if not a.steps:
        print("| log | learning on the stream: bits/byte | offline on 1-900, best by 901-1,000: "
              "bits/byte | best at step | CPU minutes | the same steps on 1-1,000: bits/byte |")
        print("|---|---|---|---|---|---|")
    for path in a.logs:
        lines = read_lines(path)[:2000]
        with tempfile.TemporaryDirectory() as tmp:
            train, val, both = (os.path.join(tmp, n) for n in ("train.log", "val.log", "both.log"))
            for p, ls in ((train, lines[:900]), (val, lines[900:1000]), (both, lines)):
                with open(p, "w") as f:
                    f.write("\n".join(ls) + "\n")

            def last_bpb(model):
                return mean_bpb([json.loads(l) for l in subprocess.run(
                    [TXL, "score", "-m", model, both], check=True, capture_output=True,
                    text=True).stdout.splitlines()][-1000:])
            row = [os.path.basename(path)[:-4]]
            best_step = a.steps
            if not a.steps:
                learnt, _, _ = score(both, learn=True, warmup=1000)
                model = os.path.join(tmp, "offline.gguf")
                best_step, _, mins = offline_train(train, val, model, a.minutes)
                row += ["%.3f" % mean_bpb(learnt[-1000:]), "%.3f" % last_bpb(model),
                        str(best_step), "%.1f" % mins]
            refit = os.path.join(tmp, "refit.gguf")
            subprocess.run(offline_cmd([train, val], val, refit) + ["--stop-after", str(best_step)],
                           check=True, capture_output=True, text=True, env=env)
            row += ["%.3f" % last_bpb(refit)]
        print("| %s |" % " | ".join(row), flush=True)


def auroc(pos, neg):
    """P(an anomalous score above a normal one), ties counting half."""
    import bisect
    neg = sorted(neg)
    hits = 0.0
    for p in pos:
        lo, hi = bisect.bisect_left(neg, p), bisect.bisect_right(neg, p)
        hits += lo + 0.5 * (hi - lo)
    return hits / max(1, len(pos) * len(neg))


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
            el = ["txlsessions", "model=" + MODEL, "learn=true"]
            if a.max_session_memory:
                el.append("max-session-memory=%d" % a.max_session_memory)
            t0 = time.monotonic()
            subprocess.run(["gst-launch-1.0", "-q", "filesrc",
                            "location=" + log, "!",
                            "txltokenizer", "model=" + MODEL, "!"] + el +
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
    print("judged by the running rule: %d; AUROC of score / threshold %.3f" % (
        len(judged), auroc([s["score"] / s["threshold"] for s in judged if labels[s["session"]]],
                           [s["score"] / s["threshold"] for s in judged if not labels[s["session"]]])))
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
        subprocess.run([TXL, "train", "--init", MODEL, path, "--val", val, "-o", model] + shape +
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


def token_costs(log, model):
    """-ln P of every scored token of log under model, by 1-based line:
    filesrc ! txltokenizer ! txlmodel ! filesink, the score records
    (plugins/txltokens.h: id, logprob, line, byte start, byte length,
    flags, position; 40 bytes each, little-endian)."""
    import struct
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "scores.bin")
        subprocess.run(["gst-launch-1.0", "-q", "filesrc", "location=" + log, "!",
                        "txltokenizer", "model=" + MODEL, "!", "txlmodel", "model=" + model,
                        "!", "filesink", "location=" + out], check=True, capture_output=True,
                       env=dict(os.environ, GST_PLUGIN_PATH=os.path.join(ROOT, "build", "plugins")))
        with open(out, "rb") as f:
            b = f.read()
    costs = {}
    for off in range(0, len(b) - 39, 40):
        _, lp, line, _, _, _, _ = struct.unpack_from("<ifqQIIq", b, off)
        if lp == lp:  # the stream's first token has none
            costs.setdefault(line, []).append(-lp)
    return costs


def line_candidates(nll, norm_bytes):
    """Other ways to sum up a line's token costs (nats), beside txl's
    `worst`: bits per normalised byte, the costliest token, the three
    costliest, the whole line, the costliest run of 4 and of 8 tokens."""
    top = sorted(nll, reverse=True)
    runs = {k: max((sum(nll[i:i + k]) for i in range(max(1, len(nll) - k + 1))), default=0.0)
            for k in (4, 8)}
    return {"bits per byte": sum(nll) / math.log(2) / max(norm_bytes, 1),
            "costliest token": top[0] if top else 0.0, "three costliest": sum(top[:3]),
            "line total": sum(nll), "costliest 4 tokens": runs[4], "costliest 8 tokens": runs[8]}


def keep_line_costs(path, recs, lab, base):
    """line-costs --keep: every line, the warm-up's too, as JSON lines:
    txl score's record, its label (`injected`) and the bundled model's bits
    per normalised byte (`bundled_bpb`, from its token costs in nats by
    line), to replay rules over
    (docs/notes/2026-11-28-reference-model.md)."""
    with open(path, "w") as f:
        for r, y in zip(recs, lab):
            b = sum(base.get(r["line"], [])) / math.log(2) / max(r["norm_bytes"] or 1, 1)
            f.write(json.dumps(dict(r, injected=y, bundled_bpb=b)) + "\n")


def cmd_line_costs(a):
    """Where an injected stream's lines cost what they cost: the stream of
    `inject` (the first 3,000 lines, 2% injected, the seed), learnt as
    `txl score --learn` does; then every token scored again by the adapted
    weights and by the bundled model.  For each way of summing a line up,
    the injected lines after the warm-up found at <= 1% false alarms by the
    best threshold the labels allow, and the AUROC; with --show N, the
    token costs of the injected lines and of the N costliest normal ones."""
    stream, lab = injected_stream(a.log, a.other, a.seed)
    with tempfile.TemporaryDirectory() as tmp:
        log, adapted = os.path.join(tmp, "stream.log"), os.path.join(tmp, "adapted.gguf")
        with open(log, "w") as f:
            f.write("\n".join(stream) + "\n")
        out = subprocess.run([TXL, "score", "-m", MODEL, "--learn", "--learn-model", adapted, log],
                             check=True, capture_output=True, text=True)
        recs = [json.loads(l) for l in out.stdout.splitlines()]
        if "learnt round 2" in out.stderr:
            sys.exit("line-costs: a second round took over; only the first round's weights "
                     "are scored again here")
        start = next((i for i, r in enumerate(recs) if not r["warmup"]), len(recs))
        labels = lab[start:]
        if not any(labels) or all(labels):
            sys.exit("line-costs: %s: after the warm-up, %d lines judged, %d of them injected; "
                     "a ranking needs both injected and normal lines (a log of more than the "
                     "warm-up's 1,050 lines)" % (a.log, len(labels), sum(labels)))
        cost, base = token_costs(log, adapted), token_costs(log, MODEL)
    if a.keep:
        keep_line_costs(a.keep, recs, lab, base)
    rows = []
    for r in recs[start:]:
        c = line_candidates(cost.get(r["line"], []), r["norm_bytes"] or 1)
        c["worst (txl)"] = r["worst"] if r["worst"] is not None else float("inf")
        b = sum(base.get(r["line"], [])) / math.log(2) / max(r["norm_bytes"] or 1, 1)
        c["bits per byte less the bundled model's"] = c["bits per byte"] - b
        rows.append(c)
    # the adapted weights scored every judged line: their bits per byte
    # must be txl score's, or the comparison is not of the same scores
    drift = max((abs(c["bits per byte"] - r["bpb"]) for c, r in zip(rows, recs[start:])
                 if r["bpb"] is not None), default=0.0)
    print("%s: %d lines judged, %d injected; bits per byte against txl score's: "
          "largest difference %.1e" % (os.path.basename(a.log), len(labels), sum(labels), drift))
    print("| line score | injected found at <= 1%% false alarms (of %d) | AUROC |" % sum(labels))
    print("|---|---|---|")
    for k in rows[0]:
        pos = [c[k] for c, y in zip(rows, labels) if y]
        neg = [c[k] for c, y in zip(rows, labels) if not y]
        print("| %s | %d | %.3f |" % (k, found_at_one_percent(pos, neg), auroc(pos, neg)))
    if a.show:
        normal = sorted((i for i, y in enumerate(labels) if not y),
                        key=lambda i: -rows[i]["worst (txl)"])[:a.show]
        for i in [i for i, y in enumerate(labels) if y] + normal:
            r = recs[start + i]
            print("%s %.2f bpb: %s\n    %s" % ("injected" if labels[i] else "normal  ", r["worst"],
                                              r["text"][:100], " ".join(
                                                  "%.1f" % x for x in cost.get(r["line"], []))))


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


def main():
    global MODEL
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", default=MODEL, help="model file (default: the bundled one)")
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("loghub")
    s.add_argument("dir")
    s = sub.add_parser("offline")
    s.add_argument("logs", nargs="+")
    s.add_argument("--minutes", type=float, default=10)
    s.add_argument("--steps", type=int, default=0,
                   help="refit only, for this many steps (a search's best)")
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
    s = sub.add_parser("hdfs-stalls")
    s.add_argument("dir")
    s.add_argument("--kept", help="a hdfs-live --keep file whose flags are combined")
    s.add_argument("--eps", type=float, help="stall only types that time out at most this often")
    s.add_argument("--floor", type=float, default=60, help="the shortest limit, seconds (60)")
    s.add_argument("-v", "--verbose", action="store_true", help="list the stalled blocks")
    s = sub.add_parser("hdfs-order")
    s.add_argument("dir")
    s.add_argument("--keep", help="keep the texts, models and txl eval outputs in this folder")
    s.add_argument("--only", nargs="*",
                   choices=["grouped", "interleaved", "windows", "window-starts", "prefixes"],
                   help="only these texts (default: all four)")
    s = sub.add_parser("hdfs-events")
    s.add_argument("dir")
    s.add_argument("--holding", nargs="*", help="also both halves' blocks with an event "
                   "type containing this text, by label, length and event types")
    s.add_argument("--lines", type=int, nargs="*",
                   help="also the event types of the test blocks of these lengths")
    s = sub.add_parser("line-costs")
    s.add_argument("log")
    s.add_argument("--other", nargs="+", required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--show", type=int, default=0,
                   help="also print the token costs of the injected lines and this many normal ones")
    s.add_argument("--keep", metavar="FILE",
                   help="write every line's record, label and bundled-model bits per byte (JSON lines)")
    s = sub.add_parser("hdfs")
    s.add_argument("dir")
    split = s.add_mutually_exclusive_group()
    split.add_argument("--dev", action="store_true",
                       help="the development split (the first half's blocks) instead")
    split.add_argument("--reversed", action="store_true",
                       help="the second half's blocks learn, the first half's are judged")
    s.add_argument("--keep", help="keep txl eval's output in DIR/label-free and DIR/labelled")
    s = sub.add_parser("session-rule")
    s.add_argument("dirs", nargs="+")
    s.add_argument("--q", type=float, nargs="*", default=[0.9, 0.95, 0.99])
    s.add_argument("--margin", type=float, nargs="*", default=[0.25, 0.5, 0.75, 1])
    for name in ("inject", "rule"):
        s = sub.add_parser(name)
        s.add_argument("logs", nargs="+")
        s.add_argument("--other", nargs="*", default=[])
        s.add_argument("--seed", type=int, default=1)
        s.add_argument("--q", type=float, nargs="*", default=[0.95, 0.98, 0.99, 0.995])
        s.add_argument("--margin", type=float, nargs="*", default=[0, 0.25, 0.5, 1, 2])
        s.add_argument("--floor", type=float, nargs="*", default=[0.1, 0.3])
    a = p.parse_args()
    MODEL = a.model
    {"loghub": cmd_loghub, "inject": cmd_inject, "rule": cmd_rule,
     "hdfs": cmd_hdfs, "offline": cmd_offline, "hdfs-live": cmd_hdfs_live,
     "hdfs-stalls": cmd_hdfs_stalls, "hdfs-events": cmd_hdfs_events,
     "hdfs-order": cmd_hdfs_order, "session-rule": cmd_session_rule,
     "line-costs": cmd_line_costs}[a.cmd](a)


if __name__ == "__main__":
    main()

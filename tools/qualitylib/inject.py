# SPDX-License-Identifier: LGPL-2.1-or-later
"""Table 2 of docs/quality-logs.md: anomalies injected into a real log, found
and false alarms; the line rule replayed with other constants; other ways
of summing a line's token costs up."""
import hashlib
import json
import math
import os
import random
import subprocess
import sys
import tempfile

from qualitylib import common
from qualitylib.common import ROOT, TXL, auroc, judged, quantile, read_lines, score


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


def injected_stream(path, others, seed, rate=0.02, n=3000):
    """The first n lines of path with a fraction `rate` of lines of the
    other logs injected (inject): the stream of table 2, and its labels."""
    return inject(read_lines(path, n), [l for o in others for l in read_lines(o)], rate, seed)


def injected_run(path, others, seed, rate=0.02, n=3000):
    what = repr((os.path.abspath(path), sorted(others), common.MODEL, seed, rate, n,
                 os.path.getmtime(common.MODEL), os.path.getmtime(TXL)))
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


def token_records(log, model):
    """(id, logprob, line) of every token of log under model, line 1-based:
    filesrc ! txltokenizer ! txlmodel ! filesink, the score records
    (plugins/txltokens.h: id, logprob, line, byte start, byte length,
    flags, position; 40 bytes each, little-endian)."""
    import struct
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "scores.bin")
        subprocess.run(["gst-launch-1.0", "-q", "filesrc", "location=" + log, "!",
                        "txltokenizer", "model=" + common.MODEL, "!", "txlmodel", "model=" + model,
                        "!", "filesink", "location=" + out], check=True, capture_output=True,
                       env=dict(os.environ, GST_PLUGIN_PATH=os.path.join(ROOT, "build", "plugins")))
        with open(out, "rb") as f:
            b = f.read()
    return [struct.unpack_from("<ifqQIIq", b, off)[:3] for off in range(0, len(b) - 39, 40)]


def token_costs(log, model):
    """-ln P of every scored token of log under model, by 1-based line."""
    costs = {}
    for _, lp, line in token_records(log, model):
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
        out = subprocess.run([TXL, "score", "-m", common.MODEL, "--learn", "--learn-model", adapted, log],
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
        cost, base = token_costs(log, adapted), token_costs(log, common.MODEL)
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


def add_commands(sub):
    for name, func in (("inject", cmd_inject), ("rule", cmd_rule)):
        s = sub.add_parser(name)
        s.add_argument("logs", nargs="+")
        s.add_argument("--other", nargs="*", default=[])
        s.add_argument("--seed", type=int, default=1)
        s.add_argument("--q", type=float, nargs="*", default=[0.95, 0.98, 0.99, 0.995])
        s.add_argument("--margin", type=float, nargs="*", default=[0, 0.25, 0.5, 1, 2])
        s.add_argument("--floor", type=float, nargs="*", default=[0.1, 0.3])
        s.set_defaults(func=func)
    s = sub.add_parser("line-costs")
    s.add_argument("log")
    s.add_argument("--other", nargs="+", required=True)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--show", type=int, default=0,
                   help="also print the token costs of the injected lines and this many normal ones")
    s.add_argument("--keep", metavar="FILE",
                   help="write every line's record, label and bundled-model bits per byte (JSON lines)")
    s.set_defaults(func=cmd_line_costs)

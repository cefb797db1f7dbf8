# SPDX-License-Identifier: LGPL-2.1-or-later
"""What every measurement shares: running `txl score`, reading logs,
quantiles and AUROC as txl computes them, and what txl's line rule judges."""
import json
import os
import statistics
import subprocess
import time


# the source tree this file is in: tools/qualitylib/common.py
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TXL = os.path.join(ROOT, "build", "tools", "txl")
# the model every run scores with; quality.py --model sets it
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


def flag_rate(recs, first=None):
    recs = recs[first:] if first else recs
    return sum(r["flag"] for r in recs) / max(1, len(recs))


def mean_bpb(recs):
    v = [r["bpb"] for r in recs if r["bpb"] is not None]
    return statistics.fmean(v) if v else float("nan")


REF_WEIGHT = 0.25  # lib/anomaly/reference.h's TXL_LINE_REF_WEIGHT


def judged(r):
    """What txl's line rule judges: `worst`, less a quarter of the model
    file's cost where the line was judged relative to it (`ref_bpb`,
    learning)."""
    w = r["worst"] if r["worst"] is not None else float("inf")
    return w - REF_WEIGHT * r["ref_bpb"] if r.get("ref_bpb") is not None else w


def quantile(v, q):
    """v's quantile q, interpolated between order statistics (as
    lib/anomaly/baseline.c)."""
    v = sorted(v)
    pos = q * (len(v) - 1)
    k = int(pos)
    hi = v[k + 1] if k + 1 < len(v) else v[k]
    return v[k] + (pos - k) * (hi - v[k])


def auroc(pos, neg):
    """P(an anomalous score above a normal one), ties counting half."""
    import bisect
    neg = sorted(neg)
    hits = 0.0
    for p in pos:
        lo, hi = bisect.bisect_left(neg, p), bisect.bisect_right(neg, p)
        hits += lo + 0.5 * (hi - lo)
    return hits / max(1, len(pos) * len(neg))

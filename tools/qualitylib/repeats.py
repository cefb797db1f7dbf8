# SPDX-License-Identifier: LGPL-2.1-or-later
"""A burst of one kind of line as one alert: the line rule's flags with
repeats left out, replayed on the records `quality.py novelty --keep`
made (docs/notes/2026-11-29-repeats.md)."""
import collections
import glob
import json
import os
import re

from qualitylib.inject import replay

WARM = 50  # the line rule's (lib/anomaly/baseline.h)
HORIZON = 100  # lines a flagged kind is remembered
_RUN = re.compile(r"[0-9a-fA-F]*[0-9][0-9a-fA-F]*")


def kind(text):
    """A line's kind: its text with each run of hex digits that holds a
    decimal digit replaced by one mark."""
    return _RUN.sub("#", text)


def without_repeats(recs, flags, horizon=HORIZON):
    """The flags, but a flagged line whose kind was flagged (repeat or not)
    within the previous `horizon` lines is not."""
    last, out = {}, []
    for i, (r, f) in enumerate(zip(recs, flags)):
        k = kind(r["text"])
        out.append(f and not (k in last and i - last[k] <= horizon))
        if f:
            last[k] = i
    return out


def load(path):
    """A kept record: its lines (learning's first weights marked as not
    judged, as the line rule does), labels and first judged line."""
    with open(path) as f:
        d = json.load(f)
    recs = d["recs"]
    first = next((i for i, r in enumerate(recs) if not r["warmup"]), None)
    if first is None:
        raise SystemExit("repeats: %s ended in the warm-up" % path)
    for i, r in enumerate(recs):
        r["_gen0"] = i < first - WARM
    return recs, d["lab"], first


def rules(recs):
    cur = replay(recs, 0.9, 1.5, 0.3)
    if any(c != r["flag"] for c, r in zip(cur, recs)):
        raise SystemExit("repeats: the current rule's replay differs from the recorded flags")
    return {"current": cur,
            "R (repeats)": without_repeats(recs, cur),
            "R1 (repeats, margin 1.0)": without_repeats(recs, replay(recs, 0.9, 1.0, 0.3))}


def cmd_repeats(a):
    paths = sorted(p for d in a.keep for p in glob.glob(os.path.join(d, "*.json")))
    if not paths:
        raise SystemExit("repeats: no records (*.json) in %s" % " ".join(a.keep))
    tot = collections.defaultdict(collections.Counter)
    for p in paths:
        # novelty's parts: table1-LOG, and the injected streams (table2-,
        # choice-, newsoftware-, knownsoftware-LOG) counted together
        part = "table1" if os.path.basename(p).startswith("table1-") else "injected"
        recs, lab, first = load(p)
        for rule, fl in rules(recs).items():
            t = tot[part, rule]
            if part == "table1":
                n = sum(fl[-1000:])
                t["flagged"] += n
                t["logs"] += 1
                t["logs <= 1%"] += n <= 10
            else:
                J = range(first, len(recs))
                t["found"] += sum(1 for i in J if fl[i] and lab[i])
                t["injected"] += sum(1 for i in J if lab[i])
                t["false alarms"] += sum(1 for i in J if fl[i] and not lab[i])
                t["normal"] += sum(1 for i in J if not lab[i])
    names = ["current", "R (repeats)", "R1 (repeats, margin 1.0)"]
    print("| rule | table 1: flagged / logs at <= 1% | injected: found / false alarms |")
    print("|---|---|---|")
    for r in names:
        t1, inj = tot["table1", r], tot["injected", r]
        print("| %s | %d / %d of %d | %d of %d / %d of %d (%.2f%%) |" % (
            r, t1["flagged"], t1["logs <= 1%"], t1["logs"], inj["found"], inj["injected"],
            inj["false alarms"], inj["normal"], 100.0 * inj["false alarms"] / max(inj["normal"], 1)))
    c1, ci = tot["table1", "current"], tot["injected", "current"]
    r1, ri = tot["table1", names[1]], tot["injected", names[1]]
    s1, si = tot["table1", names[2]], tot["injected", names[2]]
    verdict = lambda ok: "passes" if all(ok) else "loses"
    print("R %s: table 1 %d <= 0.9 x %d and %d >= %d logs; found %d >= 0.97 x %d; "
          "false alarms %d <= %d" % (
              verdict([r1["flagged"] <= 0.9 * c1["flagged"], r1["logs <= 1%"] >= c1["logs <= 1%"],
                       ri["found"] >= 0.97 * ci["found"], ri["false alarms"] <= ci["false alarms"]]),
              r1["flagged"], c1["flagged"], r1["logs <= 1%"], c1["logs <= 1%"],
              ri["found"], ci["found"], ri["false alarms"], ci["false alarms"]))
    print("R1 %s: found %d >= 1.05 x %d; false alarms %d <= 1%% of %d and <= 1.1 x %d; "
          "table 1 %d <= %d and %d >= %d logs" % (
              verdict([si["found"] >= 1.05 * ci["found"],
                       si["false alarms"] <= 0.01 * si["normal"],
                       si["false alarms"] <= 1.1 * ci["false alarms"],
                       s1["flagged"] <= c1["flagged"], s1["logs <= 1%"] >= c1["logs <= 1%"]]),
              si["found"], ci["found"], si["false alarms"], si["normal"], ci["false alarms"],
              s1["flagged"], c1["flagged"], s1["logs <= 1%"], c1["logs <= 1%"]))


def add_commands(sub):
    s = sub.add_parser("repeats", help="the line rule without repeats, replayed on kept records")
    s.add_argument("keep", nargs="+", help="folders of `novelty --keep` records")
    s.set_defaults(func=cmd_repeats)

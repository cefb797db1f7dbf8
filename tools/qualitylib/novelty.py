# SPDX-License-Identifier: LGPL-2.1-or-later
"""Is a line new to its stream?  A line's novelty (the mean surprisal of its
token ids under the counts of the stream's earlier tokens) and three rules
over it, replayed on `txl score --learn`'s records against the current
line rule (docs/notes/2026-11-29-novelty.md).  None of them is built."""
import collections
import json
import math
import os
import subprocess
import tempfile

from qualitylib import common
from qualitylib.common import ROOT, auroc, judged, quantile, read_lines, score
from qualitylib.inject import found_at_one_percent, injected_stream, replay, token_records

# table 2's two directions, and the corpus streams the choices were made on
TABLE2_A = "Apache HDFS Hadoop OpenSSH Zookeeper Linux".split()
TABLE2_B = "Android HPC HealthApp Mac OpenStack Proxifier Spark Thunderbird Windows".split()
CHOICE = "tomcat10 memcached apache2 system".split()
CHOICE_OTHER = "sshd postfix zookeeper".split()
WINDOW, WARM = 1000, 50  # the line rule's (lib/anomaly/baseline.h)


def token_ids(log):
    """Each line's token ids under the model's tokenizer, by 1-based line."""
    ids = {}
    for tid, _, line in token_records(log, common.MODEL):
        ids.setdefault(line, []).append(tid)
    return ids


_MODEL_IDS = {}


def model_id():
    """The model file's id (`txl info`), kept in each record: records made
    with another model are not read as this one's."""
    if common.MODEL not in _MODEL_IDS:
        info = subprocess.run([common.TXL, "info", common.MODEL], check=True,
                              capture_output=True, text=True).stdout
        _MODEL_IDS[common.MODEL] = json.loads(info)["model_id"]
    return _MODEL_IDS[common.MODEL]


def record(keep, name, lines, lab):
    """txl score --learn's records of the lines, their labels and token ids,
    kept as keep/name.json (made once)."""
    path = os.path.join(keep, name + ".json")
    if not os.path.exists(path):
        with tempfile.NamedTemporaryFile("w", suffix=".log") as f:
            f.write("\n".join(lines) + "\n")
            f.flush()
            recs, _, _ = score(f.name, learn=True, warmup=1000)
            ids = token_ids(f.name)
        # whole or not at all: a run stopped here leaves no half file to
        # be read again as records
        with open(path + ".tmp", "w") as f:
            json.dump({"recs": recs, "lab": lab, "ids": {str(k): v for k, v in ids.items()},
                       "model": model_id()}, f)
        os.replace(path + ".tmp", path)
    with open(path) as f:
        d = json.load(f)
    # (records kept before 2026-11-29's held-out logs name no model)
    if d.get("model", model_id()) != model_id():
        raise SystemExit("novelty: %s was recorded with another model than %s: give another "
                         "--keep folder" % (path, common.MODEL))
    recs = d["recs"]
    return recs, d["lab"], [d["ids"].get(str(r["line"]), []) for r in recs]


def novelty(ids_by_line, vocab=1024):
    """Each line's mean surprisal in bits under the Krichevsky-Trofimov
    estimate (c + 1/2) / (N + V/2) from every earlier line's ids; then its
    ids are counted.  NaN for a line without ids."""
    count, total, out = collections.Counter(), 0, []
    for ids in ids_by_line:
        bits = [-math.log2((count[i] + 0.5) / (total + 0.5 * vocab)) for i in ids]
        out.append(sum(bits) / len(bits) if bits else float("nan"))
        count.update(ids)
        total += len(ids)
    return out


def unseen(ids_by_line):
    """How many of each line's ids no earlier line had."""
    seen, out = set(), []
    for ids in ids_by_line:
        out.append(sum(1 for i in ids if i not in seen))
        seen.update(ids)
    return out


def over_window(values, skip, test):
    """test(x, window) for each value, the window being the last WINDOW
    values that were not skipped (False while it holds fewer than WARM);
    skipped values (learning's warm-up) neither join nor are tested."""
    ring, out = [], []
    for x, s in zip(values, skip):
        if s:
            out.append(False)
            continue
        out.append(len(ring) >= WARM and test(x, ring))
        ring.append(x)
        ring = ring[-WINDOW:]
    return out


def stream_rule(margin, q=0.9, floor=0.3):
    """The line rule's test with another margin."""
    def test(x, ring):
        hi, med = quantile(ring, q), quantile(ring, 0.5)
        return x > hi + margin * max(hi - med, floor)
    return test


def above_median(x, ring):
    return x > quantile(ring, 0.5)


def rules(recs, ids_by_line):
    """Every rule's flags for one stream, and the index of its first judged
    line."""
    first = next((i for i, r in enumerate(recs) if not r["warmup"]), None)
    if first is None:
        raise SystemExit("novelty: a stream of %d lines ended in the warm-up (learning's 1,000 "
                         "lines and the rule's %d): nothing was judged" % (len(recs), WARM))
    first -= WARM
    for i, r in enumerate(recs):
        r["_gen0"] = i < first  # scored by the model file's weights
    skip = [r["_gen0"] for r in recs]
    cur = replay(recs, 0.9, 1.5, 0.3)
    nov = novelty(ids_by_line)
    by_nov = over_window(nov, skip, stream_rule(3.0))
    g1 = [c and m for c, m in zip(cur, over_window(nov, skip, above_median))]
    u = unseen(ids_by_line)
    judged_from = first + WARM
    out = {"current": cur, "1: OR novelty rule": [c or n for c, n in zip(cur, by_nov)],
           "2: G1 (AND above median)": g1, "G2 (G1 OR novelty rule)": [g or n for g, n in zip(g1, by_nov)]}
    for k in (1, 2, 3):
        out["N_%d (OR >= %d unseen)" % (k, k)] = [c or (i >= judged_from and u[i] >= k)
                                                  for i, c in enumerate(cur)]
    return out, judged_from, nov


def plain_log(folder, name, keep):
    """folder/name.log, or folder/name.log.zst unpacked into keep (once)."""
    plain = os.path.join(folder, name + ".log")
    if os.path.exists(plain):
        return plain
    if not os.path.exists(plain + ".zst"):
        raise SystemExit("novelty: no %s(.zst) in %s" % (name + ".log", folder))
    out = os.path.join(keep, name + ".log")
    if not os.path.exists(out):
        with open(out + ".tmp", "wb") as f:
            subprocess.run(["zstd", "-q", "-dc", plain + ".zst"], stdout=f, check=True)
        os.replace(out + ".tmp", out)
    return out


def streams(a):
    """(part, name, lines, labels) of the choice, table 2 and table 1
    streams; with --held-out, of the held-out logs instead: injected with
    lines of the other held-out logs ("new software") and of the corpus's
    sshd, postfix and zookeeper ("known software"), and as table 1."""
    corpus = a.corpus or os.path.join(ROOT, "data", "corpus")
    if a.held_out:
        if not os.path.isdir(a.held_out):
            raise SystemExit("novelty: --held-out %s is not a folder" % a.held_out)
        names = sorted({f.split(".")[0] for f in os.listdir(a.held_out) if ".log" in f})
        if len(names) < 2:
            raise SystemExit("novelty: %s holds fewer than two logs" % a.held_out)
        logs = {n: plain_log(a.held_out, n, a.keep) for n in names}
        known = [plain_log(corpus, o, a.keep) for o in CHOICE_OTHER]
        for n in names:
            if len(read_lines(logs[n])) < 3000:
                raise SystemExit("novelty: %s has fewer than 3,000 lines" % logs[n])
            s, lab = injected_stream(logs[n], [logs[o] for o in names if o != n], a.seed)
            yield "new software", n, s, lab
            s, lab = injected_stream(logs[n], known, a.seed)
            yield "known software", n, s, lab
            yield "table 1", n, read_lines(logs[n])[:2000], [0] * 2000
        return
    loghub = lambda n: os.path.join(a.loghub, n + "_2k.log")
    missing = [loghub(n) for n in TABLE2_A + TABLE2_B if not os.path.exists(loghub(n))]
    if missing:
        raise SystemExit("novelty: the Loghub samples are not all there: %s" % ", ".join(missing))
    for n in CHOICE:
        s, lab = injected_stream(plain_log(corpus, n, a.keep),
                                 [plain_log(corpus, o, a.keep) for o in CHOICE_OTHER], a.seed)
        yield "choice", n, s, lab
    for names, others in ((TABLE2_A, TABLE2_B), (TABLE2_B, TABLE2_A)):
        for n in names:
            s, lab = injected_stream(loghub(n), [loghub(o) for o in others], a.seed)
            yield "table 2", n, s, lab
    for n in TABLE2_A + TABLE2_B:
        yield "table 1", n, read_lines(loghub(n))[:2000], [0] * 2000


def print_grid(part, streams_of_part):
    """The first rule (current OR novelty over the stream rule) with other
    constants, on one part's streams: found / false alarms on injected
    streams, lines flagged (of the last 1,000) and samples at <= 1% on
    table 1's.  Its margin was chosen on the choice streams' grid."""
    print("| Q | margin | floor | %s |" % ("flagged | samples at <= 1%" if part == "table 1"
                                        else "found | false alarms"))
    print("|---|---|---|---|---|")
    ready = [(recs, lab) + rules(recs, ids) for recs, lab, ids in streams_of_part]
    for q in (0.9, 0.95, 0.98, 0.99):
        for margin in (0.0, 1.0, 1.5, 2.0, 3.0, 4.0):
            for floor in (0.3, 1.0):
                tp = fp = n1 = 0
                for recs, lab, flags, start, nov in ready:
                    cur = flags["current"]
                    by = over_window(nov, [r["_gen0"] for r in recs], stream_rule(margin, q, floor))
                    fl = [c or b for c, b in zip(cur, by)]
                    if part == "table 1":
                        tp += sum(fl[-1000:])
                        n1 += sum(fl[-1000:]) <= 10
                        continue
                    tp += sum(1 for i in range(start, len(recs)) if fl[i] and lab[i])
                    fp += sum(1 for i in range(start, len(recs)) if fl[i] and not lab[i])
                print("| %.2f | %.1f | %.1f | %d | %d |" % (q, margin, floor, tp, n1 if part == "table 1" else fp))


def print_demo(d):
    """tools/demo.sh's run (its folder: real.log, scores.jsonl, injected.txt):
    each put-in line's novelty and its rank among the other judged lines,
    and what the first rule (current OR novelty, Q90, margin 3) flags."""
    with open(os.path.join(d, "scores.jsonl")) as f:
        recs = [json.loads(line) for line in f]
    with open(os.path.join(d, "injected.txt")) as f:
        put_in = {int(x) for x in f.read().split()}
    ids = token_ids(os.path.join(d, "real.log"))
    flags, start, nov = rules(recs, [ids.get(r["line"], []) for r in recs])
    if any(f != r["flag"] for f, r in zip(flags["current"], recs)):
        raise SystemExit("novelty: the current rule's replay differs from txlsink's flags")
    normal = sorted((nov[i] for i in range(start, len(recs)) if recs[i]["line"] not in put_in),
                    reverse=True)
    print("%d judged lines besides the %d put in: novelty highest %.2f, median %.2f bits per token"
          % (len(normal), len(put_in), normal[0], normal[len(normal) // 2]))
    rule = "1: OR novelty rule"
    for i in range(start, len(recs)):
        if recs[i]["line"] in put_in:
            print("line %d: novelty %.2f, %d other lines above it; flagged: current %s, %s %s" % (
                recs[i]["line"], nov[i], sum(1 for x in normal if x > nov[i]),
                flags["current"][i], rule, flags[rule][i]))
    print("others flagged: current %d, %s %d" % tuple(
        [sum(1 for i in range(start, len(recs)) if flags[k][i] and recs[i]["line"] not in put_in)
         for k in ("current",)] + [rule] +
        [sum(1 for i in range(start, len(recs)) if flags[rule][i] and recs[i]["line"] not in put_in)]))


def cmd_novelty(a):
    if a.demo:
        print_demo(a.demo)
        return
    if not (a.loghub or a.held_out) or not a.keep:
        raise SystemExit("novelty: give the Loghub samples' folder or --held-out DIR, and --keep DIR "
                         "(or --demo DIR)")
    os.makedirs(a.keep, exist_ok=True)
    if a.grid:
        by_part = collections.defaultdict(list)
        for part, n, lines, lab in streams(a):
            by_part[part].append(record(a.keep, "%s-%s" % (part.replace(" ", ""), n), lines, lab))
        for part, recorded in by_part.items():
            print("%s:" % part)
            print_grid(part, recorded)
        return
    tot = collections.defaultdict(collections.Counter)
    per_stream = []
    for part, name, lines, lab in streams(a):
        recs, lab, ids = record(a.keep, "%s-%s" % (part.replace(" ", ""), name), lines, lab)
        flags, start, nov = rules(recs, ids)
        if any(f != r["flag"] for f, r in zip(flags["current"], recs)):
            raise SystemExit("%s: the current rule's replay differs from txl score's flags" % name)
        J = range(start, len(recs))
        for rule, fl in flags.items():
            t = tot[part, rule]
            if part == "table 1":
                n = sum(fl[-1000:])
                t["flagged"] += n
                t["samples <= 1%"] += n <= 10
            else:
                t["found"] += sum(1 for i in J if fl[i] and lab[i])
                t["false alarms"] += sum(1 for i in J if fl[i] and not lab[i])
        if part != "table 1" and part != "choice":
            pos = [i for i in J if lab[i]]
            neg = [i for i in J if not lab[i]]
            row = [name if part == "table 2" else "%s (%s)" % (name, part)]
            for v in ([judged(r) for r in recs], nov, [r["worst"] for r in recs]):
                p, q = [v[i] for i in pos], [v[i] for i in neg]
                row += [found_at_one_percent(p, q), auroc(p, q)]
            row += ["%d / %d" % (sum(1 for i in pos if flags[k][i]), sum(1 for i in neg if flags[k][i]))
                    for k in ("current", "1: OR novelty rule")]
            per_stream.append(row)
    print("| injected stream | current | 1: OR novelty rule | at <= 1%, best threshold: "
          "`worst` less 1/4 of the model file's / novelty / plain `worst` | AUROC: the same three |")
    print("|---|---|---|---|---|")
    for n, fw, aw, fn, an, fp, ap, c, o in per_stream:
        print("| %s | %s | %s | %d / %d / %d | %.3f / %.3f / %.3f |" % (n, c, o, fw, fn, fp, aw, an, ap))
    print("| all | | | %d / %d / %d | |" % tuple(sum(r[k] for r in per_stream) for k in (1, 3, 5)))
    print()
    parts = [p for p in dict.fromkeys(p for p, _ in tot) if p != "table 1"]
    print("| rule | %s | table 1: flagged, samples at <= 1%% |" %
          " | ".join("%s: found / false alarms" % p for p in parts))
    print("|---|" + "---|" * (len(parts) + 1))
    for rule in dict.fromkeys(rule for _, rule in tot):
        t1 = tot["table 1", rule]
        print("| %s | %s | %d, %d |" % (rule, " | ".join(
            "%d / %d" % (tot[p, rule]["found"], tot[p, rule]["false alarms"]) for p in parts),
            t1["flagged"], t1["samples <= 1%"]))


def add_commands(sub):
    s = sub.add_parser("novelty")
    s.add_argument("loghub", nargs="?", help="the Loghub 2k samples' folder")
    s.add_argument("--held-out", metavar="DIR",
                   help="instead of Loghub, the held-out logs (data/held-out: software in "
                   "neither the corpus nor Loghub), injected and as table 1")
    s.add_argument("--corpus", help="the corpus's folder (default: data/corpus, .log.zst)")
    s.add_argument("--keep", metavar="DIR",
                   help="where each stream's records are kept (made once, read again)")
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--grid", action="store_true",
                   help="only the first rule's constants, on each part's streams (its margin "
                   "was chosen on the choice streams')")
    s.add_argument("--demo", metavar="DIR",
                   help="instead, tools/demo.sh's run in DIR (build/demo): the novelty of the "
                   "lines it puts in")
    s.set_defaults(func=cmd_novelty)

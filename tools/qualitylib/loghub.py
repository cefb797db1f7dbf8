# SPDX-License-Identifier: LGPL-2.1-or-later
"""Table 1 and 1b of docs/quality-logs.md: each Loghub sample out of the box
and learning on its first 1,000 lines; the same model fine-tuned offline."""
import json
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile

from qualitylib import common
from qualitylib.common import TXL, flag_rate, mean_bpb, read_lines, score


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


def model_shape():
    """txl train's options for the bundled model's tokenizer and shape."""
    info = json.loads(subprocess.run([TXL, "info", common.MODEL], check=True,
                                     capture_output=True, text=True).stdout)
    return ["--tokenizer", "bpe", "--vocab", str(info["n_token"]), "--normalize",
            "--layers", str(info["n_layer"]), "--d-model", str(info["d_model"]),
            "--heads", str(info["n_head"]), "--d-head", str(info["d_head"]),
            "--d-inner", str(info["d_inner"]), "--mem-len", str(info["mem_len"])]


def offline_cmd(inputs, val, out):
    """txl train --init: the bundled model's shape, the learner's batch
    8 x 64 and rate 3e-4 (about constant: the cosine spans a million
    steps), validation only when a piece stops."""
    return [TXL, "train", "--init", common.MODEL] + inputs + ["--val", val, "-o", out] + model_shape() + \
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


def add_commands(sub):
    s = sub.add_parser("loghub")
    s.add_argument("dir")
    s.set_defaults(func=cmd_loghub)
    s = sub.add_parser("offline")
    s.add_argument("logs", nargs="+")
    s.add_argument("--minutes", type=float, default=10)
    s.add_argument("--steps", type=int, default=0,
                   help="refit only, for this many steps (a search's best)")
    s.set_defaults(func=cmd_offline)

#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# The main job: build, then run a GStreamer pipeline that scores a real log of
# this machine (/var/log/dpkg.log, the package manager's log) with the bundled
# model, learning what is normal from the log itself (docs/learning.md), and
# show the lines it flags.  A few lines of other programs are put into the
# second half, so that there is something to find.
set -e
cd "$(dirname "$0")/.."
# TXL_BUILD_DIR: a build folder of this tree other than build (the tests')
B=${TXL_BUILD_DIR:-build}
[ -d "$B" ] || meson setup "$B" >/dev/null
ninja -C "$B" >/dev/null
mkdir -p "$B/demo"
LOG=${1:-/var/log/dpkg.log}
[ -r "$LOG" ] || { echo "demo: cannot read $LOG (name a log file)" >&2; exit 1; }
n=$(head -n 3000 "$LOG" | wc -l)
[ "$n" -ge 200 ] || { echo "demo: $LOG has only $n lines (name a longer log)" >&2; exit 1; }
warm=$(( n / 2 < 1000 ? n / 2 : 1000 ))
# the log's first 3,000 lines, and after the warm-up five lines that no
# package manager writes (their line numbers go to injected.txt)
/usr/bin/python3 - "$LOG" "$warm" "$B/demo/real.log" "$B/demo/injected.txt" <<'EOF'
import sys
src, warm, out, marks = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
lines = open(src, encoding="utf-8", errors="replace").read().splitlines()[:3000]
odd = [
    "Nov 25 03:14:07 web1 kernel: Out of memory: Killed process 4242 (postgres) total-vm:8388608kB, anon-rss:6291456kB",
    "Nov 25 03:14:09 web1 sshd[5150]: Failed password for invalid user admin from 203.0.113.7 port 52211 ssh2",
    "2026-11-25 03:14:11.204 UTC [977] FATAL:  could not write to file \"pg_wal/xlogtemp.977\": No space left on device",
    "[Wed Nov 25 03:14:13 2026] [error] [client 198.51.100.23] File does not exist: /var/www/html/wp-login.php",
    "java.lang.IllegalStateException: Connection pool shut down at org.apache.http.impl.conn.PoolingHttpClientConnectionManager.requestConnection(PoolingHttpClientConnectionManager.java:269)",
]
rest = len(lines) - warm
at = [warm + (i + 1) * rest // (len(odd) + 1) for i in range(len(odd))]
for k, (pos, line) in enumerate(zip(reversed(at), reversed(odd))):
    lines.insert(pos, line)
at = [p + i for i, p in enumerate(at)]  # positions after the insertions
open(out, "w").write("\n".join(lines) + "\n")
open(marks, "w").write("\n".join(str(p + 1) for p in at) + "\n")
EOF
export GST_PLUGIN_PATH="$(cd "$B" && pwd)/plugins"
MODEL=models/default.gguf
echo "gst-launch-1.0 filesrc location=$B/demo/real.log ! txltokenizer model=$MODEL \\"
echo "    ! txlmodel model=$MODEL learn=true learn-warmup=$warm ! txlsink location=$B/demo/scores.jsonl"
t0=$(date +%s)
gst-launch-1.0 -q filesrc location="$B/demo/real.log" ! txltokenizer model=$MODEL \
  ! txlmodel model=$MODEL learn=true learn-warmup=$warm \
  ! txlsink location="$B/demo/scores.jsonl"
echo "($(( $(date +%s) - t0 )) s: the first $warm lines are the warm-up, learnt from, then scored against the stream's own recent lines)"
/usr/bin/python3 - "$B/demo/scores.jsonl" "$B/demo/injected.txt" <<'EOF'
import json, sys
recs = [json.loads(l) for l in open(sys.argv[1])]
odd = {int(x) for x in open(sys.argv[2]).read().split()}
warm = sum(r.get("warmup", False) for r in recs)
flagged = [r for r in recs if r["flag"]]
print("%d lines: %d warm-up, %d flagged (what is judged: the worst part, less a quarter"
      " of the model file's cost; bits per normalised byte):" % (len(recs), warm, len(flagged)))
for r in flagged:
    judged = float("inf") if r["worst"] is None else r["worst"] - 0.25 * (r.get("ref_bpb") or 0.0)
    print("  line %4d  %5.2f  %s%s" % (r["line"], judged, r["text"][:100],
                                       "   <- put in" if r["line"] in odd else ""))
print("put in: %d of %d found" % (sum(r["line"] in odd for r in flagged), len(odd)))
EOF

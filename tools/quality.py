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
  tools/quality.py novelty LOGHUB_DIR --keep DIR
                                     is a line new to its stream: the
                                     novelty of its tokens and three rules
                                     over it, on the corpus (choice), table
                                     2's and table 1's streams (docs/notes/
                                     2026-11-29-novelty.md)
  tools/quality.py novelty --held-out data/held-out --keep DIR
                                     the same, and today's rule, on logs of
                                     software in neither the corpus nor
                                     Loghub (docs/notes/2026-11-29-held-out-
                                     logs.md)
  tools/quality.py repeats DIR...     the line rule with a burst of one kind
                                     of line flagged once, replayed on
                                     `novelty --keep` records (docs/notes/
                                     2026-11-29-repeats.md)
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

from qualitylib import common, hdfs, hdfs_live, inject, loghub, novelty, repeats


def main():
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--model", default=common.MODEL, help="model file (default: the bundled one)")
    sub = p.add_subparsers(dest="cmd", required=True)
    for m in (loghub, inject, hdfs, hdfs_live, novelty, repeats):
        m.add_commands(sub)
    a = p.parse_args()
    common.MODEL = a.model
    a.func(a)


if __name__ == "__main__":
    main()

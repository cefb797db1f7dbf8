/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A robust running baseline of per-line scores, for flagging anomalies
 * without a hand-set threshold: after a warm-up, a line is compared with
 * the lines of a sliding window before it, by the median and the median
 * absolute deviation (a z-score that a few outliers in the window do not
 * move), or by a quantile. */
#ifndef TXL_BASELINE_H
#define TXL_BASELINE_H

#include "txl.h"

typedef enum {
  TXL_BASELINE_MAD = 0,      /* score = (x - median) / (1.4826 * MAD) */
  TXL_BASELINE_QUANTILE = 1, /* score = x - the q-quantile of the window */
} TxlBaselineKind;

typedef struct _TxlBaseline TxlBaseline;

/* window >= 2 values kept; warmup in [1, window] values before any score;
 * q in (0, 1) for QUANTILE (ignored for MAD). */
TxlBaseline *txl_baseline_new(TxlBaselineKind kind, int window, int warmup,
                              double q, GError **error);
void txl_baseline_free(TxlBaseline *b);
/* Scores x against the window.  Returns FALSE (and leaves *score alone)
 * during warm-up. */
gboolean txl_baseline_score(TxlBaseline *b, double x, double *score);
/* Adds x to the window (non-finite x is ignored).  With the MAD and
 * quantile scores, callers leave flagged values out, so that a burst of
 * anomalies does not raise the bar for the next one. */
void txl_baseline_add(TxlBaseline *b, double x);

/* The label-free line threshold, in the unit of the values (bits per
 * normalised byte for line scores): a quantile Q of the window plus
 * MARGIN times its distance from the median (at least FLOOR).  Every line
 * joins the window, flagged or not: Q sits below the costliest tenth, so
 * anomalies up to several percent of the lines do not move it, and a
 * lasting change of the stream becomes its new normal within a window.
 * Built on quantiles, it holds whatever the shape of the scores (logs mix
 * templates of very different costs, where a mean or a median and a
 * spread alone mislead).  How the constants were chosen, and on which
 * data: docs/anomaly.md.  FALSE during warm-up. */
#define TXL_STREAM_RULE_Q 0.9
#define TXL_STREAM_RULE_MARGIN 1.5
#define TXL_STREAM_RULE_FLOOR 0.3
/* Recent lines the rule looks at, and how many it needs first. */
#define TXL_STREAM_RULE_WINDOW 1000
#define TXL_STREAM_RULE_WARMUP 50
gboolean txl_baseline_threshold(TxlBaseline *b, double *threshold);
/* The same rule over n values of a caller's (reordered in place; INFINITY
 * when n is 0): txl eval applies it to all its validation lines. */
double txl_stream_rule_threshold(double *v, gsize n);

/* The label-free session threshold, in the unit of the session scores:
 * their quantile Q times 1 + MARGIN.  Session scores (means over a
 * session's tokens) are tightly bunched, and later sessions shift a little
 * (HDFS: blocks cut off by the end of the recording); a factor absorbs that
 * shift where a spread-based rule flags it.  Q stands for the highest
 * normal score: anomalies among the scores, up to 1 - Q of them, sit above
 * it and do not move it (the maximum moved with the first of them).
 * Q and MARGIN were chosen on a development split of the HDFS slice
 * (docs/notes/2026-11-27-session-rule.md).  txl eval applies it to its
 * validation sessions, txlsessions to the last WINDOW ended sessions,
 * flagged or not (docs/notes/2026-11-27-session-window.md). */
#define TXL_SESSION_RULE_Q 0.95
#define TXL_SESSION_RULE_MARGIN 0.75
#define TXL_SESSION_RULE_WINDOW 1000
#define TXL_SESSION_RULE_WARMUP 50
/* over n values of a caller's (reordered in place; INFINITY when n is 0),
 * with the given margin (txl eval --margin) */
double txl_session_rule_threshold(double *v, gsize n, double margin);
/* over b's window (values: session scores); FALSE during warm-up */
gboolean txl_baseline_session_threshold(TxlBaseline *b, double *threshold);

/* The label-free rule for a session that ends far shorter than the
 * stream's sessions (a block that stops after two lines where blocks have
 * thirteen or more): flagged when its line count is under FRACTION of the
 * quantile Q of the line counts of the last WINDOW ended sessions (every
 * one joins, flagged or not; a count does not depend on the weights, so
 * the window goes on across rounds).  Q is the session rule's 1 - Q: up to
 * that share of the sessions may be short without moving it, and a stream
 * whose sessions are often one line never trips it.  Neither constant was
 * fitted (docs/notes/2026-11-28-short-sessions.md). */
#define TXL_SHORT_SESSION_Q 0.05
#define TXL_SHORT_SESSION_FRACTION 0.5
/* the bar over b's window (values: line counts), in lines; FALSE during
 * warm-up */
gboolean txl_baseline_short_session_bar(TxlBaseline *b, double *bar);
/* How far past its bars a session is: score / threshold, or bar / lines
 * when bar > 0, whichever is larger; above 1 exactly when the rules flag
 * it.  NAN without a positive threshold or bar, or for a score that is
 * not finite. */
double txl_session_level(double score, double threshold, gint64 lines,
                         double bar);
/* The rule applied to one value: *flag = x above the threshold (or not
 * finite); x then joins the window.  Returns FALSE, flag FALSE, during
 * warm-up. */
gboolean txl_baseline_judge(TxlBaseline *b, double x, gboolean *flag);
int txl_baseline_count(const TxlBaseline *b);
void txl_baseline_reset(TxlBaseline *b);
/* The values from now on come from another source (new weights score
 * differently): they judge alone once `warmup` of them have come; until
 * then the values before judge, so that no value goes unjudged. */
void txl_baseline_restart(TxlBaseline *b);
/* The window's values and position, for snapshots.  Restore refuses (and
 * leaves b alone) state saved with another kind, window or warm-up. */
GBytes *txl_baseline_save(const TxlBaseline *b);
/* The same state over a caller's buffer (docs/api.md, "State as bytes"):
 * its size, the bytes (0 when size is too small, else the bytes
 * written), and a baseline continuing from them; set refuses malformed
 * or foreign bytes and then leaves b untouched. */
gsize txl_baseline_state_get_size(const TxlBaseline *b);
gsize txl_baseline_state_get_data(const TxlBaseline *b, guint8 *dst,
                                  gsize size);
gboolean txl_baseline_state_set_data(TxlBaseline *b, const guint8 *src,
                                     gsize size, GError **error);
gboolean txl_baseline_restore(TxlBaseline *b, GBytes *state, GError **error);

#endif

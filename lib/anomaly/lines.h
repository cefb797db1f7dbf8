/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Scored tokens -> scored lines: the one place where the per-token
 * log-probabilities of a line become that line's scores, for `txl score`,
 * txlmodel, txlsink, TxlSessions (and through it txlsessions and
 * `txl eval`).  See docs/line-scores.md.
 *
 * A line's cost is measured in bits per normalised byte: the bytes its
 * tokens stand for after the tokenizer's normalisation (a run of 5,000
 * digits folded into one <NUM> token counts as the 5 bytes "<NUM>", not
 * 5,000), so that content the model never saw cannot dilute it.  Besides
 * the mean over the whole line, the line's worst part is kept: the highest
 * cost of any run of consecutive tokens holding at least
 * TXL_LINE_WINDOW_BYTES normalised bytes.  The score thresholds apply to
 * (txl_line_worst()) is the larger of the two, so padding a line with
 * cheap content leaves the window over its anomalous part in place.
 *
 * Non-finite token costs (a NaN or infinite log-probability, from broken
 * weights or arithmetic that overflowed) are counted, never summed: a line
 * with any is reported with non-finite scores (written as JSON null) and
 * is always flagged. */
#ifndef TXL_LINES_H
#define TXL_LINES_H

#include "bytes.h"
#include "txl.h"

/* Normalised bytes of the worst-part window.  128 keeps the worst part of
 * the lines of a typical log (most under 128 normalised bytes) equal to
 * their mean, so thresholds chosen on means still hold, while a padded
 * line's anomalous part keeps its own window (docs/line-scores.md). */
#define TXL_LINE_WINDOW_BYTES 128

/* A complete line's summary: fixed size, what travels downstream and in
 * snapshots once the line is done. */
typedef struct {
  gint64 tokens;      /* tokens scored (non-finite ones included) */
  guint64 norm_bytes; /* normalised bytes of the tokens scored */
  double nll;         /* sum of their finite -ln P, nats */
  double max_token;   /* largest finite -ln P of one token (0: none) */
  double window;      /* worst window, bits per normalised byte (0: the
                       * line never held a full window) */
  guint32 nonfinite;  /* tokens whose -ln P was NaN or infinite */
} TxlLineScore;

/* A line being scored: its summary so far and the open window (the last
 * tokens, fewer than TXL_LINE_WINDOW_BYTES normalised bytes after the
 * first).  Plain data: copy and compare with memcpy/memcmp are fine. */
typedef struct {
  TxlLineScore s;
  guint32 win_n, win_head;   /* ring of win_n tokens starting at win_head */
  guint64 win_bytes;
  float win_nll[TXL_LINE_WINDOW_BYTES + 1];
  guint32 win_b[TXL_LINE_WINDOW_BYTES + 1];
} TxlLineAcc;

void txl_line_acc_init(TxlLineAcc *a);
/* One scored token: nll = -ln P (any value; non-finite ones are counted),
 * norm_bytes its normalised bytes (0 is taken as 1). */
void txl_line_acc_add(TxlLineAcc *a, double nll, guint norm_bytes);

/* The normalised bytes of one token of tok: byte 1; BPE the length of its
 * symbol (a placeholder such as "<NUM>" counts its 5 bytes); word the
 * symbol and one separator (<eos>: 1).  Never 0. */
guint txl_token_norm_bytes(const TxlTokenizer *tok, int32_t id);

/* Derived scores; non-finite (NaN or +inf) whenever s->nonfinite > 0. */
double txl_line_mean_nll(const TxlLineScore *s); /* nats/token; NaN: none */
double txl_line_bpb(const TxlLineScore *s);      /* mean bits/norm byte */
/* max(bpb, window): the value thresholds apply to; +inf with a non-finite
 * token, NaN when no token was scored. */
double txl_line_worst(const TxlLineScore *s);
/* worst above threshold, or any non-finite token; FALSE without tokens. */
gboolean txl_line_flag(const TxlLineScore *s, double threshold);

/* The fields every per-line JSON object carries, in this order, without
 * a leading or trailing comma: "norm_bytes", "nll" (mean, nats/token),
 * "ppl", "bpb", "worst"; a non-finite number is null (RFC 8259). */
void txl_line_append_json(GString *o, const TxlLineScore *s);

/* Snapshot fields (little-endian, lib/formats/bytes.h). */
void txl_line_score_put(GByteArray *b, const TxlLineScore *s);
/* FALSE (r->ok too) on values no scoring could produce. */
gboolean txl_line_score_get(TxlReader *r, TxlLineScore *s);
void txl_line_acc_put(GByteArray *b, const TxlLineAcc *a);
gboolean txl_line_acc_get(TxlReader *r, TxlLineAcc *a);
/* The same as state bytes over a caller's buffer (docs/api.md, "State as
 * bytes"); set refuses malformed bytes and then leaves a untouched. */
gsize txl_line_acc_state_get_size(const TxlLineAcc *a);
gsize txl_line_acc_state_get_data(const TxlLineAcc *a, guint8 *dst,
                                  gsize size);
gboolean txl_line_acc_state_set_data(TxlLineAcc *a, const guint8 *src,
                                     gsize size, GError **error);

/* The "bytes the file must hold" of a saved TxlLineScore, for bounds. */
#define TXL_LINE_SCORE_SAVED_BYTES (8 + 8 + 8 + 8 + 8 + 4)

#endif

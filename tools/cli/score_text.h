/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl score's text mode: what cmd_score.c scores lines with, and its part
 * of a text snapshot (score_state.c). */
#ifndef TXL_TOOLS_SCORE_TEXT_H
#define TXL_TOOLS_SCORE_TEXT_H

#include "txl.h"
#include "txl_anomaly.h"
#include "txl_train.h"

#define TEXT_CAP 4096 /* bytes of a line echoed in the JSON output */

/* What the --ids and text modes share. */
typedef struct {
  TxlScorer *scorer;
  const TxlSnapshotOptions *snap_opts;
  GError *error;
  gint64 scored;
  gint64 nonfinite; /* scores that were NaN or infinite */
  double nll_sum;
  gsize bytes;
} Common;

/* A line read, not yet printed. */
typedef struct {
  gint64 line;
  GString *text;
  gsize bytes;
  gint64 pushed;   /* tokens of this line given to the scorer */
  TxlLineAcc acc;  /* its scored tokens (lib/anomaly/lines.h) */
  gboolean closed; /* its line end has been read */
  GArray *ids;     /* --learn: its token ids */
  int gen;         /* --learn: weights its first token was scored with
                    * (0: the model file's, k: the k-th adapted ones) */
  double arrived;  /* when its line end was read, seconds (NaN: unknown,
                    * as for a line restored from a snapshot) */
} Line;

typedef struct {
  Common c;
  const TxlTokenizer *tok;
  double flag_bpb;  /* > 0: mark lines above this many bits per byte */
  gint64 flagged;
  GQueue lines;     /* Line*, oldest first, not yet printed */
  GArray *tok_line; /* line of each pushed, not yet scored token */
  gint64 tok_base;  /* stream position of tok_line[0] */
  gint64 cur_line;
  gint64 last_scored;
  /* --learn (docs/learning.md) */
  TxlLearner *learner;
  const char *learn_out; /* the adapted model file, rewritten per round */
  gboolean learn_out_failed; /* a round's model could not be written */
  TxlBaseline *recent;   /* scores of recent unflagged lines: the threshold */
  TxlRepeats repeats;    /* kinds of line flagged lately: a burst of one
                          * kind is reported once (lib/anomaly/repeats.h) */
  TxlLineRef *ref;       /* the model file's cost of a line, which a judged
                          * line's score is taken relative to */
  int gen;               /* adapted weights in use (0: none yet) */
  gint64 warm;           /* lines marked warm-up */
  double now;            /* when the input being read arrived, seconds */
} TextScore;

void txl_score_line_free(gpointer line);
/* A run's lines: none yet, the line being read the first; what they hold
 * goes with txl_score_lines_clear. */
void txl_score_lines_init(TextScore *t);
void txl_score_lines_clear(TextScore *t);

/* The text state of a snapshot (section "score-text"): the lines not yet
 * printed and the line of every token not yet scored, so that the resumed
 * run prints exactly the lines the uninterrupted one would.  Restore
 * checks every value against t (its scorer's tokens, whether it learns)
 * and changes nothing on failure. */
GBytes *txl_score_state_save(TextScore *t);
gboolean txl_score_state_restore(TextScore *t, GBytes *state,
                                 GError **error);

#endif

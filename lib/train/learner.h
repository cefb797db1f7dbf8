/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Learning on the stream: fine-tunes a copy of a model on the lines it is
 * scoring, in the background, and hands the adapted weights to the scorer
 * at a fixed line, so that one input and seed always give the same scores
 * (docs/learning.md).
 *
 *   TxlLearner *l = txl_learner_new(model, NULL, &err);
 *   for each complete line, in stream order:
 *     TxlModel *m = txl_learner_line(l, ids, n, flagged, &err);
 *     if (m) { txl_scorer_set_model(scorer, m, ...); txl_model_unref(m); }
 *
 * Rounds: the first starts when warmup_lines lines have been seen (or,
 * with warmup_seconds, at the line where that much of the stream's time
 * has passed, if sooner), on all of them (a stream's first lines may
 * hold a few anomalies: learning from them is what a label-free start
 * means).  Later rounds start every every_lines
 * lines, on the most recent window_lines lines that were not flagged.  A
 * round runs on its own thread over a copy of its lines.  The first
 * round's weights take over at once (the caller waits for them: the
 * warm-up ends there); a later round's at the line lag_lines after it
 * started, the caller waiting there if it has not finished.  The line at
 * which weights change never depends on the machine's speed.
 *
 * A round whose loss or weights are not finite is dropped: the stream keeps
 * the last good weights and the caller gets the reason. */
#ifndef TXL_LEARNER_H
#define TXL_LEARNER_H

#include "params.h"

typedef struct {
  int warmup_lines;  /* lines before the first round (1000) */
  int every_lines;   /* lines between later rounds; 0: one round (5000) */
  int window_lines;  /* most recent usable lines a round learns from (2000) */
  int lag_lines;     /* lines from a later round's start to its weights (100) */
  int max_steps;     /* optimizer steps per round at most (300) */
  double passes;     /* the first round's passes over the warm-up lines, if
                      * max_steps allows (4); a later round makes one */
  int batch;         /* streams per step (8) */
  int segment;       /* tokens per stream per step (64) */
  float lr;          /* peak learning rate (3e-4) */
  float dropout;     /* (0.1) */
  guint64 seed;      /* dropout masks (1) */
  /* The warm-up also ends at the line where this much of the stream's time
   * has passed since its first line, if that comes before warmup_lines
   * (seconds, times given by txl_learner_set_time; 0: lines only). */
  double warmup_seconds;
} TxlLearnOptions;

/* The largest warmup_seconds (a year). */
#define TXL_LEARN_MAX_SECONDS (366.0 * 86400)

TxlLearnOptions txl_learn_options_default(void);

typedef struct _TxlLearner TxlLearner;

/* What learning has done so far (for properties, messages and metrics). */
typedef struct {
  gint64 lines;        /* lines seen */
  gint64 lines_learnt; /* lines that rounds learnt from, counted per round */
  int rounds;          /* rounds whose weights took over */
  int failed;          /* rounds dropped (non-finite) */
  gint64 steps;        /* optimizer steps taken */
  double loss_first;   /* last round: mean loss of its first pass (or first
                        * quarter of its steps), nats/token */
  double loss_last;    /* last round: the same over its last steps */
  double seconds;      /* last round: wall time on its thread */
  gboolean running;    /* a round is in flight */
} TxlLearnStats;

/* base: the model to start from (a reference is kept; its tokenizer names
 * the adapted model's).  o NULL: the defaults.  Training must support the
 * model (lib/engine/params.h). */
TxlLearner *txl_learner_new(TxlModel *base, const TxlLearnOptions *o,
                            GError **error);
/* Waits for a round in flight. */
void txl_learner_free(TxlLearner *l);

/* One complete line, in stream order: its token ids and whether the
 * scorer flagged it.  Returns the adapted model (new reference) when its
 * weights take over from the next line on, else NULL.  NULL with *error
 * set: a round failed and was dropped (the caller keeps its model). */
TxlModel *txl_learner_line(TxlLearner *l, const int32_t *ids, gsize n,
                           gboolean flagged, GError **error);

/* Grouping sessions (txlsessions, docs/learning.md): a round learns from
 * whole sessions, each session's lines from its first one after primer
 * (TxlSessions' own primer), as TxlSessions scores them, and not from
 * lines interleaved across sessions (docs/notes/2026-11-27-learning-
 * order.md).  The window still counts the most recent usable lines, and a
 * round learns from the sessions they belong to, whole so far, the most
 * recent first up to the window's token bound (lib/train/transcripts.h).
 * A session with a flagged line, or flagged when it ends, is not learnt
 * from.  Call it before the first line; then give lines with
 * txl_learner_session_line and ends with txl_learner_session_end only. */
gboolean txl_learner_group_sessions(TxlLearner *l, const int32_t *primer,
                                    gsize n, GError **error);
/* A complete line of session key, as txl_learner_line. */
TxlModel *txl_learner_session_line(TxlLearner *l, const char *key,
                                   const int32_t *ids, gsize n,
                                   gboolean flagged, GError **error);
/* Session key ended, flagged or not (a later line of key starts anew). */
void txl_learner_session_end(TxlLearner *l, const char *key,
                             gboolean flagged);

/* With warmup_seconds: the stream's time of the next line given, in
 * seconds from any origin (a buffer's timestamp, when it arrived).  While
 * warming up, the time from each line to the next adds up (time going
 * back, as a clock started again after a restore, adds nothing); the line
 * at which it reaches warmup_seconds is the warm-up's last.  A line given
 * no time adds nothing.  A non-finite t is ignored. */
void txl_learner_set_time(TxlLearner *l, double t);

/* TRUE until the first round's weights have taken over. */
gboolean txl_learner_warming_up(const TxlLearner *l);
/* The options it was made with (the defaults where NULL was given). */
const TxlLearnOptions *txl_learner_options(const TxlLearner *l);
void txl_learner_stats(const TxlLearner *l, TxlLearnStats *s);
/* The current weights as a model file (atomic), with the base model's
 * tokenizer; the base model's while still warming up. */
gboolean txl_learner_write_model(TxlLearner *l, const char *path,
                                 GError **error);

/* The adapted model in use (new reference), NULL while warming up: what a
 * scorer continuing from restored state scores with. */
TxlModel *txl_learner_model(TxlLearner *l);

/* State as bytes (docs/api.md): the adapted weights, the window of lines,
 * the counters and a round not landed yet (a round still running is
 * waited for, so get_size may take a round's time).  set_data takes the
 * bytes of a learner of the same base model and options, checks them
 * whole, and only then replaces this learner's state; the learner then
 * continues bit for bit as the saved one would. */
gsize txl_learner_state_get_size(TxlLearner *l);
gsize txl_learner_state_get_data(TxlLearner *l, guint8 *dst, gsize size);
gboolean txl_learner_state_set_data(TxlLearner *l, const guint8 *src,
                                    gsize size, GError **error);

#endif

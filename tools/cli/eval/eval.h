/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The data of one txl eval run, shared by its steps: the log's lines, its
 * sessions (a key found in each line) in order of their first line, the
 * split each session belongs to, and the scores of each scored line.
 *
 * The steps, each in its own file: split.c reads the log and assigns the
 * split, score.c scores the validation and test sessions, threshold.c
 * turns validation scores into a threshold, metrics.c measures the test
 * sessions against it, svg.c and cmd_eval.c write the reports. */
#ifndef TXL_EVAL_EVAL_H
#define TXL_EVAL_EVAL_H

#include "txl.h"

enum { SPLIT_TRAIN, SPLIT_CALIB, SPLIT_TEST, SPLIT_DROPPED, SPLIT_UNLABELLED,
       SPLIT_TRIMMED, N_SPLIT };
extern const char *const eval_split_names[N_SPLIT];

/* score kinds, as in TxlSessionScore */
#define EVAL_N_AGG 4
extern const char *const eval_agg_names[EVAL_N_AGG];
/* the index of a score kind's name, -1 when unknown */
int eval_agg_index(const char *name);

typedef struct {
  char *key;
  int label; /* 0 normal, 1 anomaly, -1 unknown */
  int split;
  int fold;  /* label-free training sessions: 0 or 1 (trim.c), else -1 */
  gint64 first_line, n_lines;
  /* merged over the session's parts (a session evicted and reopened) */
  int parts;
  double nll;
  gint64 tokens;
  double max_line_mean, max_line_sum, max_token, end_nll;
} EvalSession;

typedef struct {
  GPtrArray *sess;       /* EvalSession* in order of first line */
  GHashTable *by_key;    /* key -> EvalSession* */
  gint64 *line_sess;     /* per log line: session index, -1 none */
  const char **line_ptr; /* per log line: its text */
  gsize *line_len;
  gint64 n_lines;
  gint64 counts[N_SPLIT]; /* sessions per split */
  /* per scored line, indexed by push number */
  GArray *push_line;     /* gint64 log line of push n (n - 1) */
  double *l_mean, *l_sum, *l_max; /* per log line; NAN when not scored */
  double *l_worst; /* the line's worst part, bits per byte (lib/anomaly/lines.h) */
  int *l_tok;
} Eval;

void eval_init(Eval *ev);
void eval_clear(Eval *ev);

/* Whether line i belongs to a session of this split. */
gboolean eval_line_in(const Eval *ev, gint64 i, int split);

/* split.c: the lines of text (not copied: it must outlive ev), each with
 * the session whose key the regex finds in it; labels from
 * eval_read_labels.  Fails when there are too few sessions or none has a
 * label. */
gboolean eval_read_sessions(Eval *ev, const char *text, gsize len,
                            GRegex *re, int key_group, GHashTable *labels,
                            const char *log_name, GError **error);
/* The first train_fraction of the sessions form the training part; its
 * sessions (only its normal ones with normal_only, which reads its labels)
 * are split in time order, the last calib_fraction of them validate.
 * Later sessions are the test part.  Fills ev->counts. */
gboolean eval_assign_split(Eval *ev, double train_fraction,
                           double calib_fraction, gboolean normal_only,
                           GError **error);
/* The lines of one split (of its sessions of one fold, unless fold is -1)
 * as training text: grouped by session, each session followed by an empty
 * line, or as they came (interleaved). */
gboolean eval_write_split_text(const Eval *ev, int split, int fold,
                               gboolean interleaved, const char *path,
                               gint64 *n_out, GError **error);

/* score.c */
typedef struct {
  const char *key_re;  /* NULL: one stream over the interleaved lines */
  int key_group;
  gboolean end;        /* also score each session's end marker */
  guint64 max_bytes;
  int fold;            /* -1: the validation and test sessions; 0 or 1:
                        * the training sessions of that fold (trim.c) */
} EvalScoring;
/* Scores every line of the sessions sc->fold names, each session in its
 * own stream, and fills their per-line and per-session scores.  Sessions
 * are scored once: calls with different folds add up. */
gboolean eval_score(Eval *ev, TxlModel *m, const EvalScoring *sc,
                    double *secs, gint64 *n_scored, guint64 *evicted,
                    GError **error);
double eval_session_score(const EvalSession *s, int agg, gboolean with_end);
double eval_line_score(const Eval *ev, gint64 i, int agg);

/* trim.c: cross-fitted trimming of the label-free training sessions.
 * With each fold scored by a model trained on the other, the training
 * sessions whose score of kind agg is above the q-quantile of them all
 * move to SPLIT_TRIMMED.  Returns that cut (INFINITY with no scores). */
double eval_trim(Eval *ev, int agg, gboolean with_end, double q);
/* The quantile txl eval trims at: anomalies up to a tenth of the training
 * sessions are left out (chosen on a development split: trim.c). */
#define EVAL_TRIM_QUANTILE 0.9

#endif

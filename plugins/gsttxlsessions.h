/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsessions inside the plugin: the element's state, shared by
 * gsttxlsessions.c (scoring), gsttxlsessions_snap.c (its own section of
 * the snapshots) and gsttxlsessions_learn.c (learn=true), which must see
 * all of it.  What it shares with txlmodel
 * is GstTxlScorerBase's (gsttxlscorerbase.h). */
#ifndef GST_TXL_SESSIONS_H
#define GST_TXL_SESSIONS_H

#include "gsttxlscorerbase.h"
#include "txllearn.h"

G_BEGIN_DECLS

GST_DEBUG_CATEGORY_EXTERN(gst_txl_sessions_debug);

#define GST_TYPE_TXL_SESSIONS (gst_txl_sessions_get_type())
G_DECLARE_FINAL_TYPE(GstTxlSessions, gst_txl_sessions, GST, TXL_SESSIONS,
                     GstTxlScorerBase)

/* a pushed line, waiting to go out in line order */
typedef struct {
  gint64 line;      /* the tokenizer's line number */
  guint64 text_end; /* stream offset just past its text */
  gboolean done;    /* scored */
  guint64 bytes;
  TxlLineScore s;   /* its scores (lib/anomaly/lines.h) */
  guint32 flags;    /* TXL_LINE_* of its meta (learn=true) */
  gdouble ref_nll;  /* its meta's ref_nll (learn=true; NaN: none) */
  GArray *ids;      /* learn=true, until scored: its token ids (int32_t),
                     * for the learner */
} SLine;

/* first and last line of an open session */
typedef struct {
  gint64 first, last;
} Span;

/* an ended session, sent downstream once its last line has gone out */
typedef struct {
  gint64 last_seq;
  GstStructure *s;
} Ended;

/* the base class part of a GstTxlSessions */
#define B(self) (&(self)->parent)

struct _GstTxlSessions {
  GstTxlScorerBase parent;

  /* properties, object lock */
  gchar *key;
  gchar *key_field; /* session-field: a record field is the key */
  gint key_group;
  guint max_sessions;
  guint64 max_memory, idle_lines;
  TxlSessionScore score;
  gdouble threshold;
  gboolean end_marker;
  guint open_sessions; /* read-only, kept after every line */
  guint user_set; /* SET_* bits: what the application chose itself; the rest
                   * follows the model file's calibration when it has one */
  gchar *time_format, *idle_after_s, *open_thr_s;
  GstTxlLearnProps learn; /* learning on the stream (txllearn.h) */

  /* streaming state, under the sink pad's stream lock */
  gdouble thr; /* threshold and score kind, read at start */
  TxlSessionScore kind;
  GArray *idle_after; /* doubles, parsed from session-idle-after */
  GArray *open_thr;   /* doubles, parsed from session-open-thresholds */
  gchar *tfmt;        /* session-time-format, NULL: the line clock */
  gdouble now;        /* the last timestamp read */
  TxlSessionOptions opts; /* those of sessions (opts_key, idle_after) */
  gchar *opts_key;
  TxlSessions *sessions;
  GArray *sl;         /* SLine, in push order */
  guint sl_head;      /* first not yet sent */
  gint64 sl_seq0;     /* push number of sl[0] */
  GArray *ids;        /* tokens of the line being assembled */
  gint64 cur_line;    /* its line number, 0: none */
  guint64 cur_tok_bytes;
  guint64 line_start; /* stream offset of its first byte */
  GHashTable *spans;  /* key -> Span of the open sessions */
  GQueue ended;       /* Ended*, in the order the sessions ended */
  GArray *done_lines; /* GstTxlDoneLine values to push */
  gboolean failed;    /* a callback could not go on */
  gboolean warned_evicted; /* the bound's warning was posted */
  /* the running session rule (lib/anomaly/baseline.h), where neither the
   * application nor the model file sets a threshold: the scores of the
   * last ended sessions; NULL otherwise */
  TxlBaseline *recent;
  /* with it, the window of ended sessions' line counts (short sessions) */
  TxlBaseline *lengths;
};

/* gsttxlsessions.c */
void gst_txl_sessions_on_line(const TxlSessionLine *l, gpointer data);
void gst_txl_sessions_on_session(const TxlSessionResult *r, gpointer data);
GstFlowReturn gst_txl_sessions_push_out(GstTxlSessions *self, gboolean all);

/* gsttxlsessions_learn.c: learning on the stream (learn=true) */
gboolean gst_txl_sessions_learn_start(GstTxlSessions *self, GError **error);
/* An SLine array whose entries' ids are freed with them. */
GArray *gst_txl_sessions_sl_new(guint reserve);
/* Keeps a copy of the pushed line's ids in x while learning. */
void gst_txl_sessions_learn_keep(GstTxlSessions *self, SLine *x);
/* x, push number seq of session key, is scored: to the learner, its
 * meta's flags back. */
void gst_txl_sessions_learn_line(GstTxlSessions *self, SLine *x,
                                 const char *key, gint64 seq);
/* The ids TxlSessions primes each session with (the learner's primer). */
GArray *gst_txl_sessions_primer(const TxlSessions *s);
/* After a call into the library: the scored lines to the learner, new
 * weights into the sessions, the landing line marked. */
gboolean gst_txl_sessions_learn_run(GstTxlSessions *self, GError **error);
/* txl_sessions_set_model() as a GstTxlSetModelFunc. */
gboolean gst_txl_sessions_set_weights(gpointer sessions, TxlModel *m,
                                      GError **error);

/* gsttxlsessions_snap.c: its own section of the snapshots */
void gst_txl_sessions_ended_free(gpointer p);
GBytes *gst_txl_sessions_save_own(GstTxlScorerBase *base);
gpointer gst_txl_sessions_parse_own(GstTxlScorerBase *base, GBytes *bytes,
                                    gpointer loaded, GError **error);
void gst_txl_sessions_drop_own(gpointer own);
void gst_txl_sessions_apply(GstTxlScorerBase *base, gpointer loaded,
                            gpointer own);
/* Copies what the open sessions hold into state-bytes / open-sessions
 * (the streaming thread owns the TxlSessions; other threads read these). */
void gst_txl_sessions_note_state(GstTxlScorerBase *base);

G_END_DECLS

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Learning on the stream inside txlmodel and txlsessions (learn=true,
 * docs/learning.md): each scored line's token ids and scores go to a
 * TxlLearner (lib/train/learner.h), whose adapted weights take over in the
 * element's scorer or sessions between calls into the library, at a line
 * that depends only on the input.
 *
 * txlmodel calls, in stream order:
 *   gst_txl_learn_record() for every score record it emits,
 *   gst_txl_learn_close() when a line is complete (its meta's flags back),
 * txlsessions, whose lines are scored whole and reported complete, calls
 *   gst_txl_learn_line() for each line in the order it was scored, with its
 *   session, and gst_txl_learn_session_end() as each session ends (its
 *   learner groups sessions: lib/train/learner.h);
 * both call gst_txl_learn_run() after every call into the library: the
 *   lines queued meanwhile go to the learner, in order, and new weights are
 *   set through the element's set_model callback.
 *
 * Which lines count as flagged for learning is the label-free rule of
 * lib/anomaly/baseline.h over the recent unflagged lines, the rule txlsink
 * applies by default (threshold-mode stream): lines scored with the model
 * file's weights (warm-up) never flag and never count, and the recent
 * scores start again when new weights take over.  That state, the open
 * line's ids and the learner's bytes are the learning section of the
 * element's snapshots ("txlmodel.learn", "txlsessions.learn"). */
#ifndef GST_TXL_LEARN_H
#define GST_TXL_LEARN_H

#include "gsttxlcommon.h"
#include "txlprops.h"
#include "txl_formats.h"
#include "txl_train.h"

G_BEGIN_DECLS

#define GST_TXL_LEARN_SECTION "txlmodel.learn"
#define GST_TXL_LEARN_SESSIONS_SECTION "txlsessions.learn"

/* Puts the adapted weights m into the element's scorer or sessions
 * (target); FALSE with error when it refuses them. */
typedef gboolean (*GstTxlSetModelFunc)(gpointer target, TxlModel *m,
                                       GError **error);

typedef struct _GstTxlLearn GstTxlLearn;

#define GST_TXL_LEARN_DEFAULT_WARMUP 1000
/* The element's properties learn (boolean), learn-warmup (int, lines),
 * learn-model (string, path), learn-rounds (uint, read-only) and
 * learn-warmup-seconds (double): the rows of its property table
 * (txlprops.h) for the ids first .. first + 4 and the instance's
 * GstTxlLearnProps learn. */
#define GST_TXL_LEARN_PROPS(type, first)                                      \
  TXL_PROP_UPTO((first) + 0, type, learn.on, GST_STATE_READY,                 \
      TXL_BOOLEAN("learn", "Learn", "Fine-tune a copy of the model on the "   \
          "lines of the stream, in rounds on a thread of their own, the "     \
          "adapted weights taking over between segments at a line fixed by "  \
          "the input (docs/learning.md)", FALSE,                              \
          TXL_RW_READY)),                                                     \
  TXL_PROP_UPTO((first) + 1, type, learn.warmup, GST_STATE_READY,             \
      TXL_INT("learn-warmup", "Learning warm-up", "learn=true: lines scored " \
          "with the model file's weights before the first round of learning " \
          "(lines)", 1, G_MAXINT, GST_TXL_LEARN_DEFAULT_WARMUP,               \
          TXL_RW_READY)),                                                     \
  TXL_PROP((first) + 2, type, learn.model_out,                                \
      TXL_STRING("learn-model", "Adapted model file", "learn=true: write the "\
          "adapted weights as a model file here after each round "            \
          "(atomically; unset: none)", NULL,                                  \
          TXL_RW_PLAYING)),                                                   \
  TXL_PROP((first) + 3, type, learn.rounds,                                   \
      TXL_UINT("learn-rounds", "Learning rounds", "learn=true: rounds of "    \
          "learning whose weights took over (restored streams count from "    \
          "their start)", 0, G_MAXUINT, 0, TXL_RO)),                        \
  TXL_PROP_UPTO((first) + 4, type, learn.warmup_seconds, GST_STATE_READY,     \
      TXL_DOUBLE("learn-warmup-seconds", "Learning warm-up time",             \
          "learn=true: end the warm-up sooner than learn-warmup lines, at "   \
          "the line where this much of the stream's time has passed, by the " \
          "buffers' timestamps (seconds; 0 = lines only)", 0.0,               \
          TXL_LEARN_MAX_SECONDS, 0.0, TXL_RW_READY))

/* owner posts the messages; warmup_lines, warmup_seconds: the warm-up
 * (lib/train/learner.h); primer (int32_t ids; NULL for txlmodel): the
 * learner groups sessions, each after these ids.  NULL with error when
 * the model cannot be trained. */
GstTxlLearn *gst_txl_learn_new(GstElement *owner, TxlModel *base,
                               gint warmup_lines, gdouble warmup_seconds,
                               const GArray *primer, GError **error);
void gst_txl_learn_free(GstTxlLearn *l);

/* A score record; line_start: the first of its line. */
void gst_txl_learn_record(GstTxlLearn *l, const TxlScoreRecord *r,
                          gboolean line_start);
/* The line is complete: queued for the learner; done_index is the
 * element's own index of the line, reported back by gst_txl_learn_run()
 * if new weights land after it; pts, the timestamp of the buffer in which
 * it completed (its time for learn-warmup-seconds; GST_CLOCK_TIME_NONE:
 * none).  Returns its meta's TXL_LINE_* flags, and in *ref_nll its meta's
 * ref_nll (the model file's cost of the line; NaN for a warm-up line). */
guint32 gst_txl_learn_close(GstTxlLearn *l, gint64 line,
                            const TxlLineScore *s, guint done_index,
                            GstClockTime pts, gdouble *ref_nll);
/* A complete line of session key given whole (its n token ids, copied),
 * as record() and close() give it in two steps; a warm-up line when no
 * adapted weights are in use yet.  For a learning made with a primer
 * (grouping sessions).  Returns its meta's TXL_LINE_* flags. */
guint32 gst_txl_learn_line(GstTxlLearn *l, const gchar *key,
                           const int32_t *ids, guint n, gint64 line,
                           const TxlLineScore *s, guint done_index,
                           GstClockTime pts, gdouble *ref_nll);
/* Session key ended (flagged by the session rule or not): queued after
 * the lines before it. */
void gst_txl_learn_session_end(GstTxlLearn *l, const gchar *key,
                               gboolean flagged);
/* Lines queued for the learner. */
gboolean gst_txl_learn_pending(const GstTxlLearn *l);
/* Gives the queued lines to the learner and puts new weights in through
 * set_model(target, ...); the done_index of each line after which new
 * weights landed is appended to landings (guint; may be NULL), whose meta
 * gets TXL_LINE_NEW_WEIGHTS.  A failed round is a warning; FALSE (error
 * set) only when set_model refused the weights. */
gboolean gst_txl_learn_run(GstTxlLearn *l, GstTxlSetModelFunc set_model,
                           gpointer target, GArray *landings,
                           const gchar *model_out, GError **error);
/* Rounds whose weights took over. */
gint gst_txl_learn_rounds(GstTxlLearn *l);
/* The stream ended for good (not held for a snapshot): while no round has
 * taken over, a warning says that none of its lines was judged.  l may be
 * NULL. */
void gst_txl_learn_ended(GstTxlLearn *l);

/* Snapshots: this learning's section (undelivered: the score buffer a
 * failed push kept, whose line metas' flags are saved too). */
GBytes *gst_txl_learn_save(GstTxlLearn *l, GstBuffer *undelivered);
/* A learning continuing from a section, its weights put in through
 * set_model(target, ...) (not live yet) and its flags onto the metas of
 * undelivered (may be NULL).  NULL with error for bytes that do not fit. */
GstTxlLearn *gst_txl_learn_load(GstElement *owner, TxlModel *base,
                                gint warmup_lines, gdouble warmup_seconds,
                                const GArray *primer,
                                GBytes *section,
                                GstTxlSetModelFunc set_model, gpointer target,
                                GstBuffer *undelivered, GError **error);

/* The values of the four learn properties, as each learning element keeps
 * them (read and written under the element's object lock). */
typedef struct {
  gboolean on;      /* learn */
  gint warmup;      /* learn-warmup: lines before the first round */
  gchar *model_out; /* learn-model: the adapted model file, or NULL */
  guint rounds;     /* learn-rounds (read-only): rounds whose weights took
                     * over */
  gdouble warmup_seconds; /* learn-warmup-seconds: 0 or the warm-up's time */
} GstTxlLearnProps;

/* A new stream's learning (*out NULL when learn is off); learn-rounds
 * starts again from 0.  FALSE with error when the model cannot be trained. */
gboolean gst_txl_learn_start(GstElement *owner, GstTxlLearnProps *p,
                             TxlModel *base, const GArray *primer,
                             GstTxlLearn **out, GError **error);
/* gst_txl_learn_run() with learn-model read and learn-rounds published
 * under the owner's lock; nothing to do without queued lines. */
gboolean gst_txl_learn_step(GstTxlLearn *l, GstTxlLearnProps *p,
                            GstTxlSetModelFunc set_model, gpointer target,
                            GArray *landings, GError **error);
/* learn-rounds after a restore (l may be NULL: not learning). */
void gst_txl_learn_publish(GstTxlLearn *l, GstTxlLearnProps *p);

/* ---- a learning element's snapshot, the part txlmodel and txlsessions
 * share: the library's state (TxlScorer, TxlSessions) travels from load()
 * to apply() with the learning section beside it ---- */

/* What load() read (the base class's "loaded"). */
typedef struct {
  gpointer state;            /* the library's part, freed with free_state */
  GDestroyNotify free_state;
  GBytes *learn;             /* the learning section, or NULL */
} GstTxlLearnLoaded;

/* state as the library loaded it (NULL: it failed, error set) with the
 * snapshot's section checked against learn (p, under owner's lock): a
 * snapshot continues only the way it was written.  NULL with error, state
 * freed and *sect dropped, when they do not fit. */
GstTxlLearnLoaded *gst_txl_learn_loaded_new(GstElement *owner,
                                            GstTxlLearnProps *p,
                                            gpointer state,
                                            GDestroyNotify free_state,
                                            GHashTable **sect,
                                            const gchar *section,
                                            const gchar *path,
                                            GError **error);
/* drop_loaded */
void gst_txl_learn_loaded_free(gpointer loaded);
/* For apply(): the library's state, taken, the rest dropped. */
gpointer gst_txl_learn_loaded_take(gpointer loaded);
/* The learning that continues loaded's section (owner's learn-warmup; its
 * weights into loaded's state through set_model): NULL with error when
 * the section does not fit. */
GstTxlLearn *gst_txl_learn_resume(GstElement *owner, GstTxlLearnProps *p,
                                  TxlModel *base, const GArray *primer,
                                  GstTxlLearnLoaded *loaded,
                                  GstTxlSetModelFunc set_model,
                                  GstBuffer *undelivered, GError **error);
/* save(): the learning's section among the snapshot's (none without l). */
void gst_txl_learn_save_section(GstTxlLearn *l, GHashTable *sect,
                                const gchar *section,
                                GstBuffer *undelivered);

G_END_DECLS

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Learning on the stream inside txlmodel (learn=true, docs/learning.md):
 * each scored line's token ids and scores go to a TxlLearner
 * (lib/train/learner.h), whose adapted weights take over in the element's
 * scorer between segments, at a line that depends only on the input.
 *
 * The element calls, in stream order:
 *   gst_txl_learn_record() for every score record it emits,
 *   gst_txl_learn_close() when a line is complete (its meta's flags back),
 *   gst_txl_learn_run() after every call into its scorer: the lines closed
 *     meanwhile go to the learner, in order, and new weights are set.
 *
 * Which lines count as flagged for learning is the label-free rule of
 * lib/anomaly/baseline.h over the recent unflagged lines, the rule txlsink
 * applies by default (threshold-mode stream): lines scored with the model
 * file's weights (warm-up) never flag and never count, and the recent
 * scores start again when new weights take over.  That state, the open
 * line's ids and the learner's bytes are the section "txlmodel.learn" of
 * txlmodel's snapshots. */
#ifndef GST_TXL_LEARN_H
#define GST_TXL_LEARN_H

#include "gsttxlcommon.h"
#include "txl_formats.h"

G_BEGIN_DECLS

#define GST_TXL_LEARN_SECTION "txlmodel.learn"

typedef struct _GstTxlLearn GstTxlLearn;

#define GST_TXL_LEARN_DEFAULT_WARMUP 1000
/* The element's properties learn (boolean), learn-warmup (int, lines),
 * learn-model (string, path) and learn-rounds (uint, read-only), with
 * the ids first .. first + 3. */
void gst_txl_learn_install_props(GObjectClass *klass, guint first);

/* owner posts the messages; warmup_lines: lines before the first round;
 * NULL with error when the model cannot be trained. */
GstTxlLearn *gst_txl_learn_new(GstElement *owner, TxlModel *base,
                               gint warmup_lines, GError **error);
void gst_txl_learn_free(GstTxlLearn *l);

/* A score record; line_start: the first of its line. */
void gst_txl_learn_record(GstTxlLearn *l, const TxlScoreRecord *r,
                          gboolean line_start);
/* The line is complete: queued for the learner; done_index is its entry
 * in the element's done_flags.  Returns its meta's TXL_LINE_* flags. */
guint32 gst_txl_learn_close(GstTxlLearn *l, gint64 line,
                            const TxlLineScore *s, guint done_index);
/* Lines queued for the learner. */
gboolean gst_txl_learn_pending(const GstTxlLearn *l);
/* Gives the queued lines to the learner and puts new weights into scorer
 * (TXL_LINE_NEW_WEIGHTS added to the landing line's done_flags entry,
 * guint32).  A failed round is a warning; FALSE (error set) only when
 * the scorer refused the weights. */
gboolean gst_txl_learn_run(GstTxlLearn *l, TxlScorer *scorer,
                           GArray *done_flags, const gchar *model_out,
                           GError **error);
/* Rounds whose weights took over. */
gint gst_txl_learn_rounds(GstTxlLearn *l);

/* Snapshots: this learning's section (undelivered: the score buffer a
 * failed push kept, whose line metas' flags are saved too). */
GBytes *gst_txl_learn_save(GstTxlLearn *l, GstBuffer *undelivered);
/* A learning continuing from a section, its weights put into scorer
 * (which is not live yet) and its flags onto the metas of undelivered
 * (may be NULL).  NULL with error for bytes that do not fit. */
GstTxlLearn *gst_txl_learn_load(GstElement *owner, TxlModel *base,
                                gint warmup_lines, GBytes *section,
                                TxlScorer *scorer, GstBuffer *undelivered,
                                GError **error);

G_END_DECLS

#endif

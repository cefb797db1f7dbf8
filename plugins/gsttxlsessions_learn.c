/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsessions learn=true: learning on the stream (txllearn.h,
 * docs/learning.md), the glue between the element's lines and the
 * learner that txlmodel shares.
 *
 * txlsessions pushes each line whole into its session and hears that it
 * was scored later (gst_txl_sessions_on_line), when its session's segment
 * runs: so the learner is given the lines in the order they were scored,
 * not in line order, each with its session, and each session's end with
 * the session rule's flag.  The learner groups them by session (whole
 * sessions after TxlSessions' primer, as they are scored:
 * lib/train/learner.h).  That order depends only on the input, as the
 * line where new weights land does.  A pushed
 * line keeps a copy of its ids until it is scored; the lines scored by a
 * call into the library go to the learner right after the call, new
 * weights go into the sessions' worker (txl_sessions_set_model) and score
 * from the next segment run on, and the landing line's meta says so. */
#include "gsttxlsessions.h"

#define GST_CAT_DEFAULT gst_txl_sessions_debug

static void
sline_clear(gpointer p)
{
  SLine *x = p;
  g_clear_pointer(&x->ids, g_array_unref);
}

GArray *
gst_txl_sessions_sl_new(guint reserve)
{
  GArray *a = g_array_sized_new(FALSE, TRUE, sizeof(SLine), reserve);
  g_array_set_clear_func(a, sline_clear);
  return a;
}

gboolean
gst_txl_sessions_set_weights(gpointer sessions, TxlModel *m, GError **error)
{
  return txl_sessions_set_model(sessions, m, error);
}

GArray *
gst_txl_sessions_primer(const TxlSessions *s)
{
  gsize n;
  const int32_t *ids = txl_sessions_primer(s, &n);
  GArray *a = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), (guint)n);
  g_array_append_vals(a, ids, (guint)n);
  return a;
}

gboolean
gst_txl_sessions_learn_start(GstTxlSessions *self, GError **error)
{
  g_autoptr(GArray) primer = gst_txl_sessions_primer(self->sessions);
  return gst_txl_learn_start(GST_ELEMENT(self), &self->learn,
                             GST_TXL_SCORER_BASE(self)->model, primer,
                             &B(self)->learning, error);
}

void
gst_txl_sessions_learn_keep(GstTxlSessions *self, SLine *x)
{
  if (!B(self)->learning)
    return;
  x->ids = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), self->ids->len);
  g_array_append_vals(x->ids, self->ids->data, self->ids->len);
}

void
gst_txl_sessions_learn_line(GstTxlSessions *self, SLine *x, const char *key,
                            gint64 seq)
{
  if (!B(self)->learning)
    return;
  /* the push number, truncated: gst_txl_sessions_learn_run finds the line
   * again modulo 2^32, which holds while fewer lines than that wait */
  x->flags |= gst_txl_learn_line(B(self)->learning, key,
                                 x->ids ? (const int32_t *)x->ids->data : NULL,
                                 x->ids ? x->ids->len : 0, x->line, &x->s,
                                 (guint)seq, B(self)->last_pts, &x->ref_nll);
  /* the learner has its own copy */
  g_clear_pointer(&x->ids, g_array_unref);
}

gboolean
gst_txl_sessions_learn_run(GstTxlSessions *self, GError **error)
{
  if (!B(self)->learning || !gst_txl_learn_pending(B(self)->learning))
    return TRUE;
  GArray *landed = g_array_new(FALSE, FALSE, sizeof(guint));
  gboolean ok = gst_txl_learn_step(B(self)->learning, &self->learn,
                                   gst_txl_sessions_set_weights,
                                   self->sessions, landed, error);
  /* the landing line was scored by this call: it has not gone out yet */
  for (guint i = 0; i < landed->len; i++) {
    guint at = g_array_index(landed, guint, i) - (guint)self->sl_seq0;
    if (at < self->sl->len)
      g_array_index(self->sl, SLine, at).flags |= TXL_LINE_NEW_WEIGHTS;
  }
  /* the running session rule (no threshold given) judged sessions scored
   * with the old weights: the new weights' sessions take over its window,
   * as the line rule does */
  if (landed->len > 0 && self->recent)
    txl_baseline_restart(self->recent);
  g_array_unref(landed);
  return ok;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Cross-fitted trimming (eval.h): learning without labels from a log in
 * which a few percent of the sessions are anomalies.
 *
 * A model trained on every session of the training part learns the
 * anomalies among them too, and then finds their like in the test part
 * unsurprising (HDFS: half the anomalous blocks of a development split
 * scored below the normal median).  Scoring the training sessions with
 * that model does not show them either: it has seen those very sessions.
 * So the training sessions are split in two folds, a model is trained on
 * each, and each fold is scored by the model that did not see it; the
 * sessions scoring above the q-quantile of these held-out scores are left
 * out of the final training.  Leaving out a tenth of the normal sessions
 * costs little; keeping the anomalies costs much (the runs:
 * docs/notes/2026-11-25-label-free-eval.md). */
#include "eval.h"
#include "metrics.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

double
eval_trim(Eval *ev, int agg, gboolean with_end, double q)
{
  GArray *v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint k = 0; k < ev->sess->len; k++) {
    EvalSession *s = ev->sess->pdata[k];
    if (s->split == SPLIT_TRAIN && s->fold >= 0 && s->parts > 0) {
      double x = eval_session_score(s, agg, with_end);
      if (isfinite(x))
        g_array_append_val(v, x);
    }
  }
  double cut = INFINITY;
  if (v->len > 0) {
    qsort(v->data, v->len, sizeof(double), eval_cmp_double);
    cut = g_array_index(v, double, (gsize)(q * (v->len - 1)));
  }
  gint64 n = 0;
  for (guint k = 0; k < ev->sess->len; k++) {
    EvalSession *s = ev->sess->pdata[k];
    if (s->split != SPLIT_TRAIN || s->fold < 0 || s->parts == 0)
      continue;
    double x = eval_session_score(s, agg, with_end);
    if (!(x <= cut)) { /* above the cut, or not finite */
      s->split = SPLIT_TRIMMED;
      ev->counts[SPLIT_TRAIN]--;
      ev->counts[SPLIT_TRIMMED]++;
      n++;
    }
  }
  fprintf(stderr, "txl eval: trimmed %" G_GINT64_FORMAT " of %u training "
          "sessions scoring above %.4g (held-out %s score, quantile %g)\n",
          n, v->len, cut, eval_agg_names[agg], q);
  g_array_free(v, TRUE);
  return cut;
}

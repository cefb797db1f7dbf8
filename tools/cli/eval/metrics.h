/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Detection metrics of txl eval: precision, recall and F1 at a threshold,
 * AUROC by ranks, as summary.json writes them. */
#ifndef TXL_EVAL_METRICS_H
#define TXL_EVAL_METRICS_H

#include <glib.h>

typedef struct {
  double threshold;
  gint64 tp, fp, fn, tn;
  double precision, recall, f1, auroc;
  gint64 n, n_anom;
} EvalMetrics;

/* scores[i] > thr is flagged; labels[i] in {0, 1}; AUROC with ties
 * averaged, NAN without both classes. */
void eval_metrics(const double *scores, const int *labels, gsize n, double thr,
                  EvalMetrics *m);
/* "NAME": {threshold, n, anomalous, tp, fp, fn, tn, precision, ...} */
void eval_metrics_json(GString *j, const char *name, const EvalMetrics *m);
/* Sorts v; NAN when n is 0. */
double eval_median(double *v, gsize n);
/* qsort comparator of doubles, ascending */
int eval_cmp_double(const void *a, const void *b);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Detection metrics (metrics.h). */
#include "metrics.h"
#include "txl_formats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int
cmp_pair(const void *a, const void *b)
{
  const double *x = a, *y = b;
  return (x[0] > y[0]) - (x[0] < y[0]);
}

/* scores[i], labels[i] in {0, 1}; AUROC by ranks with ties averaged. */
void
eval_metrics(const double *scores, const int *labels, gsize n, double thr,
        EvalMetrics *m)
{
  memset(m, 0, sizeof *m);
  m->threshold = thr;
  m->n = n;
  double *p = g_new(double, 2 * MAX(n, 1));
  for (gsize i = 0; i < n; i++) {
    gboolean flag = scores[i] > thr;
    if (labels[i]) {
      m->n_anom++;
      flag ? m->tp++ : m->fn++;
    } else {
      flag ? m->fp++ : m->tn++;
    }
    p[2 * i] = scores[i];
    p[2 * i + 1] = labels[i];
  }
  qsort(p, n, 2 * sizeof(double), cmp_pair);
  double rank_sum = 0;
  for (gsize i = 0; i < n;) {
    gsize j = i;
    while (j < n && p[2 * j] == p[2 * i])
      j++;
    double r = (i + 1 + j) / 2.0; /* average 1-based rank of the tie */
    for (gsize k = i; k < j; k++)
      if (p[2 * k + 1] > 0.5)
        rank_sum += r;
    i = j;
  }
  g_free(p);
  double na = m->n_anom, nn = (double)n - na;
  m->auroc = na > 0 && nn > 0 ? (rank_sum - na * (na + 1) / 2) / (na * nn)
                              : NAN;
  m->precision = m->tp + m->fp ? (double)m->tp / (m->tp + m->fp) : 0;
  m->recall = m->tp + m->fn ? (double)m->tp / (m->tp + m->fn) : 0;
  m->f1 = m->precision + m->recall > 0
            ? 2 * m->precision * m->recall / (m->precision + m->recall)
            : 0;
}

int
eval_cmp_double(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

double
eval_median(double *v, gsize n)
{
  if (n == 0)
    return NAN;
  qsort(v, n, sizeof(double), eval_cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

void
eval_metrics_json(GString *j, const char *name, const EvalMetrics *m)
{
  /* a threshold from non-finite scores is null: summary.json stays JSON */
  g_string_append_printf(j, "\"%s\": {\"threshold\": ", name);
  txl_json_append_double(j, "%.6g", m->threshold);
  g_string_append_printf(j,
    ", \"n\": %" G_GINT64_FORMAT
    ", \"anomalous\": %" G_GINT64_FORMAT ", \"tp\": %" G_GINT64_FORMAT
    ", \"fp\": %" G_GINT64_FORMAT ", \"fn\": %" G_GINT64_FORMAT
    ", \"tn\": %" G_GINT64_FORMAT ", \"precision\": %.4f, \"recall\": %.4f"
    ", \"f1\": %.4f, \"auroc\": %.4f}", m->n, m->n_anom,
    m->tp, m->fp, m->fn, m->tn, m->precision, m->recall, m->f1,
    isnan(m->auroc) ? -1.0 : m->auroc);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The threshold rule (threshold.h).  1.5 x the highest normal validation
 * score (margin 0.5) won on a development split of the HDFS log's training
 * part among eight rules; the others lost and are gone (their runs:
 * docs/notes/anomaly-experiments.md). */
#include "threshold.h"
#include "metrics.h"

#include <math.h>
#include <stdlib.h>

double
eval_threshold(const EvalThresholdRule *r, double *v, gsize n,
               gboolean sessions)
{
  if (r->fixed > 0)
    return r->fixed;
  if (n == 0)
    return INFINITY;
  qsort(v, n, sizeof(double), eval_cmp_double);
  if (sessions && r->trim) {
    /* a few odd normal sessions would carry the maximum: those far above
     * the rest (the warning's criterion) do not take part */
    double med = eval_median(v, n);
    while (n > 1 && v[n - 1] > 3.0 * med)
      n--;
  }
  return v[n - 1] * (1.0 + r->margin);
}

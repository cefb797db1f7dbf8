/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The threshold rule (threshold.h): the session rule of
 * lib/anomaly/baseline.h with this command's --margin and
 * --validation-outliers.  1.5 x the highest validation score (margin 0.5)
 * won on a development split of the HDFS log's training part among eight
 * rules; the others lost and are gone (their runs:
 * docs/notes/anomaly-experiments.md). */
#include "threshold.h"
#include "txl_anomaly.h"

#include <math.h>
#include <stdlib.h>

double
eval_threshold(const EvalThresholdRule *r, double *v, gsize n,
               gboolean sessions)
{
  if (r->fixed > 0)
    return r->fixed;
  return txl_session_rule_threshold(v, n, r->margin, sessions && r->trim);
}

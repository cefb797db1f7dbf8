/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The threshold rule (threshold.h): the session rule of
 * lib/anomaly/baseline.h, with this command's --margin.  The rules that
 * lost their experiments are gone; their runs:
 * docs/notes/anomaly-experiments.md and
 * docs/notes/2026-11-27-session-rule.md. */
#include "threshold.h"
#include "txl_anomaly.h"

double
eval_threshold(const EvalThresholdRule *r, double *v, gsize n)
{
  if (r->fixed > 0)
    return r->fixed;
  return txl_session_rule_threshold(v, n, r->margin);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl eval's threshold rule: from the scores of normal validation sessions
 * (or lines) alone, never from test labels. */
#ifndef TXL_EVAL_THRESHOLD_H
#define TXL_EVAL_THRESHOLD_H

#include <glib.h>

typedef struct {
  double fixed;  /* > 0: this threshold, no calibration (--threshold) */
  double margin; /* the highest validation score x (1 + margin) */
  gboolean trim; /* sessions above 3 x the validation median do not count */
} EvalThresholdRule;

/* The threshold of rule r for the validation scores v (sorted in place).
 * trim applies to session scores only (sessions = TRUE): lines are many
 * and their maximum is not one odd session.  INFINITY when n is 0. */
double eval_threshold(const EvalThresholdRule *r, double *v, gsize n,
                      gboolean sessions);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl eval's threshold rule: from the scores of validation sessions (or
 * lines) alone, never from test labels. */
#ifndef TXL_EVAL_THRESHOLD_H
#define TXL_EVAL_THRESHOLD_H

#include <glib.h>

typedef struct {
  double fixed;  /* > 0: this threshold, no calibration (--threshold) */
  double margin; /* the session rule's margin (--margin) */
} EvalThresholdRule;

/* The threshold of rule r for the validation scores v (reordered in
 * place): the session rule of lib/anomaly/baseline.h with r's margin.
 * INFINITY when n is 0. */
double eval_threshold(const EvalThresholdRule *r, double *v, gsize n);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Finding inf and NaN in float weights (model loading, txl convert). */
#ifndef TXL_FINITE_H
#define TXL_FINITE_H

#include <glib.h>

/* Index of the first non-finite value of v[0..n), or -1. */
gint64 txl_first_nonfinite(const float *v, gsize n);

#endif

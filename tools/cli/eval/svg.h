/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* scores.svg of txl eval: histograms of normal and anomalous test session
 * scores with the threshold. */
#ifndef TXL_EVAL_SVG_H
#define TXL_EVAL_SVG_H

#include <glib.h>

gboolean eval_write_svg(const char *path, const double *sc, const int *lab,
                        gsize n, double thr, const char *title,
                        GError **error);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The anomaly layer as the tools and plugins see it (docs/layout.md):
 * scored lines and baselines.  Internal to txl, not installed. */
#ifndef TXL_LAYER_ANOMALY_H
#define TXL_LAYER_ANOMALY_H

#include "baseline.h"
#include "lines.h"
#include "reference.h"
#include "repeats.h"

#endif

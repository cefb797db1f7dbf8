/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The train layer as the tools see it (docs/layout.md): batches, the
 * optimizer, training steps.  Internal to txl, not installed. */
#ifndef TXL_LAYER_TRAIN_H
#define TXL_LAYER_TRAIN_H

#include "batcher.h"
#include "learner.h"
#include "optim.h"
#include "train.h"

#endif

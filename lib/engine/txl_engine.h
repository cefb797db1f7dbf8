/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The engine layer as the tools and plugins see it (docs/layout.md): a
 * model's trainable parameters, sampling and generation, a scorer's state
 * as plain data.  Internal to txl, not installed. */
#ifndef TXL_LAYER_ENGINE_H
#define TXL_LAYER_ENGINE_H

#include "generate.h"
#include "model_write.h"
#include "params.h"
/* a scorer's pending tokens, which txlmodel's own snapshot section must
 * match (txl_scorer_pending) */
#include "stream_state.h"

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The text layer as the tools see it (docs/layout.md): BPE training and
 * BPE tokenizers, log normalisation.  Internal to txl, not installed. */
#ifndef TXL_LAYER_TEXT_H
#define TXL_LAYER_TEXT_H

#include "bpe.h"
#include "normalize.h"
#include "record.h"

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The import layer as the tools see it (docs/layout.md): Hugging Face
 * checkpoints into a model file.  Internal to txl, not installed. */
#ifndef TXL_LAYER_IMPORT_H
#define TXL_LAYER_IMPORT_H

#include "convert_hf.h"

#endif

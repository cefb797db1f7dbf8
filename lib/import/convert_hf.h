/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Import of a Hugging Face TransfoXL checkpoint directory (config.json,
 * model.safetensors, optional vocab.txt) into a txl model file. */
#ifndef TXL_CONVERT_HF_H
#define TXL_CONVERT_HF_H

#include "txl.h"

gboolean txl_convert_hf(const char *dir, const char *out_path, GError **error);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/import/convert_hf.c's reading of config.json (lib/import/convert_hf_config.c). */
#ifndef TXL_CONVERT_HF_INTERNAL_H
#define TXL_CONVERT_HF_INTERNAL_H

#include "txl.h"

#include <json-glib/json-glib.h>

/* Reads a JSON file whose root is an object, after bounding its size and
 * nesting; messages start with the path. */
JsonParser *txl_hf_load_json(const char *path, GError **error);
/* Fills c from a Hugging Face TransfoXLConfig object and validates it. */
gboolean txl_hf_parse_config(JsonObject *o, TxlConfig *c, GError **error);

#endif

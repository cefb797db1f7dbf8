/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A model file is put in place only once it loads: txl convert writes one
 * beside its target, loads it as every command would (finite weights, the
 * memory budget its lengths imply) and renames it over the target; txl
 * train does the same with its initial weights before its first step, and
 * removes it, so that hours of training never end in a file txl refuses
 * or a folder it cannot write. */
#ifndef TXL_MODEL_WRITE_H
#define TXL_MODEL_WRITE_H

#include "txl.h"

typedef gboolean (*TxlModelWriteFunc)(const char *path, gpointer data,
                                      GError **error);

/* write_fn(tmp) for a temporary beside path, loaded; then renamed over path
 * (keep) or removed.  path must be missing or a regular file.  Errors name
 * path, never the temporary. */
gboolean txl_model_write_checked(const char *path,
                                 TxlModelWriteFunc write_fn, gpointer data,
                                 gboolean keep, GError **error);

#endif

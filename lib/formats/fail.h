/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The readers' one way to report a malformed or unsupported file: a
 * message formatted first and set as is, so that a parser can end a check
 * with `return txl_fail(...)`.  Shared by the GGUF reader, the BPE loader
 * and the Hugging Face config reader, which each kept a copy. */
#ifndef TXL_FAIL_H
#define TXL_FAIL_H

#include "txl.h"

/* Sets error (TXL_ERROR, code) to the formatted message; returns FALSE. */
gboolean txl_fail(GError **error, int code, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

#endif

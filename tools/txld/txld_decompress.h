/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Request bodies with a Content-Encoding (docs/ingest.md): gzip (and its
 * alias x-gzip), deflate and zstd, as Vector, Fluent Bit and the
 * OpenTelemetry Collector send them.
 *
 * The output is bounded while it is produced: decoding stops, with 413,
 * as soon as it would pass the limit, so a small body that expands to
 * gigabytes (a "zip bomb") costs no more than the limit.  The buffer grows
 * up to the limit and no further; zstd's window (memory the decoder keeps
 * of what it produced) is bounded as well, see txld_decompress.c. */
#ifndef TXLD_DECOMPRESS_H
#define TXLD_DECOMPRESS_H

#include <glib.h>

/* The body decoded from encoding (the Content-Encoding header's value;
 * NULL, empty or "identity": raw itself, another reference), at most max
 * bytes of it.  NULL with the HTTP status to answer and why: 415 for an
 * encoding not known, 413 past max, 400 for a corrupt or truncated body.
 * why is a static string without quotes. */
GBytes *txld_decompress(GBytes *raw, const char *encoding, guint64 max,
                        guint *status, const char **why);

#endif

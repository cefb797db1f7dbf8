/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* JSON string literals and numbers for the per-line results that `txl score` and
 * txlsink write: any bytes in, valid JSON out (an invalid UTF-8 byte
 * becomes U+FFFD, control characters \u escapes). */
#ifndef TXL_JSONSTR_H
#define TXL_JSONSTR_H

#include <glib.h>

void txl_json_append_string(GString *out, const char *s, gsize len);
/* A number with a printf format for one double ("%.6f"), or null when it
 * is NaN or infinite: RFC 8259 has neither, and a reader that meets "nan"
 * rejects the whole line. */
void txl_json_append_double(GString *out, const char *fmt, double v);

#endif

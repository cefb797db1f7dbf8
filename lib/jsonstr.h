/* JSON string literals for the per-line results that `txl score` and
 * txlsink write: any bytes in, valid JSON out (an invalid UTF-8 byte
 * becomes U+FFFD, control characters \u escapes). */
#ifndef TXL_JSONSTR_H
#define TXL_JSONSTR_H

#include <glib.h>

void txl_json_append_string(GString *out, const char *s, gsize len);

#endif

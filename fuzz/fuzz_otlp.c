/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: OTLP logs requests (lib/ingest/otlp.h) as txld's POST
 * /v1/logs gets them.  The first byte picks the encoding (protobuf or
 * JSON) and whether a session attribute is asked for; the rest is the
 * body.  Every line written must be a well-formed record line, one per
 * record counted, a record refused on its own must say why, and a refused
 * request must leave the output as it was and count nothing. */
#include "otlp.h"
#include "record.h"
#include "fuzz_check.h" /* after record.h: check_record */

#include <stdint.h>
#include <string.h>

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  const char *session = data[0] & 2 ? "session.id" : NULL;
  GString *out = g_string_new("before\n");
  guint64 records = 0;
  TxlOtlpRejected rej = { 0, NULL };
  GError *error = NULL;
  /* a small bound on the lines too, so that refusing past it is fuzzed */
  gsize max_out = data[0] & 4 ? 256 : G_MAXSIZE;
  gboolean ok = data[0] & 1
      ? txl_otlp_logs_json((const char *)data + 1, size - 1, session,
                           max_out, out, &records, &rej, &error)
      : txl_otlp_logs_protobuf(data + 1, size - 1, session, max_out, out,
                               &records, &rej, &error);
  CHECK(ok == (error == NULL));
  /* a record refused on its own always says why */
  CHECK((rej.count == 0) == (rej.first == NULL));
  if (!ok) {
    CHECK(out->len == 7 && records == 0 && rej.count == 0);
    g_error_free(error);
  }
  guint64 lines = 0;
  for (gsize at = 7; at < out->len;) {
    const char *lf = memchr(out->str + at, '\n', out->len - at);
    CHECK(lf != NULL);
    gsize n = (gsize)(lf - (out->str + at)) + 1;
    check_record(out->str + at, n);
    at += n;
    lines++;
  }
  CHECK(lines == records);
  g_string_free(out, TRUE);
  return 0;
}

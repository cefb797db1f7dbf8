/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* OTLP logs into record lines (lib/ingest/otlp.h): the protobuf decoder's
 * edges (every AnyValue kind, the last member of a oneof, unknown fields,
 * the nesting bound, truncation anywhere refused with nothing written),
 * records refused one by one (partial success) and the JSON mapping's
 * (64-bit integers as strings, a missing time). */
#include "testutil.h"
#include "otlp.h"
#include "record.h"
#include "tu_test.h"

/* ---- a tiny protobuf writer for the tests --------------------------------- */

static void
varint(GString *o, guint64 v)
{
  do {
    g_string_append_c(o, (char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
    v >>= 7;
  } while (v);
}

static void
len_field(GString *o, guint field, const GString *data)
{
  varint(o, (guint64)field << 3 | 2);
  varint(o, data->len);
  g_string_append_len(o, data->str, data->len);
}

static GString *
str_any(const char *s, gsize n)
{
  GString *a = g_string_new(NULL);
  GString *v = g_string_new_len(s, (gssize)n);
  len_field(a, 1, v);
  g_string_free(v, TRUE);
  return a;
}

/* A request of one resource (service.name=svc) and one record of body. */
static GString *
request(const GString *record)
{
  GString *kv = g_string_new(NULL), *res = g_string_new(NULL);
  GString *key = g_string_new("service.name"), *val = str_any("svc", 3);
  len_field(kv, 1, key);
  len_field(kv, 2, val);
  len_field(res, 1, kv);
  GString *scope = g_string_new(NULL), *rl = g_string_new(NULL);
  len_field(scope, 2, record);
  len_field(rl, 2, scope);
  len_field(rl, 1, res);
  GString *req = g_string_new(NULL);
  len_field(req, 1, rl);
  GString *all[] = { kv, res, key, val, scope, rl };
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    g_string_free(all[i], TRUE);
  return req;
}

static char *
decode_rej(const GString *req, guint64 *n, TxlOtlpRejected *rej)
{
  GString *out = g_string_new(NULL);
  GError *e = NULL;
  *n = 0;
  if (!txl_otlp_logs_protobuf((const guint8 *)req->str, req->len, "sid",
                              G_MAXSIZE, out, n, rej, &e)) {
    g_assert_nonnull(e);
    g_assert_cmpuint(out->len, ==, 0);
    g_error_free(e);
    g_string_free(out, TRUE);
    return NULL;
  }
  return g_string_free(out, FALSE);
}

static char *
decode(const GString *req, guint64 *n)
{
  TxlOtlpRejected rej = { 0, NULL };
  char *out = decode_rej(req, n, &rej);
  g_assert_cmpuint(rej.count, ==, 0);
  return out;
}

static const char *
message_of(const char *line)
{
  return line + txl_record_header_len(line, strlen(line));
}

TU_TEST("/otlp/kinds", test_kinds)
{
  /* body: a kvlist {"a": [1, 2.5, true, bytes 00ff, null]} */
  GString *arr = g_string_new(NULL), *v = g_string_new(NULL);
  varint(v, 3 << 3); varint(v, 1); len_field(arr, 1, v); g_string_truncate(v, 0);
  varint(v, 4 << 3 | 1); g_string_append_len(v, "\0\0\0\0\0\0\x04\x40", 8);
  len_field(arr, 1, v); g_string_truncate(v, 0);
  varint(v, 2 << 3); varint(v, 1); len_field(arr, 1, v); g_string_truncate(v, 0);
  GString *b = g_string_new_len("\0\xff", 2);
  len_field(v, 7, b); len_field(arr, 1, v); g_string_truncate(v, 0);
  len_field(arr, 1, v); /* an empty AnyValue */
  GString *any = g_string_new(NULL), *kv = g_string_new(NULL), *kvl = g_string_new(NULL);
  len_field(any, 5, arr);
  GString *key = g_string_new("a");
  len_field(kv, 1, key);
  len_field(kv, 2, any);
  len_field(kvl, 1, kv);
  GString *body = g_string_new(NULL), *rec = g_string_new(NULL);
  GString *first = g_string_new("overridden");
  len_field(body, 1, first); /* a string first: the later kvlist wins */
  len_field(body, 6, kvl);
  len_field(rec, 5, body);
  varint(rec, 99 << 3); varint(rec, 7);  /* unknown fields are skipped */
  varint(rec, 11 << 3 | 1); g_string_append_len(rec, "\x01\0\0\0\0\0\0\0", 8);
  GString *req = request(rec);
  guint64 n;
  g_autofree char *out = decode(req, &n);
  g_assert_cmpuint(n, ==, 1);
  g_assert_cmpstr(message_of(out), ==, "{\"a\":[1,2.5,true,\"AP8=\",null]}\n");
  gsize h = txl_record_header_len(out, strlen(out));
  tu_assert_field(out, h, "time", "1970-01-01T00:00:00.000000001Z");
  /* truncated anywhere: refused, nothing written */
  for (gsize cut = 0; cut < req->len; cut++) {
    GString *part = g_string_new_len(req->str, (gssize)cut);
    guint64 m;
    char *o = decode(part, &m);
    g_assert_true(o == NULL || (m == 0 && *o == '\0'));
    g_free(o);
    g_string_free(part, TRUE);
  }
  GString *all[] = { arr, v, b, any, kv, kvl, key, body, rec, first, req };
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    g_string_free(all[i], TRUE);
}

static gboolean
nested_ok(int depth)
{
  GString *any = str_any("x", 1);
  for (int i = 0; i < depth; i++) {
    GString *arr = g_string_new(NULL), *outer = g_string_new(NULL);
    len_field(arr, 1, any);
    len_field(outer, 5, arr);
    g_string_free(any, TRUE);
    g_string_free(arr, TRUE);
    any = outer;
  }
  GString *rec = g_string_new(NULL);
  len_field(rec, 5, any);
  GString *req = request(rec);
  guint64 n;
  TxlOtlpRejected rej = { 0, NULL };
  char *out = decode_rej(req, &n, &rej);
  /* too deep: that record is refused, the request taken */
  g_assert_nonnull(out);
  g_assert_cmpuint(n + rej.count, ==, 1);
  gboolean ok = n == 1;
  g_free(out);
  g_string_free(any, TRUE);
  g_string_free(rec, TRUE);
  g_string_free(req, TRUE);
  return ok;
}

TU_TEST("/otlp/depth", test_depth)
{
  g_assert_true(nested_ok(TXL_OTLP_MAX_DEPTH));
  g_assert_false(nested_ok(TXL_OTLP_MAX_DEPTH + 1));
  g_assert_false(nested_ok(100000 / 4)); /* deep: refused, no stack overflow */
}

TU_TEST("/otlp/json", test_json)
{
  const char *j = "{\"resourceLogs\":[{\"resource\":{\"attributes\":["
                  "{\"key\":\"host.name\",\"value\":{\"stringValue\":\"h\"}},"
                  "{\"key\":\"sid\",\"value\":{\"intValue\":\"12\"}}]},"
                  "\"scopeLogs\":[{\"logRecords\":[{\"severityNumber\":21,"
                  "\"observedTimeUnixNano\":\"18446744073709551615\","
                  "\"body\":{\"stringValue\":\"a\\nb\"}},{},\"junk\"]}]},7]}";
  GString *out = g_string_new(NULL);
  guint64 n = 0;
  TxlOtlpRejected rej = { 0, NULL };
  g_assert_true(txl_otlp_logs_json(j, strlen(j), "sid", G_MAXSIZE, out, &n, &rej, NULL));
  /* {} has no body, "junk" is no record: both refused on their own */
  g_assert_cmpuint(n, ==, 1);
  g_assert_cmpuint(rej.count, ==, 2);
  g_assert_cmpstr(rej.first, ==, "a log record without a body (nothing to score)");
  gsize h = txl_record_header_len(out->str, out->len);
  g_assert_cmpstr(out->str + h, ==, "a b\n");
  tu_assert_field(out->str, h, "severity", "FATAL");
  tu_assert_field(out->str, h, "time", "2554-07-21T23:34:33.709551615Z");
  GError *e = NULL;
  g_assert_false(txl_otlp_logs_json("[", 1, NULL, G_MAXSIZE, out, &n, NULL, &e));
  g_clear_error(&e);
  g_string_free(out, TRUE);
}

/* Three records: one good, one without a body, one whose severity number
 * has the wrong wire type; the two are refused, the good one taken.  A
 * ScopeLogs whose framing is broken still refuses the whole request. */
TU_TEST("/otlp/partial", test_partial)
{
  GString *good = g_string_new(NULL), *nobody = g_string_new(NULL);
  GString *bad = g_string_new(NULL), *body = str_any("ok", 2);
  len_field(good, 5, body);
  varint(nobody, 2 << 3); varint(nobody, 9);
  len_field(bad, 5, body);
  varint(bad, 2 << 3 | 1); g_string_append_len(bad, "\0\0\0\0\0\0\0\0", 8);
  GString *scope = g_string_new(NULL), *rl = g_string_new(NULL);
  len_field(scope, 2, nobody);
  len_field(scope, 2, good);
  len_field(scope, 2, bad);
  len_field(rl, 2, scope);
  GString *req = g_string_new(NULL);
  len_field(req, 1, rl);
  guint64 n;
  TxlOtlpRejected rej = { 0, NULL };
  g_autofree char *out = decode_rej(req, &n, &rej);
  g_assert_cmpuint(n, ==, 1);
  g_assert_cmpstr(message_of(out), ==, "ok\n");
  g_assert_cmpuint(rej.count, ==, 2);
  g_assert_cmpstr(rej.first, ==, "a log record without a body (nothing to score)");
  /* the ScopeLogs' own bytes broken (a field with wire type 7): all refused */
  g_string_truncate(rl, 0);
  g_string_append(scope, "\x0f");
  len_field(rl, 2, scope);
  g_string_truncate(req, 0);
  len_field(req, 1, rl);
  rej.count = 0;
  g_assert_null(decode_rej(req, &n, &rej));
  g_assert_cmpuint(rej.count, ==, 0);
  GString *all[] = { good, nobody, bad, body, scope, rl, req };
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    g_string_free(all[i], TRUE);
}

TU_MAIN()

/* Each record repeats its resource's fields: 2,000 records of a few bytes
 * under a 4,000-byte service.name decode to 8 MB.  Past max_out the request
 * is refused whole (TXL_ERROR_INVALID), out as it was; under it, taken. */
TU_TEST("/otlp/decoded-bound", test_decoded_bound)
{
  GString *kv = g_string_new(NULL), *res = g_string_new(NULL);
  GString *key = g_string_new("service.name");
  GString *long_name = g_string_new(NULL);
  for (int i = 0; i < 4000; i++)
    g_string_append_c(long_name, 'a' + i % 26);
  GString *val = str_any(long_name->str, long_name->len);
  len_field(kv, 1, key);
  len_field(kv, 2, val);
  len_field(res, 1, kv);
  GString *scope = g_string_new(NULL), *rl = g_string_new(NULL);
  GString *body = str_any("x", 1), *rec = g_string_new(NULL);
  len_field(rec, 5, body);
  for (int i = 0; i < 2000; i++)
    len_field(scope, 2, rec);
  len_field(rl, 1, res);
  len_field(rl, 2, scope);
  GString *req = g_string_new(NULL);
  len_field(req, 1, rl);
  g_assert_cmpuint(req->len, <, 40000);
  for (int json = 0; json < 2; json++) {
    GString *in = req;
    g_autofree char *j = NULL;
    if (json) { /* the same request in OTLP/JSON */
      GString *t = g_string_new("{\"resourceLogs\":[{\"resource\":{\"attributes\":"
                                "[{\"key\":\"service.name\",\"value\":"
                                "{\"stringValue\":\"");
      g_string_append(t, long_name->str);
      g_string_append(t, "\"}}]},\"scopeLogs\":[{\"logRecords\":[");
      for (int i = 0; i < 2000; i++)
        g_string_append(t, i ? ",{\"body\":{\"stringValue\":\"x\"}}"
                             : "{\"body\":{\"stringValue\":\"x\"}}");
      g_string_append(t, "]}]}]}");
      j = g_string_free(t, FALSE);
    }
    for (int big = 0; big < 2; big++) {
      gsize max = big ? 10000000 : 1000000;
      GString *out = g_string_new("kept\n");
      guint64 n = 0;
      GError *e = NULL;
      gboolean ok = json
          ? txl_otlp_logs_json(j, strlen(j), NULL, max, out, &n, NULL, &e)
          : txl_otlp_logs_protobuf((const guint8 *)in->str, in->len, NULL,
                                   max, out, &n, NULL, &e);
      if (big) {
        g_assert_no_error(e);
        g_assert_true(ok);
        g_assert_cmpuint(n, ==, 2000);
        g_assert_cmpuint(out->len, >, 8000000);
        g_assert_cmpuint(out->len, <=, 5 + max);
      } else {
        g_assert_false(ok);
        g_assert_error(e, TXL_ERROR, TXL_ERROR_INVALID);
        g_assert_cmpstr(out->str, ==, "kept\n");
        g_assert_cmpuint(n, ==, 0);
        g_clear_error(&e);
      }
      g_string_free(out, TRUE);
    }
  }
  GString *all[] = { kv, res, key, long_name, val, scope, rl, body, rec, req };
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    g_string_free(all[i], TRUE);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Tests for the strict safetensors reader: valid files, every kind of
 * malformed header, truncation, and the float conversions. */
#include "safetensors.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include "tu_test.h"

/* Builds header-length + header + data into an exactly sized heap buffer,
 * so that AddressSanitizer catches any read past the end. */
static guint8 *
build(const char *json, const void *data, gsize data_len, gsize *size)
{
  gsize hl = strlen(json);
  *size = 8 + hl + data_len;
  guint8 *b = g_malloc(*size ? *size : 1);
  for (int i = 0; i < 8; i++)
    b[i] = (guint8)((guint64)hl >> (8 * i));
  memcpy(b + 8, json, hl);
  if (data_len)
    memcpy(b + 8 + hl, data, data_len);
  return b;
}

/* Expects the parse to fail with a format error mentioning `needle`. */
static void
expect_fail(const char *json, gsize data_len, const char *needle)
{
  guint8 *zeros = g_malloc0(data_len ? data_len : 1);
  gsize size;
  guint8 *b = build(json, zeros, data_len, &size);
  GError *error = NULL;
  StFile *f = st_parse(b, size, &error);
  if (f)
    g_error("accepted hostile header: %s", json);
  g_assert_error(error, TXL_ERROR, TXL_ERROR_FORMAT);
  if (needle && !strstr(error->message, needle))
    g_error("message '%s' does not mention '%s' (header %s)", error->message,
            needle, json);
  g_error_free(error);
  g_free(b);
  g_free(zeros);
}

static const char valid_json[] =
    "{\"__metadata__\":{\"format\":\"pt\"},"
    "\"a\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,24]},"
    "\"b\":{\"dtype\":\"F16\",\"shape\":[4],\"data_offsets\":[24,32]},"
    "\"c\":{\"dtype\":\"BF16\",\"shape\":[2],\"data_offsets\":[32,36]},"
    "\"d\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[36,44]},"
    "\"e\":{\"dtype\":\"I32\",\"shape\":[1,1],\"data_offsets\":[44,48]},"
    "\"z\":{\"dtype\":\"F32\",\"shape\":[0,5],\"data_offsets\":[48,48]},"
    "\"s\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[48,52]}}";

static guint8 *
valid_file(gsize *size)
{
  guint8 data[52];
  float a[6] = { 1, -2, 3.5f, 0, 1e-3f, -1e30f };
  memcpy(data, a, 24);
  const guint8 half[8] = { 0x00, 0x3c, 0x00, 0xc0, 0x01, 0x00, 0x00, 0x7c };
  memcpy(data + 24, half, 8);
  const guint8 bf[4] = { 0x80, 0x3f, 0x40, 0xc0 }; /* 1.0, -3.0 */
  memcpy(data + 32, bf, 4);
  double d = 0.1;
  memcpy(data + 36, &d, 8);
  gint32 e = 7;
  memcpy(data + 44, &e, 4);
  float s = 42.0f;
  memcpy(data + 48, &s, 4);
  return build(valid_json, data, sizeof data, size);
}

TU_TEST("/safetensors/valid", test_valid)
{
  gsize size;
  guint8 *b = valid_file(&size);
  GError *error = NULL;
  StFile *f = st_parse(b, size, &error);
  g_assert_no_error(error);
  g_assert_nonnull(f);
  g_assert_cmpuint(st_n_tensors(f), ==, 7);
  g_assert_cmpstr(st_tensor_at(f, 0)->name, ==, "a");
  g_assert_null(st_tensor_at(f, 7));
  g_assert_null(st_find(f, "__metadata__"));
  g_assert_null(st_find(f, "nope"));

  const StTensor *a = st_find(f, "a");
  g_assert_nonnull(a);
  g_assert_cmpint(a->dtype, ==, ST_F32);
  g_assert_cmpstr(a->dtype_name, ==, "F32");
  g_assert_cmpint(a->n_dims, ==, 2);
  g_assert_cmpuint(a->shape[0], ==, 2);
  g_assert_cmpuint(a->shape[1], ==, 3);
  g_assert_cmpuint(a->nbytes, ==, 24);
  gsize n;
  float *v = st_to_f32(a, &n, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(n, ==, 6);
  g_assert_cmpfloat(v[0], ==, 1.0f);
  g_assert_cmpfloat(v[2], ==, 3.5f);
  g_assert_cmpfloat(v[5], ==, -1e30f);
  g_free(v);

  v = st_to_f32(st_find(f, "b"), &n, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(n, ==, 4);
  g_assert_cmpfloat(v[0], ==, 1.0f);
  g_assert_cmpfloat(v[1], ==, -2.0f);
  g_assert_cmpfloat(v[2], ==, ldexpf(1.0f, -24));
  g_assert_true(isinf(v[3]) && v[3] > 0);
  g_free(v);

  v = st_to_f32(st_find(f, "c"), &n, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(v[0], ==, 1.0f);
  g_assert_cmpfloat(v[1], ==, -3.0f);
  g_free(v);

  v = st_to_f32(st_find(f, "d"), &n, &error);
  g_assert_no_error(error);
  g_assert_cmpfloat(v[0], ==, 0.1f);
  g_free(v);

  const StTensor *e = st_find(f, "e");
  g_assert_cmpint(e->dtype, ==, ST_OTHER);
  g_assert_cmpstr(e->dtype_name, ==, "I32");
  v = st_to_f32(e, &n, &error);
  g_assert_null(v);
  g_assert_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED);
  g_assert_nonnull(strstr(error->message, "I32"));
  g_clear_error(&error);

  const StTensor *z = st_find(f, "z");
  g_assert_cmpuint(z->nbytes, ==, 0);
  v = st_to_f32(z, &n, &error);
  g_assert_no_error(error);
  g_assert_nonnull(v);
  g_assert_cmpuint(n, ==, 0);
  g_free(v);

  const StTensor *s = st_find(f, "s");
  g_assert_cmpint(s->n_dims, ==, 0);
  v = st_to_f32(s, &n, &error);
  g_assert_cmpuint(n, ==, 1);
  g_assert_cmpfloat(v[0], ==, 42.0f);
  g_free(v);

  st_close(f);
  g_free(b);
}

/* Every strict prefix of a file whose data area is fully used must be
 * refused: either the header is cut or the last tensor's bytes are. */
TU_TEST("/safetensors/truncation", test_truncation)
{
  gsize size;
  guint8 *full = valid_file(&size);
  for (gsize len = 0; len < size; len++) {
    guint8 *b = g_memdup2(full, len ? len : 1);
    GError *error = NULL;
    StFile *f = st_parse(b, len, &error);
    if (f)
      g_error("prefix of %zu / %zu bytes accepted", len, size);
    g_assert_error(error, TXL_ERROR, TXL_ERROR_FORMAT);
    g_error_free(error);
    g_free(b);
  }
  g_free(full);
}

TU_TEST("/safetensors/header-length", test_header_length)
{
  GError *error = NULL;
  /* header length beyond the file */
  guint8 b[16] = { 200, 0, 0, 0, 0, 0, 0, 0, '{', '}' };
  g_assert_null(st_parse(b, sizeof b, &error));
  g_assert_error(error, TXL_ERROR, TXL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "header length"));
  g_clear_error(&error);

  /* 2^64 - 1: must not wrap around when added to 8 */
  memset(b, 0xff, 8);
  g_assert_null(st_parse(b, sizeof b, &error));
  g_assert_error(error, TXL_ERROR, TXL_ERROR_FORMAT);
  g_clear_error(&error);

  /* beyond the 100 MB limit but inside the buffer (pages stay untouched) */
  gsize big = 8 + 100u * 1000u * 1000u + 16;
  guint8 *huge = g_malloc0(big);
  guint64 hl = big - 8;
  for (int i = 0; i < 8; i++)
    huge[i] = (guint8)(hl >> (8 * i));
  g_assert_null(st_parse(huge, big, &error));
  g_assert_error(error, TXL_ERROR, TXL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "limit"));
  g_clear_error(&error);
  g_free(huge);

  /* empty header, NUL inside the header */
  expect_fail("", 0, NULL);
  guint8 nul[12] = { 4, 0, 0, 0, 0, 0, 0, 0, '{', 0, '}', ' ' };
  g_assert_null(st_parse(nul, sizeof nul, &error));
  g_assert_error(error, TXL_ERROR, TXL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, "NUL"));
  g_clear_error(&error);
}

TU_TEST("/safetensors/bad-json", test_bad_json)
{
  expect_fail("{", 0, "JSON");
  expect_fail("not json", 0, "JSON");
  expect_fail("[]", 0, "object");
  expect_fail("  ", 0, NULL);
  expect_fail("\"str\"", 0, "object");
  expect_fail("{\"a\":1}", 0, "'a'");
  expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},"
              "\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
              8, "repeats");
  expect_fail("{\"a\":{\"dtype\":\"F32\",\"dtype\":\"F16\",\"shape\":[1],"
              "\"data_offsets\":[0,4]}}", 4, "repeats");
  expect_fail("{\"__metadata__\":[1]}", 0, "__metadata__");
  expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}} x",
              4, "JSON");
  /* not UTF-8 */
  expect_fail("{\"\xff\xfe\":{}}", 0, NULL);
}

/* json-glib recurses once per level: a header nested 100,000 deep (200 KB)
 * overflowed the stack before the depth was bounded.  Brackets inside
 * strings and escapes do not count. */
TU_TEST("/safetensors/deep-nesting", test_deep_nesting)
{
  const int n = 100000;
  GString *j = g_string_new("{\"a\":");
  for (int i = 0; i < n; i++)
    g_string_append_c(j, i % 2 ? '{' : '[');
  expect_fail(j->str, 0, "nested more than 64 levels");
  g_string_free(j, TRUE);
  j = g_string_new("{\"__metadata__\":{\"k\":\"");
  for (int i = 0; i < n; i++)
    g_string_append(j, i % 2 ? "[\\\"{" : "[");
  g_string_append(j, "\"}}");
  gsize size;
  guint8 *b = build(j->str, NULL, 0, &size);
  GError *error = NULL;
  StFile *f = st_parse(b, size, &error);
  g_assert_no_error(error);
  st_close(f);
  g_free(b);
  g_string_free(j, TRUE);
}

TU_TEST("/safetensors/bad-entries", test_bad_entries)
{
  /* missing fields, wrong types */
  expect_fail("{\"t\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "dtype");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "shape");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "data_offsets");
  expect_fail("{\"t\":{\"dtype\":1,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
              "dtype");
  expect_fail("{\"t\":{\"dtype\":\"F17\",\"shape\":[1],\"data_offsets\":[0,4]}}",
              4, "F17");
  expect_fail("{\"t\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}",
              4, "unknown dtype");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", 4,
              "shape");
  expect_fail("{\"t\":[1,2]}", 0, "'t'");
  /* shapes */
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}",
              4, "shape[0]");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}",
              4, "shape[0]");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}",
              4, "shape[0]");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[99999999999999999999],"
              "\"data_offsets\":[0,4]}}", 4, "shape[0]");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[4294967296,4294967296],"
              "\"data_offsets\":[0,4]}}", 4, "too large");
  expect_fail("{\"t\":{\"dtype\":\"F64\",\"shape\":[2305843009213693952],"
              "\"data_offsets\":[0,8]}}", 8, "too large");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[0,4294967296,4294967296],"
              "\"data_offsets\":[0,0]}}", 0, "too large");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],"
              "\"data_offsets\":[0,4]}}", 4, "dimensions");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[9223372036854775807,2],"
              "\"data_offsets\":[0,4]}}", 4, "too large");
  /* offsets */
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}",
              4, "data_offsets");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}",
              8, "data_offsets");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}",
              4, "data_offsets");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}",
              4, "end before start");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,8]}}",
              4, "run past");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
              4, "run past");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],"
              "\"data_offsets\":[18446744073709551612,18446744073709551616]}}",
              4, "data_offsets");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}",
              8, "need 8");
  expect_fail("{\"t\":{\"dtype\":\"F16\",\"shape\":[2],\"data_offsets\":[0,8]}}",
              8, "need 4");
  expect_fail("{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,\"4\"]}}",
              4, "data_offsets");
  /* overlaps */
  expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
              8, "overlap");
  expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
              8, "overlap");
  expect_fail("{\"a\":{\"dtype\":\"F32\",\"shape\":[3],\"data_offsets\":[0,12]},"
              "\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[12,16]},"
              "\"c\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}",
              16, "overlap");
}

/* Things that are unusual but legal. */
TU_TEST("/safetensors/lenient", test_lenient)
{
  const char *json =
      "{\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]},"
      "\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2],"
      "\"extra\":true},"
      "\"e\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]}}   ";
  guint8 data[16] = { 0 };
  gsize size;
  guint8 *b = build(json, data, sizeof data, &size);
  GError *error = NULL;
  StFile *f = st_parse(b, size, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(st_n_tensors(f), ==, 3);
  g_assert_cmpint(st_find(f, "a")->dtype, ==, ST_OTHER);
  st_close(f);
  g_free(b);

  b = build("{}", NULL, 0, &size);
  f = st_parse(b, size, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(st_n_tensors(f), ==, 0);
  st_close(f);
  g_free(b);
}

/* Random byte damage: whatever happens, no crash, no out-of-bounds read. */
TU_TEST("/safetensors/mutations", test_mutations)
{
  gsize size;
  guint8 *full = valid_file(&size);
  GRand *r = g_rand_new_with_seed(1234);
  guint8 *b = g_malloc(size);
  for (int iter = 0; iter < 20000; iter++) {
    memcpy(b, full, size);
    int flips = g_rand_int_range(r, 1, 4);
    for (int k = 0; k < flips; k++) {
      gsize at = g_rand_int_range(r, 0, (gint32)size);
      /* mostly printable damage, so the JSON stays parseable often */
      b[at] = g_rand_boolean(r) ? (guint8)g_rand_int_range(r, 0x20, 0x7f)
                                : (guint8)g_rand_int(r);
    }
    GError *error = NULL;
    StFile *f = st_parse(b, size, &error);
    if (f) {
      for (gsize i = 0; i < st_n_tensors(f); i++) {
        const StTensor *t = st_tensor_at(f, i);
        g_assert_true((const guint8 *)t->data >= b &&
                      (const guint8 *)t->data + t->nbytes <= b + size);
        gsize n;
        float *v = st_to_f32(t, &n, NULL);
        g_free(v);
      }
      st_close(f);
    } else {
      g_assert_nonnull(error);
      g_error_free(error);
    }
  }
  g_free(b);
  g_rand_free(r);
  g_free(full);
}

static float
convert_one_half(guint16 h)
{
  char json[128];
  g_snprintf(json, sizeof json,
             "{\"h\":{\"dtype\":\"F16\",\"shape\":[1],\"data_offsets\":[0,2]}}");
  guint8 data[2] = { (guint8)(h & 0xff), (guint8)(h >> 8) };
  gsize size;
  guint8 *b = build(json, data, 2, &size);
  StFile *f = st_parse(b, size, NULL);
  g_assert_nonnull(f);
  gsize n;
  float *v = st_to_f32(st_find(f, "h"), &n, NULL);
  float x = v[0];
  g_free(v);
  st_close(f);
  g_free(b);
  return x;
}

TU_TEST("/safetensors/half", test_half)
{
  static const struct { guint16 h; float f; } known[] = {
    { 0x0000, 0.0f },
    { 0x3c00, 1.0f },
    { 0xbc00, -1.0f },
    { 0x4000, 2.0f },
    { 0xc000, -2.0f },
    { 0x3800, 0.5f },
    { 0x3555, 0.333251953125f },
    { 0x7bff, 65504.0f },             /* largest finite */
    { 0xfbff, -65504.0f },
    { 0x0400, 6.103515625e-05f },     /* smallest normal, 2^-14 */
    { 0x0001, 5.9604644775390625e-08f }, /* smallest subnormal, 2^-24 */
    { 0x03ff, 6.097555160522461e-05f },  /* largest subnormal */
    { 0x8001, -5.9604644775390625e-08f },
    { 0x0200, 3.0517578125e-05f },    /* 2^-15, subnormal */
    { 0x5640, 100.0f },
    { 0x2e66, 0.0999755859375f },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(known); i++) {
    float x = convert_one_half(known[i].h);
    if (x != known[i].f)
      g_error("half 0x%04x -> %.9g, expected %.9g", known[i].h, (double)x,
              (double)known[i].f);
  }
  float nz = convert_one_half(0x8000);
  g_assert_true(nz == 0.0f && signbit(nz));
  float pinf = convert_one_half(0x7c00);
  g_assert_true(isinf(pinf) && pinf > 0);
  float ninf = convert_one_half(0xfc00);
  g_assert_true(isinf(ninf) && ninf < 0);
  g_assert_true(isnan(convert_one_half(0x7e00)));
  g_assert_true(isnan(convert_one_half(0x7c01))); /* signalling payload */
  g_assert_true(isnan(convert_one_half(0xfe00)));

  /* Every half value, checked by the rule rather than by a second
   * conversion routine: finite values are (-1)^s * m * 2^(e-25). */
  gsize size;
  guint8 *data = g_malloc(2 * 65536);
  for (guint i = 0; i < 65536; i++) {
    data[2 * i] = (guint8)(i & 0xff);
    data[2 * i + 1] = (guint8)(i >> 8);
  }
  guint8 *b = build("{\"h\":{\"dtype\":\"F16\",\"shape\":[256,256],"
                    "\"data_offsets\":[0,131072]}}", data, 131072, &size);
  StFile *f = st_parse(b, size, NULL);
  g_assert_nonnull(f);
  gsize n;
  float *v = st_to_f32(st_find(f, "h"), &n, NULL);
  g_assert_cmpuint(n, ==, 65536);
  for (guint i = 0; i < 65536; i++) {
    guint s = i >> 15, e = (i >> 10) & 31, m = i & 1023;
    if (e == 31) {
      g_assert_true(m ? isnan(v[i]) : isinf(v[i]));
      g_assert_true(!signbit(v[i]) == !s);
      continue;
    }
    double want = e == 0 ? ldexp(m, -24) : ldexp(1024 + m, (int)e - 25);
    if (s)
      want = -want;
    if ((double)v[i] != want || !signbit(v[i]) != !s)
      g_error("half 0x%04x -> %.9g, expected %.9g", i, (double)v[i], want);
  }
  g_free(v);
  st_close(f);
  g_free(b);
  g_free(data);
}

TU_TEST("/safetensors/f64-range", test_f64_range)
{
  double d[4] = { 1e300, -1e300, 1e-300, -0.0 };
  gsize size;
  guint8 *b = build("{\"d\":{\"dtype\":\"F64\",\"shape\":[4],"
                    "\"data_offsets\":[0,32]}}", d, sizeof d, &size);
  StFile *f = st_parse(b, size, NULL);
  gsize n;
  float *v = st_to_f32(st_find(f, "d"), &n, NULL);
  g_assert_true(isinf(v[0]) && v[0] > 0);
  g_assert_true(isinf(v[1]) && v[1] < 0);
  g_assert_cmpfloat(v[2], ==, 0.0f);
  g_assert_true(v[3] == 0.0f && signbit(v[3]));
  g_free(v);
  st_close(f);
  g_free(b);
}

TU_TEST("/safetensors/open", test_open)
{
  g_autofree char *dir = g_dir_make_tmp("txl-st-XXXXXX", NULL);
  g_assert_nonnull(dir);
  GError *error = NULL;

  g_autofree char *missing = g_build_filename(dir, "missing.safetensors", NULL);
  g_assert_null(st_open(missing, &error));
  g_assert_error(error, TXL_ERROR, TXL_ERROR_IO);
  g_assert_nonnull(strstr(error->message, missing));
  g_clear_error(&error);

  g_autofree char *empty = g_build_filename(dir, "empty.safetensors", NULL);
  g_assert_true(g_file_set_contents(empty, "", 0, NULL));
  g_assert_null(st_open(empty, &error));
  g_assert_nonnull(error);
  g_assert_nonnull(strstr(error->message, "empty"));
  g_clear_error(&error);

  g_assert_null(st_open(dir, &error));
  g_assert_error(error, TXL_ERROR, TXL_ERROR_IO);
  g_clear_error(&error);

  gsize size;
  guint8 *b = valid_file(&size);
  g_autofree char *good = g_build_filename(dir, "good.safetensors", NULL);
  g_assert_true(g_file_set_contents(good, (const char *)b, size, NULL));
  StFile *f = st_open(good, &error);
  g_assert_no_error(error);
  g_assert_cmpuint(st_n_tensors(f), ==, 7);
  gsize n;
  float *v = st_to_f32(st_find(f, "s"), &n, &error);
  g_assert_cmpfloat(v[0], ==, 42.0f);
  g_free(v);
  st_close(f);

  /* a truncated file on disk names the file */
  g_autofree char *cut = g_build_filename(dir, "cut.safetensors", NULL);
  g_assert_true(g_file_set_contents(cut, (const char *)b, size - 1, NULL));
  g_assert_null(st_open(cut, &error));
  g_assert_error(error, TXL_ERROR, TXL_ERROR_FORMAT);
  g_assert_nonnull(strstr(error->message, cut));
  g_clear_error(&error);

  g_unlink(good);
  g_unlink(cut);
  g_unlink(empty);
  g_rmdir(dir);
  g_free(b);
}

TU_MAIN()

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* GGUF reader and writer: round trips, truncation and random corruption
 * (hand-built hostile headers: test_gguf_hostile.c). */
#include "gguf.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

/* ---- helpers -------------------------------------------------------- */

static char *tmp_dir;

static char *
tmp_path(const char *name)
{
  return g_build_filename(tmp_dir, name, NULL);
}

#include "gguf_build.h"
#include "gguf_touch.h"
#include "tu_test.h"

/* ---- the writer's file with every type the writer knows ------------- */

static const char *const STRS[] = { "alpha", "", "b\0c", "\xff\xfe" };
static const gsize STR_LENS[] = { 5, 0, 3, 2 };
static const uint32_t U32S[] = { 0, 1, 20000, 0xffffffffu };
static const gboolean BOOLS[] = { TRUE, FALSE, FALSE, TRUE, TRUE };

typedef struct {
  const char *name;
  uint32_t type, n_dims;
  uint64_t ne[4];
} Shape;

static const Shape SHAPES[] = {
  { "a.f32.1d", GGUF_TENSOR_F32, 1, { 7 } },
  { "b.f16.2d", GGUF_TENSOR_F16, 2, { 3, 5 } },
  { "c.f32.3d", GGUF_TENSOR_F32, 3, { 2, 3, 4 } },
  { "d.f16.4d", GGUF_TENSOR_F16, 4, { 1, 2, 1, 3 } },
  { "e.f32.scalar", GGUF_TENSOR_F32, 1, { 1 } },
  { "blk.0.attn_qkv.weight", GGUF_TENSOR_F32, 2, { 16, 48 } },
};

static gsize
shape_bytes(const Shape *s)
{
  gsize n = s->type == GGUF_TENSOR_F32 ? 4 : 2;
  for (uint32_t d = 0; d < s->n_dims; d++)
    n *= s->ne[d];
  return n;
}

/* Deterministic, distinct content per tensor. */
static guint8 *
shape_data(gsize idx, const Shape *s)
{
  gsize n = shape_bytes(s);
  guint8 *p = g_malloc(n);
  for (gsize i = 0; i < n; i++)
    p[i] = (guint8)(i * 7 + idx * 31 + 1);
  return p;
}

static void
fill_writer(GgufWriter *w)
{
  gguf_writer_add_string(w, "general.architecture", "transfo-xl");
  gguf_writer_add_string(w, "general.name", "caf\xc3\xa9 model");
  gguf_writer_add_string(w, "empty.string", "");
  gguf_writer_add_u32(w, "u32.max", 0xffffffffu);
  gguf_writer_add_u32(w, "u32.small", 7);
  gguf_writer_add_i32(w, "i32.neg", -123456);
  gguf_writer_add_i32(w, "i32.min", G_MININT32);
  gguf_writer_add_f32(w, "f32.eps", 1e-5f);
  gguf_writer_add_f32(w, "f32.neg", -2.5f);
  gguf_writer_add_bool(w, "bool.true", TRUE);
  gguf_writer_add_bool(w, "bool.false", FALSE);
  gguf_writer_add_bool(w, "bool.nonzero", 42); /* any non-zero is TRUE */
  gguf_writer_add_u32_array(w, "arr.u32", U32S, G_N_ELEMENTS(U32S));
  gguf_writer_add_u32_array(w, "arr.u32.empty", NULL, 0);
  gguf_writer_add_bool_array(w, "arr.bool", BOOLS, G_N_ELEMENTS(BOOLS));
  gguf_writer_add_string_array(w, "arr.str", STRS, STR_LENS,
                               G_N_ELEMENTS(STRS));
  gguf_writer_add_string_array(w, "arr.str.empty", NULL, NULL, 0);
  for (gsize i = 0; i < G_N_ELEMENTS(SHAPES); i++) {
    const Shape *s = &SHAPES[i];
    g_autofree guint8 *data = shape_data(i, s);
    gguf_writer_add_tensor(w, s->name, s->type, s->n_dims, s->ne, data,
                           shape_bytes(s));
  }
}

/* Writes the full example file under the name given: its path. */
static char *
write_example(const char *name)
{
  char *path = tmp_path(name);
  GgufWriter *w = gguf_writer_new();
  fill_writer(w);
  GError *err = NULL;
  g_assert_true(gguf_writer_write(w, path, &err));
  g_assert_no_error(err);
  gguf_writer_free(w);
  return path;
}

/* Writes the full example file and returns its bytes. */
static GBytes *
example_bytes(void)
{
  g_autofree char *path = write_example("example.gguf");
  gchar *contents;
  gsize len;
  g_assert_true(g_file_get_contents(path, &contents, &len, NULL));
  return g_bytes_new_take(contents, len);
}

/* Parses bytes that must be accepted (they must outlive the file). */
static GgufFile *
parse_ok(GBytes *bytes)
{
  gsize size;
  const void *data = g_bytes_get_data(bytes, &size);
  GError *err = NULL;
  GgufFile *f = gguf_parse(data, size, &err);
  g_assert_no_error(err);
  return f;
}

static const char *const EXAMPLE_KEYS[] = {
  "general.architecture", "general.name", "empty.string", "u32.max",
  "u32.small", "i32.neg", "i32.min", "f32.eps", "f32.neg", "bool.true",
  "bool.false", "bool.nonzero", "arr.u32", "arr.u32.empty", "arr.bool",
  "arr.str", "arr.str.empty", "general.alignment", "missing",
};

/* ---- round trips ---------------------------------------------------- */

TU_TEST("/gguf/roundtrip/values", test_roundtrip_values)
{
  g_autofree char *path = write_example("values.gguf");
  GError *err = NULL;
  GgufFile *f = gguf_open(path, &err);
  g_assert_no_error(err);
  g_assert_nonnull(f);
  g_assert_cmpuint(gguf_version(f), ==, 3);

  g_autofree char *arch = gguf_get_string(f, "general.architecture", &err);
  g_assert_no_error(err);
  g_assert_cmpstr(arch, ==, "transfo-xl");
  g_autofree char *name = gguf_get_string(f, "general.name", &err);
  g_assert_cmpstr(name, ==, "caf\xc3\xa9 model");
  g_autofree char *empty = gguf_get_string(f, "empty.string", &err);
  g_assert_no_error(err);
  g_assert_cmpstr(empty, ==, "");

  gint64 v = 0;
  g_assert_true(gguf_get_int(f, "u32.max", 0, G_MAXINT64, &v, &err));
  g_assert_cmpint(v, ==, 0xffffffffLL);
  g_assert_true(gguf_get_int(f, "u32.small", 7, 7, &v, &err));
  g_assert_cmpint(v, ==, 7);
  g_assert_true(gguf_get_int(f, "i32.neg", G_MININT64, 0, &v, &err));
  g_assert_cmpint(v, ==, -123456);
  g_assert_true(gguf_get_int(f, "i32.min", G_MININT32, 0, &v, &err));
  g_assert_cmpint(v, ==, G_MININT32);
  g_assert_no_error(err);

  double d = 0;
  g_assert_true(gguf_get_float(f, "f32.eps", &d, &err));
  g_assert_cmpfloat(d, ==, (double)1e-5f);
  g_assert_true(gguf_get_float(f, "f32.neg", &d, &err));
  g_assert_cmpfloat(d, ==, -2.5);

  gboolean bv = FALSE;
  g_assert_true(gguf_get_bool(f, "bool.true", &bv, &err));
  g_assert_true(bv);
  g_assert_true(gguf_get_bool(f, "bool.false", &bv, &err));
  g_assert_false(bv);
  g_assert_true(gguf_get_bool(f, "bool.nonzero", &bv, &err));
  g_assert_true(bv);
  g_assert_no_error(err);

  g_autofree gint64 *ints = NULL;
  gsize n = 99;
  g_assert_true(gguf_get_int_array(f, "arr.u32", &ints, &n, &err));
  g_assert_cmpuint(n, ==, G_N_ELEMENTS(U32S));
  for (gsize i = 0; i < n; i++)
    g_assert_cmpint(ints[i], ==, (gint64)U32S[i]);
  g_autofree gint64 *none = NULL;
  g_assert_true(gguf_get_int_array(f, "arr.u32.empty", &none, &n, &err));
  g_assert_cmpuint(n, ==, 0);
  g_assert_nonnull(none);

  g_autofree gboolean *bools = NULL;
  g_assert_true(gguf_get_bool_array(f, "arr.bool", &bools, &n, &err));
  g_assert_cmpuint(n, ==, G_N_ELEMENTS(BOOLS));
  for (gsize i = 0; i < n; i++)
    g_assert_cmpint(bools[i], ==, BOOLS[i]);

  g_autofree const char **strs = NULL;
  g_autofree gsize *lens = NULL;
  g_assert_true(gguf_get_string_array(f, "arr.str", &strs, &lens, &n, &err));
  g_assert_no_error(err);
  g_assert_cmpuint(n, ==, G_N_ELEMENTS(STRS));
  for (gsize i = 0; i < n; i++) {
    g_assert_cmpuint(lens[i], ==, STR_LENS[i]);
    g_assert_cmpmem(strs[i], lens[i], STRS[i], STR_LENS[i]);
  }
  g_autofree const char **strs0 = NULL;
  g_autofree gsize *lens0 = NULL;
  g_assert_true(
      gguf_get_string_array(f, "arr.str.empty", &strs0, &lens0, &n, &err));
  g_assert_cmpuint(n, ==, 0);

  g_assert_true(gguf_has_key(f, "arr.bool"));
  g_assert_false(gguf_has_key(f, "general.alignment"));
  g_assert_false(gguf_has_key(f, "arr"));
  g_assert_no_error(err);
  gguf_close(f);
}

TU_TEST("/gguf/reader/getter-errors", test_getter_errors)
{
  g_autoptr(GBytes) bytes = example_bytes();
  GgufFile *f = parse_ok(bytes);
  GError *err = NULL;

  /* integers: a missing key, other types, out of the range asked for;
   * the value is left alone */
  static const struct {
    const char *key;
    gint64 hi;
    const char *needle, *needle2;
  } ints_refused[] = {
    { "nope", 10, "missing key 'nope'", NULL },
    { "general.name", 10, "'general.name'", "string" },
    { "u32.small", 6, "'u32.small'", "7" },
    { "u32.max", G_MAXINT32, "'u32.max'", "4294967295" },
    { "i32.neg", 10, "'i32.neg'", "-123456" },
    { "f32.eps", 10, "'f32.eps'", "f32" },
    { "bool.true", 10, "'bool.true'", "bool" },
  };
  gint64 v = 5;
  for (gsize i = 0; i < G_N_ELEMENTS(ints_refused); i++) {
    g_assert_false(
        gguf_get_int(f, ints_refused[i].key, 0, ints_refused[i].hi, &v, &err));
    format_error_clear(&err, ints_refused[i].needle, ints_refused[i].needle2);
    g_assert_cmpint(v, ==, 5);
  }

  gboolean b;
  g_assert_false(gguf_get_bool(f, "u32.small", &b, &err));
  format_error_clear(&err, "'u32.small'", "u32");
  double d;
  g_assert_false(gguf_get_float(f, "u32.small", &d, &err));
  format_error_clear(&err, "'u32.small'", "expected f32");
  g_assert_null(gguf_get_string(f, "arr.str", &err));
  format_error_clear(&err, "'arr.str'", "array of string");

  gint64 *ints = NULL;
  gboolean *bools = NULL;
  const char **strs = NULL;
  gsize *lens = NULL, n = 0;
  g_assert_false(gguf_get_int_array(f, "arr.bool", &ints, &n, &err));
  format_error_clear(&err, "'arr.bool'", "array of bool");
  g_assert_false(gguf_get_int_array(f, "u32.small", &ints, &n, &err));
  format_error_clear(&err, "'u32.small'", "array");
  g_assert_false(gguf_get_bool_array(f, "arr.u32", &bools, &n, &err));
  format_error_clear(&err, "'arr.u32'", "array of u32");
  g_assert_false(
      gguf_get_string_array(f, "arr.u32", &strs, &lens, &n, &err));
  format_error_clear(&err, "'arr.u32'", "array of u32");
  g_assert_false(
      gguf_get_string_array(f, "missing", &strs, &lens, &n, &err));
  format_error_clear(&err, "missing key 'missing'", NULL);
  g_assert_null(ints);
  g_assert_null(bools);
  g_assert_null(strs);
  gguf_close(f);
}

TU_TEST("/gguf/roundtrip/tensors", test_roundtrip_tensors)
{
  g_autoptr(GBytes) bytes = example_bytes();
  GgufFile *f = parse_ok(bytes);
  gsize size;
  const guint8 *data = g_bytes_get_data(bytes, &size);
  g_assert_cmpuint(gguf_n_tensors(f), ==, G_N_ELEMENTS(SHAPES));
  gsize bsize;
  g_assert_true(gguf_buffer(f, &bsize) == (const void *)data);
  g_assert_cmpuint(bsize, ==, size);

  const guint8 *prev_end = NULL;
  for (gsize i = 0; i < G_N_ELEMENTS(SHAPES); i++) {
    const Shape *s = &SHAPES[i];
    const GgufTensor *t = gguf_tensor_at(f, i);
    g_assert_nonnull(t);
    g_assert_true(gguf_find_tensor(f, s->name) == t);
    g_assert_cmpstr(t->name, ==, s->name);
    g_assert_cmpuint(t->type, ==, s->type);
    g_assert_cmpuint(t->n_dims, ==, s->n_dims);
    for (int d = 0; d < GGUF_MAX_DIMS; d++)
      g_assert_cmpuint(t->ne[d], ==, d < (int)s->n_dims ? s->ne[d] : 1);
    g_assert_cmpuint(t->nbytes, ==, shape_bytes(s));
    const guint8 *p = t->data;
    g_assert_true(p >= data && p + t->nbytes <= data + size);
    g_assert_cmpuint((gsize)(p - data) % GGUF_DEFAULT_ALIGNMENT, ==, 0);
    g_assert_true(prev_end == NULL || p >= prev_end);
    prev_end = p + t->nbytes;
    g_autofree guint8 *want = shape_data(i, s);
    g_assert_cmpmem(t->data, t->nbytes, want, shape_bytes(s));
  }
  /* The last tensor ends the file: no stray padding after it. */
  g_assert_true(prev_end == data + size);
  g_assert_null(gguf_tensor_at(f, G_N_ELEMENTS(SHAPES)));
  g_assert_null(gguf_find_tensor(f, "nope"));
  g_assert_null(gguf_find_tensor(f, "a.f32"));
  gguf_close(f);
}

TU_TEST("/gguf/roundtrip/alignment", test_roundtrip_alignment)
{
  g_autofree char *path = tmp_path("align.gguf");
  GgufWriter *w = gguf_writer_new();
  gguf_writer_add_u32(w, "general.alignment", 256);
  float x[3] = { 1, 2, 3 };
  uint64_t ne[1] = { 3 };
  gguf_writer_add_tensor(w, "x", GGUF_TENSOR_F32, 1, ne, x, sizeof x);
  gguf_writer_add_tensor(w, "y", GGUF_TENSOR_F32, 1, ne, x, sizeof x);
  GError *err = NULL;
  g_assert_true(gguf_writer_write(w, path, &err));
  gguf_writer_free(w);
  GgufFile *f = gguf_open(path, &err);
  g_assert_no_error(err);
  gsize size;
  const guint8 *base = gguf_buffer(f, &size);
  const GgufTensor *y = gguf_find_tensor(f, "y");
  g_assert_nonnull(y);
  g_assert_cmpuint((gsize)((const guint8 *)y->data - base), ==, 512);
  g_assert_cmpmem(y->data, y->nbytes, x, sizeof x);
  g_assert_cmpuint(size, ==, 512 + sizeof x);
  gguf_close(f);
}

TU_TEST("/gguf/roundtrip/no-tensors", test_no_tensors)
{
  /* Metadata only, ending right after the last kv: nothing to pad for. */
  GByteArray *b = new_file(0, 1);
  kv_u32(b, "k", 9);
  GgufFile *f = expect_ok(b);
  g_assert_cmpuint(gguf_n_tensors(f), ==, 0);
  gint64 v;
  g_assert_true(gguf_get_int(f, "k", 9, 9, &v, NULL));
  gguf_close(f);
  g_byte_array_unref(b);

  b = new_file(0, 0);
  f = expect_ok(b);
  g_assert_cmpuint(gguf_n_tensors(f), ==, 0);
  g_assert_false(gguf_has_key(f, "k"));
  gguf_close(f);
  g_byte_array_unref(b);
}

/* Types the writer never produces, built by hand. */
TU_TEST("/gguf/reader/all-scalar-types", test_all_scalar_types)
{
  GByteArray *b = new_file(0, 12);
  put_str(b, "u8"); put_u32(b, GGUF_TYPE_UINT8); put_u8(b, 200);
  put_str(b, "i8"); put_u32(b, GGUF_TYPE_INT8); put_u8(b, 0x80);
  put_str(b, "u16"); put_u32(b, GGUF_TYPE_UINT16); put_u8(b, 0xff);
  put_u8(b, 0xff);
  put_str(b, "i16"); put_u32(b, GGUF_TYPE_INT16); put_u8(b, 0xfe);
  put_u8(b, 0xff);
  put_str(b, "u64.big"); put_u32(b, GGUF_TYPE_UINT64);
  put_u64(b, G_MAXUINT64);
  put_str(b, "u64.ok"); put_u32(b, GGUF_TYPE_UINT64);
  put_u64(b, (uint64_t)G_MAXINT64);
  put_str(b, "i64"); put_u32(b, GGUF_TYPE_INT64); put_u64(b, (uint64_t)G_MININT64);
  double pi = 3.141592653589793;
  uint64_t pib;
  memcpy(&pib, &pi, 8);
  put_str(b, "f64"); put_u32(b, GGUF_TYPE_FLOAT64); put_u64(b, pib);
  put_str(b, "arr.i8"); put_u32(b, GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_INT8); put_u64(b, 3);
  put_u8(b, 0xff); put_u8(b, 0x7f); put_u8(b, 0);
  put_str(b, "arr.u64"); put_u32(b, GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_UINT64); put_u64(b, 2);
  put_u64(b, 5); put_u64(b, (uint64_t)1 << 63);
  put_str(b, "arr.i64"); put_u32(b, GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_INT64); put_u64(b, 1); put_u64(b, (uint64_t)-9);
  put_str(b, "str.nul"); put_u32(b, GGUF_TYPE_STRING);
  put_bytes(b, "a\0b", 3);

  GgufFile *f = expect_ok(b);
  GError *err = NULL;
  gint64 v;
  g_assert_true(gguf_get_int(f, "u8", 0, 255, &v, &err));
  g_assert_cmpint(v, ==, 200);
  g_assert_true(gguf_get_int(f, "i8", -128, 127, &v, &err));
  g_assert_cmpint(v, ==, -128);
  g_assert_true(gguf_get_int(f, "u16", 0, 65535, &v, &err));
  g_assert_cmpint(v, ==, 65535);
  g_assert_true(gguf_get_int(f, "i16", -10, 10, &v, &err));
  g_assert_cmpint(v, ==, -2);
  g_assert_true(gguf_get_int(f, "u64.ok", 0, G_MAXINT64, &v, &err));
  g_assert_cmpint(v, ==, G_MAXINT64);
  g_assert_true(gguf_get_int(f, "i64", G_MININT64, 0, &v, &err));
  g_assert_cmpint(v, ==, G_MININT64);
  g_assert_no_error(err);
  g_assert_false(gguf_get_int(f, "u64.big", G_MININT64, G_MAXINT64, &v, &err));
  format_error_clear(&err, "'u64.big'", "18446744073709551615");

  double d;
  g_assert_true(gguf_get_float(f, "f64", &d, &err));
  g_assert_cmpfloat(d, ==, pi);

  gint64 *a = NULL;
  gsize n;
  g_assert_true(gguf_get_int_array(f, "arr.i8", &a, &n, &err));
  g_assert_cmpuint(n, ==, 3);
  g_assert_cmpint(a[0], ==, -1);
  g_assert_cmpint(a[1], ==, 127);
  g_assert_cmpint(a[2], ==, 0);
  g_free(a);
  g_assert_true(gguf_get_int_array(f, "arr.i64", &a, &n, &err));
  g_assert_cmpuint(n, ==, 1);
  g_assert_cmpint(a[0], ==, -9);
  g_free(a);
  a = NULL;
  g_assert_false(gguf_get_int_array(f, "arr.u64", &a, &n, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'arr.u64'", "element 1");
  g_assert_null(a);
  g_clear_error(&err);

  g_assert_null(gguf_get_string(f, "str.nul", &err));
  format_error_clear(&err, "'str.nul'", "NUL");
  gguf_close(f);
  g_byte_array_unref(b);
}

/* ---- open / write errors -------------------------------------------- */

TU_TEST("/gguf/open/errors", test_open_errors)
{
  GError *err = NULL;
  g_autofree char *missing = tmp_path("does-not-exist.gguf");
  g_assert_null(gguf_open(missing, &err));
  assert_error(err, TXL_ERROR_IO, missing, NULL);
  g_clear_error(&err);

  g_autofree char *empty = tmp_path("empty.gguf");
  g_assert_true(g_file_set_contents(empty, "", 0, NULL));
  g_assert_null(gguf_open(empty, &err));
  format_error_clear(&err, empty, "empty");

  g_assert_null(gguf_open(tmp_dir, &err));
  assert_error(err, TXL_ERROR_IO, tmp_dir, NULL);
  g_clear_error(&err);

  /* A parse error from a file names the file and the tensor. */
  GByteArray *b = minimal_file();
  g_byte_array_set_size(b, b->len - 4);
  g_autofree char *cut = tmp_path("cut.gguf");
  g_assert_true(g_file_set_contents(cut, (const char *)b->data, b->len, NULL));
  g_assert_null(gguf_open(cut, &err));
  assert_error(err, TXL_ERROR_FORMAT, cut, "tensor 't': data [");
  g_assert_nonnull(strstr(err->message, "runs past the end of the file"));
  g_clear_error(&err);
  g_byte_array_unref(b);
}

static gsize
count_dir_entries(const char *dir, const char *prefix)
{
  GDir *d = g_dir_open(dir, 0, NULL);
  g_assert_nonnull(d);
  gsize n = 0;
  const char *name;
  while ((name = g_dir_read_name(d)))
    if (g_str_has_prefix(name, prefix))
      n++;
  g_dir_close(d);
  return n;
}

TU_TEST("/gguf/writer/errors", test_writer_errors)
{
  GError *err = NULL;
  g_autofree char *path = tmp_path("bad-writer.gguf");
  float x[4] = { 0 };
  uint64_t ne[2] = { 2, 2 };

  GgufWriter *w = gguf_writer_new();
  gguf_writer_add_u32(w, "k", 1);
  gguf_writer_add_u32(w, "k", 2);
  g_assert_false(gguf_writer_write(w, path, &err));
  assert_error(err, TXL_ERROR_INVALID, "duplicate key 'k'", NULL);
  g_clear_error(&err);
  gguf_writer_free(w);

  w = gguf_writer_new();
  gguf_writer_add_tensor(w, "t", GGUF_TENSOR_F32, 2, ne, x, 12);
  g_assert_false(gguf_writer_write(w, path, &err));
  assert_error(err, TXL_ERROR_INVALID, "tensor 't'", "16 bytes");
  g_clear_error(&err);
  gguf_writer_free(w);

  w = gguf_writer_new();
  gguf_writer_add_tensor(w, "t", GGUF_TENSOR_F32, 2, ne, x, sizeof x);
  gguf_writer_add_tensor(w, "t", GGUF_TENSOR_F32, 2, ne, x, sizeof x);
  g_assert_false(gguf_writer_write(w, path, &err));
  assert_error(err, TXL_ERROR_INVALID, "duplicate tensor name 't'", NULL);
  g_clear_error(&err);
  gguf_writer_free(w);

  w = gguf_writer_new();
  gguf_writer_add_tensor(w, "q", 2, 2, ne, x, sizeof x);
  g_assert_false(gguf_writer_write(w, path, &err));
  assert_error(err, TXL_ERROR_INVALID, "tensor 'q'", "type 2");
  g_clear_error(&err);
  gguf_writer_free(w);

  w = gguf_writer_new();
  gguf_writer_add_u32(w, "general.alignment", 48);
  g_assert_false(gguf_writer_write(w, path, &err));
  assert_error(err, TXL_ERROR_INVALID, "general.alignment", "48");
  g_clear_error(&err);
  gguf_writer_free(w);
  g_assert_false(g_file_test(path, G_FILE_TEST_EXISTS));

  /* I/O failure: the directory does not exist. */
  g_autofree char *nodir = tmp_path("no/such/dir/x.gguf");
  w = gguf_writer_new();
  gguf_writer_add_u32(w, "k", 1);
  g_assert_false(gguf_writer_write(w, nodir, &err));
  assert_error(err, TXL_ERROR_IO, nodir, NULL);
  g_clear_error(&err);
  gguf_writer_free(w);
}

TU_TEST("/gguf/writer/atomic", test_writer_atomic)
{
  g_autofree char *sub = tmp_path("atomic");
  g_assert_cmpint(g_mkdir(sub, 0755), ==, 0);
  g_autofree char *path = g_build_filename(sub, "m.gguf", NULL);
  g_assert_true(g_file_set_contents(path, "old contents", -1, NULL));

  GgufWriter *w = gguf_writer_new();
  gguf_writer_add_u32(w, "v", 2);
  GError *err = NULL;
  g_assert_true(gguf_writer_write(w, path, &err));
  g_assert_no_error(err);
  gguf_writer_free(w);
  /* Replaced, and no temporary left behind. */
  g_assert_cmpuint(count_dir_entries(sub, ""), ==, 1);
  GgufFile *f = gguf_open(path, &err);
  g_assert_no_error(err);
  gint64 v;
  g_assert_true(gguf_get_int(f, "v", 2, 2, &v, &err));
  gguf_close(f);

  /* A directory (or a device, a FIFO) is refused before any temporary
   * is made, and left alone: renaming over /dev/null would replace it. */
  g_autofree char *dirpath = g_build_filename(sub, "d.gguf", NULL);
  g_assert_cmpint(g_mkdir(dirpath, 0755), ==, 0);
  g_autofree char *inner = g_build_filename(dirpath, "keep", NULL);
  g_assert_true(g_file_set_contents(inner, "x", -1, NULL));
  w = gguf_writer_new();
  gguf_writer_add_u32(w, "v", 3);
  g_assert_false(gguf_writer_write(w, dirpath, &err));
  assert_error(err, TXL_ERROR_IO, dirpath, "not a regular file");
  g_clear_error(&err);
  gguf_writer_free(w);
  g_assert_cmpuint(count_dir_entries(sub, "d.gguf."), ==, 0);
  g_assert_true(g_file_test(inner, G_FILE_TEST_EXISTS));
  g_remove(inner);
  g_rmdir(dirpath);
  g_remove(path);
  g_rmdir(sub);
}

/* ---- truncation and corruption -------------------------------------- */

/* Runs every getter on every key of the example and touches every byte of
 * every tensor, so ASan sees any out-of-bounds pointer. */
static guint64
exercise(const GgufFile *f)
{
  guint64 sum = 0;
  for (gsize i = 0; i < G_N_ELEMENTS(EXAMPLE_KEYS); i++) {
    sum += gguf_has_key(f, EXAMPLE_KEYS[i]);
    sum += gguf_touch_key(f, EXAMPLE_KEYS[i]);
  }
  for (gsize i = 0; i < gguf_n_tensors(f); i++) {
    const GgufTensor *t = gguf_tensor_at(f, i);
    g_assert_true(gguf_find_tensor(f, t->name) == t);
    const guint8 *p = t->data;
    for (uint64_t j = 0; j < t->nbytes; j++)
      sum += p[j];
  }
  return sum;
}

TU_TEST("/gguf/corrupt/truncation", test_truncation)
{
  g_autoptr(GBytes) bytes = example_bytes();
  gsize size;
  const guint8 *data = g_bytes_get_data(bytes, &size);
  GgufFile *full = gguf_parse(data, size, NULL);
  g_assert_nonnull(full);
  g_assert_cmpuint(exercise(full), >, 0);
  gguf_close(full);
  for (gsize len = 0; len < size; len++) {
    /* A fresh heap copy of exactly len bytes, so ASan catches reads past
     * the prefix. */
    guint8 *copy = g_memdup2(data, len);
    GError *err = NULL;
    GgufFile *f = gguf_parse(copy, len, &err);
    if (f) {
      g_test_message("prefix of %zu / %zu bytes was accepted", len, size);
      g_assert_not_reached();
    }
    g_assert_nonnull(err);
    g_assert_error(err, TXL_ERROR, TXL_ERROR_FORMAT);
    g_error_free(err);
    g_free(copy);
  }
}

static void
parse_and_exercise(const guint8 *data, gsize len, gsize *accepted)
{
  guint8 *copy = g_memdup2(data, len);
  GError *err = NULL;
  GgufFile *f = gguf_parse(copy, len, &err);
  if (f) {
    g_assert_no_error(err);
    exercise(f);
    gguf_close(f);
    (*accepted)++;
  } else {
    g_assert_nonnull(err);
    g_assert_true(err->domain == TXL_ERROR);
    g_assert_true(err->code == TXL_ERROR_FORMAT ||
                  err->code == TXL_ERROR_UNSUPPORTED);
    g_assert_true(err->message && *err->message);
    g_error_free(err);
  }
  g_free(copy);
}

static const guint8 INTERESTING[] = { 0x00, 0x01, 0x02, 0x04, 0x08, 0x09,
                                      0x0c, 0x0d, 0x10, 0x1f, 0x20, 0x7f,
                                      0x80, 0xfe, 0xff };

TU_TEST("/gguf/corrupt/mutations", test_random_mutations)
{
  g_autoptr(GBytes) bytes = example_bytes();
  gsize size;
  const guint8 *data = g_bytes_get_data(bytes, &size);
  GRand *rng = g_rand_new_with_seed(20240611);
  guint8 *buf = g_malloc(size + 64);
  gsize accepted = 0;
  const int rounds = 4000;
  for (int r = 0; r < rounds; r++) {
    memcpy(buf, data, size);
    gsize len = size;
    int edits = g_rand_int_range(rng, 1, 9);
    /* Most of the header lies in the first few hundred bytes. */
    gsize hot = MIN(size, 700);
    for (int e = 0; e < edits; e++) {
      gsize at = g_rand_boolean(rng) ? g_rand_int_range(rng, 0, (gint32)hot)
                                     : g_rand_int_range(rng, 0, (gint32)len);
      switch (g_rand_int_range(rng, 0, 4)) {
      case 0:
        buf[at] ^= (guint8)(1u << g_rand_int_range(rng, 0, 8));
        break;
      case 1:
        buf[at] = INTERESTING[g_rand_int_range(rng, 0,
                                               G_N_ELEMENTS(INTERESTING))];
        break;
      case 2:
        buf[at] = (guint8)g_rand_int_range(rng, 0, 256);
        break;
      default:
        /* Drop a byte: shifts everything after it. */
        memmove(buf + at, buf + at + 1, len - at - 1);
        len--;
        break;
      }
    }
    parse_and_exercise(buf, len, &accepted);
  }
  g_test_message("%zu of %d mutants were accepted", accepted, rounds);
  /* Flipping a bit inside tensor data leaves a valid file, so some must be
   * accepted: otherwise the mutator (or the reader) is broken. */
  g_assert_cmpuint(accepted, >, 0);
  g_assert_cmpuint(accepted, <, (gsize)rounds);
  g_free(buf);
  g_rand_free(rng);
}

TU_TEST("/gguf/corrupt/splices", test_random_splices)
{
  g_autoptr(GBytes) a = example_bytes();
  GByteArray *mb = minimal_file();
  gsize na, nb = mb->len;
  const guint8 *da = g_bytes_get_data(a, &na);
  const guint8 *db = mb->data;
  GRand *rng = g_rand_new_with_seed(77);
  guint8 *buf = g_malloc(2 * MAX(na, nb));
  gsize accepted = 0;
  for (int r = 0; r < 3000; r++) {
    /* prefix of one file + suffix of the other (or of itself) */
    gboolean ab = g_rand_boolean(rng);
    const guint8 *x = ab ? da : db, *y = g_rand_boolean(rng) ? da : db;
    gsize nx = ab ? na : nb, ny = y == da ? na : nb;
    gsize cut = g_rand_int_range(rng, 0, (gint32)nx + 1);
    gsize from = g_rand_int_range(rng, 0, (gint32)ny + 1);
    memcpy(buf, x, cut);
    memcpy(buf + cut, y + from, ny - from);
    parse_and_exercise(buf, cut + ny - from, &accepted);
  }
  g_test_message("%zu splices were accepted", accepted);
  g_free(buf);
  g_rand_free(rng);
  g_byte_array_unref(mb);
}

/* ---- hostile headers ------------------------------------------------ */

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  GError *err = NULL;
  tmp_dir = g_dir_make_tmp("test_gguf-XXXXXX", &err);
  g_assert_no_error(err);

  tu_add_tests();

  int rc = g_test_run();
  const char *leftovers[] = { "example.gguf", "values.gguf", "align.gguf",
                              "empty.gguf", "cut.gguf" };
  for (gsize i = 0; i < G_N_ELEMENTS(leftovers); i++) {
    g_autofree char *p = tmp_path(leftovers[i]);
    g_remove(p);
  }
  g_rmdir(tmp_dir);
  g_free(tmp_dir);
  return rc;
}

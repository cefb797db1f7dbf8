/* GGUF reader and writer: round trips, truncation, random corruption and
 * hand-built hostile headers. */
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

static void
assert_error(const GError *err, int code, const char *needle,
             const char *needle2)
{
  g_assert_nonnull(err);
  g_test_message("error: %s", err->message);
  g_assert_error(err, TXL_ERROR, code);
  if (needle && !strstr(err->message, needle)) {
    g_test_message("'%s' not found in '%s'", needle, err->message);
    g_assert_not_reached();
  }
  if (needle2 && !strstr(err->message, needle2)) {
    g_test_message("'%s' not found in '%s'", needle2, err->message);
    g_assert_not_reached();
  }
}

/* Parses bytes that must be refused. */
static void
expect_refused(const GByteArray *b, int code, const char *needle,
               const char *needle2)
{
  GError *err = NULL;
  GgufFile *f = gguf_parse(b->data, b->len, &err);
  g_assert_null(f);
  assert_error(err, code, needle, needle2);
  g_error_free(err);
}

static GgufFile *
expect_ok(const GByteArray *b)
{
  GError *err = NULL;
  GgufFile *f = gguf_parse(b->data, b->len, &err);
  g_assert_no_error(err);
  g_assert_nonnull(f);
  return f;
}

/* Byte builder for hand-made files. */
static void
put_u8(GByteArray *b, guint8 v)
{
  g_byte_array_append(b, &v, 1);
}

static void
put_u32(GByteArray *b, uint32_t v)
{
  guint8 le[4] = { v, v >> 8, v >> 16, v >> 24 };
  g_byte_array_append(b, le, 4);
}

static void
put_u64(GByteArray *b, uint64_t v)
{
  put_u32(b, (uint32_t)v);
  put_u32(b, (uint32_t)(v >> 32));
}

static void
put_bytes(GByteArray *b, const void *p, gsize n)
{
  put_u64(b, n);
  g_byte_array_append(b, p, (guint)n);
}

static void
put_str(GByteArray *b, const char *s)
{
  put_bytes(b, s, strlen(s));
}

static GByteArray *
new_file(uint64_t n_tensors, uint64_t n_kvs)
{
  GByteArray *b = g_byte_array_new();
  g_byte_array_append(b, (const guint8 *)"GGUF", 4);
  put_u32(b, 3);
  put_u64(b, n_tensors);
  put_u64(b, n_kvs);
  return b;
}

static void
kv_u32(GByteArray *b, const char *key, uint32_t v)
{
  put_str(b, key);
  put_u32(b, GGUF_TYPE_UINT32);
  put_u32(b, v);
}

static void
kv_str(GByteArray *b, const char *key, const char *v)
{
  put_str(b, key);
  put_u32(b, GGUF_TYPE_STRING);
  put_str(b, v);
}

static void
tinfo(GByteArray *b, const char *name, uint32_t n_dims, const uint64_t *ne,
      uint32_t type, uint64_t offset)
{
  put_str(b, name);
  put_u32(b, n_dims);
  for (uint32_t d = 0; d < n_dims; d++)
    put_u64(b, ne[d]);
  put_u32(b, type);
  put_u64(b, offset);
}

static void
pad_to(GByteArray *b, gsize align)
{
  while (b->len % align)
    put_u8(b, 0);
}

static void
put_zeros(GByteArray *b, gsize n)
{
  for (gsize i = 0; i < n; i++)
    put_u8(b, 0);
}

static const uint64_t NE8[] = { 8 };

/* header + one string kv + one 8-float tensor, fully valid: the hostile
 * cases below each break exactly one thing in a copy of this. */
static GByteArray *
minimal_file(void)
{
  GByteArray *b = new_file(1, 1);
  kv_str(b, "general.name", "m");
  tinfo(b, "t", 1, NE8, GGUF_TENSOR_F32, 0);
  pad_to(b, 32);
  for (int i = 0; i < 8; i++) {
    float x = (float)i;
    g_byte_array_append(b, (const guint8 *)&x, 4);
  }
  return b;
}

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

/* Writes the full example file and returns its bytes. */
static GBytes *
example_bytes(void)
{
  g_autofree char *path = tmp_path("example.gguf");
  GgufWriter *w = gguf_writer_new();
  fill_writer(w);
  GError *err = NULL;
  g_assert_true(gguf_writer_write(w, path, &err));
  g_assert_no_error(err);
  gguf_writer_free(w);
  gchar *contents;
  gsize len;
  g_assert_true(g_file_get_contents(path, &contents, &len, NULL));
  return g_bytes_new_take(contents, len);
}

static const char *const EXAMPLE_KEYS[] = {
  "general.architecture", "general.name", "empty.string", "u32.max",
  "u32.small", "i32.neg", "i32.min", "f32.eps", "f32.neg", "bool.true",
  "bool.false", "bool.nonzero", "arr.u32", "arr.u32.empty", "arr.bool",
  "arr.str", "arr.str.empty", "general.alignment", "missing",
};

/* ---- round trips ---------------------------------------------------- */

static void
test_roundtrip_values(void)
{
  g_autofree char *path = tmp_path("values.gguf");
  GgufWriter *w = gguf_writer_new();
  fill_writer(w);
  GError *err = NULL;
  g_assert_true(gguf_writer_write(w, path, &err));
  g_assert_no_error(err);
  gguf_writer_free(w);

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

static void
test_getter_errors(void)
{
  g_autoptr(GBytes) bytes = example_bytes();
  gsize size;
  const void *data = g_bytes_get_data(bytes, &size);
  GError *err = NULL;
  GgufFile *f = gguf_parse(data, size, &err);
  g_assert_no_error(err);

  gint64 v = 5;
  g_assert_false(gguf_get_int(f, "nope", 0, 10, &v, &err));
  assert_error(err, TXL_ERROR_FORMAT, "missing key 'nope'", NULL);
  g_clear_error(&err);
  g_assert_cmpint(v, ==, 5);

  g_assert_false(gguf_get_int(f, "general.name", 0, 10, &v, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'general.name'", "string");
  g_clear_error(&err);
  g_assert_false(gguf_get_int(f, "u32.small", 0, 6, &v, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'u32.small'", "7");
  g_clear_error(&err);
  g_assert_false(gguf_get_int(f, "u32.max", 0, G_MAXINT32, &v, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'u32.max'", "4294967295");
  g_clear_error(&err);
  g_assert_false(gguf_get_int(f, "i32.neg", 0, 10, &v, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'i32.neg'", "-123456");
  g_clear_error(&err);
  g_assert_false(gguf_get_int(f, "f32.eps", 0, 10, &v, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'f32.eps'", "f32");
  g_clear_error(&err);
  g_assert_false(gguf_get_int(f, "bool.true", 0, 10, &v, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'bool.true'", "bool");
  g_clear_error(&err);
  g_assert_cmpint(v, ==, 5);

  gboolean b;
  g_assert_false(gguf_get_bool(f, "u32.small", &b, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'u32.small'", "u32");
  g_clear_error(&err);
  double d;
  g_assert_false(gguf_get_float(f, "u32.small", &d, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'u32.small'", "expected f32");
  g_clear_error(&err);
  g_assert_null(gguf_get_string(f, "arr.str", &err));
  assert_error(err, TXL_ERROR_FORMAT, "'arr.str'", "array of string");
  g_clear_error(&err);

  gint64 *ints = NULL;
  gboolean *bools = NULL;
  const char **strs = NULL;
  gsize *lens = NULL, n = 0;
  g_assert_false(gguf_get_int_array(f, "arr.bool", &ints, &n, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'arr.bool'", "array of bool");
  g_clear_error(&err);
  g_assert_false(gguf_get_int_array(f, "u32.small", &ints, &n, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'u32.small'", "array");
  g_clear_error(&err);
  g_assert_false(gguf_get_bool_array(f, "arr.u32", &bools, &n, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'arr.u32'", "array of u32");
  g_clear_error(&err);
  g_assert_false(
      gguf_get_string_array(f, "arr.u32", &strs, &lens, &n, &err));
  assert_error(err, TXL_ERROR_FORMAT, "'arr.u32'", "array of u32");
  g_clear_error(&err);
  g_assert_false(
      gguf_get_string_array(f, "missing", &strs, &lens, &n, &err));
  assert_error(err, TXL_ERROR_FORMAT, "missing key 'missing'", NULL);
  g_clear_error(&err);
  g_assert_null(ints);
  g_assert_null(bools);
  g_assert_null(strs);
  gguf_close(f);
}

static void
test_roundtrip_tensors(void)
{
  g_autoptr(GBytes) bytes = example_bytes();
  gsize size;
  const guint8 *data = g_bytes_get_data(bytes, &size);
  GError *err = NULL;
  GgufFile *f = gguf_parse(data, size, &err);
  g_assert_no_error(err);
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

static void
test_roundtrip_alignment(void)
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

static void
test_no_tensors(void)
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
static void
test_all_scalar_types(void)
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
  assert_error(err, TXL_ERROR_FORMAT, "'u64.big'", "18446744073709551615");
  g_clear_error(&err);

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
  assert_error(err, TXL_ERROR_FORMAT, "'str.nul'", "NUL");
  g_clear_error(&err);
  gguf_close(f);
  g_byte_array_unref(b);
}

/* ---- open / write errors -------------------------------------------- */

static void
test_open_errors(void)
{
  GError *err = NULL;
  g_autofree char *missing = tmp_path("does-not-exist.gguf");
  g_assert_null(gguf_open(missing, &err));
  assert_error(err, TXL_ERROR_IO, missing, NULL);
  g_clear_error(&err);

  g_autofree char *empty = tmp_path("empty.gguf");
  g_assert_true(g_file_set_contents(empty, "", 0, NULL));
  g_assert_null(gguf_open(empty, &err));
  assert_error(err, TXL_ERROR_FORMAT, empty, "empty");
  g_clear_error(&err);

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

static void
test_writer_errors(void)
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

static void
test_writer_atomic(void)
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

  /* Renaming over a directory fails: the temporary must be removed and
   * the directory left alone. */
  g_autofree char *dirpath = g_build_filename(sub, "d.gguf", NULL);
  g_assert_cmpint(g_mkdir(dirpath, 0755), ==, 0);
  g_autofree char *inner = g_build_filename(dirpath, "keep", NULL);
  g_assert_true(g_file_set_contents(inner, "x", -1, NULL));
  w = gguf_writer_new();
  gguf_writer_add_u32(w, "v", 3);
  g_assert_false(gguf_writer_write(w, dirpath, &err));
  assert_error(err, TXL_ERROR_IO, dirpath, "rename");
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
    const char *k = EXAMPLE_KEYS[i];
    gint64 v;
    gboolean b;
    double d;
    gsize n;
    sum += gguf_has_key(f, k);
    if (gguf_get_int(f, k, G_MININT64, G_MAXINT64, &v, NULL))
      sum += (guint64)v;
    if (gguf_get_bool(f, k, &b, NULL))
      sum += b;
    if (gguf_get_float(f, k, &d, NULL))
      sum += isfinite(d);
    g_free(gguf_get_string(f, k, NULL));
    gint64 *ia;
    if (gguf_get_int_array(f, k, &ia, &n, NULL)) {
      for (gsize j = 0; j < n; j++)
        sum += (guint64)ia[j];
      g_free(ia);
    }
    gboolean *ba;
    if (gguf_get_bool_array(f, k, &ba, &n, NULL)) {
      for (gsize j = 0; j < n; j++)
        sum += ba[j];
      g_free(ba);
    }
    const char **sa;
    gsize *la;
    if (gguf_get_string_array(f, k, &sa, &la, &n, NULL)) {
      for (gsize j = 0; j < n; j++)
        for (gsize c = 0; c < la[j]; c++)
          sum += (guint8)sa[j][c];
      g_free(sa);
      g_free(la);
    }
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

static void
test_truncation(void)
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

static void
test_random_mutations(void)
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

static void
test_random_splices(void)
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

static void
test_minimal_is_valid(void)
{
  /* The control for the hostile cases: unmodified, it parses. */
  GByteArray *b = minimal_file();
  GgufFile *f = expect_ok(b);
  const GgufTensor *t = gguf_find_tensor(f, "t");
  g_assert_nonnull(t);
  g_assert_cmpuint(t->nbytes, ==, 32);
  float x;
  memcpy(&x, (const guint8 *)t->data + 12, 4);
  g_assert_cmpfloat(x, ==, 3.0f);
  gguf_close(f);
  g_byte_array_unref(b);
}

static void
test_hostile_magic_version(void)
{
  GByteArray *b = minimal_file();
  b->data[0] = 'X';
  expect_refused(b, TXL_ERROR_FORMAT, "not a GGUF file", NULL);
  b->data[0] = 'G';
  for (uint32_t v = 0; v < 6; v++) {
    if (v == 3)
      continue;
    b->data[4] = (guint8)v;
    g_autofree char *want = g_strdup_printf("version %u", v);
    expect_refused(b, TXL_ERROR_UNSUPPORTED, want, NULL);
  }
  /* Version 3 written big-endian. */
  b->data[4] = 0;
  b->data[7] = 3;
  expect_refused(b, TXL_ERROR_UNSUPPORTED, "big-endian", NULL);
  g_byte_array_unref(b);
}

static void
test_hostile_counts(void)
{
  GByteArray *b = new_file(G_MAXUINT64, 0);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor_count 18446744073709551615",
                 NULL);
  g_byte_array_unref(b);
  b = new_file((uint64_t)1 << 40, 0);
  put_zeros(b, 4096);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor_count 1099511627776", "limit");
  g_byte_array_unref(b);
  b = new_file(1000, 0);
  put_zeros(b, 4096);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor_count 1000", "cannot fit");
  g_byte_array_unref(b);
  b = new_file(0, G_MAXUINT64);
  expect_refused(b, TXL_ERROR_FORMAT, "kv_count", NULL);
  g_byte_array_unref(b);
  b = new_file(0, (uint64_t)1 << 33);
  put_zeros(b, 4096);
  expect_refused(b, TXL_ERROR_FORMAT, "kv_count 8589934592", "limit");
  g_byte_array_unref(b);
  b = new_file(0, 1000);
  put_zeros(b, 4096);
  expect_refused(b, TXL_ERROR_FORMAT, "kv_count 1000", "cannot fit");
  g_byte_array_unref(b);
  /* Each fits alone, together they do not. */
  b = new_file(2, 5);
  put_zeros(b, 2 * 33 + 5 * 14 - 1);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor_count 2", NULL);
  g_byte_array_unref(b);
}

static void
test_hostile_lengths(void)
{
  /* value string length near UINT64_MAX */
  for (uint64_t delta = 0; delta < 40; delta += 7) {
    GByteArray *b = new_file(0, 1);
    put_str(b, "s");
    put_u32(b, GGUF_TYPE_STRING);
    put_u64(b, G_MAXUINT64 - delta);
    put_zeros(b, 64);
    expect_refused(b, TXL_ERROR_FORMAT, "key 's'", "string");
    g_byte_array_unref(b);
  }
  /* key length near UINT64_MAX */
  GByteArray *b = new_file(0, 1);
  put_u64(b, G_MAXUINT64 - 3);
  put_zeros(b, 64);
  expect_refused(b, TXL_ERROR_FORMAT, "key #0", NULL);
  g_byte_array_unref(b);
  /* tensor name length near UINT64_MAX */
  b = new_file(1, 0);
  put_u64(b, G_MAXUINT64);
  put_zeros(b, 64);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor #0", NULL);
  g_byte_array_unref(b);
  /* string inside an array */
  b = new_file(0, 1);
  put_str(b, "arr");
  put_u32(b, GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_STRING);
  put_u64(b, 2);
  put_str(b, "ok");
  put_u64(b, G_MAXUINT64 - 1);
  put_zeros(b, 16);
  expect_refused(b, TXL_ERROR_FORMAT, "key 'arr'", "string #1");
  g_byte_array_unref(b);
  /* array count that would need exabytes */
  b = new_file(0, 1);
  put_str(b, "arr");
  put_u32(b, GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_UINT32);
  put_u64(b, (uint64_t)1 << 62);
  put_zeros(b, 64);
  expect_refused(b, TXL_ERROR_FORMAT, "key 'arr'", "4611686018427387904");
  g_byte_array_unref(b);
}

/* A genuine but enormous array parses (it is all there), yet the getters
 * refuse to copy it: a u8 array would grow eightfold as gint64[]. */
static void
test_huge_array_getter(void)
{
  const gsize n = ((gsize)1 << 26) + 1;
  GByteArray *b = new_file(0, 1);
  put_str(b, "big");
  put_u32(b, GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_UINT8);
  put_u64(b, n);
  gsize at = b->len;
  g_byte_array_set_size(b, (guint)(at + n));
  memset(b->data + at, 1, n);
  GgufFile *f = expect_ok(b);
  gint64 *v = NULL;
  gsize got = 0;
  GError *err = NULL;
  g_assert_false(gguf_get_int_array(f, "big", &v, &got, &err));
  assert_error(err, TXL_ERROR_UNSUPPORTED, "key 'big'", "67108865");
  g_clear_error(&err);
  g_assert_null(v);
  gguf_close(f);
  g_byte_array_unref(b);
}

static void
test_hostile_names(void)
{
  GByteArray *b = new_file(0, 1);
  put_str(b, "");
  put_u32(b, GGUF_TYPE_UINT8);
  put_u8(b, 1);
  put_zeros(b, 8); /* so the kv count alone is plausible */
  expect_refused(b, TXL_ERROR_FORMAT, "key #0", "empty");
  g_byte_array_unref(b);

  b = new_file(0, 1);
  put_bytes(b, "a\0b", 3);
  put_u32(b, GGUF_TYPE_UINT8);
  put_u8(b, 1);
  expect_refused(b, TXL_ERROR_FORMAT, "key #0", "NUL");
  g_byte_array_unref(b);

  b = new_file(0, 1);
  put_bytes(b, "\xc3(", 2);
  put_u32(b, GGUF_TYPE_UINT8);
  put_u8(b, 1);
  expect_refused(b, TXL_ERROR_FORMAT, "key #0", "UTF-8");
  g_byte_array_unref(b);

  /* 64 KiB is the limit for keys: at it passes, one more is refused. */
  for (gsize len = 65536; len <= 65537; len++) {
    b = new_file(0, 1);
    char *key = g_malloc(len + 1);
    memset(key, 'k', len);
    key[len] = 0;
    put_str(b, key);
    put_u32(b, GGUF_TYPE_UINT8);
    put_u8(b, 1);
    if (len == 65536) {
      GgufFile *f = expect_ok(b);
      g_assert_true(gguf_has_key(f, key));
      gguf_close(f);
    } else {
      expect_refused(b, TXL_ERROR_FORMAT, "key #0", "65537");
    }
    g_free(key);
    g_byte_array_unref(b);
  }

  /* 256 bytes for tensor names */
  char name[258];
  memset(name, 'n', 257);
  name[257] = 0;
  b = new_file(1, 0);
  tinfo(b, name, 1, NE8, GGUF_TENSOR_F32, 0);
  pad_to(b, 32);
  put_zeros(b, 32);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor #0", "257");
  g_byte_array_unref(b);
  name[256] = 0;
  b = new_file(1, 0);
  tinfo(b, name, 1, NE8, GGUF_TENSOR_F32, 0);
  pad_to(b, 32);
  put_zeros(b, 32);
  GgufFile *f = expect_ok(b);
  g_assert_nonnull(gguf_find_tensor(f, name));
  gguf_close(f);
  g_byte_array_unref(b);

  b = new_file(1, 0);
  tinfo(b, "", 1, NE8, GGUF_TENSOR_F32, 0);
  pad_to(b, 32);
  put_zeros(b, 32);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor #0", "empty");
  g_byte_array_unref(b);
}

static void
test_hostile_duplicates(void)
{
  GByteArray *b = new_file(0, 3);
  kv_u32(b, "a", 1);
  kv_u32(b, "b", 1);
  kv_str(b, "a", "again");
  expect_refused(b, TXL_ERROR_FORMAT, "duplicate key 'a'", NULL);
  g_byte_array_unref(b);

  b = new_file(2, 0);
  tinfo(b, "w", 1, NE8, GGUF_TENSOR_F32, 0);
  tinfo(b, "w", 1, NE8, GGUF_TENSOR_F32, 32);
  pad_to(b, 32);
  put_zeros(b, 64);
  expect_refused(b, TXL_ERROR_FORMAT, "duplicate tensor name 'w'", NULL);
  g_byte_array_unref(b);
}

static void
test_hostile_types(void)
{
  GByteArray *b = new_file(0, 1);
  put_str(b, "weird");
  put_u32(b, 13);
  put_u32(b, 0);
  expect_refused(b, TXL_ERROR_FORMAT, "key 'weird'", "unknown value type 13");
  g_byte_array_unref(b);

  b = new_file(0, 1);
  put_str(b, "weird");
  put_u32(b, 0x80000000u);
  put_u32(b, 0);
  expect_refused(b, TXL_ERROR_FORMAT, "key 'weird'", "unknown value type");
  g_byte_array_unref(b);

  b = new_file(0, 1);
  put_str(b, "arr");
  put_u32(b, GGUF_TYPE_ARRAY);
  put_u32(b, 99);
  put_u64(b, 0);
  expect_refused(b, TXL_ERROR_FORMAT, "key 'arr'", "element type 99");
  g_byte_array_unref(b);

  b = new_file(0, 1);
  put_str(b, "nest");
  put_u32(b, GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_ARRAY);
  put_u64(b, 1);
  put_u32(b, GGUF_TYPE_UINT8);
  put_u64(b, 1);
  put_u8(b, 0);
  expect_refused(b, TXL_ERROR_UNSUPPORTED, "key 'nest'", "nested");
  g_byte_array_unref(b);

  /* bool bytes must be 0 or 1, as scalars and in arrays */
  b = new_file(0, 1);
  put_str(b, "flag");
  put_u32(b, GGUF_TYPE_BOOL);
  put_u8(b, 2);
  expect_refused(b, TXL_ERROR_FORMAT, "key 'flag'", "bool value 2");
  g_byte_array_unref(b);

  b = new_file(0, 1);
  put_str(b, "flags");
  put_u32(b, GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_BOOL);
  put_u64(b, 3);
  put_u8(b, 1);
  put_u8(b, 0);
  put_u8(b, 0xff);
  expect_refused(b, TXL_ERROR_FORMAT, "key 'flags'", "index 2");
  g_byte_array_unref(b);

  /* tensor types other than F32/F16 */
  for (uint32_t t = 2; t < 40; t += 9) {
    b = new_file(1, 0);
    tinfo(b, "q.weight", 1, NE8, t, 0);
    pad_to(b, 32);
    put_zeros(b, 64);
    g_autofree char *want = g_strdup_printf("type %u", t);
    expect_refused(b, TXL_ERROR_UNSUPPORTED, "tensor 'q.weight'", want);
    g_byte_array_unref(b);
  }
}

static void
test_hostile_dims(void)
{
  for (uint32_t nd = 0; nd <= 5; nd += 5) {
    GByteArray *b = new_file(1, 0);
    uint64_t ne[5] = { 1, 1, 1, 1, 1 };
    tinfo(b, "t", nd, ne, GGUF_TENSOR_F32, 0);
    pad_to(b, 32);
    put_zeros(b, 32);
    g_autofree char *want = g_strdup_printf("n_dims = %u", nd);
    expect_refused(b, TXL_ERROR_FORMAT, "tensor 't'", want);
    g_byte_array_unref(b);
  }
  /* n_dims huge: must not try to read 4 billion dims */
  GByteArray *b = new_file(1, 0);
  put_str(b, "t");
  put_u32(b, G_MAXUINT32);
  put_zeros(b, 64);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor 't'", "n_dims");
  g_byte_array_unref(b);

  uint64_t zero[2] = { 4, 0 };
  b = new_file(1, 0);
  tinfo(b, "z", 2, zero, GGUF_TENSOR_F32, 0);
  pad_to(b, 32);
  put_zeros(b, 32);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor 'z'", "dimension 1 is 0");
  g_byte_array_unref(b);

  /* Products that wrap around 2^64 (and would look small if wrapped). */
  uint64_t big[4] = { (uint64_t)1 << 32, (uint64_t)1 << 32, 1, 1 };
  uint64_t wrap[4] = { 2, 2, (uint64_t)1 << 62, 1 }; /* *4 bytes = 2^66 */
  uint64_t f16[1] = { (uint64_t)1 << 63 };            /* *2 bytes = 2^64 */
  const uint64_t *cases[] = { big, wrap, f16 };
  const uint32_t nds[] = { 4, 4, 1 };
  const uint32_t types[] = { GGUF_TENSOR_F32, GGUF_TENSOR_F32,
                             GGUF_TENSOR_F16 };
  for (int i = 0; i < 3; i++) {
    b = new_file(1, 0);
    tinfo(b, "huge", nds[i], cases[i], types[i], 0);
    pad_to(b, 32);
    put_zeros(b, 64);
    expect_refused(b, TXL_ERROR_FORMAT, "tensor 'huge'", "overflow");
    g_byte_array_unref(b);
  }
  /* Large but not overflowing: runs past the end instead. */
  uint64_t large[2] = { (uint64_t)1 << 30, (uint64_t)1 << 30 };
  b = new_file(1, 0);
  tinfo(b, "large", 2, large, GGUF_TENSOR_F32, 0);
  pad_to(b, 32);
  put_zeros(b, 64);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor 'large'", "past the end");
  g_byte_array_unref(b);
}

static void
test_hostile_offsets(void)
{
  /* misaligned */
  GByteArray *b = new_file(1, 0);
  tinfo(b, "m", 1, NE8, GGUF_TENSOR_F32, 4);
  pad_to(b, 32);
  put_zeros(b, 64);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor 'm'", "offset 4 is not a "
                 "multiple of the alignment 32");
  g_byte_array_unref(b);

  /* past the end, by a little and by nearly 2^64 */
  const uint64_t offs[] = { 32, 64, (uint64_t)1 << 40,
                            G_MAXUINT64 - 31 };
  for (gsize i = 0; i < G_N_ELEMENTS(offs); i++) {
    b = new_file(1, 0);
    tinfo(b, "p", 1, NE8, GGUF_TENSOR_F32, offs[i]);
    pad_to(b, 32);
    put_zeros(b, 48); /* room for [0, 32) only, plus some slack */
    expect_refused(b, TXL_ERROR_FORMAT, "tensor 'p'",
                   "past the end of the file");
    g_byte_array_unref(b);
  }

  /* The data section itself would start past the end. */
  b = new_file(1, 0);
  tinfo(b, "s", 1, NE8, GGUF_TENSOR_F32, 0);
  if (b->len % 32 == 0)
    put_u8(b, 0);
  expect_refused(b, TXL_ERROR_FORMAT, "data section", NULL);
  g_byte_array_unref(b);

  /* overlapping: [0, 64) and [32, 64), declared in either order */
  uint64_t ne16[1] = { 16 };
  for (int order = 0; order < 2; order++) {
    b = new_file(2, 0);
    if (order == 0) {
      tinfo(b, "big", 1, ne16, GGUF_TENSOR_F32, 0);
      tinfo(b, "small", 1, NE8, GGUF_TENSOR_F32, 32);
    } else {
      tinfo(b, "small", 1, NE8, GGUF_TENSOR_F32, 32);
      tinfo(b, "big", 1, ne16, GGUF_TENSOR_F32, 0);
    }
    pad_to(b, 32);
    put_zeros(b, 64);
    expect_refused(b, TXL_ERROR_FORMAT, "overlaps", "'big'");
    g_byte_array_unref(b);
  }
  /* identical ranges */
  b = new_file(2, 0);
  tinfo(b, "x", 1, NE8, GGUF_TENSOR_F32, 0);
  tinfo(b, "y", 1, NE8, GGUF_TENSOR_F16, 0);
  pad_to(b, 32);
  put_zeros(b, 64);
  expect_refused(b, TXL_ERROR_FORMAT, "overlaps", NULL);
  g_byte_array_unref(b);
  /* adjacent is fine */
  b = new_file(2, 0);
  tinfo(b, "x", 1, NE8, GGUF_TENSOR_F32, 32);
  tinfo(b, "y", 1, NE8, GGUF_TENSOR_F32, 0);
  pad_to(b, 32);
  put_zeros(b, 64);
  GgufFile *f = expect_ok(b);
  g_assert_true((const guint8 *)gguf_find_tensor(f, "x")->data ==
                (const guint8 *)gguf_find_tensor(f, "y")->data + 32);
  gguf_close(f);
  g_byte_array_unref(b);
}

static void
test_hostile_alignment(void)
{
  const uint32_t bad[] = { 0, 3, 48, 1u << 21, 0x80000000u, G_MAXUINT32 };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    GByteArray *b = new_file(1, 1);
    kv_u32(b, "general.alignment", bad[i]);
    tinfo(b, "t", 1, NE8, GGUF_TENSOR_F32, 0);
    pad_to(b, 64);
    put_zeros(b, 64);
    g_autofree char *want = g_strdup_printf("= %u", bad[i]);
    expect_refused(b, TXL_ERROR_FORMAT, "'general.alignment'", want);
    g_byte_array_unref(b);
  }
  /* wrong type */
  GByteArray *b = new_file(0, 1);
  kv_str(b, "general.alignment", "32");
  expect_refused(b, TXL_ERROR_FORMAT, "'general.alignment'", "string");
  g_byte_array_unref(b);

  /* alignment 1 and 1 MiB are legal */
  b = new_file(1, 1);
  kv_u32(b, "general.alignment", 1);
  tinfo(b, "t", 1, NE8, GGUF_TENSOR_F32, 3);
  put_zeros(b, 35);
  GgufFile *f = expect_ok(b);
  const GgufTensor *t = gguf_find_tensor(f, "t");
  g_assert_true((const guint8 *)t->data == b->data + b->len - 32);
  gguf_close(f);
  g_byte_array_unref(b);

  b = new_file(1, 1);
  kv_u32(b, "general.alignment", 1u << 20);
  tinfo(b, "t", 1, NE8, GGUF_TENSOR_F32, 0);
  pad_to(b, 1u << 20);
  put_zeros(b, 32);
  f = expect_ok(b);
  g_assert_true((const guint8 *)gguf_find_tensor(f, "t")->data ==
                b->data + (1u << 20));
  gguf_close(f);
  g_byte_array_unref(b);

  /* an offset aligned to 32 but not to the declared 64 */
  b = new_file(1, 1);
  kv_u32(b, "general.alignment", 64);
  tinfo(b, "t", 1, NE8, GGUF_TENSOR_F32, 32);
  pad_to(b, 64);
  put_zeros(b, 128);
  expect_refused(b, TXL_ERROR_FORMAT, "tensor 't'", "alignment 64");
  g_byte_array_unref(b);
}

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  GError *err = NULL;
  tmp_dir = g_dir_make_tmp("test_gguf-XXXXXX", &err);
  g_assert_no_error(err);

  g_test_add_func("/gguf/roundtrip/values", test_roundtrip_values);
  g_test_add_func("/gguf/roundtrip/tensors", test_roundtrip_tensors);
  g_test_add_func("/gguf/roundtrip/alignment", test_roundtrip_alignment);
  g_test_add_func("/gguf/roundtrip/no-tensors", test_no_tensors);
  g_test_add_func("/gguf/reader/all-scalar-types", test_all_scalar_types);
  g_test_add_func("/gguf/reader/getter-errors", test_getter_errors);
  g_test_add_func("/gguf/open/errors", test_open_errors);
  g_test_add_func("/gguf/writer/errors", test_writer_errors);
  g_test_add_func("/gguf/writer/atomic", test_writer_atomic);
  g_test_add_func("/gguf/corrupt/truncation", test_truncation);
  g_test_add_func("/gguf/corrupt/mutations", test_random_mutations);
  g_test_add_func("/gguf/corrupt/splices", test_random_splices);
  g_test_add_func("/gguf/hostile/control", test_minimal_is_valid);
  g_test_add_func("/gguf/hostile/magic-version", test_hostile_magic_version);
  g_test_add_func("/gguf/hostile/counts", test_hostile_counts);
  g_test_add_func("/gguf/hostile/lengths", test_hostile_lengths);
  g_test_add_func("/gguf/hostile/names", test_hostile_names);
  g_test_add_func("/gguf/hostile/huge-array", test_huge_array_getter);
  g_test_add_func("/gguf/hostile/duplicates", test_hostile_duplicates);
  g_test_add_func("/gguf/hostile/types", test_hostile_types);
  g_test_add_func("/gguf/hostile/dims", test_hostile_dims);
  g_test_add_func("/gguf/hostile/offsets", test_hostile_offsets);
  g_test_add_func("/gguf/hostile/alignment", test_hostile_alignment);

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

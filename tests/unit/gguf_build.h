/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Hand-built GGUF bytes for the reader's tests (test_gguf.c,
 * test_gguf_hostile.c): a byte builder, the smallest valid file, and
 * checks that a parse is refused with the right error or accepted. */
#ifndef TXL_TEST_GGUF_BUILD_H
#define TXL_TEST_GGUF_BUILD_H

#include "gguf.h"

#include <string.h>

static inline void
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

/* As assert_error for a format error, then clears *err for the next. */
static inline void
format_error_clear(GError **err, const char *needle, const char *needle2)
{
  assert_error(*err, TXL_ERROR_FORMAT, needle, needle2);
  g_clear_error(err);
}

/* Parses bytes that must be refused. */
static inline void
expect_refused(const GByteArray *b, int code, const char *needle,
               const char *needle2)
{
  GError *err = NULL;
  GgufFile *f = gguf_parse(b->data, b->len, &err);
  g_assert_null(f);
  assert_error(err, code, needle, needle2);
  g_error_free(err);
}

/* Parses bytes that must be refused, then frees them. */
static inline void
refuse_free(GByteArray *b, int code, const char *needle, const char *needle2)
{
  expect_refused(b, code, needle, needle2);
  g_byte_array_unref(b);
}

static inline GgufFile *
expect_ok(const GByteArray *b)
{
  GError *err = NULL;
  GgufFile *f = gguf_parse(b->data, b->len, &err);
  g_assert_no_error(err);
  g_assert_nonnull(f);
  return f;
}

/* Byte builder for hand-made files. */
static inline void
put_u8(GByteArray *b, guint8 v)
{
  g_byte_array_append(b, &v, 1);
}

static inline void
put_u32(GByteArray *b, uint32_t v)
{
  guint8 le[4] = { v, v >> 8, v >> 16, v >> 24 };
  g_byte_array_append(b, le, 4);
}

static inline void
put_u64(GByteArray *b, uint64_t v)
{
  put_u32(b, (uint32_t)v);
  put_u32(b, (uint32_t)(v >> 32));
}

static inline void
put_bytes(GByteArray *b, const void *p, gsize n)
{
  put_u64(b, n);
  g_byte_array_append(b, p, (guint)n);
}

static inline void
put_str(GByteArray *b, const char *s)
{
  put_bytes(b, s, strlen(s));
}

static inline GByteArray *
new_file(uint64_t n_tensors, uint64_t n_kvs)
{
  GByteArray *b = g_byte_array_new();
  g_byte_array_append(b, (const guint8 *)"GGUF", 4);
  put_u32(b, 3);
  put_u64(b, n_tensors);
  put_u64(b, n_kvs);
  return b;
}

/* A file of one key of the given type, its value still to write. */
static inline GByteArray *
kv_file(const char *key, uint32_t type)
{
  GByteArray *b = new_file(0, 1);
  put_str(b, key);
  put_u32(b, type);
  return b;
}

static inline void
kv_u32(GByteArray *b, const char *key, uint32_t v)
{
  put_str(b, key);
  put_u32(b, GGUF_TYPE_UINT32);
  put_u32(b, v);
}

static inline void
kv_str(GByteArray *b, const char *key, const char *v)
{
  put_str(b, key);
  put_u32(b, GGUF_TYPE_STRING);
  put_str(b, v);
}

static inline void
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

static inline void
pad_to(GByteArray *b, gsize align)
{
  while (b->len % align)
    put_u8(b, 0);
}

static inline void
put_zeros(GByteArray *b, gsize n)
{
  for (gsize i = 0; i < n; i++)
    put_u8(b, 0);
}

static const uint64_t NE8[] = { 8 };

/* A file of one tensor and no keys: its info, the data section aligned to
 * 32, then `data` bytes of zeros. */
static inline GByteArray *
one_tensor_file(const char *name, uint32_t n_dims, const uint64_t *ne,
                uint32_t type, uint64_t offset, gsize data)
{
  GByteArray *b = new_file(1, 0);
  tinfo(b, name, n_dims, ne, type, offset);
  pad_to(b, 32);
  put_zeros(b, data);
  return b;
}

/* A one-dimensional tensor's info, for tensors_file. */
typedef struct {
  const char *name;
  const uint64_t *ne;
  uint32_t type;
  uint64_t offset;
} TensorInfo;

/* A file of n one-dimensional tensors and no keys: their infos, the data
 * section aligned to 32, then `data` bytes of zeros. */
static inline GByteArray *
tensors_file(const TensorInfo *t, gsize n, gsize data)
{
  GByteArray *b = new_file(n, 0);
  for (gsize i = 0; i < n; i++)
    tinfo(b, t[i].name, 1, t[i].ne, t[i].type, t[i].offset);
  pad_to(b, 32);
  put_zeros(b, data);
  return b;
}

/* header + one string kv + one 8-float tensor, fully valid: the hostile
 * cases below each break exactly one thing in a copy of this. */
static inline GByteArray *
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

#endif

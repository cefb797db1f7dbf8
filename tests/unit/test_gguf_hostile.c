/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The GGUF reader against hand-built hostile headers: each case breaks
 * exactly one thing in a copy of the smallest valid file (magic, version,
 * counts, lengths, names, duplicates, types, dims, offsets, alignment) and
 * must be refused with an error naming it. */
#include "gguf_build.h"

#include <math.h>
#include "tu_test.h"

TU_TEST("/gguf/hostile/control", test_minimal_is_valid)
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

TU_TEST("/gguf/hostile/magic-version", test_hostile_magic_version)
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
  refuse_free(b, TXL_ERROR_UNSUPPORTED, "big-endian", NULL);
}

TU_TEST("/gguf/hostile/counts", test_hostile_counts)
{
  GByteArray *b = new_file(G_MAXUINT64, 0);
  refuse_free(b, TXL_ERROR_FORMAT, "tensor_count 18446744073709551615",
              NULL);
  b = new_file((uint64_t)1 << 40, 0);
  put_zeros(b, 4096);
  refuse_free(b, TXL_ERROR_FORMAT, "tensor_count 1099511627776", "limit");
  b = new_file(1000, 0);
  put_zeros(b, 4096);
  refuse_free(b, TXL_ERROR_FORMAT, "tensor_count 1000", "cannot fit");
  b = new_file(0, G_MAXUINT64);
  refuse_free(b, TXL_ERROR_FORMAT, "kv_count", NULL);
  b = new_file(0, (uint64_t)1 << 33);
  put_zeros(b, 4096);
  refuse_free(b, TXL_ERROR_FORMAT, "kv_count 8589934592", "limit");
  b = new_file(0, 1000);
  put_zeros(b, 4096);
  refuse_free(b, TXL_ERROR_FORMAT, "kv_count 1000", "cannot fit");
  /* Each fits alone, together they do not. */
  b = new_file(2, 5);
  put_zeros(b, 2 * 33 + 5 * 14 - 1);
  refuse_free(b, TXL_ERROR_FORMAT, "tensor_count 2", NULL);
}

TU_TEST("/gguf/hostile/lengths", test_hostile_lengths)
{
  /* value string length near UINT64_MAX */
  for (uint64_t delta = 0; delta < 40; delta += 7) {
    GByteArray *b = kv_file("s", GGUF_TYPE_STRING);
    put_u64(b, G_MAXUINT64 - delta);
    put_zeros(b, 64);
    refuse_free(b, TXL_ERROR_FORMAT, "key 's'", "string");
  }
  /* key length near UINT64_MAX */
  GByteArray *b = new_file(0, 1);
  put_u64(b, G_MAXUINT64 - 3);
  put_zeros(b, 64);
  refuse_free(b, TXL_ERROR_FORMAT, "key #0", NULL);
  /* tensor name length near UINT64_MAX */
  b = new_file(1, 0);
  put_u64(b, G_MAXUINT64);
  put_zeros(b, 64);
  refuse_free(b, TXL_ERROR_FORMAT, "tensor #0", NULL);
  /* string inside an array */
  b = kv_file("arr", GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_STRING);
  put_u64(b, 2);
  put_str(b, "ok");
  put_u64(b, G_MAXUINT64 - 1);
  put_zeros(b, 16);
  refuse_free(b, TXL_ERROR_FORMAT, "key 'arr'", "string #1");
  /* array count that would need exabytes */
  b = kv_file("arr", GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_UINT32);
  put_u64(b, (uint64_t)1 << 62);
  put_zeros(b, 64);
  refuse_free(b, TXL_ERROR_FORMAT, "key 'arr'", "4611686018427387904");
}

/* A genuine but enormous array parses (it is all there), yet the getters
 * refuse to copy it: a u8 array would grow eightfold as gint64[]. */
TU_TEST("/gguf/hostile/huge-array", test_huge_array_getter)
{
  const gsize n = ((gsize)1 << 26) + 1;
  GByteArray *b = kv_file("big", GGUF_TYPE_ARRAY);
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

TU_TEST("/gguf/hostile/names", test_hostile_names)
{
  GByteArray *b = kv_file("", GGUF_TYPE_UINT8);
  put_u8(b, 1);
  put_zeros(b, 8); /* so the kv count alone is plausible */
  refuse_free(b, TXL_ERROR_FORMAT, "key #0", "empty");

  b = new_file(0, 1);
  put_bytes(b, "a\0b", 3);
  put_u32(b, GGUF_TYPE_UINT8);
  put_u8(b, 1);
  refuse_free(b, TXL_ERROR_FORMAT, "key #0", "NUL");

  b = new_file(0, 1);
  put_bytes(b, "\xc3(", 2);
  put_u32(b, GGUF_TYPE_UINT8);
  put_u8(b, 1);
  refuse_free(b, TXL_ERROR_FORMAT, "key #0", "UTF-8");

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
  refuse_free(one_tensor_file(name, 1, NE8, GGUF_TENSOR_F32, 0, 32),
              TXL_ERROR_FORMAT, "tensor #0", "257");
  name[256] = 0;
  b = one_tensor_file(name, 1, NE8, GGUF_TENSOR_F32, 0, 32);
  GgufFile *f = expect_ok(b);
  g_assert_nonnull(gguf_find_tensor(f, name));
  gguf_close(f);
  g_byte_array_unref(b);

  refuse_free(one_tensor_file("", 1, NE8, GGUF_TENSOR_F32, 0, 32),
              TXL_ERROR_FORMAT, "tensor #0", "empty");
}

TU_TEST("/gguf/hostile/duplicates", test_hostile_duplicates)
{
  GByteArray *b = new_file(0, 3);
  kv_u32(b, "a", 1);
  kv_u32(b, "b", 1);
  kv_str(b, "a", "again");
  refuse_free(b, TXL_ERROR_FORMAT, "duplicate key 'a'", NULL);

  const TensorInfo twice[] = { { "w", NE8, GGUF_TENSOR_F32, 0 },
                               { "w", NE8, GGUF_TENSOR_F32, 32 } };
  refuse_free(tensors_file(twice, 2, 64), TXL_ERROR_FORMAT,
              "duplicate tensor name 'w'", NULL);
}

TU_TEST("/gguf/hostile/types", test_hostile_types)
{
  GByteArray *b = kv_file("weird", 13);
  put_u32(b, 0);
  refuse_free(b, TXL_ERROR_FORMAT, "key 'weird'", "unknown value type 13");

  b = kv_file("weird", 0x80000000u);
  put_u32(b, 0);
  refuse_free(b, TXL_ERROR_FORMAT, "key 'weird'", "unknown value type");

  b = kv_file("arr", GGUF_TYPE_ARRAY);
  put_u32(b, 99);
  put_u64(b, 0);
  refuse_free(b, TXL_ERROR_FORMAT, "key 'arr'", "element type 99");

  b = kv_file("nest", GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_ARRAY);
  put_u64(b, 1);
  put_u32(b, GGUF_TYPE_UINT8);
  put_u64(b, 1);
  put_u8(b, 0);
  refuse_free(b, TXL_ERROR_UNSUPPORTED, "key 'nest'", "nested");

  /* bool bytes must be 0 or 1, as scalars and in arrays */
  b = kv_file("flag", GGUF_TYPE_BOOL);
  put_u8(b, 2);
  refuse_free(b, TXL_ERROR_FORMAT, "key 'flag'", "bool value 2");

  b = kv_file("flags", GGUF_TYPE_ARRAY);
  put_u32(b, GGUF_TYPE_BOOL);
  put_u64(b, 3);
  put_u8(b, 1);
  put_u8(b, 0);
  put_u8(b, 0xff);
  refuse_free(b, TXL_ERROR_FORMAT, "key 'flags'", "index 2");

  /* tensor types other than F32/F16 */
  for (uint32_t t = 2; t < 40; t += 9) {
    g_autofree char *want = g_strdup_printf("type %u", t);
    refuse_free(one_tensor_file("q.weight", 1, NE8, t, 0, 64),
                TXL_ERROR_UNSUPPORTED, "tensor 'q.weight'", want);
  }
}

TU_TEST("/gguf/hostile/dims", test_hostile_dims)
{
  for (uint32_t nd = 0; nd <= 5; nd += 5) {
    uint64_t ne[5] = { 1, 1, 1, 1, 1 };
    g_autofree char *want = g_strdup_printf("n_dims = %u", nd);
    refuse_free(one_tensor_file("t", nd, ne, GGUF_TENSOR_F32, 0, 32),
                TXL_ERROR_FORMAT, "tensor 't'", want);
  }
  /* n_dims huge: must not try to read 4 billion dims */
  GByteArray *b = new_file(1, 0);
  put_str(b, "t");
  put_u32(b, G_MAXUINT32);
  put_zeros(b, 64);
  refuse_free(b, TXL_ERROR_FORMAT, "tensor 't'", "n_dims");

  uint64_t zero[2] = { 4, 0 };
  refuse_free(one_tensor_file("z", 2, zero, GGUF_TENSOR_F32, 0, 32),
              TXL_ERROR_FORMAT, "tensor 'z'", "dimension 1 is 0");

  /* Products that wrap around 2^64 (and would look small if wrapped). */
  uint64_t big[4] = { (uint64_t)1 << 32, (uint64_t)1 << 32, 1, 1 };
  uint64_t wrap[4] = { 2, 2, (uint64_t)1 << 62, 1 }; /* *4 bytes = 2^66 */
  uint64_t f16[1] = { (uint64_t)1 << 63 };            /* *2 bytes = 2^64 */
  const uint64_t *cases[] = { big, wrap, f16 };
  const uint32_t nds[] = { 4, 4, 1 };
  const uint32_t types[] = { GGUF_TENSOR_F32, GGUF_TENSOR_F32,
                             GGUF_TENSOR_F16 };
  for (int i = 0; i < 3; i++) {
    refuse_free(one_tensor_file("huge", nds[i], cases[i], types[i], 0, 64),
                TXL_ERROR_FORMAT, "tensor 'huge'", "overflow");
  }
  /* Large but not overflowing: runs past the end instead. */
  uint64_t large[2] = { (uint64_t)1 << 30, (uint64_t)1 << 30 };
  refuse_free(one_tensor_file("large", 2, large, GGUF_TENSOR_F32, 0, 64),
              TXL_ERROR_FORMAT, "tensor 'large'", "past the end");
}

TU_TEST("/gguf/hostile/offsets", test_hostile_offsets)
{
  /* misaligned */
  refuse_free(one_tensor_file("m", 1, NE8, GGUF_TENSOR_F32, 4, 64),
              TXL_ERROR_FORMAT, "tensor 'm'",
              "offset 4 is not a multiple of the alignment 32");

  /* past the end, by a little and by nearly 2^64 */
  const uint64_t offs[] = { 32, 64, (uint64_t)1 << 40,
                            G_MAXUINT64 - 31 };
  for (gsize i = 0; i < G_N_ELEMENTS(offs); i++) {
    /* room for [0, 32) only, plus some slack */
    refuse_free(one_tensor_file("p", 1, NE8, GGUF_TENSOR_F32, offs[i], 48),
                TXL_ERROR_FORMAT, "tensor 'p'", "past the end of the file");
  }

  /* The data section itself would start past the end. */
  GByteArray *b = new_file(1, 0);
  tinfo(b, "s", 1, NE8, GGUF_TENSOR_F32, 0);
  if (b->len % 32 == 0)
    put_u8(b, 0);
  refuse_free(b, TXL_ERROR_FORMAT, "data section", NULL);

  /* overlapping: [0, 64) and [32, 64), declared in either order */
  uint64_t ne16[1] = { 16 };
  const TensorInfo big = { "big", ne16, GGUF_TENSOR_F32, 0 },
                   small = { "small", NE8, GGUF_TENSOR_F32, 32 };
  for (int order = 0; order < 2; order++) {
    const TensorInfo t[] = { order ? small : big, order ? big : small };
    refuse_free(tensors_file(t, 2, 64), TXL_ERROR_FORMAT, "overlaps", "'big'");
  }
  /* identical ranges */
  const TensorInfo same[] = { { "x", NE8, GGUF_TENSOR_F32, 0 },
                              { "y", NE8, GGUF_TENSOR_F16, 0 } };
  refuse_free(tensors_file(same, 2, 64), TXL_ERROR_FORMAT, "overlaps", NULL);
  /* adjacent is fine */
  const TensorInfo adjacent[] = { { "x", NE8, GGUF_TENSOR_F32, 32 },
                                  { "y", NE8, GGUF_TENSOR_F32, 0 } };
  b = tensors_file(adjacent, 2, 64);
  GgufFile *f = expect_ok(b);
  g_assert_true((const guint8 *)gguf_find_tensor(f, "x")->data ==
                (const guint8 *)gguf_find_tensor(f, "y")->data + 32);
  gguf_close(f);
  g_byte_array_unref(b);
}

TU_TEST("/gguf/hostile/alignment", test_hostile_alignment)
{
  const uint32_t bad[] = { 0, 3, 48, 1u << 21, 0x80000000u, G_MAXUINT32 };
  for (gsize i = 0; i < G_N_ELEMENTS(bad); i++) {
    GByteArray *b = new_file(1, 1);
    kv_u32(b, "general.alignment", bad[i]);
    tinfo(b, "t", 1, NE8, GGUF_TENSOR_F32, 0);
    pad_to(b, 64);
    put_zeros(b, 64);
    g_autofree char *want = g_strdup_printf("= %u", bad[i]);
    refuse_free(b, TXL_ERROR_FORMAT, "'general.alignment'", want);
  }
  /* wrong type */
  GByteArray *b = new_file(0, 1);
  kv_str(b, "general.alignment", "32");
  refuse_free(b, TXL_ERROR_FORMAT, "'general.alignment'", "string");

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
  refuse_free(b, TXL_ERROR_FORMAT, "tensor 't'", "alignment 64");
}

TU_MAIN()

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the GGUF reader.
 *
 * Every input goes through gguf_parse().  When it is accepted, the target
 * walks the metadata again on its own to learn the keys (gguf.h has no key
 * iterator), calls every getter on every key, and touches every byte of
 * every tensor, so ASan sees any pointer the reader hands out that leaves
 * the buffer.  It also re-checks what the reader promises about tensors and
 * traps when a promise is broken: an accepted file that the independent
 * walk cannot follow is a reader bug too. */
#include "fuzz_check.h"
#include "gguf.h"
#define GGUF_TOUCH_CHECK CHECK
#include "../tests/unit/gguf_touch.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
  const uint8_t *d;
  size_t n;
  size_t pos;
} Walk;

static uint64_t
rd(Walk *w, size_t bytes)
{
  CHECK(bytes <= w->n - w->pos);
  uint64_t v = 0;
  for (size_t i = 0; i < bytes; i++)
    v |= (uint64_t)w->d[w->pos + i] << (8 * i);
  w->pos += bytes;
  return v;
}

static void
skip(Walk *w, uint64_t bytes)
{
  CHECK(bytes <= w->n - w->pos);
  w->pos += (size_t)bytes;
}

static size_t
fixed_size(uint32_t t)
{
  static const size_t sizes[] = { 1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8 };
  CHECK(t < sizeof sizes / sizeof sizes[0]);
  return sizes[t];
}

static void
skip_value(Walk *w, uint32_t t)
{
  if (t == GGUF_TYPE_STRING) {
    skip(w, rd(w, 8));
  } else if (t == GGUF_TYPE_ARRAY) {
    uint32_t et = (uint32_t)rd(w, 4);
    uint64_t n = rd(w, 8);
    CHECK(et != GGUF_TYPE_ARRAY);
    for (uint64_t i = 0; i < n; i++)
      skip_value(w, et);
  } else {
    skip(w, fixed_size(t));
  }
}

static void
exercise_key(const GgufFile *f, const char *key)
{
  gint64 i64;
  volatile uint64_t sink = 0;

  CHECK(gguf_has_key(f, key));
  sink += gguf_touch_key(f, key);
  /* Narrow ranges too, so the range-error path runs. */
  GError *err = NULL;
  if (!gguf_get_int(f, key, 0, 1, &i64, &err)) {
    CHECK(err && err->message && strstr(err->message, key));
    g_error_free(err);
  }
  (void)sink;
}

static void
exercise_tensors(const GgufFile *f, const uint8_t *data, size_t size)
{
  volatile uint64_t sink = 0;
  gsize n = gguf_n_tensors(f);
  for (gsize i = 0; i < n; i++) {
    const GgufTensor *t = gguf_tensor_at(f, i);
    CHECK(t && t->name && *t->name);
    CHECK(gguf_find_tensor(f, t->name) == t);
    CHECK(t->n_dims >= 1 && t->n_dims <= GGUF_MAX_DIMS);
    CHECK(t->type == GGUF_TENSOR_F32 || t->type == GGUF_TENSOR_F16);
    unsigned __int128 want = t->type == GGUF_TENSOR_F32 ? 4 : 2;
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
      CHECK(t->ne[d] >= 1 && (d < (int)t->n_dims || t->ne[d] == 1));
      want *= t->ne[d];
      CHECK(want <= size);
    }
    CHECK(want == t->nbytes);
    const uint8_t *p = t->data;
    CHECK(p >= data && t->nbytes <= size && p - data <= (ptrdiff_t)(size - t->nbytes));
    for (uint64_t j = 0; j < t->nbytes; j++)
      sink += p[j];
  }
  CHECK(gguf_tensor_at(f, n) == NULL);
  (void)sink;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  GgufFile *f = PARSED(gguf_parse, data, size, TXL_ERROR_FORMAT,
                       TXL_ERROR_UNSUPPORTED);
  if (!f)
    return 0;
  CHECK(gguf_version(f) == 3);
  size_t bsize;
  CHECK(gguf_buffer(f, &bsize) == (const void *)data && bsize == size);

  Walk w = { data, size, 0 };
  skip(&w, 8); /* magic, version */
  uint64_t n_tensors = rd(&w, 8);
  uint64_t n_kvs = rd(&w, 8);
  CHECK(n_tensors == gguf_n_tensors(f));
  for (uint64_t i = 0; i < n_kvs; i++) {
    uint64_t len = rd(&w, 8);
    CHECK(len <= w.n - w.pos);
    char *key = g_strndup((const char *)data + w.pos, (gsize)len);
    skip(&w, len);
    skip_value(&w, (uint32_t)rd(&w, 4));
    exercise_key(f, key);
    g_free(key);
  }
  /* A key that is never present. */
  CHECK(!gguf_has_key(f, ""));
  double d;
  CHECK(!gguf_get_float(f, "", &d, NULL));
  CHECK(gguf_find_tensor(f, "") == NULL);

  exercise_tensors(f, data, size);
  gguf_close(f);
  return 0;
}

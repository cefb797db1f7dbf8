/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target for the safetensors reader.
 *
 * Every input goes through st_parse().  When it is accepted, the target
 * checks what the reader promises about each tensor (a name, a known
 * dtype, a shape whose element count matches the byte count, data inside
 * the buffer, lookup by name finds it) and widens every tensor with
 * st_to_f32(), touching every float it returns so ASan sees the whole
 * allocation.  Refusals must carry a TXL_ERROR with a message. */
#include "finite.h"
#include "fuzz_check.h"
#include "safetensors.h"

#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

static unsigned
elem_size(const StTensor *t)
{
  static const struct { const char *name; unsigned size; } sizes[] = {
    { "F32", 4 }, { "F16", 2 }, { "BF16", 2 }, { "F64", 8 },
    { "BOOL", 1 }, { "U8", 1 }, { "I8", 1 }, { "F8_E5M2", 1 },
    { "F8_E4M3", 1 }, { "I16", 2 }, { "U16", 2 }, { "I32", 4 },
    { "U32", 4 }, { "I64", 8 }, { "U64", 8 },
  };
  for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
    if (strcmp(sizes[i].name, t->dtype_name) == 0)
      return sizes[i].size;
  CHECK(0);
  return 0;
}

static void
check_tensor(const StFile *f, const StTensor *t, const uint8_t *data,
             size_t size)
{
  CHECK(t->name && t->dtype_name);
  CHECK(st_find(f, t->name) == t);
  CHECK(t->n_dims >= 0 && t->n_dims <= ST_MAX_DIMS);
  unsigned __int128 numel = 1;
  for (int d = 0; d < t->n_dims; d++)
    numel *= t->shape[d];
  for (int d = t->n_dims; d < ST_MAX_DIMS; d++)
    CHECK(t->shape[d] == 0);
  CHECK(numel * elem_size(t) == t->nbytes);
  const uint8_t *p = t->data;
  CHECK(p >= data + 8 && t->nbytes <= size &&
        (size_t)(p - data) <= size - t->nbytes);
  CHECK((t->dtype == ST_OTHER) ==
        (strcmp(t->dtype_name, "F32") && strcmp(t->dtype_name, "F16") &&
         strcmp(t->dtype_name, "BF16") && strcmp(t->dtype_name, "F64")));

  GError *err = NULL;
  gsize n = 0;
  float *v = st_to_f32(t, &n, &err);
  if (t->dtype == ST_OTHER) {
    CHECK(!v && err && err->domain == TXL_ERROR &&
          err->code == TXL_ERROR_UNSUPPORTED);
    g_error_free(err);
    return;
  }
  CHECK(v && !err && n == (gsize)numel);
  volatile uint32_t sink = 0;
  gint64 first_bad = -1;
  for (gsize i = 0; i < n; i++) {
    uint32_t u;
    memcpy(&u, &v[i], sizeof u);
    sink += u;
    if (first_bad < 0 && !isfinite(v[i]))
      first_bad = (gint64)i;
  }
  /* what txl convert relies on to refuse non-finite weights */
  CHECK(txl_first_nonfinite(v, n) == first_bad);
  (void)sink;
  g_free(v);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  StFile *f = PARSED(st_parse, data, size, TXL_ERROR_FORMAT, TXL_ERROR_FORMAT);
  if (!f)
    return 0;
  gsize n = st_n_tensors(f);
  for (gsize i = 0; i < n; i++) {
    const StTensor *t = st_tensor_at(f, i);
    CHECK(t);
    check_tensor(f, t, data, size);
  }
  CHECK(st_tensor_at(f, n) == NULL);
  st_close(f);
  return 0;
}

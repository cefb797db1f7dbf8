/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Every getter of the GGUF reader on one key, touching every value it
 * hands out, so that ASan sees any pointer that leaves the buffer: the
 * reader's corruption tests (test_gguf.c) and fuzz/fuzz_gguf.c run it on
 * damaged files.  GGUF_TOUCH_CHECK(cond) checks an invariant:
 * g_assert_true unless the includer defines it first (a harness: a
 * trap). */
#ifndef TXL_TEST_GGUF_TOUCH_H
#define TXL_TEST_GGUF_TOUCH_H

#include "gguf.h"

#include <math.h>
#include <string.h>

#ifndef GGUF_TOUCH_CHECK
#define GGUF_TOUCH_CHECK(cond) g_assert_true(cond)
#endif

/* A sum over what the getters return for key k (only for the touching). */
static inline guint64
gguf_touch_key(const GgufFile *f, const char *k)
{
  guint64 sum = 0;
  gint64 v;
  gboolean b;
  double d;
  gsize n;
  if (gguf_get_int(f, k, G_MININT64, G_MAXINT64, &v, NULL))
    sum += (guint64)v;
  if (gguf_get_bool(f, k, &b, NULL))
    sum += (guint64)b;
  if (gguf_get_float(f, k, &d, NULL))
    sum += isfinite(d);
  char *s = gguf_get_string(f, k, NULL);
  if (s)
    sum += strlen(s);
  g_free(s);
  gint64 *ia;
  if (gguf_get_int_array(f, k, &ia, &n, NULL)) {
    for (gsize j = 0; j < n; j++)
      sum += (guint64)ia[j];
    g_free(ia);
  }
  gboolean *ba;
  if (gguf_get_bool_array(f, k, &ba, &n, NULL)) {
    for (gsize j = 0; j < n; j++) {
      GGUF_TOUCH_CHECK(ba[j] == TRUE || ba[j] == FALSE);
      sum += (guint64)ba[j];
    }
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
  return sum;
}

#endif

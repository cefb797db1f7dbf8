/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "batcher.h"

#include <string.h>

struct _TxlBatcher {
  const int32_t *tok;
  const guint8 *learn;
  gsize stream_len; /* tokens per stream */
  int B, T;
  gint64 per_epoch; /* batches in one pass */
  gint64 pos;
};

TxlBatcher *
txl_batcher_new(const int32_t *tok, gsize n, int B, int T, GError **error)
{
  if (B < 1 || T < 1 || n / (gsize)B < (gsize)T + 1) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "%zu tokens are too few for %d streams of segments of %d "
                "(need at least %lld)", n, B, T, (long long)B * (T + 1));
    return NULL;
  }
  TxlBatcher *b = g_new0(TxlBatcher, 1);
  b->tok = tok;
  b->stream_len = n / B;
  b->B = B;
  b->T = T;
  /* a segment needs T inputs and the token after the last */
  b->per_epoch = (gint64)((b->stream_len - 1) / T);
  return b;
}

void
txl_batcher_free(TxlBatcher *b)
{
  g_free(b);
}

void
txl_batcher_set_learn(TxlBatcher *b, const guint8 *learn)
{
  b->learn = learn;
}

gboolean
txl_batcher_next(TxlBatcher *b, int32_t *in, int32_t *tg)
{
  gint64 i = b->pos % b->per_epoch;
  for (int s = 0; s < b->B; s++) {
    const int32_t *src = b->tok + s * b->stream_len + i * b->T;
    memcpy(in + (gsize)s * b->T, src, sizeof(int32_t) * b->T);
    memcpy(tg + (gsize)s * b->T, src + 1, sizeof(int32_t) * b->T);
    const guint8 *keep = b->learn ? b->learn + (src + 1 - b->tok) : NULL;
    for (int t = 0; keep && t < b->T; t++)
      if (!keep[t])
        tg[(gsize)s * b->T + t] = -1;
  }
  b->pos++;
  return i == 0;
}

gint64
txl_batcher_position(const TxlBatcher *b)
{
  return b->pos;
}

void
txl_batcher_seek(TxlBatcher *b, gint64 position)
{
  b->pos = position < 0 ? 0 : position;
}

gint64
txl_batcher_batches_per_epoch(const TxlBatcher *b)
{
  return b->per_epoch;
}

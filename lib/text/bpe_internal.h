/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal to lib/text: the BPE vocabulary's layout, shared by bpe.c
 * (vocabulary, model file, encoder) and bpe_train.c (the trainer). */
#ifndef TXL_BPE_INTERNAL_H
#define TXL_BPE_INTERNAL_H

#include "bpe.h"

#define NONE32 G_MAXUINT32

struct _TxlBpe {
  int n_tokens;
  GByteArray *blob;  /* token bytes back to back */
  GArray *off, *len; /* guint32 per token */
  GArray *special;   /* guint8 per token */
  GArray *merges;    /* guint32 triples: left, right, result; rank = index */
  int byte_id[256];
  guint rules;
  int ph[TXL_NORM_N_RULES][2]; /* placeholder ids: plain, spaced */
  /* (left, right) -> rank + 1, open addressing; built by bpe_finalize */
  guint64 *pkey;
  guint32 *pval;
  guint32 pmask;
  GHashTable *by_bytes; /* GBytes of a non-special token -> id + 1 */
};

TxlBpe *bpe_new(void);
/* Appends a token; returns its id, or -1 when a non-special token with the
 * same bytes exists (*dup set to its id). */
int bpe_add_token(TxlBpe *b, const void *s, gsize len, gboolean special,
                  int *dup);
/* Builds the merge-rank table and the placeholder ids once the tokens and
 * merges are in. */
void bpe_finalize(TxlBpe *b);

/* A binary heap over an array of T, ordered by before(const T *, const
 * T *) (the one that comes out first): the encoder's merge queue and the
 * trainer's pair counts share this one sift-up and sift-down.  Defines
 * static inline prefix_push(T *h, gsize *n, T v), which needs room for
 * one more, and prefix_pop(T *h, gsize *n) for a non-empty heap. */
#define TXL_DEFINE_HEAP(prefix, T, before)                                    \
  static inline void prefix##_push(T *h, gsize *n, T v)                       \
  {                                                                           \
    gsize i = (*n)++;                                                         \
    while (i > 0) {                                                           \
      gsize up = (i - 1) / 2;                                                 \
      if (!before(&v, &h[up]))                                                \
        break;                                                                \
      h[i] = h[up];                                                           \
      i = up;                                                                 \
    }                                                                         \
    h[i] = v;                                                                 \
  }                                                                           \
  static inline T prefix##_pop(T *h, gsize *n)                                \
  {                                                                           \
    T top = h[0], v = h[--(*n)];                                              \
    gsize i = 0, m = *n;                                                      \
    for (;;) {                                                                \
      gsize c = 2 * i + 1;                                                    \
      if (c >= m)                                                             \
        break;                                                                \
      if (c + 1 < m && before(&h[c + 1], &h[c]))                              \
        c++;                                                                  \
      if (!before(&h[c], &v))                                                 \
        break;                                                                \
      h[i] = h[c];                                                            \
      i = c;                                                                  \
    }                                                                         \
    if (m)                                                                    \
      h[i] = v;                                                               \
    return top;                                                               \
  }

static inline guint32
pair_slot(guint64 key, guint32 mask)
{
  return (guint32)((key * 0x9E3779B97F4A7C15ull) >> 40) & mask;
}

static inline guint64
pair_key(guint32 a, guint32 b)
{
  return ((guint64)a << 32) | b;
}

#endif

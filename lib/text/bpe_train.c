/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Learning a byte-level BPE vocabulary from text (docs/tokenizers.md):
 * counting the pre-tokenizer's pieces, then merging the most frequent
 * pair until the vocabulary is full. */
#include "bpe_internal.h"
#include "bytes.h"

#include <string.h>

/* ---- trainer ------------------------------------------------------------ */

typedef struct {
  const guchar *bytes; /* in the trainer's string chunk */
  guint32 len;
  gint64 count;
} Word;

struct _TxlBpeTrainer {
  TxlBpeTrainOptions o;
  TxlBpe *bpe;
  TxlPretok *pretok;
  GStringChunk *store;
  GHashTable *seen; /* TxlBytesKey -> word index + 1 */
  GArray *words;    /* Word, in order of first appearance */
  gint64 bytes_in;
};

static void
count_piece(const guchar *s, gsize len, gsize start, int special,
            gpointer data)
{
  TxlBpeTrainer *t = data;
  if (special >= 0)
    return;
  TxlBytesKey k = { s, len };
  gpointer v = g_hash_table_lookup(t->seen, &k);
  if (v) {
    g_array_index(t->words, Word, GPOINTER_TO_UINT(v) - 1).count++;
    return;
  }
  Word w = { (const guchar *)g_string_chunk_insert_len(t->store,
                                                       (const char *)s,
                                                       (gssize)len),
             (guint32)len, 1 };
  g_array_append_val(t->words, w);
  TxlBytesKey *nk = g_new(TxlBytesKey, 1);
  nk->s = w.bytes;
  nk->len = len;
  g_hash_table_insert(t->seen, nk, GUINT_TO_POINTER(t->words->len));
}

TxlBpeTrainer *
txl_bpe_trainer_new(const TxlBpeTrainOptions *opts, GError **error)
{
  TxlBpeTrainOptions o = TXL_BPE_TRAIN_OPTIONS_DEFAULT;
  if (opts)
    o = *opts;
  if (o.min_frequency < 2)
    o.min_frequency = 2;
  o.normalize &= TXL_NORM_ALL;
  int base = 256;
  for (int r = 0; r < TXL_NORM_N_RULES; r++)
    base += (o.normalize >> r & 1) * 2;
  if (o.vocab_size < base || o.vocab_size > (1 << 24)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "vocab_size %d: must be in %d..%d (256 bytes and 2 ids per "
                "normalisation rule)", o.vocab_size, base, 1 << 24);
    return NULL;
  }
  TxlBpeTrainer *t = g_new0(TxlBpeTrainer, 1);
  t->o = o;
  t->bpe = bpe_new();
  t->bpe->rules = o.normalize;
  int dup;
  for (int c = 0; c < 256; c++) {
    guchar byte = (guchar)c;
    bpe_add_token(t->bpe, &byte, 1, FALSE, &dup);
  }
  for (int r = 0; r < TXL_NORM_N_RULES; r++) {
    if (!(o.normalize & (1u << r)))
      continue;
    g_autofree char *sp = g_strconcat(" ", txl_norm_placeholder(r), NULL);
    bpe_add_token(t->bpe, txl_norm_placeholder(r),
                  strlen(txl_norm_placeholder(r)), TRUE, &dup);
    bpe_add_token(t->bpe, sp, strlen(sp), TRUE, &dup);
  }
  bpe_finalize(t->bpe);
  t->pretok = txl_pretok_new(t->bpe, count_piece, t);
  t->store = g_string_chunk_new(1 << 16);
  t->seen = g_hash_table_new_full(txl_bytes_key_hash, txl_bytes_key_equal,
                                  g_free, NULL);
  t->words = g_array_new(FALSE, FALSE, sizeof(Word));
  return t;
}

void
txl_bpe_trainer_free(TxlBpeTrainer *t)
{
  if (!t)
    return;
  txl_bpe_free(t->bpe);
  txl_pretok_free(t->pretok);
  g_string_chunk_free(t->store);
  g_hash_table_unref(t->seen);
  g_array_unref(t->words);
  g_free(t);
}

void
txl_bpe_trainer_push(TxlBpeTrainer *t, const char *data, gsize len)
{
  txl_pretok_push(t->pretok, (const guchar *)data, len);
  t->bytes_in += len;
}

void
txl_bpe_trainer_end_text(TxlBpeTrainer *t)
{
  txl_pretok_finish(t->pretok);
}

/* Pair statistics.  Every pair records the words it occurs in (possibly
 * stale: checked when used), so a merge only revisits those words. */
typedef struct {
  guint32 a, b;
  gint64 count;
  guint32 *where;
  guint32 n_where, cap_where;
  guint32 stamp;
  gboolean merged;
} Pair;

typedef struct {
  GArray *pairs; /* Pair */
  guint64 *key;
  guint32 *val; /* pair index + 1 */
  guint32 mask, used;
  /* max-heap of (count, pair index) */
  GArray *heap;
} Stats;

typedef struct {
  gint64 count;
  guint32 pair;
} HeapItem;

static inline gboolean
item_before(const HeapItem *x, const HeapItem *y)
{
  /* higher count first; on ties the pair seen first, for determinism */
  return x->count > y->count || (x->count == y->count && x->pair < y->pair);
}

TXL_DEFINE_HEAP(items, HeapItem, item_before)

static void
stats_push(Stats *st, gint64 count, guint32 pair)
{
  gsize n = st->heap->len;
  g_array_set_size(st->heap, n + 1);
  items_push((HeapItem *)st->heap->data, &n, (HeapItem){ count, pair });
}

static HeapItem
stats_pop(Stats *st)
{
  gsize n = st->heap->len;
  HeapItem top = items_pop((HeapItem *)st->heap->data, &n);
  g_array_set_size(st->heap, n);
  return top;
}

static void
stats_grow(Stats *st)
{
  guint32 size = (st->mask + 1) * 2;
  guint64 *key = g_new0(guint64, size);
  guint32 *val = g_new0(guint32, size);
  for (guint32 i = 0; i <= st->mask; i++) {
    if (!st->val[i])
      continue;
    guint32 j = pair_slot(st->key[i], size - 1);
    while (val[j])
      j = (j + 1) & (size - 1);
    key[j] = st->key[i];
    val[j] = st->val[i];
  }
  g_free(st->key);
  g_free(st->val);
  st->key = key;
  st->val = val;
  st->mask = size - 1;
}

static guint32
stats_pair(Stats *st, guint32 a, guint32 b)
{
  guint64 key = pair_key(a, b);
  guint32 i = pair_slot(key, st->mask);
  for (; st->val[i]; i = (i + 1) & st->mask)
    if (st->key[i] == key)
      return st->val[i] - 1;
  Pair p = { a, b, 0, NULL, 0, 0, 0, FALSE };
  g_array_append_val(st->pairs, p);
  st->key[i] = key;
  st->val[i] = st->pairs->len;
  if (++st->used * 2 > st->mask)
    stats_grow(st);
  return st->pairs->len - 1;
}

static void
pair_add_where(Pair *p, guint32 w)
{
  if (p->n_where && p->where[p->n_where - 1] == w)
    return;
  if (p->n_where == p->cap_where) {
    p->cap_where = p->cap_where ? 2 * p->cap_where : 4;
    p->where = g_renew(guint32, p->where, p->cap_where);
  }
  p->where[p->n_where++] = w;
}

TxlBpe *
txl_bpe_trainer_finish(TxlBpeTrainer *t, GError **error)
{
  txl_pretok_finish(t->pretok);
  TxlBpe *b = t->bpe;
  const guint nw = t->words->len;
  Word *words = (Word *)t->words->data;
  /* symbols of every word, back to back; a word shrinks in place */
  gsize total = 0;
  for (guint w = 0; w < nw; w++)
    total += words[w].len;
  guint32 *sym = g_new(guint32, total + 1), *woff = g_new(guint32, nw + 1),
          *wlen = g_new(guint32, nw + 1), *wstamp = g_new0(guint32, nw + 1);
  Stats st = { g_array_new(FALSE, FALSE, sizeof(Pair)), NULL, NULL, 1023, 0,
               g_array_new(FALSE, FALSE, sizeof(HeapItem)) };
  st.key = g_new0(guint64, 1024);
  st.val = g_new0(guint32, 1024);
  gsize at = 0;
  for (guint w = 0; w < nw; w++) {
    woff[w] = (guint32)at;
    wlen[w] = words[w].len;
    for (guint32 i = 0; i < words[w].len; i++)
      sym[at + i] = (guint32)b->byte_id[words[w].bytes[i]];
    for (guint32 i = 0; i + 1 < words[w].len; i++) {
      guint32 pi = stats_pair(&st, sym[at + i], sym[at + i + 1]);
      Pair *p = &g_array_index(st.pairs, Pair, pi);
      p->count += words[w].count;
      pair_add_where(p, w);
    }
    at += words[w].len;
  }
  for (guint32 pi = 0; pi < st.pairs->len; pi++) {
    Pair *p = &g_array_index(st.pairs, Pair, pi);
    if (p->count >= t->o.min_frequency)
      stats_push(&st, p->count, pi);
  }
  GArray *touched = g_array_new(FALSE, FALSE, sizeof(guint32));
  guint32 *old = g_new(guint32, TXL_BPE_MAX_CHUNK + 1);
  GByteArray *cat = g_byte_array_new();
  guint32 step = 0;
  while (b->n_tokens < t->o.vocab_size && st.heap->len) {
    HeapItem top = stats_pop(&st);
    Pair *p = &g_array_index(st.pairs, Pair, top.pair);
    if (top.count != p->count) {
      /* stale: increments push a fresh entry, decrements do not */
      if (p->count < top.count && p->count >= t->o.min_frequency)
        stats_push(&st, p->count, top.pair);
      continue;
    }
    if (p->count < t->o.min_frequency)
      break;
    if (p->merged)
      continue; /* came back through a token reached by two merges */
    p->merged = TRUE;
    const guint32 a = p->a, bb = p->b;
    gsize la, lb;
    const char *sa = txl_bpe_token(b, (int)a, &la);
    g_byte_array_set_size(cat, 0);
    g_byte_array_append(cat, (const guint8 *)sa, (guint)la);
    const char *sb = txl_bpe_token(b, (int)bb, &lb);
    g_byte_array_append(cat, (const guint8 *)sb, (guint)lb);
    int dup, c = bpe_add_token(b, cat->data, cat->len, FALSE, &dup);
    if (c < 0)
      c = dup; /* the same bytes from another split: one token */
    guint32 tri[3] = { a, bb, (guint32)c };
    g_array_append_vals(b->merges, tri, 3);
    step++;
    g_array_set_size(touched, 0);
    /* p may move when pairs grows: copy its word list first */
    guint32 nwhere = p->n_where;
    guint32 *where = g_memdup2(p->where, nwhere * sizeof(guint32));
    for (guint32 k = 0; k < nwhere; k++) {
      guint32 w = where[k];
      if (wstamp[w] == step)
        continue;
      wstamp[w] = step;
      guint32 *s = sym + woff[w], L = wlen[w], j = 0;
      memcpy(old, s, L * sizeof(guint32));
      for (guint32 i = 0; i < L;) {
        if (i + 1 < L && old[i] == a && old[i + 1] == bb) {
          s[j++] = (guint32)c;
          i += 2;
        } else {
          s[j++] = old[i++];
        }
      }
      if (j == L)
        continue;
      wlen[w] = j;
      const gint64 cnt = words[w].count;
      for (guint32 i = 0; i + 1 < L; i++) {
        guint32 pi = stats_pair(&st, old[i], old[i + 1]);
        g_array_index(st.pairs, Pair, pi).count -= cnt;
      }
      for (guint32 i = 0; i + 1 < j; i++) {
        guint32 pi = stats_pair(&st, s[i], s[i + 1]);
        Pair *q = &g_array_index(st.pairs, Pair, pi);
        q->count += cnt;
        if (s[i] == (guint32)c || s[i + 1] == (guint32)c) {
          pair_add_where(q, w);
          if (q->stamp != step) {
            q->stamp = step;
            g_array_append_val(touched, pi);
          }
        }
      }
    }
    g_free(where);
    for (guint k = 0; k < touched->len; k++) {
      guint32 pi = g_array_index(touched, guint32, k);
      Pair *q = &g_array_index(st.pairs, Pair, pi);
      if (q->count >= t->o.min_frequency)
        stats_push(&st, q->count, pi);
    }
  }
  for (guint32 pi = 0; pi < st.pairs->len; pi++)
    g_free(g_array_index(st.pairs, Pair, pi).where);
  g_array_unref(st.pairs);
  g_array_unref(st.heap);
  g_free(st.key);
  g_free(st.val);
  g_array_unref(touched);
  g_byte_array_unref(cat);
  g_free(old);
  g_free(sym);
  g_free(woff);
  g_free(wlen);
  g_free(wstamp);
  bpe_finalize(b);
  t->bpe = NULL;
  txl_bpe_trainer_free(t);
  (void)error;
  return b;
}

TxlBpe *
txl_bpe_train(const char *const *texts, const gsize *lens, gsize n,
              const TxlBpeTrainOptions *opts, GError **error)
{
  TxlBpeTrainer *t = txl_bpe_trainer_new(opts, error);
  if (!t)
    return NULL;
  for (gsize i = 0; i < n; i++) {
    txl_bpe_trainer_push(t, texts[i], lens[i]);
    txl_bpe_trainer_end_text(t);
  }
  return txl_bpe_trainer_finish(t, error);
}

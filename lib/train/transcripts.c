/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Sessions' lines kept together for learning (transcripts.h). */
#include "transcripts.h"

#include "freeeach.h"

#include <string.h>

/* a session key in the state, at most (as sessions_snapshot.c's) */
#define MAX_KEY (1u << 20)

typedef struct {
  guint64 serial;
  char *key;   /* while its session is open: the by_key table's key */
  GArray *ids; /* int32_t; NULL once dead */
  gint64 lines;
  guint refs;  /* window lines naming it, and one while open */
  GList link;  /* in touch order while alive */
} Transcript;

struct _TxlTranscripts {
  GArray *primer;
  gsize cap, held, max_one;
  guint64 next;
  GHashTable *by_key;    /* open sessions */
  GHashTable *by_serial; /* every transcript, owning it */
  GQueue touch;          /* the living, least recently touched first */
};

static void
transcript_free(gpointer p)
{
  Transcript *x = p;
  if (x->ids)
    g_array_unref(x->ids);
  g_free(x->key);
  g_free(x);
}

TxlTranscripts *
txl_transcripts_new(const int32_t *primer, gsize n_primer, gsize cap,
                    gsize max_one)
{
  TxlTranscripts *t = g_new0(TxlTranscripts, 1);
  t->max_one = MAX(max_one, 1);
  t->primer = g_array_new(FALSE, FALSE, sizeof(int32_t));
  g_array_append_vals(t->primer, primer, (guint)n_primer);
  t->cap = cap;
  t->next = 1;
  t->by_key = g_hash_table_new(g_str_hash, g_str_equal);
  t->by_serial = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL,
                                       transcript_free);
  g_queue_init(&t->touch);
  return t;
}

TxlTranscripts *
txl_transcripts_new_like(const TxlTranscripts *t)
{
  return txl_transcripts_new((const int32_t *)t->primer->data,
                             t->primer->len, t->cap, t->max_one);
}

void
txl_transcripts_free(TxlTranscripts *t)
{
  if (!t)
    return;
  /* by_key first: by_serial owns the keys */
  txl_free_each(g_hash_table_destroy, t->by_key, t->by_serial);
  g_array_unref(t->primer);
  g_free(t);
}

static void
drop(TxlTranscripts *t, Transcript *x)
{
  if (!x->ids)
    return;
  t->held -= x->ids->len;
  g_clear_pointer(&x->ids, g_array_unref);
  g_queue_unlink(&t->touch, &x->link);
}

static void
unref(TxlTranscripts *t, Transcript *x)
{
  if (--x->refs == 0) {
    drop(t, x);
    g_hash_table_remove(t->by_serial, &x->serial);
  }
}

static Transcript *
add(TxlTranscripts *t, guint64 serial, char *key, GArray *ids)
{
  Transcript *x = g_new0(Transcript, 1);
  x->serial = serial;
  x->key = key;
  x->ids = ids;
  x->link.data = x;
  g_hash_table_insert(t->by_serial, &x->serial, x);
  if (key) {
    g_hash_table_insert(t->by_key, key, x);
    x->refs = 1;
  }
  return x;
}

guint64
txl_transcripts_line(TxlTranscripts *t, const char *key, const int32_t *ids,
                     gsize n, gboolean flagged)
{
  Transcript *x = g_hash_table_lookup(t->by_key, key);
  if (!x) {
    x = add(t, t->next++, g_strdup(key),
            g_array_new(FALSE, FALSE, sizeof(int32_t)));
    g_queue_push_tail_link(&t->touch, &x->link);
  }
  x->refs++;
  if (x->ids && flagged) {
    drop(t, x);
  } else if (x->ids) {
    /* a session too long to learn whole (lines without a key share one
     * that never ends) starts over from this line */
    n = MIN(n, t->max_one);
    if (x->ids->len + n > t->max_one) {
      t->held -= x->ids->len;
      g_array_set_size(x->ids, 0);
      x->lines = 0;
    }
    g_array_append_vals(x->ids, ids, (guint)n);
    x->lines++;
    t->held += n;
    g_queue_unlink(&t->touch, &x->link);
    g_queue_push_tail_link(&t->touch, &x->link);
  }
  /* over the cap: the transcripts touched longest ago go first (this
   * one too, if it alone is over) */
  while (t->held > t->cap && t->touch.head)
    drop(t, t->touch.head->data);
  return x->serial;
}

void
txl_transcripts_end(TxlTranscripts *t, const char *key, gboolean flagged)
{
  Transcript *x = g_hash_table_lookup(t->by_key, key);
  if (!x)
    return;
  if (flagged)
    drop(t, x);
  g_hash_table_remove(t->by_key, key);
  g_clear_pointer(&x->key, g_free);
  unref(t, x);
}

void
txl_transcripts_release(TxlTranscripts *t, guint64 serial)
{
  Transcript *x = g_hash_table_lookup(t->by_serial, &serial);
  if (x)
    unref(t, x);
}

/* What the window holds of one transcript: lines and their tokens. */
typedef struct {
  gint64 lines, tokens;
} InWindow;

int32_t *
txl_transcripts_text(TxlTranscripts *t, const guint64 *serials,
                     const gint64 *lens, gsize n, gsize cap, gsize *n_tok,
                     guint8 **learn, gint64 *lines)
{
  /* keyed by the transcripts' serials; the taken ones in the order above */
  GHashTable *win = g_hash_table_new_full(g_int64_hash, g_int64_equal, NULL,
                                          g_free);
  GPtrArray *take = g_ptr_array_new();
  gsize total = 0;
  *lines = 0;
  for (gsize i = 0; i < n; i++) {
    Transcript *x = g_hash_table_lookup(t->by_serial, &serials[i]);
    if (!x || !x->ids || x->ids->len == 0)
      continue;
    InWindow *w = g_hash_table_lookup(win, &x->serial);
    if (!w)
      g_hash_table_insert(win, &x->serial, w = g_new0(InWindow, 1));
    w->lines++;
    w->tokens += lens[i];
  }
  GHashTable *seen = g_hash_table_new(g_int64_hash, g_int64_equal);
  for (gsize i = n; i-- > 0;) {
    Transcript *x = g_hash_table_lookup(t->by_serial, &serials[i]);
    if (!x || !x->ids || x->ids->len == 0 ||
        g_hash_table_contains(seen, &x->serial))
      continue;
    gsize need = t->primer->len + x->ids->len;
    if (total + need > cap)
      break;
    g_hash_table_add(seen, &x->serial);
    g_ptr_array_add(take, x);
    total += need;
    InWindow *w = g_hash_table_lookup(win, &x->serial);
    /* a session that started over holds fewer lines than the window */
    *lines += MIN(w->lines, x->lines);
  }
  int32_t *out = total ? g_new(int32_t, total) : NULL, *at = out;
  guint8 *flag = total ? g_new0(guint8, total) : NULL, *f = flag;
  for (guint i = take->len; i-- > 0;) {
    Transcript *x = take->pdata[i];
    InWindow *w = g_hash_table_lookup(win, &x->serial);
    gsize len = x->ids->len, fresh = (gsize)MIN(w->tokens, (gint64)len);
    memcpy(at, t->primer->data, t->primer->len * sizeof(int32_t));
    at += t->primer->len;
    f += t->primer->len;
    memcpy(at, x->ids->data, len * sizeof(int32_t));
    memset(f + len - fresh, 1, fresh);
    at += len;
    f += len;
  }
  *n_tok = total;
  *learn = flag;
  g_ptr_array_free(take, TRUE);
  txl_free_each(g_hash_table_destroy, seen, win);
  return out;
}

/* ---- state ---------------------------------------------------------------
 *
 * u64 next serial, u64 transcripts; the living ones in touch order, then
 * the dead ones by serial, each: u64 serial, u32 flags (1 open, 2 alive),
 * the key when open (u64 length, bytes), u64 lines, u64 ids, the ids. */

static gint
by_serial(gconstpointer a, gconstpointer b)
{
  guint64 x = (*(Transcript *const *)a)->serial,
          y = (*(Transcript *const *)b)->serial;
  return x < y ? -1 : x > y;
}

/* The transcripts in the order the state stores them. */
static GPtrArray *
in_order(const TxlTranscripts *t)
{
  GPtrArray *all = g_ptr_array_new();
  for (GList *l = t->touch.head; l; l = l->next)
    g_ptr_array_add(all, l->data);
  guint alive = all->len;
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, t->by_serial);
  while (g_hash_table_iter_next(&it, NULL, &v))
    if (!((Transcript *)v)->ids)
      g_ptr_array_add(all, v);
  if (all->len > alive)
    qsort(all->pdata + alive, all->len - alive, sizeof(gpointer), by_serial);
  return all;
}

gsize
txl_transcripts_state_size(const TxlTranscripts *t)
{
  gsize n = 16;
  GHashTableIter it;
  gpointer v;
  g_hash_table_iter_init(&it, t->by_serial);
  while (g_hash_table_iter_next(&it, NULL, &v)) {
    const Transcript *x = v;
    n += 8 + 4 + 8 + 8 + (x->key ? 8 + strlen(x->key) : 0) +
         (x->ids ? (gsize)x->ids->len * 4 : 0);
  }
  return n;
}

void
txl_transcripts_state_write(const TxlTranscripts *t, TxlWriter *w)
{
  GPtrArray *all = in_order(t);
  txl_w_u64(w, t->next);
  txl_w_u64(w, all->len);
  for (guint i = 0; i < all->len; i++) {
    const Transcript *x = all->pdata[i];
    txl_w_u64(w, x->serial);
    txl_w_u32(w, (x->key ? 1u : 0u) | (x->ids ? 2u : 0u));
    if (x->key) {
      gsize len = strlen(x->key);
      txl_w_u64(w, len);
      txl_w_raw(w, x->key, len);
    }
    txl_w_u64(w, (guint64)x->lines);
    guint n = x->ids ? x->ids->len : 0;
    txl_w_u64(w, n);
    guint8 *at = w->p;
    txl_w_raw(w, n ? x->ids->data : "", (gsize)n * 4);
    txl_le_f32_inplace(at, n); /* int32 ids: the same swap */
  }
  g_ptr_array_free(all, TRUE);
}

/* One transcript from the state into t; FALSE when malformed. */
static gboolean
read_one(TxlTranscripts *t, TxlReader *r, int n_token, GHashTable *refs)
{
  guint64 serial = txl_get_u64(r);
  guint32 flags = txl_get_u32(r);
  if (!r->ok || serial == 0 || serial >= t->next || flags > 3 ||
      g_hash_table_contains(t->by_serial, &serial))
    return FALSE;
  char *key = NULL;
  if (flags & 1) {
    gsize len = 0;
    const guint8 *k = txl_get_blob(r, &len, MAX_KEY);
    if (!k || memchr(k, 0, len))
      return FALSE;
    key = g_strndup((const char *)k, len);
    if (g_hash_table_contains(t->by_key, key)) {
      g_free(key);
      return FALSE;
    }
  }
  gint64 lines = (gint64)txl_get_u64(r);
  guint64 n = txl_get_u64(r);
  const guint8 *src = r->ok && n <= t->cap - t->held && n <= t->max_one &&
                      lines >= 0 &&
                      lines <= G_MAXINT64 / 2 && (n == 0 || (flags & 2))
                          ? txl_get_raw(r, n * 4) : NULL;
  GArray *ids = NULL;
  if (src && (flags & 2)) {
    ids = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), (guint)n);
    g_array_set_size(ids, (guint)n);
    if (n)
      memcpy(ids->data, src, n * 4);
    txl_le_f32_inplace((guint8 *)ids->data, n);
    for (guint64 i = 0; i < n && src; i++) {
      int32_t id = g_array_index(ids, int32_t, i);
      if (id < 0 || id >= n_token)
        src = NULL;
    }
  }
  if (!src) {
    if (ids)
      g_array_unref(ids);
    g_free(key);
    return FALSE;
  }
  Transcript *x = add(t, serial, key, ids);
  x->lines = lines;
  x->refs += GPOINTER_TO_UINT(g_hash_table_lookup(refs, &x->serial));
  if (ids) {
    t->held += n;
    g_queue_push_tail_link(&t->touch, &x->link);
  }
  return x->refs > 0;
}

gboolean
txl_transcripts_state_read(TxlTranscripts *t, TxlReader *r, int n_token,
                           GHashTable *refs)
{
  t->next = txl_get_u64(r);
  guint64 count = txl_get_u64(r);
  if (!r->ok || t->next == 0 || t->next > G_MAXUINT64 / 2 ||
      count > txl_reader_left(r) / 28)
    return FALSE;
  for (guint64 i = 0; i < count; i++)
    if (!read_one(t, r, n_token, refs))
      return FALSE;
  /* every serial the window names must be here */
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init(&it, refs);
  while (g_hash_table_iter_next(&it, &k, NULL))
    if (!g_hash_table_contains(t->by_serial, k))
      return FALSE;
  return TRUE;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Snapshots of a TxlSessions.
 *
 * The file is a scorer snapshot (lib/state/snapshot.c) of the worker stream, so
 * it shares the container's model identity check, checksum, atomic write,
 * zstd payload and named sections; the sessions themselves are the
 * section TXL_SESSIONS_SECTION, whose presence is what the two loaders
 * tell the kinds apart by.  Its layout (little endian):
 *
 *   u32 version, u32 precision, u32 shuffle
 *   i64 line count (seq), f64 clock, u32 clock set, u64 ended[4]
 *   i64 resident session (index in LRU order, -1: none)
 *   u64 length + bytes: the encoder's state
 *   u32 sessions, then per session, most recently used first:
 *     u64 length + key; u32 pending + i32 ids; i64 tokens seen; i32 mlen;
 *     u32 has_last, started; u64 floats parked; i64 last line, lines;
 *     f64 deadline; u32 timed; the TxlSessionResult (i64 first, last,
 *     lines, tokens; u64 bytes; f64 nll, max line mean, max line sum,
 *     max token, end nll, score; u32 reason; i64 non-finite); u32 lines
 *     waiting, each i64 seq, i32 tokens, i32 done, u64 bytes, and its
 *     line state (txl_line_acc_put, lib/anomaly/lines.h); from version 3,
 *     u32 stale, u32 ids kept (TxlSessionOptions.rescore), and when kept
 *     u32 count + i32 ids, u32 lines + each i64 seq, i32 tokens scored
 *   u64 floats, then every parked memory back to back, coded by
 *     lib/state/snapcodec.c (one run, so that shuffling groups all of them)
 *
 * The resident session's memory is the worker's, in the stream part.
 * Doubles are stored bit for bit.  Every count is checked against the
 * bytes left before anything is allocated for it. */
#include "sessions_internal.h"
#include "snapcodec.h"
#include "stream_state.h"

#include "bytes.h"

#include <string.h>

/* 2: line states of lib/anomaly/lines.h, the result's non-finite count;
 * 3: each session's ids kept for rescoring (version 2 still loads: its
 * sessions keep none) */
#define SECTION_VERSION 3u
#define LINE_BYTES (8 + 4 + 4 + 8 + TXL_LINE_SCORE_SAVED_BYTES + 4)
/* the fewest bytes a session takes: a bound on the count before reading */
#define MIN_SESSION_BYTES (8 + 4 + 8 + 4 + 4 + 4 + 8 + 8 + 8 + 8 + 4 + \
                           4 * 8 + 8 + 6 * 8 + 4 + 8 + 4)
#define MAX_KEY (1u << 20)

/* ---- writing ---------------------------------------------------------- */

static void
put_result(GByteArray *b, const TxlSessionResult *r)
{
  txl_put_u64(b, (guint64)((guint64)r->first_line));
  txl_put_u64(b, (guint64)((guint64)r->last_line));
  txl_put_u64(b, (guint64)((guint64)r->lines));
  txl_put_u64(b, (guint64)((guint64)r->tokens));
  txl_put_u64(b, (guint64)(r->bytes));
  txl_put_f64(b, r->nll);
  txl_put_f64(b, r->max_line_mean);
  txl_put_f64(b, r->max_line_sum);
  txl_put_f64(b, r->max_token);
  txl_put_f64(b, r->end_nll);
  txl_put_f64(b, r->score);
  txl_put_u32(b, (guint32)((guint32)r->reason));
  txl_put_u64(b, (guint64)r->nonfinite);
}

/* The section's bookkeeping, up to the memories' float count; the
 * memories follow (section_feed), so that they never sit in one buffer. */
static GByteArray *
section_head(TxlSessions *s, const TxlSnapshotOptions *so, gsize *n_floats)
{
  GByteArray *b = g_byte_array_new();
  txl_put_u32(b, (guint32)(SECTION_VERSION));
  txl_put_u32(b, (guint32)((guint32)so->precision));
  txl_put_u32(b, (guint32)(so->shuffle ? 1 : 0));
  txl_put_u64(b, (guint64)((guint64)s->seq));
  txl_put_f64(b, s->now);
  txl_put_u32(b, (guint32)(s->time_set ? 1 : 0));
  for (int i = 0; i < 4; i++)
    txl_put_u64(b, (guint64)(s->ended[i]));
  gint64 resident = -1, i = 0;
  for (GList *it = s->lru.head; it; it = it->next, i++)
    if (it->data == s->resident)
      resident = i;
  txl_put_u64(b, (guint64)((guint64)resident));
  GBytes *enc = s->enc ? txl_encoder_save(s->enc) : NULL;
  gsize en;
  const guint8 *ed = txl_bytes_data(enc, &en);
  txl_put_blob(b, ed, en);
  if (enc)
    g_bytes_unref(enc);
  txl_put_u32(b, (guint32)(s->lru.length));
  gsize total = 0;
  for (GList *it = s->lru.head; it; it = it->next) {
    Session *x = it->data;
    txl_put_blob(b, x->key, strlen(x->key));
    txl_put_u32(b, (guint32)((guint32)x->npend));
    for (int k = 0; k < x->npend; k++)
      txl_put_u32(b, (guint32)((guint32)x->pend[k]));
    txl_put_u64(b, (guint64)((guint64)x->seen));
    txl_put_u32(b, (guint32)((guint32)x->mlen));
    txl_put_u32(b, (guint32)(x->has_last ? 1 : 0));
    txl_put_u32(b, (guint32)(x->started ? 1 : 0));
    gsize nf = x != s->resident && x->state ? x->state_floats : 0;
    txl_put_u64(b, (guint64)(nf));
    total += nf;
    txl_put_u64(b, (guint64)((guint64)x->last_seq));
    txl_put_u64(b, (guint64)((guint64)x->n_lines));
    txl_put_f64(b, x->deadline);
    txl_put_u32(b, (guint32)(x->timed ? 1 : 0));
    put_result(b, &x->r);
    txl_put_u32(b, (guint32)(x->lines.length));
    for (GList *l = x->lines.head; l; l = l->next) {
      const Line *ln = l->data;
      txl_put_u64(b, (guint64)((guint64)ln->seq));
      txl_put_u32(b, (guint32)((guint32)ln->ntok));
      txl_put_u32(b, (guint32)((guint32)ln->done));
      txl_put_u64(b, (guint64)(ln->bytes));
      txl_line_acc_put(b, &ln->acc);
    }
    txl_put_u32(b, (guint32)(x->stale ? 1 : 0));
    txl_put_u32(b, (guint32)(x->ids ? 1 : 0));
    if (x->ids) {
      txl_put_u32(b, x->ids->len);
      for (guint k = 0; k < x->ids->len; k++)
        txl_put_u32(b, (guint32)g_array_index(x->ids, int32_t, k));
      txl_put_u32(b, x->kept->len);
      for (guint k = 0; k < x->kept->len; k++) {
        const KeptLine *kl = &g_array_index(x->kept, KeptLine, k);
        txl_put_u64(b, (guint64)kl->seq);
        txl_put_u32(b, (guint32)kl->ntok);
      }
    }
  }
  txl_put_u64(b, (guint64)(total));
  *n_floats = total;
  return b;
}

typedef struct {
  TxlSessions *s;
  const TxlSnapshotOptions *so;
  GByteArray *head;
} SectionFeed;

static void
section_feed(gpointer data, TxlSectionEmit emit, gpointer ctx)
{
  SectionFeed *f = data;
  emit(ctx, f->head->data, f->head->len);
  gsize w = txl_snapcodec_width(f->so->precision), cap = 0;
  guint8 *buf = NULL;
  for (GList *it = f->s->lru.head; it; it = it->next) {
    Session *x = it->data;
    if (x == f->s->resident || !x->state)
      continue;
    /* coded session by session: the shuffle then works per session,
     * which still groups each one's exponent bytes */
    gsize n = x->state_floats * w;
    if (n > cap)
      buf = g_realloc(buf, cap = n);
    txl_snapcodec_encode(x->state, x->state_floats, f->so->precision,
                         f->so->shuffle, buf);
    emit(ctx, buf, n);
  }
  g_free(buf);
}

gboolean
txl_sessions_save(TxlSessions *s, const char *path,
                  const TxlSnapshotOptions *opts, GHashTable *sections,
                  gsize *file_bytes, GError **error)
{
  TxlSnapshotOptions so = TXL_SNAPSHOT_OPTIONS_DEFAULT;
  if (opts)
    so = *opts;
  if (so.precision != TXL_SNAPSHOT_F32 && so.precision != TXL_SNAPSHOT_F16 &&
      so.precision != TXL_SNAPSHOT_BF16) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "snapshot options: precision %d out of range",
                (int)so.precision);
    return FALSE;
  }
  if (sections && g_hash_table_contains(sections, TXL_SESSIONS_SECTION)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "the snapshot section name \"%s\" is reserved",
                TXL_SESSIONS_SECTION);
    return FALSE;
  }
  GHashTable *all = txl_sections_copy(sections);
  gsize nf = 0;
  SectionFeed feed = { s, &so, section_head(s, &so, &nf) };
  TxlSectionProducer prod = {
    TXL_SESSIONS_SECTION,
    feed.head->len + nf * txl_snapcodec_width(so.precision), section_feed,
    &feed };
  /* the worker as a bare stream: the resident session's memory */
  TxlScorer *wrap = txl_scorer_wrap(s->worker, 0);
  gboolean ok = txl_snapshot_save_stream_with(wrap, path, &so, all, &prod,
                                              file_bytes, error);
  txl_scorer_unwrap(wrap);
  g_byte_array_unref(feed.head);
  g_hash_table_unref(all);
  return ok;
}

/* ---- reading ---------------------------------------------------------- */

static void
get_result(TxlReader *r, TxlSessionResult *x)
{
  x->first_line = (gint64)txl_get_u64(r);
  x->last_line = (gint64)txl_get_u64(r);
  x->lines = (gint64)txl_get_u64(r);
  x->tokens = (gint64)txl_get_u64(r);
  x->bytes = (gsize)txl_get_u64(r);
  x->nll = txl_get_f64(r);
  x->max_line_mean = txl_get_f64(r);
  x->max_line_sum = txl_get_f64(r);
  x->max_token = txl_get_f64(r);
  x->end_nll = txl_get_f64(r);
  x->score = txl_get_f64(r);
  x->reason = (TxlSessionEnd)txl_get_u32(r);
  x->nonfinite = (gint64)txl_get_u64(r);
  if (x->nonfinite < 0)
    r->ok = FALSE;
}

/* Version 3's kept ids of a session (x->ids NULL: none). */
static void
read_kept(TxlSessions *s, TxlReader *r, Session *x)
{
  guint32 stale = txl_get_u32(r), has = txl_get_u32(r);
  if (!r->ok || stale > 1 || has > 1) {
    r->ok = FALSE;
    return;
  }
  x->stale = stale != 0;
  if (!has)
    return;
  guint32 n = txl_get_u32(r);
  if (!r->ok || n > TXL_SESSIONS_RESCORE_MAX_ONE ||
      (gsize)n * 4 > txl_reader_left(r)) {
    r->ok = FALSE;
    return;
  }
  x->ids = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), n);
  const int n_token = s->m->cfg.n_token;
  for (guint32 i = 0; i < n; i++) {
    int32_t id = (int32_t)txl_get_u32(r);
    r->ok &= id >= 0 && id < n_token;
    g_array_append_val(x->ids, id);
  }
  guint32 nk = txl_get_u32(r);
  if (!r->ok || nk > txl_reader_left(r) / 12) {
    r->ok = FALSE;
    return;
  }
  x->kept = g_array_sized_new(FALSE, FALSE, sizeof(KeptLine), nk);
  gint64 scored = 0;
  for (guint32 i = 0; i < nk; i++) {
    KeptLine k;
    k.seq = (gint64)txl_get_u64(r);
    k.ntok = (int)(gint32)txl_get_u32(r);
    scored += MAX(k.ntok, 0);
    r->ok &= k.seq >= 0 && k.seq <= s->seq && k.ntok >= 0 && scored < n;
    g_array_append_val(x->kept, k);
  }
  s->kept_ids += n;
  /* kept for a TxlSessions that rescores; another one drops them */
  if (r->ok && !s->o.rescore)
    txl_sessions_drop_ids(s, x);
}

/* One session; NULL (r->ok FALSE) on anything out of range. */
static Session *
read_session(TxlSessions *s, TxlReader *r, guint32 version, gsize *floats)
{
  gsize kn;
  const guint8 *kd = txl_get_blob(r, &kn, MAX_KEY);
  guint32 npend = (guint32)txl_get_u32(r);
  if (!r->ok || memchr(kd, '\0', kn) || npend > (guint32)s->seg ||
      (gsize)npend * 4 > txl_reader_left(r)) {
    r->ok = FALSE;
    return NULL;
  }
  Session *x = g_new0(Session, 1);
  x->key = g_strndup((const char *)kd, kn);
  x->lru.data = x;
  x->pend = g_new(int32_t, s->seg + 1);
  g_queue_init(&x->lines);
  x->npend = (int)npend;
  const int n_token = s->m->cfg.n_token;
  for (guint32 i = 0; i < npend; i++) {
    x->pend[i] = (int32_t)txl_get_u32(r);
    if (x->pend[i] < 0 || x->pend[i] >= n_token)
      r->ok = FALSE;
  }
  x->seen = (gint64)txl_get_u64(r);
  x->mlen = (int)(gint32)txl_get_u32(r);
  guint32 has_last = (guint32)txl_get_u32(r), started = (guint32)txl_get_u32(r);
  guint64 nf = txl_get_u64(r);
  x->last_seq = (gint64)txl_get_u64(r);
  x->n_lines = (gint64)txl_get_u64(r);
  x->deadline = txl_get_f64(r);
  guint32 timed = (guint32)txl_get_u32(r);
  get_result(r, &x->r);
  guint32 nlines = (guint32)txl_get_u32(r);
  x->has_last = has_last != 0;
  x->started = started != 0;
  x->timed = timed != 0;
  x->r.key = x->key;
  /* the memory a parked session must have, and no more */
  gsize want = started ? txl_stream_state_floats(s->worker, MAX(x->mlen, 0))
                       : 0;
  if (!r->ok || has_last > 1 || started > 1 || timed > 1 ||
      (timed && !s->deadlines) || x->seen < x->npend || x->mlen < 0 ||
      x->mlen > txl_stream_mem_len(s->worker) || (!started && x->mlen) ||
      (nf && nf != want) || x->r.reason > TXL_SESSION_END_OPEN ||
      x->n_lines < 0 || x->last_seq > s->seq || x->r.first_line < 1 ||
      x->r.first_line > x->last_seq || nlines > txl_reader_left(r) / LINE_BYTES)
    goto bad;
  *floats = nf;
  for (guint32 i = 0; i < nlines; i++) {
    Line *l = g_new0(Line, 1);
    l->seq = (gint64)txl_get_u64(r);
    l->ntok = (int)(gint32)txl_get_u32(r);
    l->done = (int)(gint32)txl_get_u32(r);
    l->bytes = (gsize)txl_get_u64(r);
    txl_line_acc_get(r, &l->acc);
    g_queue_push_tail(&x->lines, l);
    if (l->seq < 0 || l->seq > s->seq || l->ntok < 0 || l->done < 0 ||
        l->done > l->ntok || l->acc.s.tokens != l->done)
      r->ok = FALSE;
  }
  if (r->ok && version >= 3)
    read_kept(s, r, x);
  if (r->ok)
    return x;
bad:
  r->ok = FALSE;
  txl_sessions_session_free(x);
  return NULL;
}

/* Reads the section into s (a fresh TxlSessions whose worker is already
 * the file's); FALSE, with s to be freed, on anything malformed. */
static gboolean
load_section(TxlSessions *s, GBytes *bytes, int worker_mlen,
             gboolean *nonfinite)
{
  if (!bytes || !g_bytes_get_size(bytes))
    return FALSE;
  TxlReader r;
  txl_reader_init(&r, bytes);
  guint32 version = (guint32)txl_get_u32(&r), prec = (guint32)txl_get_u32(&r),
          shuffle = (guint32)txl_get_u32(&r);
  s->seq = (gint64)txl_get_u64(&r);
  s->now = txl_get_f64(&r);
  guint32 time_set = (guint32)txl_get_u32(&r);
  for (int i = 0; i < 4; i++)
    s->ended[i] = txl_get_u64(&r);
  gint64 resident = (gint64)txl_get_u64(&r);
  gsize en;
  const guint8 *ed = txl_get_blob(&r, &en, txl_reader_left(&r));
  guint32 count = (guint32)txl_get_u32(&r);
  if (!r.ok || version < 2 || version > SECTION_VERSION ||
      prec > TXL_SNAPSHOT_BF16 ||
      shuffle > 1 || time_set > 1 || s->seq < 0 ||
      count > txl_reader_left(&r) / MIN_SESSION_BYTES || resident < -1 ||
      resident >= (gint64)count)
    return FALSE;
  s->time_set = time_set != 0;
  if (s->enc) {
    GBytes *eb = g_bytes_new_static(ed, en);
    gboolean ok = txl_encoder_restore(s->enc, eb, NULL);
    g_bytes_unref(eb);
    if (!ok)
      return FALSE;
  } else if (en) {
    return FALSE;
  }
  gsize total = 0;
  GPtrArray *order = g_ptr_array_new();
  for (guint32 i = 0; i < count; i++) {
    gsize nf = 0;
    Session *x = read_session(s, &r, version, &nf);
    if (!x)
      break;
    if (g_hash_table_contains(s->by_key, x->key)) {
      txl_sessions_session_free(x);
      r.ok = FALSE;
      break;
    }
    x->state_floats = nf; /* allocated below, once the sizes add up */
    total += nf;
    g_hash_table_insert(s->by_key, x->key, x);
    g_queue_push_tail_link(&s->lru, &x->lru);
    g_ptr_array_add(order, x);
    if ((gint64)i == resident) {
      /* its memory is the worker's, so nothing of it may be parked */
      if (!x->started || nf || x->mlen != worker_mlen)
        r.ok = FALSE;
      s->resident = x;
    } else if (x->started != (nf > 0)) {
      r.ok = FALSE;
    }
  }
  guint64 nfloats = txl_get_u64(&r);
  gsize w = txl_snapcodec_width(prec);
  if (!r.ok || nfloats != total ||
      s->kept_ids > TXL_SESSIONS_RESCORE_MAX_ALL ||
      total > txl_reader_left(&r) / w ||
      txl_reader_left(&r) != total * w) {
    g_ptr_array_free(order, TRUE);
    return FALSE;
  }
  /* shuffled memories are gathered in place (no scratch copy of them all);
   * a memory holding NaN or infinity is refused, as a stream's is */
  for (guint i = 0; i < order->len; i++) {
    Session *x = order->pdata[i];
    if (!x->state_floats)
      continue;
    x->state = g_new(float, x->state_floats);
    if (txl_snapcodec_decode(r.p, x->state_floats, prec, shuffle, NULL,
                             x->state) < x->state_floats) {
      *nonfinite = TRUE;
      g_ptr_array_free(order, TRUE);
      return FALSE;
    }
    r.p += x->state_floats * w;
  }
  /* the derived state: byte accounting and the idle deadlines */
  for (guint i = 0; i < order->len; i++) {
    Session *x = order->pdata[i];
    txl_sessions_account(s, x);
    if (x->timed)
      g_tree_insert(s->deadlines, x, x);
  }
  g_ptr_array_free(order, TRUE);
  return TRUE;
}

TxlSessions *
txl_sessions_load(TxlModel *m, const char *path,
                  const TxlSessionOptions *opts, TxlSessionLineFunc line_func,
                  TxlSessionEndFunc end_func, gpointer user_data,
                  GHashTable **sections, GError **error)
{
  GHashTable *sect = NULL;
  TxlScorer *sc = txl_snapshot_load_sessions(m, path, &sect, error);
  if (!sc)
    return NULL;
  TxlSessions *s = txl_sessions_new(m, opts, line_func, end_func, user_data,
                                    error);
  if (!s)
    goto fail;
  TxlStream *st = txl_scorer_stream(sc);
  TxlStreamOptions a, b;
  txl_stream_get_options(st, &a);
  txl_stream_get_options(s->worker, &b);
  if (memcmp(&a, &b, sizeof a) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "%s: made with other session settings (segment %d, mem_len "
                "%d, clamp_len %d, same_length %d, %s memory; these are %d, "
                "%d, %d, %d, %s)", path, a.max_segment, a.mem_len,
                a.clamp_len, a.same_length,
                a.memory == TXL_MEMORY_HIDDEN ? "hidden" : "kv",
                b.max_segment, b.mem_len, b.clamp_len, b.same_length,
                b.memory == TXL_MEMORY_HIDDEN ? "hidden" : "kv");
    goto fail;
  }
  txl_stream_free(s->worker);
  s->worker = txl_scorer_steal_stream(sc);
  sc = NULL;
  GBytes *sb = g_hash_table_lookup(sect, TXL_SESSIONS_SECTION);
  TxlReader vr;
  txl_reader_init(&vr, sb);
  guint32 version = txl_get_u32(&vr);
  if (vr.ok && version > SECTION_VERSION) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: the sessions in the snapshot are version %u, newer than "
                "this txl reads (2 to %u): continue with the txl that wrote "
                "it", path, version, SECTION_VERSION);
    goto fail;
  }
  if (version == 1 && vr.ok) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: the sessions in the snapshot are version 1, written by a "
                "txl that scored lines per raw byte; this one scores them per "
                "normalised byte with a worst part (docs/line-scores.md) and "
                "cannot continue those lines: start without the snapshot",
                path);
    goto fail;
  }
  gboolean nonfinite = FALSE;
  if (!load_section(s, sb, txl_stream_mem_used(s->worker), &nonfinite)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                nonfinite ? "%s: a session's memory holds a value that is not "
                            "a finite number (NaN or infinity): refused"
                          : "%s: the sessions in the snapshot are malformed",
                path);
    goto fail;
  }
  g_hash_table_remove(sect, TXL_SESSIONS_SECTION);
  if (sections)
    *sections = g_steal_pointer(&sect);
  g_clear_pointer(&sect, g_hash_table_unref);
  return s;
fail:
  if (sc)
    txl_scorer_free(sc);
  txl_sessions_free(s);
  g_clear_pointer(&sect, g_hash_table_unref);
  return NULL;
}

/* ---- state as bytes ----------------------------------------------------
 *
 * The same state over a caller's buffer (docs/api.md): "TXLN", u32
 * version, u64 length and the worker's scorer state bytes (the resident
 * session's memory, engine/scorer_state.c), then the sessions section
 * above with float32 memories, unshuffled. */

#define SESS_MAGIC "TXLN"
#define SESS_VERSION 1u

static const TxlSnapshotOptions state_opts = { TXL_SNAPSHOT_F32, FALSE, 0 };

gsize
txl_sessions_state_get_size(TxlSessions *s)
{
  gsize nf = 0;
  GByteArray *head = section_head(s, &state_opts, &nf);
  TxlScorer *wrap = txl_scorer_wrap(s->worker, 0);
  gsize n = 16 + txl_scorer_state_get_size(wrap) + head->len + 4 * nf;
  txl_scorer_unwrap(wrap);
  g_byte_array_unref(head);
  return n;
}

static void
emit_copy(gpointer ctx, const void *data, gsize n)
{
  guint8 **p = ctx;
  memcpy(*p, data, n);
  *p += n;
}

gsize
txl_sessions_state_get_data(TxlSessions *s, guint8 *dst, gsize size)
{
  gsize len = txl_sessions_state_get_size(s);
  if (!dst || size < len)
    return 0;
  TxlScorer *wrap = txl_scorer_wrap(s->worker, 0);
  gsize wn = txl_scorer_state_get_size(wrap);
  TxlWriter w = { dst };
  txl_w_raw(&w, SESS_MAGIC, 4);
  txl_w_u32(&w, SESS_VERSION);
  txl_w_u64(&w, wn);
  txl_scorer_state_get_data(wrap, w.p, wn);
  txl_scorer_unwrap(wrap);
  guint8 *p = w.p + wn;
  gsize nf = 0;
  SectionFeed feed = { s, &state_opts, section_head(s, &state_opts, &nf) };
  section_feed(&feed, emit_copy, &p);
  g_byte_array_unref(feed.head);
  return len;
}

/* Moves the loaded state of trial into s (and s's old state into trial,
 * to be freed with it); the encoder's state is copied, since its callback
 * belongs to its TxlSessions. */
static void
swap_state(TxlSessions *s, TxlSessions *trial)
{
#define SWAP(field)                                                         \
  do {                                                                      \
    __typeof__(s->field) t_ = s->field;                                     \
    s->field = trial->field;                                                \
    trial->field = t_;                                                      \
  } while (0)
  SWAP(worker);
  SWAP(resident);
  SWAP(by_key);
  SWAP(lru);
  SWAP(bytes);
  SWAP(seq);
  SWAP(deadlines);
  SWAP(now);
  SWAP(time_set);
  SWAP(kept_ids);
  for (int i = 0; i < 4; i++)
    SWAP(ended[i]);
#undef SWAP
  if (s->enc) {
    GBytes *eb = txl_encoder_save(trial->enc);
    txl_encoder_restore(s->enc, eb, NULL); /* checked on the trial */
    g_bytes_unref(eb);
  }
}

gboolean
txl_sessions_state_set_data(TxlSessions *s, const guint8 *src, gsize size,
                            GError **error)
{
  TxlReader r;
  txl_reader_init_data(&r, src, size);
  const guint8 *magic = txl_get_raw(&r, 4);
  guint32 version = txl_get_u32(&r);
  guint64 wn = txl_get_u64(&r);
  if (!r.ok || memcmp(magic, SESS_MAGIC, 4) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "sessions state: not one (bad magic or truncated)");
    return FALSE;
  }
  if (version != SESS_VERSION) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "sessions state: version %u; this reader knows version %u",
                version, SESS_VERSION);
    return FALSE;
  }
  const guint8 *wb = txl_get_raw(&r, wn <= size ? (gsize)wn : G_MAXSIZE);
  if (!wb) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "sessions state: truncated");
    return FALSE;
  }
  /* everything goes into a trial TxlSessions with s's settings, and
   * moves into s only once all of it was good */
  TxlSessionOptions o = s->o;
  o.idle_after = s->idle_after;
  TxlSessions *trial = txl_sessions_new(s->m, &o, NULL, NULL, NULL, error);
  if (!trial)
    return FALSE;
  /* the weights in use (txl_sessions_set_model) stay: the bytes carry
   * memories, not weights */
  const TxlModel *w = txl_stream_model(s->worker);
  gboolean ok = w == s->m ||
                txl_stream_set_model(trial->worker, (TxlModel *)w, error);
  TxlScorer *wrap = txl_scorer_wrap(trial->worker, 0);
  ok = ok && txl_scorer_state_set_data(wrap, wb, (gsize)wn, error);
  txl_scorer_unwrap(wrap);
  if (ok) {
    GBytes *sb = g_bytes_new_static(r.p, txl_reader_left(&r));
    gboolean nonfinite = FALSE;
    ok = load_section(trial, sb, txl_stream_mem_used(trial->worker),
                      &nonfinite);
    g_bytes_unref(sb);
    if (!ok)
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  nonfinite ? "sessions state: a session's memory holds a "
                              "value that is not a finite number: refused"
                            : "sessions state: malformed sessions");
  }
  if (ok)
    swap_state(s, trial);
  txl_sessions_free(trial);
  return ok;
}

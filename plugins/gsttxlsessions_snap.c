/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsessions' own section of its snapshots.
 *
 * Snapshots are GstTxlScorerBase's, as txlmodel's (docs/snapshots.md);
 * the file is a TxlSessions snapshot (txl_sessions_save), so a txlmodel
 * snapshot is refused here and the other way round.  This element's
 * section "txlsessions" holds what lies
 * between the library and the pads: lines scored but not yet sent (they
 * go out in line order), the line being assembled, the sessions' first
 * and last lines, ended sessions waiting for their last line to go out,
 * the text not yet forwarded, the log clock and the counts that tell a
 * consistent cut.  With learn=true the learning is the section
 * "txlsessions.learn" (txllearn.c), and the lines not yet scored keep
 * their ids here for the learner. */
#include "gsttxlsessions.h"

#include <math.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_txl_sessions_debug

/* 2: line scores of lib/anomaly/lines.h; 3: the running session rule's
 * window (a version 2 snapshot resumes with an empty one); 4: each pending
 * line's meta flags and, learning, the ids of those not yet scored (older
 * versions have neither: they resume only without learning); 5: the model
 * file's cost of each pending line (learning, once scored; a version 4
 * line has none and is judged by its worst part alone); 6: the window of
 * ended sessions' line counts, for short sessions (an older snapshot
 * resumes with an empty one: the rule waits for 50 sessions again) */
#define STATE_VERSION 6u
/* a pending line's bytes at least, before and from version 4 */
#define SLINE_MIN_BYTES (20 + TXL_LINE_SCORE_SAVED_BYTES)
#define SLINE4_MIN_BYTES (SLINE_MIN_BYTES + 8)
#define SLINE5_MIN_BYTES (SLINE4_MIN_BYTES + 8)
#define MAX_STATE_TEXT (1u << 30)

/* ---- the element's own state ---------------------------------------------- */

/* An ended session's GstStructure, field by field (names, typed values):
 * doubles bit for bit, NaN end-nll included. */
enum { T_STRING, T_INT64, T_UINT64, T_DOUBLE, T_BOOLEAN };

static gboolean
put_field(GQuark q, const GValue *v, gpointer data)
{
  GByteArray *b = data;
  const gchar *name = g_quark_to_string(q);
  txl_put_blob(b, name, strlen(name));
  GType t = G_VALUE_TYPE(v);
  if (t == G_TYPE_STRING) {
    const gchar *s = g_value_get_string(v);
    txl_put_u32(b, T_STRING);
    txl_put_blob(b, s ? s : "", s ? strlen(s) : 0);
  } else if (t == G_TYPE_INT64) {
    txl_put_u32(b, T_INT64);
    txl_put_u64(b, (guint64)g_value_get_int64(v));
  } else if (t == G_TYPE_UINT64) {
    txl_put_u32(b, T_UINT64);
    txl_put_u64(b, g_value_get_uint64(v));
  } else if (t == G_TYPE_DOUBLE) {
    txl_put_u32(b, T_DOUBLE);
    txl_put_f64(b, g_value_get_double(v));
  } else {
    txl_put_u32(b, T_BOOLEAN);
    txl_put_u32(b, g_value_get_boolean(v) ? 1 : 0);
  }
  return TRUE;
}

static GstStructure *
get_structure(TxlReader *r)
{
  guint32 n = txl_get_u32(r);
  if (!r->ok || n > 64)
    return NULL;
  GstStructure *s = gst_structure_new_empty("txl-session");
  for (guint32 i = 0; i < n && r->ok; i++) {
    gsize nn;
    const guint8 *nd = txl_get_blob(r, &nn, 256);
    guint32 t = txl_get_u32(r);
    if (!r->ok || nn == 0 || memchr(nd, '\0', nn)) {
      r->ok = FALSE;
      break;
    }
    gchar *name = g_strndup((const gchar *)nd, nn);
    if (t == T_STRING) {
      gsize sn;
      const guint8 *sd = txl_get_blob(r, &sn, MAX_STATE_TEXT);
      gchar *str = g_strndup(sd ? (const gchar *)sd : "", sn);
      /* GStreamer leaves out a string that is not UTF-8 (with a warning),
       * so a structure saved never holds one, nor a NUL inside; refused
       * rather than restored without the field (fuzz_elements) */
      if (r->ok && (strlen(str) != sn || !g_utf8_validate(str, -1, NULL)))
        r->ok = FALSE;
      if (r->ok)
        gst_structure_set(s, name, G_TYPE_STRING, str, NULL);
      g_free(str);
    } else if (t == T_INT64) {
      gint64 v = (gint64)txl_get_u64(r);
      gst_structure_set(s, name, G_TYPE_INT64, v, NULL);
    } else if (t == T_UINT64) {
      guint64 v = txl_get_u64(r);
      gst_structure_set(s, name, G_TYPE_UINT64, v, NULL);
    } else if (t == T_DOUBLE) {
      gdouble v = txl_get_f64(r);
      gst_structure_set(s, name, G_TYPE_DOUBLE, v, NULL);
    } else if (t == T_BOOLEAN) {
      guint32 v = txl_get_u32(r);
      gst_structure_set(s, name, G_TYPE_BOOLEAN, v != 0, NULL);
    } else {
      r->ok = FALSE;
    }
    g_free(name);
  }
  if (!r->ok)
    g_clear_pointer(&s, gst_structure_free);
  return s;
}

/* A window of the running session rule (lib/anomaly/baseline.h), or its
 * absence: a flag, then the window's state bytes. */
static void
put_window(GByteArray *b, TxlBaseline *w)
{
  txl_put_u32(b, w ? 1 : 0);
  if (!w)
    return;
  gsize n = txl_baseline_state_get_size(w);
  guint8 *d = g_malloc(n);
  txl_baseline_state_get_data(w, d, n);
  txl_put_blob(b, d, n);
  g_free(d);
}

/* Reads what put_window wrote into *w (left NULL for an absent one); FALSE
 * when it is malformed (a flag other than 0 or 1 included). */
static gboolean
get_window(TxlReader *r, TxlBaseline **w)
{
  guint32 has = txl_get_u32(r);
  if (!r->ok || has > 1)
    return FALSE;
  if (has == 0)
    return TRUE;
  gsize n;
  const guint8 *d = txl_get_blob(r, &n, MAX_STATE_TEXT);
  *w = txl_baseline_new(TXL_BASELINE_MAD, TXL_SESSION_RULE_WINDOW,
                        TXL_SESSION_RULE_WARMUP, 0, NULL);
  return r->ok && txl_baseline_state_set_data(*w, d, n, NULL);
}

/* A restored window replaces the element's; where the snapshot has none
 * (an older one, or the rule did not run then), the element's starts
 * again, and the rule waits for 50 sessions. */
static void
take_window(GstTxlSessions *self, TxlBaseline **mine, TxlBaseline **loaded,
            const char *what)
{
  if (!*mine)
    return;
  if (*loaded) {
    txl_baseline_free(*mine);
    *mine = g_steal_pointer(loaded);
    return;
  }
  txl_baseline_reset(*mine);
  GST_INFO_OBJECT(self, "the snapshot has no window of %s: the running "
                  "session rule waits for 50 sessions again", what);
}

GBytes *
gst_txl_sessions_save_own(GstTxlScorerBase *base)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  GByteArray *b = g_byte_array_new();
  txl_put_u32(b, STATE_VERSION);
  txl_put_u64(b, base->in_tokens);
  txl_put_u64(b, base->out_count);
  /* lines pushed: the sessions count them */
  txl_put_u64(b, (guint64)txl_sessions_lines(self->sessions));
  txl_put_f64(b, self->now);
  txl_put_u64(b, (guint64)(self->sl_seq0 + self->sl_head));
  guint nsl = self->sl->len - self->sl_head;
  txl_put_u32(b, nsl);
  for (guint i = self->sl_head; i < self->sl->len; i++) {
    const SLine *x = &g_array_index(self->sl, SLine, i);
    txl_put_u64(b, (guint64)x->line);
    txl_put_u64(b, x->text_end);
    txl_put_u32(b, x->done ? 1 : 0);
    txl_put_u64(b, x->bytes);
    txl_line_score_put(b, &x->s);
    txl_put_u32(b, x->flags);
    txl_put_f64(b, x->ref_nll);
    guint nid = x->ids ? x->ids->len : 0;
    txl_put_u32(b, nid);
    for (guint k = 0; k < nid; k++)
      txl_put_u32(b, (guint32)g_array_index(x->ids, int32_t, k));
  }
  txl_put_u32(b, self->ids->len);
  for (guint i = 0; i < self->ids->len; i++)
    txl_put_u32(b, (guint32)g_array_index(self->ids, int32_t, i));
  txl_put_u64(b, (guint64)self->cur_line);
  txl_put_u64(b, self->cur_tok_bytes);
  txl_put_u64(b, self->line_start);
  /* sorted by key: the same state always gives the same bytes */
  GList *keys = g_list_sort(g_hash_table_get_keys(self->spans),
                            (GCompareFunc)strcmp);
  txl_put_u32(b, g_list_length(keys));
  for (GList *l = keys; l; l = l->next) {
    const Span *sp = g_hash_table_lookup(self->spans, l->data);
    txl_put_blob(b, l->data, strlen(l->data));
    txl_put_u64(b, (guint64)sp->first);
    txl_put_u64(b, (guint64)sp->last);
  }
  g_list_free(keys);
  txl_put_u32(b, self->ended.length);
  for (GList *l = self->ended.head; l; l = l->next) {
    const Ended *e = l->data;
    txl_put_u64(b, (guint64)e->last_seq);
    txl_put_u32(b, (guint32)gst_structure_n_fields(e->s));
    gst_structure_foreach(e->s, put_field, b);
  }
  gst_txl_text_put(b, &base->text);
  /* the running session rule's windows, if it runs: the scores, then
   * (version 6) the line counts */
  put_window(b, self->recent);
  put_window(b, self->lengths);
  return g_byte_array_free_to_bytes(b);
}

typedef struct {
  guint64 in_tokens, out_items;
  gint64 pushed, sl_seq0;
  gdouble now;
  GArray *sl, *ids;
  gint64 cur_line;
  guint64 cur_tok_bytes, line_start;
  GHashTable *spans;
  GQueue ended;
  GstTxlText text;
  TxlBaseline *recent; /* the running session rule's window, or NULL */
  TxlBaseline *lengths; /* its window of line counts, or NULL */
  GstTxlLearn *learning; /* learn=true: its section, checked */
} OwnState;

void
gst_txl_sessions_ended_free(gpointer p)
{
  Ended *e = p;
  if (e->s)
    gst_structure_free(e->s);
  g_free(e);
}

void
gst_txl_sessions_drop_own(gpointer p)
{
  OwnState *o = p;
  g_clear_pointer(&o->sl, g_array_unref);
  g_clear_pointer(&o->ids, g_array_unref);
  g_clear_pointer(&o->spans, g_hash_table_unref);
  gst_txl_text_clear(&o->text);
  g_queue_clear_full(&o->ended, gst_txl_sessions_ended_free);
  g_clear_pointer(&o->recent, txl_baseline_free);
  g_clear_pointer(&o->lengths, txl_baseline_free);
  g_clear_pointer(&o->learning, gst_txl_learn_free);
  g_free(o);
}

/* The pending lines of a version's section into sl: from version 4 their
 * flags (set once scored) and, learning, the ids of those not yet scored. */
static gboolean
get_lines(TxlReader *r, guint32 version, guint32 nsl, int n_ids,
          gboolean learning, GArray *sl)
{
  const guint32 known = TXL_LINE_WARMUP | TXL_LINE_NEW_WEIGHTS;
  for (guint32 i = 0; i < nsl && r->ok; i++) {
    SLine x = { .ref_nll = NAN };
    x.line = (gint64)txl_get_u64(r);
    x.text_end = txl_get_u64(r);
    guint32 done = txl_get_u32(r);
    x.done = done != 0;
    x.bytes = txl_get_u64(r);
    txl_line_score_get(r, &x.s);
    if (done > 1 || x.line < 1)
      r->ok = FALSE;
    guint32 nid = 0;
    if (version >= 4) {
      x.flags = txl_get_u32(r);
      if (version >= 5) {
        x.ref_nll = txl_get_f64(r);
        /* a cost in nats, or none; only a scored line while learning
         * has one */
        if (!txl_line_ref_valid(x.ref_nll) ||
            (!isnan(x.ref_nll) && (!learning || !done)))
          r->ok = FALSE;
      }
      nid = txl_get_u32(r);
      /* a line has at least its line end; its ids wait only unscored */
      if ((x.flags & ~known) || (x.flags && (!learning || !done)) ||
          (nid > 0) != (learning && !done) || nid > txl_reader_left(r) / 4)
        r->ok = FALSE;
    }
    if (r->ok && nid) {
      x.ids = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), nid);
      for (guint32 k = 0; k < nid; k++) {
        int32_t id = (int32_t)txl_get_u32(r);
        if (id < 0 || id >= n_ids)
          r->ok = FALSE;
        g_array_append_val(x.ids, id);
      }
    }
    g_array_append_val(sl, x);
  }
  return r->ok;
}

/* The learning section (learn=true), checked: a learner continuing it,
 * its weights in the restored sessions. */
static gboolean
parse_learn(GstTxlScorerBase *base, guint32 version, GstTxlLearnLoaded *ld,
            OwnState *o, GError **error)
{
  if (version < 4) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "the snapshot's txlsessions state is version %u, written "
                "by a txl that did not learn in txlsessions: it cannot "
                "continue a learning; remove it to start afresh", version);
    return FALSE;
  }
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  g_autoptr(GArray) primer = gst_txl_sessions_primer(ld->state);
  o->learning = gst_txl_learn_resume(GST_ELEMENT(self), &self->learn,
                                     base->model, primer, ld,
                                     gst_txl_sessions_set_weights, NULL,
                                     error);
  return o->learning != NULL;
}

/* The lines this element still waits for must be exactly those the
 * library has not reported, under the same numbers: otherwise a report
 * would come for a line the element does not hold, or a line would wait
 * for ever and hold every line after it. */
static gboolean
lines_agree(const OwnState *o, const TxlSessions *s)
{
  if (txl_sessions_lines(s) != o->pushed)
    return FALSE;
  g_autoptr(GArray) w = g_array_new(FALSE, FALSE, sizeof(gint64));
  txl_sessions_waiting_lines(s, w);
  guint k = 0;
  for (guint i = 0; i < o->sl->len; i++) {
    if (g_array_index(o->sl, SLine, i).done)
      continue;
    if (k >= w->len || g_array_index(w, gint64, k) != o->sl_seq0 + (gint64)i)
      return FALSE;
    k++;
  }
  return k == w->len;
}

/* Parses this element's section; every count is bounded by the bytes
 * left before anything is allocated for it. */
gpointer
gst_txl_sessions_parse_own(GstTxlScorerBase *base, GBytes *bytes,
                           gpointer loaded, GError **error)
{
  OwnState *o = g_new0(OwnState, 1);
  g_queue_init(&o->ended);
  TxlReader r;
  guint32 version;
  int n_ids = txl_model_config(base->model)->n_token;
  if (!gst_txl_part_begin(&r, bytes, &version, "txlsessions", 2,
                          STATE_VERSION, "afresh", error)) {
    g_free(o);
    return NULL;
  }
  o->in_tokens = txl_get_u64(&r);
  o->out_items = txl_get_u64(&r);
  o->pushed = (gint64)txl_get_u64(&r);
  o->now = txl_get_f64(&r);
  o->sl_seq0 = (gint64)txl_get_u64(&r);
  guint32 nsl = txl_get_u32(&r);
  GstTxlLearnLoaded *ld = loaded;
  gsize line_min = version >= 5   ? SLINE5_MIN_BYTES
                   : version >= 4 ? SLINE4_MIN_BYTES
                                  : SLINE_MIN_BYTES;
  if (!r.ok || o->pushed < 0 ||
      o->sl_seq0 < 1 || nsl > txl_reader_left(&r) / line_min ||
      o->sl_seq0 + (gint64)nsl - 1 != o->pushed)
    goto bad;
  o->sl = gst_txl_sessions_sl_new(nsl);
  if (!get_lines(&r, version, nsl, n_ids, ld->learn != NULL, o->sl))
    goto bad;
  guint32 nid = txl_get_u32(&r);
  if (!r.ok || nid > (gsize)(r.end - r.p) / 4)
    goto bad;
  o->ids = g_array_sized_new(FALSE, FALSE, sizeof(int32_t), nid);
  for (guint32 i = 0; i < nid; i++) {
    int32_t id = (int32_t)txl_get_u32(&r);
    if (id < 0 || id >= n_ids)
      r.ok = FALSE;
    g_array_append_val(o->ids, id);
  }
  o->cur_line = (gint64)txl_get_u64(&r);
  o->cur_tok_bytes = txl_get_u64(&r);
  o->line_start = txl_get_u64(&r);
  guint32 nspan = txl_get_u32(&r);
  if (!r.ok || o->cur_line < 0 || nspan > (gsize)(r.end - r.p) / 24)
    goto bad;
  o->spans = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
  for (guint32 i = 0; i < nspan && r.ok; i++) {
    gsize kn;
    const guint8 *kd = txl_get_blob(&r, &kn, MAX_STATE_TEXT);
    Span *sp = g_new(Span, 1);
    sp->first = (gint64)txl_get_u64(&r);
    sp->last = (gint64)txl_get_u64(&r);
    gchar *k = g_strndup(kd ? (const gchar *)kd : "", kn);
    if (!r.ok || strlen(k) != kn || g_hash_table_contains(o->spans, k))
      r.ok = FALSE;
    g_hash_table_insert(o->spans, k, sp);
  }
  guint32 nend = txl_get_u32(&r);
  if (!r.ok || nend > (gsize)(r.end - r.p) / 12)
    goto bad;
  for (guint32 i = 0; i < nend && r.ok; i++) {
    Ended *e = g_new0(Ended, 1);
    e->last_seq = (gint64)txl_get_u64(&r);
    e->s = get_structure(&r);
    g_queue_push_tail(&o->ended, e);
    if (!e->s)
      r.ok = FALSE;
  }
  if (!gst_txl_text_get(&r, &o->text))
    goto bad;
  if ((version >= 3 && !get_window(&r, &o->recent)) ||
      (version >= 6 && !get_window(&r, &o->lengths)))
    goto bad;
  if (!txl_reader_done(&r))
    goto bad;
  if (!lines_agree(o, ld->state)) {
    gst_txl_sessions_drop_own(o);
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_FORMAT,
                        "the snapshot's txlsessions state does not match "
                        "its sessions (other lines pushed or waiting)");
    return NULL;
  }
  if (ld->learn && !parse_learn(base, version, ld, o, error)) {
    gst_txl_sessions_drop_own(o);
    return NULL;
  }
  return o;
bad:
  gst_txl_sessions_drop_own(o);
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
              "the snapshot's txlsessions state is malformed");
  return NULL;
}

/* The restored sessions and this element's state go in (both taken). */
void
gst_txl_sessions_apply(GstTxlScorerBase *base, gpointer loaded, gpointer own)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(base);
  OwnState *o = own;
  txl_sessions_free(self->sessions);
  self->sessions = gst_txl_learn_loaded_take(loaded);
  gst_txl_scorer_base_apply_stream(base, o->in_tokens, o->out_items,
                                   &o->text, &o->learning);
  self->now = o->now;
  g_array_unref(self->sl);
  self->sl = g_steal_pointer(&o->sl);
  self->sl_head = 0;
  self->sl_seq0 = o->sl_seq0;
  g_array_unref(self->ids);
  self->ids = g_steal_pointer(&o->ids);
  self->cur_line = o->cur_line;
  self->cur_tok_bytes = o->cur_tok_bytes;
  self->line_start = o->line_start;
  g_hash_table_unref(self->spans);
  self->spans = g_steal_pointer(&o->spans);
  g_queue_clear_full(&self->ended, gst_txl_sessions_ended_free);
  self->ended = o->ended;
  g_queue_init(&o->ended);
  g_array_set_size(self->done_lines, 0);
  self->failed = FALSE;
  /* the running rule's windows go on where they were; where the rule does
   * not run now (a threshold was set since), they are not needed */
  take_window(self, &self->recent, &o->recent, "session scores");
  take_window(self, &self->lengths, &o->lengths, "session lengths");
  gst_txl_sessions_drop_own(o);
}

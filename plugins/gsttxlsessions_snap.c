/* txlsessions snapshots: every open session and the element's own lines,
 * with txltokenizer's and txlsink's state, in one file.
 *
 * The behaviour is txlmodel's (docs/snapshots.md): snapshot-location,
 * -interval, -tokens, -precision, restore, hold-at-eos, the shutdown
 * snapshot, the "snapshot" and "restore" action signals and the
 * txl-snapshot / txl-restore messages, and the neighbours' state gathered
 * with the queries of txlstate.h.  The file is a TxlSessions snapshot
 * (txl_sessions_save), so a txlmodel snapshot is refused here and the
 * other way round.  This element's section "txlsessions" holds what lies
 * between the library and the pads: lines scored but not yet sent (they
 * go out in line order), the line being assembled, the sessions' first
 * and last lines, ended sessions waiting for their last line to go out,
 * the text not yet forwarded, the log clock and the counts that tell a
 * consistent cut. */
#include "gsttxlsessions.h"
#include "txlstate.h"

#include <glib/gstdio.h>
#include <string.h>

#define GST_CAT_DEFAULT gst_txl_sessions_debug

#define STATE_VERSION 2u /* 2: line scores of lib/anomaly/lines.h */
#define MAX_STATE_TEXT (1u << 30)
#define SECTION "txlsessions"

enum { P_LOCATION, P_INTERVAL, P_TOKENS, P_PRECISION, P_RESTORE, P_HOLD,
       N_PROPS };
static guint prop_base;
enum { SIGNAL_SNAPSHOT, SIGNAL_RESTORE, LAST_SIGNAL };
static guint signals[LAST_SIGNAL];

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

static GBytes *
save_own(GstTxlSessions *self)
{
  GByteArray *b = g_byte_array_new();
  txl_put_u32(b, STATE_VERSION);
  txl_put_u64(b, self->in_tokens);
  txl_put_u64(b, self->out_items);
  txl_put_u64(b, (guint64)self->pushed);
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
  txl_put_u32(b, self->text_started ? 1 : 0);
  txl_put_u64(b, self->text_offset);
  txl_put_blob(b, self->text->data, self->text->len);
  txl_put_u64(b, self->frontier);
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
  gboolean text_started;
  guint64 text_offset, frontier;
  GByteArray *text;
} OwnState;

static void
ended_free(gpointer p)
{
  Ended *e = p;
  if (e->s)
    gst_structure_free(e->s);
  g_free(e);
}

static void
own_clear(OwnState *o)
{
  g_clear_pointer(&o->sl, g_array_unref);
  g_clear_pointer(&o->ids, g_array_unref);
  g_clear_pointer(&o->spans, g_hash_table_unref);
  g_clear_pointer(&o->text, g_byte_array_unref);
  g_queue_clear_full(&o->ended, ended_free);
}

/* Parses this element's section; every count is bounded by the bytes
 * left before anything is allocated for it. */
static gboolean
parse_own(GstTxlSessions *self, GBytes *bytes, OwnState *o, GError **error)
{
  memset(o, 0, sizeof *o);
  g_queue_init(&o->ended);
  TxlReader r;
  txl_reader_init(&r, bytes);
  int n_ids = txl_model_config(self->model)->n_token;
  guint32 version = txl_get_u32(&r);
  o->in_tokens = txl_get_u64(&r);
  o->out_items = txl_get_u64(&r);
  o->pushed = (gint64)txl_get_u64(&r);
  o->now = txl_get_f64(&r);
  o->sl_seq0 = (gint64)txl_get_u64(&r);
  guint32 nsl = txl_get_u32(&r);
  if (r.ok && version == 1) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_FORMAT,
                        "the snapshot's txlsessions state is version 1, "
                        "written by a txl that scored lines per raw byte; "
                        "this one scores them per normalised byte with a "
                        "worst part (docs/line-scores.md) and cannot continue "
                        "those lines: remove the snapshot to start afresh");
    return FALSE;
  }
  if (!r.ok || version != STATE_VERSION || o->pushed < 0 || o->sl_seq0 < 1 ||
      nsl > (gsize)(r.end - r.p) / (20 + TXL_LINE_SCORE_SAVED_BYTES) ||
      o->sl_seq0 + (gint64)nsl - 1 != o->pushed)
    goto bad;
  o->sl = g_array_sized_new(FALSE, FALSE, sizeof(SLine), nsl);
  for (guint32 i = 0; i < nsl; i++) {
    SLine x;
    x.line = (gint64)txl_get_u64(&r);
    x.text_end = txl_get_u64(&r);
    guint32 done = txl_get_u32(&r);
    x.done = done != 0;
    x.bytes = txl_get_u64(&r);
    txl_line_score_get(&r, &x.s);
    if (done > 1 || x.line < 1)
      r.ok = FALSE;
    g_array_append_val(o->sl, x);
  }
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
  guint32 started = txl_get_u32(&r);
  o->text_offset = txl_get_u64(&r);
  gsize tn;
  const guint8 *td = txl_get_blob(&r, &tn, MAX_STATE_TEXT);
  o->frontier = txl_get_u64(&r);
  if (!txl_reader_done(&r) || started > 1)
    goto bad;
  o->text_started = started;
  o->text = g_byte_array_new();
  g_byte_array_append(o->text, td, (guint)tn);
  return TRUE;
bad:
  own_clear(o);
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
              "the snapshot's txlsessions state is malformed");
  return FALSE;
}

static void
apply_own(GstTxlSessions *self, OwnState *o)
{
  self->in_tokens = o->in_tokens;
  self->out_items = o->out_items;
  self->pushed = o->pushed;
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
  g_queue_clear_full(&self->ended, ended_free);
  self->ended = o->ended;
  g_queue_init(&o->ended);
  self->text_started = o->text_started;
  self->text_offset = o->text_offset;
  g_byte_array_unref(self->text);
  self->text = g_steal_pointer(&o->text);
  self->frontier = o->frontier;
  g_array_set_size(self->done_lines, 0);
  self->failed = FALSE;
}

/* ---- snapshot and restore -------------------------------------------------- */

gboolean
gst_txl_sessions_holds_at_eos(GstTxlSessions *self)
{
  GST_OBJECT_LOCK(self);
  gboolean hold = self->hold_at_eos && self->snap.location &&
                  *self->snap.location;
  GST_OBJECT_UNLOCK(self);
  return hold;
}

TxlSnapResult
gst_txl_sessions_snapshot(GstTxlSessions *self, const gchar *path,
                          const gchar *reason)
{
  if (!self->sessions)
    return TXL_SNAP_FAIL;
  gint64 t0 = g_get_monotonic_time();
  GHashTable *sect = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)g_bytes_unref);
  GstElement *e = GST_ELEMENT(self);
  if (!txl_state_gather(e, sect, self->sinkpad, "txltokenizer",
                        "tokens-received", self->in_tokens,
                        self->tokenizer_fetched ? NULL : self->restored) ||
      !txl_state_gather(e, sect, self->srcpad, "txlsink", "records-delivered",
                        self->out_items, self->restored)) {
    g_hash_table_unref(sect);
    return TXL_SNAP_DEFER;
  }
  g_hash_table_insert(sect, g_strdup(SECTION), save_own(self));
  txl_state_add_writer(e, sect);
  TxlSnapshotOptions o = TXL_SNAPSHOT_OPTIONS_DEFAULT;
  GST_OBJECT_LOCK(self);
  o.precision = self->snap_precision;
  GST_OBJECT_UNLOCK(self);
  gsize bytes = 0;
  GError *err = NULL;
  gboolean ok = txl_sessions_save(self->sessions, path, &o, sect, &bytes,
                                  &err);
  g_hash_table_unref(sect);
  if (!ok) {
    GST_ELEMENT_WARNING(self, RESOURCE, WRITE,
                        ("Could not write the snapshot: %s", err->message),
                        (NULL));
    g_error_free(err);
    return TXL_SNAP_FAIL;
  }
  gint64 t1 = g_get_monotonic_time();
  txl_snap_sched_mark(&self->snap);
  GST_INFO_OBJECT(self, "snapshot %s (%s): %u sessions, %" G_GSIZE_FORMAT
                  " bytes in %.1f ms", path, reason,
                  txl_sessions_count(self->sessions), bytes, (t1 - t0) / 1e3);
  txl_state_post(GST_ELEMENT(self), path, bytes, (t1 - t0) / 1e6,
                 self->in_tokens, reason);
  return TXL_SNAP_OK;
}

gboolean
gst_txl_sessions_restore_sink_pending(GstTxlSessions *self)
{
  return txl_state_give_sink_pending(GST_ELEMENT(self), self->srcpad,
                                     self->restored);
}

/* Loads a snapshot: the sessions and this element's state now, the
 * neighbours' parts now (live) or when they start (at_start).  Nothing
 * changes unless every part checks out. */
gboolean
gst_txl_sessions_restore(GstTxlSessions *self, const gchar *path,
                         gboolean at_start, GError **error)
{
  if (!self->sessions) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID, "not started");
    return FALSE;
  }
  gint64 t0 = g_get_monotonic_time();
  GHashTable *sect = NULL;
  TxlSessions *s = txl_sessions_load(self->model, path, &self->opts,
                                     gst_txl_sessions_on_line,
                                     gst_txl_sessions_on_session, self, &sect,
                                     error);
  if (!s)
    return FALSE;
  GBytes *own = g_hash_table_lookup(sect, SECTION);
  GBytes *tok = g_hash_table_lookup(sect, "txltokenizer");
  GBytes *sink = g_hash_table_lookup(sect, "txlsink");
  OwnState o;
  if (!own) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: not a txlsessions element's snapshot (no txlsessions "
                "state)", path);
    goto fail;
  }
  if (!txl_state_check_writer(GST_ELEMENT(self), path, sect, error) ||
      !parse_own(self, own, &o, error))
    goto fail;
  if (!at_start &&
      !txl_state_give_pair(GST_ELEMENT(self), self->sinkpad, tok,
                           self->srcpad, sink, FALSE, error)) {
    own_clear(&o);
    goto fail;
  }
  /* from here on it goes in */
  txl_sessions_free(self->sessions);
  self->sessions = s;
  apply_own(self, &o);
  gst_txl_sessions_note_state(self);
  g_clear_pointer(&self->restored, g_hash_table_unref);
  if (at_start) {
    self->restored = g_hash_table_ref(sect);
    self->tokenizer_fetched = FALSE;
    self->restored_fresh = TRUE;
  } else {
    /* checked above: applying cannot be refused */
    txl_state_give_pair(GST_ELEMENT(self), self->sinkpad, tok, self->srcpad,
                        sink, TRUE, NULL);
    /* a buffer txltokenizer was pushing belongs to the old stream */
    self->expect_offset = (gint64)self->in_tokens;
  }
  g_hash_table_unref(sect);
  txl_snap_sched_mark(&self->snap);
  GStatBuf stb;
  guint64 size = g_stat(path, &stb) == 0 ? (guint64)stb.st_size : 0;
  gint64 t1 = g_get_monotonic_time();
  GST_INFO_OBJECT(self, "restored %s: %u open sessions", path,
                  txl_sessions_count(self->sessions));
  txl_state_post(GST_ELEMENT(self), path, size, (t1 - t0) / 1e6,
                 self->in_tokens, NULL);
  return TRUE;
fail:
  txl_sessions_free(s);
  g_hash_table_unref(sect);
  return FALSE;
}

/* ---- for the snapshot scheduler ------------------------------------------ */

static TxlSnapResult
op_write(GstElement *e, const gchar *path, const gchar *reason)
{
  return gst_txl_sessions_snapshot(GST_TXL_SESSIONS(e), path, reason);
}

static gboolean
op_restore(GstElement *e, const gchar *path, GError **error)
{
  return gst_txl_sessions_restore(GST_TXL_SESSIONS(e), path, FALSE, error);
}

static gboolean
op_check(GstElement *e, const gchar *path, GError **error)
{
  GstTxlSessions *self = GST_TXL_SESSIONS(e);
  GHashTable *sect = NULL;
  TxlSessions *check = self->model
      ? txl_sessions_load(self->model, path, &self->opts, NULL, NULL, NULL,
                          &sect, error)
      : NULL;
  if (!check)
    return FALSE;
  gboolean ok = txl_state_check_writer(e, path, sect, error);
  txl_sessions_free(check);
  g_hash_table_unref(sect);
  return ok;
}

static gboolean
op_live(GstElement *e)
{
  return GST_TXL_SESSIONS(e)->sessions != NULL;
}

static guint64
op_progress(GstElement *e)
{
  return GST_TXL_SESSIONS(e)->in_tokens;
}

const TxlSnapOps gst_txl_sessions_snap_ops = { op_write, op_restore,
                                               op_check, op_live,
                                               op_progress };

void
gst_txl_sessions_snap_stop(GstTxlSessions *self)
{
  txl_snap_sched_stop(&self->snap);
  g_clear_pointer(&self->restored, g_hash_table_unref);
}

static gboolean
snapshot_action(GstTxlSessions *self, const gchar *path)
{
  return txl_snap_sched_snapshot_action(&self->snap, path);
}

static gboolean
restore_action(GstTxlSessions *self, const gchar *path)
{
  return txl_snap_sched_restore_action(&self->snap, path);
}

gboolean
gst_txl_sessions_snap_query(GstTxlSessions *self, GstQuery *query)
{
  GstStructure *st;
  if ((st = txl_state_query_structure(query, TXL_STATE_FETCH))) {
    /* txltokenizer's first buffer: its part of a snapshot restored at
     * start (asked from its streaming thread, which scores through us) */
    GST_PAD_STREAM_LOCK(self->sinkpad);
    GBytes *b = self->restored ? g_hash_table_lookup(self->restored,
                                                     "txltokenizer")
                               : NULL;
    if (b)
      gst_structure_set(st, "txltokenizer", G_TYPE_BYTES, b, NULL);
    self->tokenizer_fetched = TRUE;
    GST_PAD_STREAM_UNLOCK(self->sinkpad);
    return TRUE;
  }
  if ((st = txl_state_query_structure(query, TXL_STATE_HOLD))) {
    gst_structure_set(st, "hold", G_TYPE_BOOLEAN,
                      gst_txl_sessions_holds_at_eos(self), NULL);
    return TRUE;
  }
  return FALSE;
}

void
gst_txl_sessions_snap_finalize(GstTxlSessions *self)
{
  txl_snap_sched_clear(&self->snap);
  g_clear_pointer(&self->restored, g_hash_table_unref);
}

/* ---- properties and signals ---------------------------------------------- */

gboolean
gst_txl_sessions_snap_set_property(GstTxlSessions *self, guint id,
                                   const GValue *value)
{
  switch ((int)id - (int)prop_base) {
  case P_LOCATION:
    g_free(self->snap.location);
    self->snap.location = g_value_dup_string(value);
    return TRUE;
  case P_INTERVAL:
    self->snap.interval = g_value_get_uint(value);
    return TRUE;
  case P_TOKENS:
    self->snap.every = g_value_get_uint64(value);
    return TRUE;
  case P_PRECISION:
    self->snap_precision = g_value_get_enum(value);
    return TRUE;
  case P_RESTORE:
    self->restore = g_value_get_boolean(value);
    return TRUE;
  case P_HOLD:
    self->hold_at_eos = g_value_get_boolean(value);
    return TRUE;
  default:
    return FALSE;
  }
}

gboolean
gst_txl_sessions_snap_get_property(GstTxlSessions *self, guint id,
                                   GValue *value)
{
  switch ((int)id - (int)prop_base) {
  case P_LOCATION:
    g_value_set_string(value, self->snap.location);
    return TRUE;
  case P_INTERVAL:
    g_value_set_uint(value, self->snap.interval);
    return TRUE;
  case P_TOKENS:
    g_value_set_uint64(value, self->snap.every);
    return TRUE;
  case P_PRECISION:
    g_value_set_enum(value, self->snap_precision);
    return TRUE;
  case P_RESTORE:
    g_value_set_boolean(value, self->restore);
    return TRUE;
  case P_HOLD:
    g_value_set_boolean(value, self->hold_at_eos);
    return TRUE;
  default:
    return FALSE;
  }
}

void
gst_txl_sessions_snap_install(GObjectClass *klass, guint first_prop)
{
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
                         GST_PARAM_MUTABLE_READY;
  prop_base = first_prop;
  g_object_class_install_property(klass, first_prop + P_LOCATION,
      g_param_spec_string("snapshot-location", "Snapshot location",
          "File for snapshots of every open session (memory, pending tokens "
          "and lines, idle clocks) with txltokenizer's and txlsink's state, "
          "written atomically; NULL = no snapshots", NULL,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property(klass, first_prop + P_INTERVAL,
      g_param_spec_uint("snapshot-interval", "Snapshot interval",
          "Write a snapshot every this many seconds while the stream changes "
          "(0 = off)", 0, G_MAXUINT, 0, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property(klass, first_prop + P_TOKENS,
      g_param_spec_uint64("snapshot-tokens", "Snapshot every N tokens",
          "Write a snapshot every this many tokens received (0 = off)", 0,
          G_MAXUINT64, 0, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property(klass, first_prop + P_PRECISION,
      g_param_spec_enum("snapshot-precision", "Snapshot precision",
          "How the sessions' memories are stored: f32 resumes bit for bit; "
          "f16 and bf16 make smaller files whose scores drift slightly",
          gst_txl_snapshot_precision_get_type(), TXL_SNAPSHOT_F32,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property(klass, first_prop + P_RESTORE,
      g_param_spec_boolean("restore", "Restore",
          "When the element starts and snapshot-location exists, continue "
          "the sessions saved there (FALSE: start afresh and overwrite it)",
          TRUE, rw));
  g_object_class_install_property(klass, first_prop + P_HOLD,
      g_param_spec_boolean("hold-at-eos", "Hold at end of stream",
          "With snapshot-location set, the end of stream pauses the stream: "
          "the open sessions, the line being read and the sink's unfinished "
          "lines go into the snapshot unended, so that the next run "
          "continues bit for bit (FALSE: end every session, then snapshot)",
          TRUE, rw));
  /**
   * GstTxlSessions::snapshot:
   * @path: the file, or NULL for snapshot-location
   *
   * Writes a snapshot: at once when the stream is idle, else right after
   * the buffer being scored; a "txl-snapshot" element message follows.
   */
  signals[SIGNAL_SNAPSHOT] = g_signal_new_class_handler("snapshot",
      G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST | G_SIGNAL_ACTION,
      G_CALLBACK(snapshot_action), NULL, NULL, NULL, G_TYPE_BOOLEAN, 1,
      G_TYPE_STRING);
  /**
   * GstTxlSessions::restore:
   * @path: the file, or NULL for snapshot-location
   *
   * Replaces the running sessions with a snapshot's, after checking every
   * part of it (a bad file is refused and nothing changes); a
   * "txl-restore" element message follows.
   */
  signals[SIGNAL_RESTORE] = g_signal_new_class_handler("restore",
      G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST | G_SIGNAL_ACTION,
      G_CALLBACK(restore_action), NULL, NULL, NULL, G_TYPE_BOOLEAN, 1,
      G_TYPE_STRING);
}

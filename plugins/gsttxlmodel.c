/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlmodel: tokens in, the log-probability of each token out.
 *
 * gst-launch-1.0 ... ! txltokenizer model=m.gguf ! txlmodel model=m.gguf !
 *     txlsink
 *
 * A thin element over TxlScorer: the token stream is cut into segments as
 * the official evaluation does (inputs t0..t(N-1) predict t1..tN, then the
 * next N), with the model's recurrent memory carried from segment to
 * segment, so the scores never depend on how the tokens were split into
 * buffers.  A segment is scored once its last token has arrived; with
 * flush-on-newline=true the pending partial segment is also scored at
 * every line end, which bounds the delay to a line but changes the
 * segmentation (see docs/gstreamer.md).
 *
 * The weights are loaded once per process: every txlmodel and txltokenizer
 * naming the same file shares one TxlModel (txlcache.c).  Each element
 * owns one stream's memory.
 *
 * What it shares with txlsessions (the stream options, pads, start and
 * restore, the text passed through, snapshots: docs/snapshots.md) is in
 * GstTxlScorerBase (gsttxlscorerbase.c); this file holds what one stream
 * adds: per-token score records, the latency bound, and its own section
 * of the snapshot ("txlmodel": tokens pending, the line being summed,
 * scores not delivered). */
#include "gsttxlscorerbase.h"
#include "txl_engine.h"
#include "txllearn.h"
#include "txlprops.h"

#include <math.h>

GST_DEBUG_CATEGORY_STATIC(gst_txl_model_debug);
#define GST_CAT_DEFAULT gst_txl_model_debug

#define GST_TYPE_TXL_MODEL (gst_txl_model_get_type())
G_DECLARE_FINAL_TYPE(GstTxlModel, gst_txl_model, GST, TXL_MODEL,
                     GstTxlScorerBase)

#define B(self) (&(self)->parent)
#define DEFAULT_RESET_ON_STREAM_START TRUE

struct _GstTxlModel {
  GstTxlScorerBase parent;

  /* properties, object lock */
  gboolean reset_on_stream_start;
  GstClockTime max_latency; /* 0: off */
  GstClockID latency_id;    /* the armed timer, object lock */
  guint64 tokens_seen;      /* read-only: the stream's tokens */
  GstTxlLearnProps learn;   /* learning on the stream (txllearn.h) */

  /* streaming state, under the sink pad's stream lock */
  TxlScorer *scorer;
  GArray *pending;   /* TxlScoreRecord: pushed, not yet scored */
  guint pending_head;
  GByteArray *out;   /* packed score records to push */
  /* the line being scored, and lines completed since the last push */
  gint64 cur_line;
  guint64 cur_bytes;
  TxlLineAcc cur;     /* its scored tokens (lib/anomaly/lines.h) */
  GArray *done_lines; /* GstTxlDoneLine */
  GArray *done_flags; /* guint32 TXL_LINE_* of each done line's meta */
  gboolean in_flush; /* scoring a partial segment */
  GstBuffer *undelivered; /* scores a failed push could not deliver */
};

enum {
  PROP_0,
  PROP_RESET_ON_STREAM_START,
  PROP_MAX_LATENCY,
  PROP_TOKENS,
  PROP_LEARN,
  PROP_LEARN_WARMUP,
  PROP_LEARN_MODEL,
  PROP_LEARN_ROUNDS,
  PROP_LEARN_WARMUP_SECONDS,
};

G_DEFINE_TYPE(GstTxlModel, gst_txl_model, GST_TYPE_TXL_SCORER_BASE)

/* ---- scoring ---------------------------------------------------------- */

static void
close_line(GstTxlModel *self)
{
  if (self->cur_line <= 0)
    return;
  GstTxlDoneLine d = { self->cur_line, self->cur_bytes, self->cur.s, 0,
                       NAN };
  guint32 flags = B(self)->learning
      ? gst_txl_learn_close(B(self)->learning, d.line, &d.s,
                            self->done_flags->len, B(self)->last_pts,
                            &d.ref_nll)
      : 0;
  g_array_append_val(self->done_lines, d);
  g_array_append_val(self->done_flags, flags);
  self->cur_line = 0;
  self->cur_bytes = 0;
  txl_line_acc_init(&self->cur);
}

/* Per-line totals, closed at a line end (or when another line starts). */
static void
add_to_line(GstTxlModel *self, const TxlScoreRecord *r)
{
  if (self->cur_line > 0 && r->line != self->cur_line)
    close_line(self);
  if (B(self)->learning)
    gst_txl_learn_record(B(self)->learning, r, self->cur_line == 0);
  self->cur_line = r->line;
  self->cur_bytes += r->byte_len;
  /* only the stream's first token has no score; a NaN anywhere else is a
   * broken score, counted (and flagged) by the line, never dropped */
  if (!(r->flags & TXL_RECORD_FIRST))
    txl_line_acc_add(&self->cur, -(double)r->logprob,
                     txl_token_norm_bytes(txl_model_tokenizer(B(self)->model),
                                          r->id));
  if (r->flags & TXL_RECORD_LINE_END)
    close_line(self);
}

static void
emit(GstTxlModel *self, const TxlScoreRecord *r)
{
  add_to_line(self, r);
  guint at = self->out->len;
  g_byte_array_set_size(self->out, at + TXL_SCORE_RECORD_SIZE);
  txl_score_record_write(self->out->data + at, r);
  GstTxlText *text = &B(self)->text;
  text->frontier = MAX(text->frontier, r->byte_start + r->byte_len);
}

static void
on_score(gint64 pos, int32_t token, float logprob, gpointer data)
{
  GstTxlModel *self = data;
  /* the scorer reports tokens in order: the oldest pending one */
  g_return_if_fail(self->pending_head < self->pending->len);
  TxlScoreRecord *r =
      &g_array_index(self->pending, TxlScoreRecord, self->pending_head++);
  g_warn_if_fail(r->pos == pos && r->id == token);
  r->logprob = logprob;
  if (self->in_flush)
    r->flags |= TXL_RECORD_PARTIAL;
  emit(self, r);
  if (self->pending_head == self->pending->len) {
    g_array_set_size(self->pending, 0);
    self->pending_head = 0;
  }
}

static void
free_stream(GstTxlScorerBase *base)
{
  GstTxlModel *self = GST_TXL_MODEL(base);
  g_clear_pointer(&self->scorer, txl_scorer_free);
  g_clear_pointer(&self->pending, g_array_unref);
  g_clear_pointer(&self->out, g_byte_array_unref);
  g_clear_pointer(&self->done_lines, g_array_unref);
  g_clear_pointer(&self->done_flags, g_array_unref);
  gst_clear_buffer(&self->undelivered);
}

/* A fresh stream: new memory, nothing pending. */
static gboolean
new_stream(GstTxlScorerBase *base, GError **error)
{
  GstTxlModel *self = GST_TXL_MODEL(base);
  TxlStreamOptions o;
  int segment;
  gboolean flush_nl;
  gst_txl_scorer_base_stream_options(base, &o, &segment, &flush_nl);
  self->scorer = txl_scorer_new(base->model, &o, segment, on_score, self,
                                error);
  if (!self->scorer)
    return FALSE;
  if (!gst_txl_learn_start(GST_ELEMENT(self), &self->learn, base->model,
                           NULL, &B(self)->learning, error))
    return FALSE;
  self->pending = g_array_new(FALSE, FALSE, sizeof(TxlScoreRecord));
  self->pending_head = 0;
  self->out = g_byte_array_new();
  self->done_lines = g_array_new(FALSE, FALSE, sizeof(GstTxlDoneLine));
  self->done_flags = g_array_new(FALSE, FALSE, sizeof(guint32));
  self->cur_line = 0;
  self->cur_bytes = 0;
  txl_line_acc_init(&self->cur);
  return TRUE;
}

/* Keeps the stream's memory but forgets the text and byte offsets: the
 * next stream's tokenizer counts from 0 again. */
static void
restart_offsets(GstTxlModel *self)
{
  gst_txl_text_reset(&B(self)->text);
  B(self)->in_tokens = 0;
  B(self)->out_count = 0;
}

static gboolean
copy_line_meta(GstBuffer *from, GstMeta **meta, gpointer to)
{
  if ((*meta)->info->api == GST_TXL_LINE_META_API_TYPE) {
    GstTxlLineMeta *m = (GstTxlLineMeta *)*meta;
    GstTxlLineMeta *c =
        gst_buffer_add_txl_line_meta(to, m->line, m->bytes, &m->score);
    c->flags = m->flags;
    c->ref_nll = m->ref_nll;
  }
  return TRUE;
}

/* One score buffer of two consecutive ones (takes both): records, line
 * metas and text in order. */
static GstBuffer *
merge_out(GstBuffer *a, GstBuffer *b)
{
  GstBuffer *out = gst_buffer_new();
  gst_buffer_copy_into(out, a, GST_BUFFER_COPY_MEMORY, 0, -1);
  gst_buffer_copy_into(out, b, GST_BUFFER_COPY_MEMORY, 0, -1);
  gst_buffer_foreach_meta(a, copy_line_meta, out);
  gst_buffer_foreach_meta(b, copy_line_meta, out);
  GstTxlTextMeta *ta = gst_buffer_get_txl_text_meta(a),
                 *tb = gst_buffer_get_txl_text_meta(b);
  if (ta || tb) {
    GByteArray *t = g_byte_array_new();
    guint64 offset = ta ? ta->offset : tb->offset;
    GstTxlTextMeta *parts[2] = { ta, tb };
    for (int i = 0; i < 2; i++)
      if (parts[i] && parts[i]->bytes) {
        gsize n;
        const guint8 *d = g_bytes_get_data(parts[i]->bytes, &n);
        g_byte_array_append(t, d, (guint)n);
      }
    GBytes *bytes = g_byte_array_free_to_bytes(t);
    gst_buffer_add_txl_text_meta(out, offset, bytes);
    g_bytes_unref(bytes);
  }
  GST_BUFFER_PTS(out) = GST_BUFFER_PTS(b);
  GST_BUFFER_DTS(out) = GST_BUFFER_DTS(b);
  gst_buffer_unref(a);
  gst_buffer_unref(b);
  return out;
}

/* Learning (learn=true): the lines completed by the last call into the
 * scorer go to the learner, and new weights take over from the next
 * segment on, so the line where they change depends on the input only. */
static gboolean
set_model(gpointer scorer, TxlModel *m, GError **error)
{
  return txl_scorer_set_model(scorer, m, error);
}

static gboolean
learn_run(GstTxlModel *self, GError **error)
{
  if (!B(self)->learning || !gst_txl_learn_pending(B(self)->learning))
    return TRUE;
  GArray *landed = g_array_new(FALSE, FALSE, sizeof(guint));
  gboolean ok = gst_txl_learn_step(B(self)->learning, &self->learn, set_model,
                                   self->scorer, landed, error);
  /* the landing line's meta says the weights change after it */
  for (guint i = 0; i < landed->len; i++) {
    guint at = g_array_index(landed, guint, i);
    if (at < self->done_flags->len)
      g_array_index(self->done_flags, guint32, at) |= TXL_LINE_NEW_WEIGHTS;
  }
  g_array_unref(landed);
  return ok;
}

/* A push that fails (downstream flushing or shutting down) keeps its
 * scores: they belong to the stream's state, and a snapshot taken now
 * carries them to the next run. */
static GstFlowReturn
deliver(GstTxlModel *self, GstBuffer *buf)
{
  guint64 n = gst_buffer_get_size(buf) / TXL_SCORE_RECORD_SIZE;
  GstFlowReturn ret = gst_pad_push(B(self)->srcpad, gst_buffer_ref(buf));
  if (ret == GST_FLOW_OK)
    B(self)->out_count += n;
  else
    gst_buffer_replace(&self->undelivered, buf);
  gst_buffer_unref(buf);
  return ret;
}

/* Pushes the records scored so far with the text they cover (all of the
 * text when everything has been scored). */
static GstFlowReturn
push_out(GstTxlModel *self, gboolean all_text)
{
  GstTxlText *text = &B(self)->text;
  gsize ntext = gst_txl_text_ready(text, text->frontier, all_text);
  if (all_text)
    close_line(self); /* the end of the stream ends its last line */
  GError *err = NULL;
  if (!learn_run(self, &err))
    return gst_txl_scorer_base_score_error(B(self), err);
  if (self->out->len == 0 && ntext == 0 && self->done_lines->len == 0) {
    GstBuffer *again = g_steal_pointer(&self->undelivered);
    return again ? deliver(self, again) : GST_FLOW_OK;
  }
  GstBuffer *buf = gst_buffer_new_allocate(NULL, self->out->len, NULL);
  if (self->out->len)
    gst_buffer_fill(buf, 0, self->out->data, self->out->len);
  g_byte_array_set_size(self->out, 0);
  for (guint i = 0; i < self->done_lines->len; i++) {
    const GstTxlDoneLine *d = &g_array_index(self->done_lines, GstTxlDoneLine,
                                             i);
    GstTxlLineMeta *m =
        gst_buffer_add_txl_line_meta(buf, d->line, d->bytes, &d->s);
    m->flags = g_array_index(self->done_flags, guint32, i);
    m->ref_nll = d->ref_nll;
  }
  g_array_set_size(self->done_lines, 0);
  g_array_set_size(self->done_flags, 0);
  gst_txl_text_attach(text, buf, ntext);
  gst_txl_text_consume(text, ntext);
  GST_BUFFER_PTS(buf) = B(self)->last_pts;
  GST_BUFFER_DTS(buf) = B(self)->last_dts;
  GST_LOG_OBJECT(self, "pushing %" G_GSIZE_FORMAT " scores, %" G_GSIZE_FORMAT
                 " text bytes", gst_buffer_get_size(buf) /
                 TXL_SCORE_RECORD_SIZE, ntext);
  if (self->undelivered) {
    /* scores a failed push kept come first; both go out as one buffer */
    buf = merge_out(g_steal_pointer(&self->undelivered), buf);
  }
  return deliver(self, buf);
}

/* End of a stream: the partial segment is scored and all text goes out. */
static GstFlowReturn
finish(GstTxlScorerBase *base)
{
  GstTxlModel *self = GST_TXL_MODEL(base);
  if (!self->scorer)
    return GST_FLOW_OK;
  GError *err = NULL;
  if (!txl_scorer_finish(self->scorer, &err))
    return gst_txl_scorer_base_score_error(base, err);
  return push_out(self, TRUE);
}

static GstFlowReturn
push_scored(GstTxlScorerBase *base)
{
  return push_out(GST_TXL_MODEL(base), FALSE);
}

/* ---- snapshots: this element's section -------------------------------- */

#define STATE_VERSION 2u /* 2: line scores of lib/anomaly/lines.h */
#define MAX_STATE_TEXT (1u << 30)

static gboolean
put_line_meta(GstBuffer *buf, GstMeta **meta, gpointer data)
{
  if ((*meta)->info->api == GST_TXL_LINE_META_API_TYPE) {
    GstTxlLineMeta *m = (GstTxlLineMeta *)*meta;
    GByteArray *b = data;
    txl_put_u64(b, (guint64)m->line);
    txl_put_u64(b, m->bytes);
    txl_line_score_put(b, &m->score);
  }
  return TRUE;
}

static gboolean
count_line_meta(GstBuffer *buf, GstMeta **meta, gpointer data)
{
  if ((*meta)->info->api == GST_TXL_LINE_META_API_TYPE)
    (*(guint *)data)++;
  return TRUE;
}

/* This element's part of the stream: what it received and delivered, the
 * tokens waiting for their segment with their lines and offsets, the line
 * being summed, the text not yet forwarded, and scores not delivered. */
static GBytes *
save_own(GstTxlScorerBase *base)
{
  GstTxlModel *self = GST_TXL_MODEL(base);
  GByteArray *b = g_byte_array_new();
  txl_put_u32(b, STATE_VERSION);
  txl_put_u64(b, B(self)->in_tokens);
  txl_put_u64(b, B(self)->out_count);
  guint n = self->pending->len - self->pending_head;
  txl_put_u64(b, n);
  for (guint i = 0; i < n; i++) {
    guint8 rec[TXL_SCORE_RECORD_SIZE];
    txl_score_record_write(rec, &g_array_index(self->pending, TxlScoreRecord,
                                               self->pending_head + i));
    g_byte_array_append(b, rec, sizeof rec);
  }
  txl_put_u64(b, (guint64)self->cur_line);
  txl_put_u64(b, self->cur_bytes);
  txl_line_acc_put(b, &self->cur);
  gst_txl_text_put(b, &base->text);
  GstBuffer *u = self->undelivered;
  txl_put_u32(b, u != NULL);
  if (u) {
    GstMapInfo map;
    if (gst_buffer_map(u, &map, GST_MAP_READ)) {
      txl_put_blob(b, map.data, map.size);
      gst_buffer_unmap(u, &map);
    } else {
      txl_put_blob(b, NULL, 0);
    }
    GstTxlTextMeta *tm = gst_buffer_get_txl_text_meta(u);
    txl_put_u32(b, tm != NULL);
    gsize tn = 0;
    const guint8 *td = tm && tm->bytes ? g_bytes_get_data(tm->bytes, &tn)
                                       : NULL;
    txl_put_u64(b, tm ? tm->offset : 0);
    txl_put_blob(b, td, tn);
    guint nmeta = 0;
    gst_buffer_foreach_meta(u, count_line_meta, &nmeta);
    txl_put_u32(b, nmeta);
    gst_buffer_foreach_meta(u, put_line_meta, b);
  }
  return g_byte_array_free_to_bytes(b);
}

typedef struct {
  guint64 in_tokens, out_records;
  GArray *pending; /* TxlScoreRecord */
  gint64 cur_line;
  guint64 cur_bytes;
  TxlLineAcc cur;
  GstTxlText text;
  GstBuffer *undelivered;
  GstTxlLearn *learning; /* learn=true: its section, checked */
} OwnState;

static void
own_state_free(gpointer p)
{
  OwnState *o = p;
  g_clear_pointer(&o->pending, g_array_unref);
  gst_txl_text_clear(&o->text);
  gst_clear_buffer(&o->undelivered);
  g_clear_pointer(&o->learning, gst_txl_learn_free);
  g_free(o);
}

/* Parses and checks this element's section against the restored scorer. */
static gpointer
parse_own(GstTxlScorerBase *base, GBytes *bytes, gpointer loaded,
          GError **error)
{
  GstTxlLearnLoaded *ld = loaded;
  TxlScorer *sc = ld->state;
  OwnState *o = g_new0(OwnState, 1);
  TxlReader r;
  guint32 version;
  gint64 seen = txl_scorer_tokens_seen(sc);
  int npend;
  const int32_t *pend = txl_scorer_pending(sc, &npend);
  guint64 want = npend > 1 ? (guint64)npend - 1 : 0;
  int n_ids = txl_model_config(base->model)->n_token;
  if (!gst_txl_part_begin(&r, bytes, &version, "txlmodel", STATE_VERSION,
                          STATE_VERSION, "the stream afresh", error)) {
    g_free(o);
    return NULL;
  }
  o->in_tokens = txl_get_u64(&r);
  o->out_records = txl_get_u64(&r);
  guint64 n = txl_get_u64(&r);
  if (!r.ok || n != want)
    goto bad;
  o->pending = g_array_new(FALSE, FALSE, sizeof(TxlScoreRecord));
  for (guint64 i = 0; i < n; i++) {
    if (r.end - r.p < TXL_SCORE_RECORD_SIZE)
      goto bad;
    TxlScoreRecord rec;
    txl_score_record_read(r.p, &rec);
    r.p += TXL_SCORE_RECORD_SIZE;
    /* the records are those of the scorer's pending tokens, in order,
     * ids included: the scores that come for them are checked against
     * them (on_score's warning; fuzz_elements) */
    if (rec.pos != seen - (gint64)n + (gint64)i || rec.id < 0 ||
        rec.id >= n_ids || rec.id != pend[(guint64)npend - n + i])
      goto bad;
    g_array_append_val(o->pending, rec);
  }
  o->cur_line = (gint64)txl_get_u64(&r);
  o->cur_bytes = txl_get_u64(&r);
  txl_line_acc_get(&r, &o->cur);
  if (!gst_txl_text_get(&r, &o->text))
    goto bad;
  guint32 has_u = txl_get_u32(&r);
  if (!r.ok || has_u > 1 || o->cur_line < 0)
    goto bad;
  if (has_u) {
    gsize rn;
    const guint8 *rd = txl_get_blob(&r, &rn, MAX_STATE_TEXT);
    guint32 has_t = txl_get_u32(&r);
    guint64 toff = txl_get_u64(&r);
    gsize un;
    const guint8 *ud = txl_get_blob(&r, &un, MAX_STATE_TEXT);
    guint32 nmeta = txl_get_u32(&r);
    if (!r.ok || rn % TXL_SCORE_RECORD_SIZE || has_t > 1 ||
        nmeta > (guint64)(r.end - r.p) / (16 + TXL_LINE_SCORE_SAVED_BYTES))
      goto bad;
    GstBuffer *u = gst_buffer_new_memdup(rd, rn);
    if (has_t) {
      GBytes *t = g_bytes_new(ud, un);
      gst_buffer_add_txl_text_meta(u, toff, t);
      g_bytes_unref(t);
    }
    for (guint32 i = 0; i < nmeta; i++) {
      gint64 line = (gint64)txl_get_u64(&r);
      guint64 bytes_ = txl_get_u64(&r);
      TxlLineScore s;
      if (!txl_line_score_get(&r, &s)) {
        gst_buffer_unref(u);
        goto bad;
      }
      gst_buffer_add_txl_line_meta(u, line, bytes_, &s);
    }
    o->undelivered = u;
  }
  if (!txl_reader_done(&r))
    goto bad;
  /* the learning section, checked: a learner continuing it, its weights
   * in the restored scorer */
  if (ld->learn &&
      !(o->learning = gst_txl_learn_resume(GST_ELEMENT(base),
                                           &GST_TXL_MODEL(base)->learn,
                                           base->model, NULL, ld, set_model,
                                           o->undelivered, error))) {
    own_state_free(o);
    return NULL;
  }
  return o;
bad:
  own_state_free(o);
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
              "the snapshot's txlmodel state is malformed or does not match "
              "its stream");
  return NULL;
}

/* The restored scorer and this element's state go in (both taken). */
static void
apply(GstTxlScorerBase *base, gpointer loaded, gpointer own)
{
  GstTxlModel *self = GST_TXL_MODEL(base);
  OwnState *o = own;
  txl_scorer_free(self->scorer);
  self->scorer = gst_txl_learn_loaded_take(loaded);
  gst_txl_scorer_base_apply_stream(base, o->in_tokens, o->out_records,
                                   &o->text, &o->learning);
  g_array_unref(self->pending);
  self->pending = g_steal_pointer(&o->pending);
  self->pending_head = 0;
  self->cur_line = o->cur_line;
  self->cur_bytes = o->cur_bytes;
  self->cur = o->cur;
  gst_buffer_replace(&self->undelivered, NULL);
  self->undelivered = g_steal_pointer(&o->undelivered);
  g_byte_array_set_size(self->out, 0);
  g_array_set_size(self->done_lines, 0);
  g_array_set_size(self->done_flags, 0);
  own_state_free(o);
}

/* ---- snapshots: the library's part ------------------------------------ */

static gboolean
save(GstTxlScorerBase *base, const gchar *path, const TxlSnapshotOptions *o,
     GHashTable *sect, gsize *bytes, GError **error)
{
  GstTxlModel *self = GST_TXL_MODEL(base);
  gst_txl_learn_save_section(B(self)->learning, sect, GST_TXL_LEARN_SECTION,
                             self->undelivered);
  return txl_scorer_save_full(self->scorer, path, o, sect, bytes, error);
}

/* A snapshot continues only the way it was written: learning or not. */
static gpointer
load(GstTxlScorerBase *base, const gchar *path, gboolean check_only,
     GHashTable **sect, GError **error)
{
  TxlScorer *sc = txl_scorer_load_full(base->model, path, on_score, base,
                                       sect, error);
  return gst_txl_learn_loaded_new(GST_ELEMENT(base),
                                  &GST_TXL_MODEL(base)->learn, sc,
                                  (GDestroyNotify)txl_scorer_free, sect,
                                  GST_TXL_LEARN_SECTION, path, error);
}

static gboolean
live(GstTxlScorerBase *base)
{
  return GST_TXL_MODEL(base)->scorer != NULL;
}

static guint64
progress(GstTxlScorerBase *base)
{
  GstTxlModel *self = GST_TXL_MODEL(base);
  return self->scorer ? (guint64)txl_scorer_tokens_seen(self->scorer) : 0;
}

/* For the read-only properties: the application's thread must not look
 * into the stream while the streaming thread works on it. */
static void
publish(GstTxlScorerBase *base)
{
  GstTxlModel *self = GST_TXL_MODEL(base);
  guint64 bytes = 0;
  if (self->scorer) {
    /* txl_stream_state_bytes is the full memory; what is held grows
     * with the positions in use */
    TxlStream *st = txl_scorer_stream(self->scorer);
    int len = txl_stream_mem_len(st);
    if (len > 0)
      bytes = (guint64)txl_stream_state_bytes(st) /
              (guint64)len * (guint64)txl_stream_mem_used(st);
  }
  guint64 seen = self->scorer ? (guint64)txl_scorer_tokens_seen(self->scorer)
                              : 0;
  GST_OBJECT_LOCK(self);
  base->state_bytes = bytes;
  self->tokens_seen = seen;
  GST_OBJECT_UNLOCK(self);
  gst_txl_learn_publish(B(self)->learning, &self->learn);
}

/* ---- latency bound ---------------------------------------------------- */

static void
cancel_timer(GstTxlModel *self)
{
  GST_OBJECT_LOCK(self);
  GstClockID id = g_steal_pointer(&self->latency_id);
  GST_OBJECT_UNLOCK(self);
  if (id) {
    gst_clock_id_unschedule(id);
    gst_clock_id_unref(id);
  }
}

static void
quiet(GstTxlScorerBase *base)
{
  cancel_timer(GST_TXL_MODEL(base));
}

static void arm_timer(GstTxlModel *self, GstClockTime delay);

/* Runs on the system clock's thread: it must never block there, so it only
 * tries the stream lock, and tries again a little later when the
 * streaming thread holds it (that thread then has input to work on). */
static gboolean
on_latency(GstClock *clock, GstClockTime time, GstClockID id, gpointer data)
{
  GstTxlModel *self = data;
  GST_OBJECT_LOCK(self);
  gboolean current = self->latency_id == id;
  GST_OBJECT_UNLOCK(self);
  if (!current)
    return TRUE; /* cancelled or re-armed meanwhile */
  if (!GST_PAD_STREAM_TRYLOCK(B(self)->sinkpad)) {
    arm_timer(self, 5 * GST_MSECOND);
    return TRUE;
  }
  GST_OBJECT_LOCK(self);
  current = self->latency_id == id;
  if (current) {
    gst_clock_id_unref(self->latency_id);
    self->latency_id = NULL;
  }
  GST_OBJECT_UNLOCK(self);
  if (current && self->scorer && self->pending && self->pending->len > 0) {
    GError *err = NULL;
    self->in_flush = TRUE;
    gboolean ok = txl_scorer_finish(self->scorer, &err);
    self->in_flush = FALSE;
    GstFlowReturn ret = ok ? push_out(self, FALSE)
                           : gst_txl_scorer_base_score_error(B(self), err);
    GST_DEBUG_OBJECT(self, "latency bound reached: %s", gst_flow_get_name(ret));
  }
  GST_PAD_STREAM_UNLOCK(B(self)->sinkpad);
  return TRUE;
}

static void
arm_timer(GstTxlModel *self, GstClockTime delay)
{
  GstClock *clock = gst_system_clock_obtain();
  GstClockID id = gst_clock_new_single_shot_id(
      clock, gst_clock_get_time(clock) + delay);
  gst_object_unref(clock);
  GST_OBJECT_LOCK(self);
  GstClockID old = self->latency_id;
  self->latency_id = gst_clock_id_ref(id);
  GST_OBJECT_UNLOCK(self);
  if (old) {
    gst_clock_id_unschedule(old);
    gst_clock_id_unref(old);
  }
  gst_clock_id_wait_async(id, on_latency, gst_object_ref(self),
                          (GDestroyNotify)gst_object_unref);
  gst_clock_id_unref(id);
}

/* ---- scoring a buffer ------------------------------------------------- */

static GstFlowReturn
score(GstTxlScorerBase *base, const guint8 *records, gsize n)
{
  GstTxlModel *self = GST_TXL_MODEL(base);
  GST_OBJECT_LOCK(self);
  gboolean flush_nl = base->flush_on_newline;
  GST_OBJECT_UNLOCK(self);
  GError *err = NULL;
  for (gsize i = 0; i < n && !err; i++) {
    TxlTokenRecord t;
    txl_token_record_read(records + i * TXL_TOKEN_RECORD_SIZE, &t);
    TxlScoreRecord r = { 0 };
    r.id = t.id;
    r.line = t.line;
    r.byte_start = t.byte_start;
    r.byte_len = t.byte_len;
    r.flags = t.flags & TXL_RECORD_LINE_END;
    r.pos = txl_scorer_tokens_seen(self->scorer);
    gboolean first = r.pos == 0;
    if (!first)
      g_array_append_val(self->pending, r);
    if (!txl_scorer_push(self->scorer, &t.id, 1, &err)) {
      if (!first)
        g_array_set_size(self->pending, self->pending->len - 1);
      break;
    }
    base->in_tokens++;
    if (first) {
      /* nothing before it to predict it from */
      r.logprob = NAN;
      r.flags |= TXL_RECORD_FIRST;
      emit(self, &r);
    }
    if (!learn_run(self, &err))
      break;
    if (flush_nl && (t.flags & TXL_RECORD_LINE_END)) {
      self->in_flush = TRUE;
      if (txl_scorer_finish(self->scorer, &err))
        learn_run(self, &err);
      self->in_flush = FALSE;
    }
  }
  if (err)
    return gst_txl_scorer_base_score_error(base, err);
  GST_OBJECT_LOCK(self);
  GstClockTime max_latency = self->max_latency;
  GST_OBJECT_UNLOCK(self);
  /* tokens still waiting for their segment: score them by the deadline
   * even if no more input comes */
  if (max_latency > 0 && self->pending->len > 0)
    arm_timer(self, max_latency);
  GstFlowReturn ret = push_out(self, FALSE);
  publish(base);
  return ret;
}

/* A new stream (STREAM_START): the old one's last partial segment goes
 * out first; then new memory, or the old memory with offsets from 0. */
static gboolean
stream_start(GstTxlScorerBase *base, GError **error)
{
  GstTxlModel *self = GST_TXL_MODEL(base);
  if (txl_scorer_tokens_seen(self->scorer) == 0)
    return TRUE;
  GstFlowReturn ret = finish(base);
  if (ret != GST_FLOW_OK)
    GST_DEBUG_OBJECT(self, "flushing the last stream: %s",
                     gst_flow_get_name(ret));
  GST_OBJECT_LOCK(self);
  gboolean reset = self->reset_on_stream_start;
  GST_OBJECT_UNLOCK(self);
  if (reset)
    return gst_txl_scorer_base_new_stream(base, error);
  restart_offsets(self);
  return TRUE;
}

/* ---- element ---------------------------------------------------------- */

static void
opened(GstTxlScorerBase *base)
{
  const TxlCalibration *cal = txl_model_calibration(base->model);
  if (cal && cal->sessions)
    /* scored as one stream, its lines cost more than the per-session
     * calibration assumes: say where the evaluated setting is */
    GST_ELEMENT_WARNING(base, STREAM, FORMAT,
        ("This model was evaluated one session per memory (key \"%s\"): "
         "txlsessions scores it that way and flags with its calibration; "
         "txlmodel scores one stream and uses none of it.",
         cal->session_key), (NULL));
}

static const TxlPropField prop_fields[] = {
  GST_TXL_LEARN_PROPS(GstTxlModel, PROP_LEARN),
  TXL_PROP(PROP_MAX_LATENCY, GstTxlModel, max_latency,
      TXL_UINT64("max-latency", "Maximum latency", "Score tokens still "
          "waiting for their segment once no input has come for this long, "
          "so a quiet stream gets prompt scores even within a line "
          "(nanoseconds; 0 = off). Like flush-on-newline, it changes the "
          "segmentation", 0, G_MAXUINT64, 0, TXL_RW_PLAYING)),
  TXL_PROP(PROP_RESET_ON_STREAM_START, GstTxlModel, reset_on_stream_start,
      TXL_BOOLEAN("reset-on-stream-start", "Reset on stream start",
          "Forget the recurrent memory when a new stream starts "
          "(STREAM_START); FALSE carries the memory into the next stream",
          DEFAULT_RESET_ON_STREAM_START, TXL_RW_PLAYING)),
  TXL_PROP(PROP_TOKENS, GstTxlModel, tokens_seen,
      TXL_UINT64("tokens", "Tokens", "Tokens of the stream seen so far "
          "(restored streams count from their start)", 0, G_MAXUINT64, 0,
          TXL_RO)),
};

static const TxlPropTable props = {
  .fields = prop_fields, .n = G_N_ELEMENTS(prop_fields),
};

static void
gst_txl_model_class_init(GstTxlModelClass *klass)
{
  GstTxlScorerBaseClass *base_class = GST_TXL_SCORER_BASE_CLASS(klass);

  txl_element_class_init(GST_ELEMENT_CLASS(klass), &props,
      &gst_txl_model_debug, "txlmodel", "txl model", "Filter/Analyzer/Text",
      "Scores a token stream with a Transformer-XL language model: the "
      "log-probability of every token given all before it; snapshots of "
      "the stream post \"txl-snapshot\" and \"txl-restore\" element "
      "messages");

  base_class->section = "txlmodel";
  base_class->per_line = FALSE;
  base_class->settings = "scoring";
  base_class->not_ours = "%s: not a txlmodel snapshot (no txlmodel state; "
                         "`txl score` snapshots continue with `txl score`)";
  GST_TXL_SCORER_BASE_SET_COMMON_HOOKS(base_class);
  base_class->opened = opened;
  base_class->quiet = quiet;
  base_class->publish = publish;
  base_class->save_own = save_own;
  base_class->parse_own = parse_own;
  base_class->drop_own = own_state_free;
  base_class->apply = apply;
}

static void
gst_txl_model_init(GstTxlModel *self)
{
  txl_props_init(self, &props);
}

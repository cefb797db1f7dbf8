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
 * Snapshots (docs/snapshots.md): with snapshot-location set, the stream's
 * whole state (memory, pending tokens, this element's line totals, and the
 * state of txltokenizer upstream and txlsink downstream, gathered with
 * the queries of txlstate.h) goes to one zstd file, on request (the
 * "snapshot" action signal), periodically, at end of stream and at
 * shutdown; it is restored when the element starts and the file exists,
 * or on request ("restore").  Each snapshot posts a "txl-snapshot"
 * element message. */
#include "gsttxlcommon.h"
#include "txlsnapsched.h"
#include "txlstate.h"

#include <glib/gstdio.h>
#include <math.h>

GST_DEBUG_CATEGORY_STATIC(gst_txl_model_debug);
#define GST_CAT_DEFAULT gst_txl_model_debug

#define GST_TYPE_TXL_MODEL (gst_txl_model_get_type())
G_DECLARE_FINAL_TYPE(GstTxlModel, gst_txl_model, GST, TXL_MODEL, GstElement)

#define DEFAULT_SEGMENT 0
#define DEFAULT_MEM_LEN -1
#define DEFAULT_SAME_LENGTH -1
#define DEFAULT_CLAMP_LEN -1
#define DEFAULT_FLUSH_ON_NEWLINE FALSE
#define DEFAULT_RESET_ON_STREAM_START TRUE
#define DEFAULT_RESTORE TRUE
#define DEFAULT_HOLD_AT_EOS TRUE
#define MAX_LEN (1 << 20)


struct _GstTxlModel {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties, object lock */
  gchar *model_path;
  gint segment, mem_len, same_length, clamp_len;
  gboolean flush_on_newline;
  gboolean reset_on_stream_start;
  GstClockTime max_latency; /* 0: off */
  GstClockID latency_id;    /* the armed timer, object lock */

  /* from READY */
  TxlModel *model;
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
  GByteArray *text;  /* input bytes not yet forwarded */
  guint64 text_offset;
  gboolean text_started;
  guint64 frontier;  /* stream byte where the last emitted record ends */
  gboolean in_flush; /* scoring a partial segment */
  GstCaps *refused;  /* caps already refused with an error */
  GstClockTime last_pts, last_dts;
  guint64 in_tokens;    /* tokens received in this stream */
  guint64 out_records;  /* records delivered downstream in this stream */
  GstBuffer *undelivered; /* scores a failed push could not deliver */

  /* snapshot settings, object lock */
  TxlSnapSched snap;    /* location, interval, tokens; requests, timers */
  gboolean restore;
  gboolean hold_at_eos;
  TxlSnapshotPrecision snap_precision;
  /* snapshot state, under the sink pad's stream lock */
  GHashTable *restored;     /* neighbours' sections of a restore at start */
  gboolean tokenizer_fetched; /* txltokenizer took its restored state */
  gboolean restored_fresh;  /* the next STREAM_START continues the stream */
  gint64 expect_offset;     /* after a restore: first token of the next
                             * input buffer (-1: any) */
  guint64 state_bytes;      /* the stream's state now (object lock) */
  guint64 tokens_seen;      /* likewise */
};

enum {
  PROP_0,
  PROP_MODEL,
  PROP_SEGMENT,
  PROP_MEM_LEN,
  PROP_SAME_LENGTH,
  PROP_CLAMP_LEN,
  PROP_FLUSH_ON_NEWLINE,
  PROP_RESET_ON_STREAM_START,
  PROP_MAX_LATENCY,
  PROP_SNAPSHOT_LOCATION,
  PROP_SNAPSHOT_INTERVAL,
  PROP_SNAPSHOT_TOKENS,
  PROP_SNAPSHOT_PRECISION,
  PROP_RESTORE,
  PROP_HOLD_AT_EOS,
  PROP_STATE_BYTES,
  PROP_TOKENS,
};

enum { SIGNAL_SNAPSHOT, SIGNAL_RESTORE, LAST_SIGNAL };
static guint signals[LAST_SIGNAL];

GType
gst_txl_snapshot_precision_get_type(void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { TXL_SNAPSHOT_F32, "float32, lossless: resumes bit for bit", "f32" },
    { TXL_SNAPSHOT_F16, "float16: about half the size, scores drift "
      "slightly after a restore", "f16" },
    { TXL_SNAPSHOT_BF16, "bfloat16: about half the size, more drift",
      "bf16" },
    { 0, NULL, NULL },
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static(
        "GstTxlSnapshotPrecision", values));
  return type;
}

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(TXL_TOKENS_CAPS_NAME ", n-tokens = (int) [ 1, MAX ]"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(TXL_SCORES_CAPS_NAME));

G_DEFINE_TYPE(GstTxlModel, gst_txl_model, GST_TYPE_ELEMENT)

/* ---- scoring ------------------------------------------------------------- */

static void
close_line(GstTxlModel *self)
{
  if (self->cur_line <= 0)
    return;
  GstTxlDoneLine d = { self->cur_line, self->cur_bytes, self->cur.s };
  g_array_append_val(self->done_lines, d);
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
  self->cur_line = r->line;
  self->cur_bytes += r->byte_len;
  /* only the stream's first token has no score; a NaN anywhere else is a
   * broken score, counted (and flagged) by the line, never dropped */
  if (!(r->flags & TXL_RECORD_FIRST))
    txl_line_acc_add(&self->cur, -(double)r->logprob,
                     txl_token_norm_bytes(txl_model_tokenizer(self->model),
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
  self->frontier = MAX(self->frontier, r->byte_start + r->byte_len);
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
free_stream(GstTxlModel *self)
{
  g_clear_pointer(&self->scorer, txl_scorer_free);
  g_clear_pointer(&self->pending, g_array_unref);
  g_clear_pointer(&self->out, g_byte_array_unref);
  g_clear_pointer(&self->text, g_byte_array_unref);
  g_clear_pointer(&self->done_lines, g_array_unref);
  gst_clear_buffer(&self->undelivered);
}

/* A fresh stream: new memory, nothing pending. */
static gboolean
new_stream(GstTxlModel *self, GError **error)
{
  free_stream(self);
  GST_OBJECT_LOCK(self);
  TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
  o.mem_len = self->mem_len;
  o.clamp_len = self->clamp_len;
  o.same_length = self->same_length;
  int segment = self->segment;
  GST_OBJECT_UNLOCK(self);
  self->scorer = txl_scorer_new(self->model, &o, segment, on_score, self,
                                error);
  if (!self->scorer)
    return FALSE;
  self->pending = g_array_new(FALSE, FALSE, sizeof(TxlScoreRecord));
  self->pending_head = 0;
  self->out = g_byte_array_new();
  self->done_lines = g_array_new(FALSE, FALSE, sizeof(GstTxlDoneLine));
  self->cur_line = 0;
  self->cur_bytes = 0;
  txl_line_acc_init(&self->cur);
  self->text = g_byte_array_new();
  self->text_offset = 0;
  self->text_started = FALSE;
  self->frontier = 0;
  self->in_tokens = 0;
  self->out_records = 0;
  self->expect_offset = -1;
  return TRUE;
}

/* Keeps the stream's memory but forgets the text and byte offsets: the
 * next stream's tokenizer counts from 0 again. */
static void
restart_offsets(GstTxlModel *self)
{
  g_byte_array_set_size(self->text, 0);
  self->text_offset = 0;
  self->text_started = FALSE;
  self->frontier = 0;
  self->in_tokens = 0;
  self->out_records = 0;
}

static void
take_text(GstTxlModel *self, GstBuffer *buf)
{
  GstTxlTextMeta *meta = gst_buffer_get_txl_text_meta(buf);
  if (!meta || !meta->bytes)
    return;
  gsize n;
  const guint8 *data = g_bytes_get_data(meta->bytes, &n);
  if (!self->text_started) {
    self->text_offset = meta->offset;
    self->text_started = TRUE;
  } else if (meta->offset != self->text_offset + self->text->len) {
    GST_WARNING_OBJECT(self, "text meta at offset %" G_GUINT64_FORMAT
                       ", expected %" G_GUINT64_FORMAT ": starting over",
                       meta->offset, self->text_offset + self->text->len);
    g_byte_array_set_size(self->text, 0);
    self->text_offset = meta->offset;
  }
  if (n)
    g_byte_array_append(self->text, data, (guint)n);
}

static gboolean
copy_line_meta(GstBuffer *from, GstMeta **meta, gpointer to)
{
  if ((*meta)->info->api == GST_TXL_LINE_META_API_TYPE) {
    GstTxlLineMeta *m = (GstTxlLineMeta *)*meta;
    TxlLineScore s;
    gst_txl_line_meta_score(m, &s);
    gst_buffer_add_txl_line_meta(to, m->line, m->bytes, &s);
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

/* A push that fails (downstream flushing or shutting down) keeps its
 * scores: they belong to the stream's state, and a snapshot taken now
 * carries them to the next run. */
static GstFlowReturn
deliver(GstTxlModel *self, GstBuffer *buf)
{
  guint64 n = gst_buffer_get_size(buf) / TXL_SCORE_RECORD_SIZE;
  GstFlowReturn ret = gst_pad_push(self->srcpad, gst_buffer_ref(buf));
  if (ret == GST_FLOW_OK)
    self->out_records += n;
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
  gsize ntext = 0;
  if (self->text_started) {
    ntext = self->text->len;
    if (!all_text)
      ntext = self->frontier > self->text_offset
                  ? MIN(ntext, self->frontier - self->text_offset)
                  : 0;
  }
  if (all_text)
    close_line(self); /* the end of the stream ends its last line */
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
    gst_buffer_add_txl_line_meta(buf, d->line, d->bytes, &d->s);
  }
  g_array_set_size(self->done_lines, 0);
  if (self->text_started) {
    GBytes *b = g_bytes_new(self->text->data, ntext);
    gst_buffer_add_txl_text_meta(buf, self->text_offset, b);
    g_bytes_unref(b);
    g_byte_array_remove_range(self->text, 0, (guint)ntext);
    self->text_offset += ntext;
  }
  GST_BUFFER_PTS(buf) = self->last_pts;
  GST_BUFFER_DTS(buf) = self->last_dts;
  GST_LOG_OBJECT(self, "pushing %" G_GSIZE_FORMAT " scores, %" G_GSIZE_FORMAT
                 " text bytes", gst_buffer_get_size(buf) /
                 TXL_SCORE_RECORD_SIZE, ntext);
  if (self->undelivered) {
    /* scores a failed push kept come first; both go out as one buffer */
    buf = merge_out(g_steal_pointer(&self->undelivered), buf);
  }
  return deliver(self, buf);
}

static GstFlowReturn
score_error(GstTxlModel *self, GError *err)
{
  GST_ELEMENT_ERROR(self, STREAM, FAILED, ("Scoring failed: %s", err->message),
                    (NULL));
  g_error_free(err);
  return GST_FLOW_ERROR;
}

/* End of a stream: the partial segment is scored and all text goes out. */
static GstFlowReturn
finish_stream(GstTxlModel *self)
{
  if (!self->scorer)
    return GST_FLOW_OK;
  GError *err = NULL;
  if (!txl_scorer_finish(self->scorer, &err))
    return score_error(self, err);
  return push_out(self, TRUE);
}

/* ---- snapshots ------------------------------------------------------------ */

static void publish_counters(GstTxlModel *self);

#define STATE_VERSION 2u /* 2: line scores of lib/anomaly/lines.h */
#define MAX_STATE_TEXT (1u << 30)

static gboolean
put_line_meta(GstBuffer *buf, GstMeta **meta, gpointer data)
{
  if ((*meta)->info->api == GST_TXL_LINE_META_API_TYPE) {
    GstTxlLineMeta *m = (GstTxlLineMeta *)*meta;
    GByteArray *b = data;
    TxlLineScore s;
    gst_txl_line_meta_score(m, &s);
    txl_put_u64(b, (guint64)m->line);
    txl_put_u64(b, m->bytes);
    txl_line_score_put(b, &s);
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
save_own(GstTxlModel *self)
{
  GByteArray *b = g_byte_array_new();
  txl_put_u32(b, STATE_VERSION);
  txl_put_u64(b, self->in_tokens);
  txl_put_u64(b, self->out_records);
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
  txl_put_u32(b, self->text_started);
  txl_put_u64(b, self->text_offset);
  txl_put_blob(b, self->text->data, self->text->len);
  txl_put_u64(b, self->frontier);
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
  gboolean text_started;
  guint64 text_offset, frontier;
  GByteArray *text;
  GstBuffer *undelivered;
} OwnState;

static void
own_state_clear(OwnState *o)
{
  g_clear_pointer(&o->pending, g_array_unref);
  g_clear_pointer(&o->text, g_byte_array_unref);
  gst_clear_buffer(&o->undelivered);
}

/* Parses and checks this element's section against the restored scorer. */
static gboolean
parse_own(GstTxlModel *self, GBytes *bytes, TxlScorer *sc, OwnState *o,
          GError **error)
{
  memset(o, 0, sizeof *o);
  TxlReader r;
  txl_reader_init(&r, bytes);
  gint64 seen = txl_scorer_tokens_seen(sc);
  int npend = txl_scorer_pending_count(sc);
  guint64 want = npend > 1 ? (guint64)npend - 1 : 0;
  int n_ids = txl_model_config(self->model)->n_token;
  guint32 version = txl_get_u32(&r);
  o->in_tokens = txl_get_u64(&r);
  o->out_records = txl_get_u64(&r);
  guint64 n = txl_get_u64(&r);
  if (r.ok && version == 1) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_FORMAT,
                        "the snapshot's txlmodel state is version 1, written "
                        "by a txl that scored lines per raw byte; this one "
                        "scores them per normalised byte with a worst part "
                        "(docs/line-scores.md) and cannot continue those lines: "
                        "remove the snapshot to start the stream afresh");
    return FALSE;
  }
  if (!r.ok || version != STATE_VERSION || n != want)
    goto bad;
  o->pending = g_array_new(FALSE, FALSE, sizeof(TxlScoreRecord));
  for (guint64 i = 0; i < n; i++) {
    if (r.end - r.p < TXL_SCORE_RECORD_SIZE)
      goto bad;
    TxlScoreRecord rec;
    txl_score_record_read(r.p, &rec);
    r.p += TXL_SCORE_RECORD_SIZE;
    /* the records are those of the scorer's pending tokens, in order */
    if (rec.pos != seen - (gint64)n + (gint64)i || rec.id < 0 ||
        rec.id >= n_ids)
      goto bad;
    g_array_append_val(o->pending, rec);
  }
  o->cur_line = (gint64)txl_get_u64(&r);
  o->cur_bytes = txl_get_u64(&r);
  txl_line_acc_get(&r, &o->cur);
  guint32 started = txl_get_u32(&r);
  o->text_offset = txl_get_u64(&r);
  gsize tn;
  const guint8 *td = txl_get_blob(&r, &tn, MAX_STATE_TEXT);
  o->frontier = txl_get_u64(&r);
  guint32 has_u = txl_get_u32(&r);
  if (!r.ok || started > 1 || has_u > 1 || o->cur_line < 0)
    goto bad;
  o->text_started = started;
  o->text = g_byte_array_new();
  g_byte_array_append(o->text, td, (guint)tn);
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
  return TRUE;
bad:
  own_state_clear(o);
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
              "the snapshot's txlmodel state is malformed or does not match "
              "its stream");
  return FALSE;
}

static void
apply_own(GstTxlModel *self, OwnState *o)
{
  self->in_tokens = o->in_tokens;
  self->out_records = o->out_records;
  g_array_unref(self->pending);
  self->pending = g_steal_pointer(&o->pending);
  self->pending_head = 0;
  self->cur_line = o->cur_line;
  self->cur_bytes = o->cur_bytes;
  self->cur = o->cur;
  self->text_started = o->text_started;
  self->text_offset = o->text_offset;
  g_byte_array_unref(self->text);
  self->text = g_steal_pointer(&o->text);
  self->frontier = o->frontier;
  gst_buffer_replace(&self->undelivered, NULL);
  self->undelivered = g_steal_pointer(&o->undelivered);
  g_byte_array_set_size(self->out, 0);
  g_array_set_size(self->done_lines, 0);
}

/* Writes a snapshot now, with the sink pad's stream lock held.  DEFER
 * when a neighbour's state does not fit ours yet (buffers between us). */
static TxlSnapResult
do_snapshot(GstTxlModel *self, const gchar *path, const gchar *reason)
{
  if (!self->scorer)
    return TXL_SNAP_FAIL;
  gint64 t0 = g_get_monotonic_time();
  GHashTable *sect = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)g_bytes_unref);
  /* txltokenizer and txlsink: their own state, or their part of the one
   * restored at start that they have not taken yet */
  GstElement *e = GST_ELEMENT(self);
  if (!txl_state_gather(e, sect, self->sinkpad, "txltokenizer",
                        "tokens-received", self->in_tokens,
                        self->tokenizer_fetched ? NULL : self->restored) ||
      !txl_state_gather(e, sect, self->srcpad, "txlsink", "records-delivered",
                        self->out_records, self->restored)) {
    g_hash_table_unref(sect);
    return TXL_SNAP_DEFER;
  }
  g_hash_table_insert(sect, g_strdup("txlmodel"), save_own(self));
  txl_state_add_writer(e, sect);
  GST_OBJECT_LOCK(self);
  TxlSnapshotOptions o = TXL_SNAPSHOT_OPTIONS_DEFAULT;
  o.precision = self->snap_precision;
  GST_OBJECT_UNLOCK(self);
  gsize bytes = 0;
  GError *err = NULL;
  gboolean ok = txl_scorer_save_full(self->scorer, path, &o, sect, &bytes,
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
  GST_INFO_OBJECT(self, "snapshot %s (%s): %" G_GSIZE_FORMAT " bytes in "
                  "%.1f ms", path, reason, bytes, (t1 - t0) / 1e3);
  txl_state_post(GST_ELEMENT(self), path, bytes, (t1 - t0) / 1e6,
                 self->snap.seen, reason);
  return TXL_SNAP_OK;
}

/* Loads a snapshot: the scorer and this element's state now, the
 * neighbours' parts now (live) or when they start (at_start).  Nothing
 * changes unless every part checks out. */
static gboolean
do_restore(GstTxlModel *self, const gchar *path, gboolean at_start,
           GError **error)
{
  gint64 t0 = g_get_monotonic_time();
  GHashTable *sect = NULL;
  TxlScorer *sc = txl_scorer_load_full(self->model, path, on_score, self,
                                       &sect, error);
  if (!sc)
    return FALSE;
  GBytes *own = g_hash_table_lookup(sect, "txlmodel");
  GBytes *tok = g_hash_table_lookup(sect, "txltokenizer");
  GBytes *sink = g_hash_table_lookup(sect, "txlsink");
  OwnState o;
  if (!own) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: not a txlmodel snapshot (no txlmodel state; `txl score` "
                "snapshots continue with `txl score`)", path);
    goto fail;
  }
  if (!txl_state_check_writer(GST_ELEMENT(self), path, sect, error) ||
      !parse_own(self, own, sc, &o, error))
    goto fail;
  if (!at_start &&
      !txl_state_give_pair(GST_ELEMENT(self), self->sinkpad, tok,
                           self->srcpad, sink, FALSE, error)) {
    own_state_clear(&o);
    goto fail;
  }
  /* from here on it goes in */
  txl_scorer_free(self->scorer);
  self->scorer = sc;
  apply_own(self, &o);
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
  GST_INFO_OBJECT(self, "restored %s: %" G_GUINT64_FORMAT " tokens seen",
                  path, self->snap.seen);
  publish_counters(self);
  txl_state_post(GST_ELEMENT(self), path, size, (t1 - t0) / 1e6,
                 self->snap.seen, NULL);
  return TRUE;
fail:
  txl_scorer_free(sc);
  g_hash_table_unref(sect);
  return FALSE;
}

/* How txlmodel's state is written, restored and checked, for the
 * snapshot scheduler (txlsnapsched.c), which decides when. */
static TxlSnapResult
op_write(GstElement *e, const gchar *path, const gchar *reason)
{
  return do_snapshot(GST_TXL_MODEL(e), path, reason);
}

static gboolean
op_restore(GstElement *e, const gchar *path, GError **error)
{
  return do_restore(GST_TXL_MODEL(e), path, FALSE, error);
}

static gboolean
op_check(GstElement *e, const gchar *path, GError **error)
{
  GstTxlModel *self = GST_TXL_MODEL(e);
  GHashTable *sect = NULL;
  TxlScorer *check = self->model
      ? txl_scorer_load_full(self->model, path, on_score, self, &sect, error)
      : NULL;
  if (!check)
    return FALSE;
  gboolean ok = txl_state_check_writer(e, path, sect, error);
  txl_scorer_free(check);
  g_hash_table_unref(sect);
  return ok;
}

static gboolean
op_live(GstElement *e)
{
  return GST_TXL_MODEL(e)->scorer != NULL;
}

static guint64
op_progress(GstElement *e)
{
  GstTxlModel *self = GST_TXL_MODEL(e);
  return self->scorer ? (guint64)txl_scorer_tokens_seen(self->scorer) : 0;
}

static const TxlSnapOps snap_ops = { op_write, op_restore, op_check, op_live,
                                     op_progress };

static gboolean
gst_txl_model_snapshot_action(GstTxlModel *self, const gchar *path)
{
  return txl_snap_sched_snapshot_action(&self->snap, path);
}

static gboolean
gst_txl_model_restore_action(GstTxlModel *self, const gchar *path)
{
  return txl_snap_sched_restore_action(&self->snap, path);
}

/* For the read-only properties: the application's thread must not look
 * into the stream while the streaming thread works on it. */
static void
publish_counters(GstTxlModel *self)
{
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
  self->state_bytes = bytes;
  self->tokens_seen = seen;
  GST_OBJECT_UNLOCK(self);
}

/* ---- latency bound ----------------------------------------------------- */

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
  if (!GST_PAD_STREAM_TRYLOCK(self->sinkpad)) {
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
    GstFlowReturn ret = ok ? push_out(self, FALSE) : score_error(self, err);
    GST_DEBUG_OBJECT(self, "latency bound reached: %s", gst_flow_get_name(ret));
  }
  GST_PAD_STREAM_UNLOCK(self->sinkpad);
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

static GstFlowReturn
gst_txl_model_chain(GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstTxlModel *self = GST_TXL_MODEL(parent);
  GstMapInfo map;
  if (!self->scorer) {
    gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, CORE, FAILED, ("Not started"), (NULL));
    return GST_FLOW_ERROR;
  }
  if (!gst_txl_map_records(GST_ELEMENT(self), buf, &map,
                           TXL_TOKEN_RECORD_SIZE, "token")) {
    gst_buffer_unref(buf);
    return GST_FLOW_ERROR;
  }
  if (self->expect_offset >= 0) {
    /* after a restore: a buffer txltokenizer was already pushing holds
     * tokens of the stream that was replaced */
    if (GST_BUFFER_OFFSET_IS_VALID(buf) &&
        (gint64)GST_BUFFER_OFFSET(buf) != self->expect_offset) {
      GST_DEBUG_OBJECT(self, "dropping a buffer of the replaced stream");
      gst_buffer_unmap(buf, &map);
      gst_buffer_unref(buf);
      return GST_FLOW_OK;
    }
    self->expect_offset = -1;
  }
  if (!txl_state_give_sink_pending(GST_ELEMENT(self), self->srcpad,
                                   self->restored)) {
    gst_buffer_unmap(buf, &map);
    gst_buffer_unref(buf);
    return GST_FLOW_ERROR;
  }
  GST_OBJECT_LOCK(self);
  gboolean flush_nl = self->flush_on_newline;
  GST_OBJECT_UNLOCK(self);
  if (GST_BUFFER_PTS_IS_VALID(buf))
    self->last_pts = GST_BUFFER_PTS(buf);
  if (GST_BUFFER_DTS_IS_VALID(buf))
    self->last_dts = GST_BUFFER_DTS(buf);
  take_text(self, buf);

  GError *err = NULL;
  gsize n = map.size / TXL_TOKEN_RECORD_SIZE;
  for (gsize i = 0; i < n && !err; i++) {
    TxlTokenRecord t;
    txl_token_record_read(map.data + i * TXL_TOKEN_RECORD_SIZE, &t);
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
    self->in_tokens++;
    if (first) {
      /* nothing before it to predict it from */
      r.logprob = NAN;
      r.flags |= TXL_RECORD_FIRST;
      emit(self, &r);
    }
    if (flush_nl && (t.flags & TXL_RECORD_LINE_END)) {
      self->in_flush = TRUE;
      txl_scorer_finish(self->scorer, &err);
      self->in_flush = FALSE;
    }
  }
  gst_buffer_unmap(buf, &map);
  gst_buffer_unref(buf);
  if (err)
    return score_error(self, err);
  GST_OBJECT_LOCK(self);
  GstClockTime max_latency = self->max_latency;
  GST_OBJECT_UNLOCK(self);
  /* tokens still waiting for their segment: score them by the deadline
   * even if no more input comes */
  if (max_latency > 0 && self->pending->len > 0)
    arm_timer(self, max_latency);
  GstFlowReturn ret = push_out(self, FALSE);
  if (ret == GST_FLOW_OK)
    txl_snap_sched_triggers(&self->snap);
  publish_counters(self);
  /* downstream flushing (shutting down, a seek): the scores wait in
   * `undelivered`, and the tokens are taken, as txltokenizer counts them
   * delivered only on OK; refusing them would leave them counted twice
   * and no snapshot could be consistent */
  if (ret == GST_FLOW_FLUSHING)
    ret = GST_FLOW_OK;
  return ret;
}

/* ---- events and queries ---------------------------------------------------- */

/* With a snapshot file, the end of stream pauses the stream rather than
 * ending it (hold-at-eos). */
static gboolean
holds_at_eos(GstTxlModel *self)
{
  GST_OBJECT_LOCK(self);
  gboolean hold = self->hold_at_eos && self->snap.location &&
                  *self->snap.location;
  GST_OBJECT_UNLOCK(self);
  return hold;
}

static gboolean
gst_txl_model_sink_event(GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstTxlModel *self = GST_TXL_MODEL(parent);
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_CAPS: {
    GstCaps *caps;
    gst_event_parse_caps(event, &caps);
    gboolean ok = self->model &&
                  gst_txl_check_tokens_caps(GST_ELEMENT(self), self->model,
                                            caps, &self->refused);
    gst_event_unref(event);
    if (!ok)
      return FALSE;
    GstCaps *out = gst_caps_new_simple(
        TXL_SCORES_CAPS_NAME, "vocab-id", G_TYPE_STRING,
        txl_model_vocab_id(self->model), "model-id", G_TYPE_STRING,
        txl_model_id(self->model), NULL);
    gst_txl_add_calibration_caps(out, self->model, FALSE);
    GstEvent *ev = gst_event_new_caps(out); /* takes its own reference */
    gst_caps_unref(out);
    return gst_pad_push_event(self->srcpad, ev);
  }
  case GST_EVENT_STREAM_START: {
    if (self->restored_fresh) {
      /* the stream restored at start goes on: nothing to end */
      self->restored_fresh = FALSE;
      return gst_pad_event_default(pad, parent, event);
    }
    /* the old stream's last partial segment belongs before the new one */
    if (self->scorer && txl_scorer_tokens_seen(self->scorer) > 0) {
      GstFlowReturn ret = finish_stream(self);
      if (ret != GST_FLOW_OK)
        GST_DEBUG_OBJECT(self, "flushing the last stream: %s",
                         gst_flow_get_name(ret));
      GST_OBJECT_LOCK(self);
      gboolean reset = self->reset_on_stream_start;
      GST_OBJECT_UNLOCK(self);
      if (reset) {
        GError *err = NULL;
        if (!new_stream(self, &err)) {
          score_error(self, err);
          gst_event_unref(event);
          return FALSE;
        }
      } else {
        restart_offsets(self);
      }
    }
    return gst_pad_event_default(pad, parent, event);
  }
  case GST_EVENT_FLUSH_START:
    cancel_timer(self);
    return gst_pad_event_default(pad, parent, event);
  case GST_EVENT_EOS: {
    cancel_timer(self);
    gchar *loc = txl_snap_sched_path(&self->snap, NULL);
    if (loc && holds_at_eos(self) && self->scorer) {
      /* the stream is not over, only paused: its partial segment, the
       * tokenizer's held-back bytes and the sink's unfinished lines go
       * into the snapshot, and the next run continues them */
      txl_state_give_sink_pending(GST_ELEMENT(self), self->srcpad,
                                  self->restored);
      push_out(self, FALSE);
      if (do_snapshot(self, loc, "eos") == TXL_SNAP_DEFER)
        GST_ELEMENT_WARNING(self, RESOURCE, WRITE,
                            ("No snapshot at end of stream: buffers were "
                             "still queued between the txl elements"),
                            (NULL));
      gst_pad_push_event(self->srcpad, gst_event_new_custom(
          GST_EVENT_CUSTOM_DOWNSTREAM,
          gst_structure_new_empty(TXL_STATE_HOLD)));
    } else {
      GstFlowReturn ret = finish_stream(self);
      if (ret != GST_FLOW_OK)
        GST_DEBUG_OBJECT(self, "flushing at EOS: %s", gst_flow_get_name(ret));
      if (loc && self->scorer)
        do_snapshot(self, loc, "eos");
    }
    g_free(loc);
    return gst_pad_event_default(pad, parent, event);
  }
  case GST_EVENT_FLUSH_STOP:
    if (self->scorer) {
      GError *err = NULL;
      if (!new_stream(self, &err)) {
        score_error(self, err);
        gst_event_unref(event);
        return FALSE;
      }
    }
    self->last_pts = self->last_dts = GST_CLOCK_TIME_NONE;
    return gst_pad_event_default(pad, parent, event);
  default:
    return gst_pad_event_default(pad, parent, event);
  }
}

static gboolean
gst_txl_model_sink_query(GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstTxlModel *self = GST_TXL_MODEL(parent);
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
    gst_structure_set(st, "hold", G_TYPE_BOOLEAN, holds_at_eos(self), NULL);
    return TRUE;
  }
  if (GST_QUERY_TYPE(query) == GST_QUERY_CAPS && self->model) {
    gst_txl_answer_caps_query(query, gst_txl_tokens_caps(self->model));
    return TRUE;
  }
  return gst_pad_query_default(pad, parent, query);
}

static gboolean
gst_txl_model_src_query(GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstTxlModel *self = GST_TXL_MODEL(parent);
  if (GST_QUERY_TYPE(query) == GST_QUERY_LATENCY) {
    if (!gst_pad_peer_query(self->sinkpad, query))
      return FALSE;
    gboolean live;
    GstClockTime min, max;
    gst_query_parse_latency(query, &live, &min, &max);
    /* Tokens wait here until their segment (or, with flush-on-newline,
     * their line) is complete: a wait measured in tokens, not time, that
     * adds nothing to the minimum.  Nothing here ever blocks upstream, so
     * the buffering we offer is unbounded. */
    gst_query_set_latency(query, live, min, GST_CLOCK_TIME_NONE);
    GST_DEBUG_OBJECT(self, "latency: live %d, min %" GST_TIME_FORMAT, live,
                     GST_TIME_ARGS(min));
    return TRUE;
  }
  return gst_pad_query_default(pad, parent, query);
}

/* ---- element ------------------------------------------------------------- */

static GstStateChangeReturn
gst_txl_model_change_state(GstElement *element, GstStateChange transition)
{
  GstTxlModel *self = GST_TXL_MODEL(element);
  switch (transition) {
  case GST_STATE_CHANGE_NULL_TO_READY: {
    self->model = gst_txl_element_load_model(element, FALSE);
    if (!self->model)
      return GST_STATE_CHANGE_FAILURE;
    const TxlCalibration *cal = txl_model_calibration(self->model);
    if (cal && cal->sessions)
      /* scored as one stream, its lines cost more than the per-session
       * calibration assumes: say where the evaluated setting is */
      GST_ELEMENT_WARNING(self, STREAM, FORMAT,
          ("This model was evaluated one session per memory (key \"%s\"): "
           "txlsessions scores it that way and flags with its calibration; "
           "txlmodel scores one stream and uses none of it.",
           cal->session_key), (NULL));
    break;
  }
  case GST_STATE_CHANGE_READY_TO_PAUSED: {
    GError *err = NULL;
    if (!new_stream(self, &err)) {
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                        ("Invalid scoring settings: %s", err->message),
                        (NULL));
      g_clear_error(&err);
      return GST_STATE_CHANGE_FAILURE;
    }
    self->last_pts = self->last_dts = GST_CLOCK_TIME_NONE;
    self->restored_fresh = FALSE;
    self->tokenizer_fetched = FALSE;
    txl_snap_sched_mark(&self->snap);
    gchar *loc = txl_snap_sched_path(&self->snap, NULL);
    GST_OBJECT_LOCK(self);
    gboolean restore = self->restore;
    GST_OBJECT_UNLOCK(self);
    if (loc) /* what a writer killed mid-write left beside the file */
      txl_state_remove_stale(element, loc);
    if (loc && restore && g_file_test(loc, G_FILE_TEST_EXISTS) &&
        !do_restore(self, loc, TRUE, &err)) {
      GST_ELEMENT_ERROR(self, RESOURCE, READ,
                        ("Could not restore the snapshot \"%s\": %s", loc,
                         err->message),
                        ("remove or replace the file, or set restore=false "
                         "to start a new stream"));
      g_clear_error(&err);
      g_free(loc);
      free_stream(self);
      return GST_STATE_CHANGE_FAILURE;
    }
    g_free(loc);
    txl_snap_sched_start(&self->snap);
    break;
  }
  default:
    break;
  }

  GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_txl_model_parent_class)
          ->change_state(element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  switch (transition) {
  case GST_STATE_CHANGE_PAUSED_TO_READY: {
    cancel_timer(self);
    /* shutdown without an end of stream: what changed since the last
     * snapshot is saved (the pads are inactive, nothing streams here) */
    GST_PAD_STREAM_LOCK(self->sinkpad);
    txl_snap_sched_stop(&self->snap);
    free_stream(self);
    g_clear_pointer(&self->restored, g_hash_table_unref);
    GST_PAD_STREAM_UNLOCK(self->sinkpad);
    break;
  }
  case GST_STATE_CHANGE_READY_TO_NULL:
    gst_caps_replace(&self->refused, NULL);
    txl_model_cache_release(g_steal_pointer(&self->model));
    break;
  default:
    break;
  }
  return ret;
}

static void
gst_txl_model_set_property(GObject *object, guint prop_id, const GValue *value,
                           GParamSpec *pspec)
{
  GstTxlModel *self = GST_TXL_MODEL(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
  case PROP_MODEL:
    if (GST_STATE(self) != GST_STATE_NULL) {
      GST_OBJECT_UNLOCK(self);
      g_warning("txlmodel: the model can only be changed in the NULL state");
      return;
    }
    g_free(self->model_path);
    self->model_path = g_value_dup_string(value);
    break;
  case PROP_SEGMENT:
    self->segment = g_value_get_int(value);
    break;
  case PROP_MEM_LEN:
    self->mem_len = g_value_get_int(value);
    break;
  case PROP_SAME_LENGTH:
    self->same_length = g_value_get_int(value);
    break;
  case PROP_CLAMP_LEN:
    self->clamp_len = g_value_get_int(value);
    break;
  case PROP_MAX_LATENCY:
    self->max_latency = g_value_get_uint64(value);
    break;
  case PROP_FLUSH_ON_NEWLINE:
    self->flush_on_newline = g_value_get_boolean(value);
    break;
  case PROP_RESET_ON_STREAM_START:
    self->reset_on_stream_start = g_value_get_boolean(value);
    break;
  case PROP_SNAPSHOT_LOCATION:
    g_free(self->snap.location);
    self->snap.location = g_value_dup_string(value);
    break;
  case PROP_SNAPSHOT_INTERVAL:
    self->snap.interval = g_value_get_uint(value);
    break;
  case PROP_SNAPSHOT_TOKENS:
    self->snap.every = g_value_get_uint64(value);
    break;
  case PROP_SNAPSHOT_PRECISION:
    self->snap_precision = g_value_get_enum(value);
    break;
  case PROP_RESTORE:
    self->restore = g_value_get_boolean(value);
    break;
  case PROP_HOLD_AT_EOS:
    self->hold_at_eos = g_value_get_boolean(value);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void
gst_txl_model_get_property(GObject *object, guint prop_id, GValue *value,
                           GParamSpec *pspec)
{
  GstTxlModel *self = GST_TXL_MODEL(object);
  GST_OBJECT_LOCK(self);
  switch (prop_id) {
  case PROP_MODEL:
    g_value_set_string(value, self->model_path);
    break;
  case PROP_SEGMENT:
    g_value_set_int(value, self->segment);
    break;
  case PROP_MEM_LEN:
    g_value_set_int(value, self->mem_len);
    break;
  case PROP_SAME_LENGTH:
    g_value_set_int(value, self->same_length);
    break;
  case PROP_CLAMP_LEN:
    g_value_set_int(value, self->clamp_len);
    break;
  case PROP_MAX_LATENCY:
    g_value_set_uint64(value, self->max_latency);
    break;
  case PROP_FLUSH_ON_NEWLINE:
    g_value_set_boolean(value, self->flush_on_newline);
    break;
  case PROP_RESET_ON_STREAM_START:
    g_value_set_boolean(value, self->reset_on_stream_start);
    break;
  case PROP_SNAPSHOT_LOCATION:
    g_value_set_string(value, self->snap.location);
    break;
  case PROP_SNAPSHOT_INTERVAL:
    g_value_set_uint(value, self->snap.interval);
    break;
  case PROP_SNAPSHOT_TOKENS:
    g_value_set_uint64(value, self->snap.every);
    break;
  case PROP_SNAPSHOT_PRECISION:
    g_value_set_enum(value, self->snap_precision);
    break;
  case PROP_RESTORE:
    g_value_set_boolean(value, self->restore);
    break;
  case PROP_HOLD_AT_EOS:
    g_value_set_boolean(value, self->hold_at_eos);
    break;
  case PROP_STATE_BYTES:
    g_value_set_uint64(value, self->state_bytes);
    break;
  case PROP_TOKENS:
    g_value_set_uint64(value, self->tokens_seen);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    break;
  }
  GST_OBJECT_UNLOCK(self);
}

static void
gst_txl_model_finalize(GObject *object)
{
  GstTxlModel *self = GST_TXL_MODEL(object);
  g_free(self->model_path);
  txl_snap_sched_clear(&self->snap);
  G_OBJECT_CLASS(gst_txl_model_parent_class)->finalize(object);
}

static void
gst_txl_model_class_init(GstTxlModelClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);
  const GParamFlags rw = G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS;

  gobject_class->set_property = gst_txl_model_set_property;
  gobject_class->get_property = gst_txl_model_get_property;
  gobject_class->finalize = gst_txl_model_finalize;

  g_object_class_install_property(gobject_class, PROP_MODEL,
      g_param_spec_string("model", "Model",
          "Path of the txl model file (GGUF); its weights are loaded once per "
          "process and shared by every element naming the same file",
          NULL, rw));
  g_object_class_install_property(gobject_class, PROP_SEGMENT,
      g_param_spec_int("segment", "Segment",
          "Segment length in tokens: inputs t0..t(N-1) predict t1..tN, then "
          "the next N (0 = the model's tgt_len). Read when the element "
          "starts", 0, MAX_LEN, DEFAULT_SEGMENT,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property(gobject_class, PROP_MEM_LEN,
      g_param_spec_int("mem-len", "Memory length",
          "Positions of recurrent memory, in tokens (-1 = the model's "
          "mem_len)", -1, MAX_LEN, DEFAULT_MEM_LEN,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property(gobject_class, PROP_SAME_LENGTH,
      g_param_spec_int("same-length", "Same length",
          "1: every query attends to exactly mem-len keys; 0: to all earlier "
          "keys in memory and segment (-1 = the model's setting)",
          -1, 1, DEFAULT_SAME_LENGTH, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property(gobject_class, PROP_CLAMP_LEN,
      g_param_spec_int("clamp-len", "Clamp length",
          "Relative distances are capped at this many tokens; 0 = no cap "
          "(-1 = the model's clamp_len)", -1, MAX_LEN, DEFAULT_CLAMP_LEN,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property(gobject_class, PROP_FLUSH_ON_NEWLINE,
      g_param_spec_boolean("flush-on-newline", "Flush on newline",
          "Score the pending partial segment at every line end, so that a "
          "quiet live stream gets each line's scores at once. Changes the "
          "segmentation: scores then differ from an offline run (FALSE = "
          "exact offline segmentation)", DEFAULT_FLUSH_ON_NEWLINE,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property(gobject_class, PROP_MAX_LATENCY,
      g_param_spec_uint64("max-latency", "Maximum latency",
          "Score tokens still waiting for their segment once no input has "
          "come for this long, so a quiet stream gets prompt scores even "
          "within a line (nanoseconds; 0 = off). Like flush-on-newline, it "
          "changes the segmentation", 0, G_MAXUINT64, 0,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property(gobject_class, PROP_RESET_ON_STREAM_START,
      g_param_spec_boolean("reset-on-stream-start", "Reset on stream start",
          "Forget the recurrent memory when a new stream starts "
          "(STREAM_START); FALSE carries the memory into the next stream",
          DEFAULT_RESET_ON_STREAM_START, rw | GST_PARAM_MUTABLE_PLAYING));

  g_object_class_install_property(gobject_class, PROP_SNAPSHOT_LOCATION,
      g_param_spec_string("snapshot-location", "Snapshot location",
          "File for snapshots of the stream's state (memory, pending tokens, "
          "and the state of txltokenizer and txlsink around this element), "
          "written atomically; NULL = no snapshots", NULL,
          rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property(gobject_class, PROP_SNAPSHOT_INTERVAL,
      g_param_spec_uint("snapshot-interval", "Snapshot interval",
          "Write a snapshot every this many seconds while the stream changes "
          "(0 = off)", 0, G_MAXUINT / 2, 0, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property(gobject_class, PROP_SNAPSHOT_TOKENS,
      g_param_spec_uint64("snapshot-tokens", "Snapshot every N tokens",
          "Write a snapshot every this many tokens (0 = off)", 0, G_MAXUINT64,
          0, rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property(gobject_class, PROP_SNAPSHOT_PRECISION,
      g_param_spec_enum("snapshot-precision", "Snapshot precision",
          "How the memory is stored: f32 resumes bit for bit; f16 and bf16 "
          "make smaller files whose scores drift slightly (docs/snapshots.md)",
          gst_txl_snapshot_precision_get_type(), TXL_SNAPSHOT_F32,
          rw | GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property(gobject_class, PROP_RESTORE,
      g_param_spec_boolean("restore", "Restore",
          "When the element starts and snapshot-location exists, continue "
          "the stream saved there (an unreadable or other-model file is an "
          "error)", DEFAULT_RESTORE, rw | GST_PARAM_MUTABLE_READY));
  g_object_class_install_property(gobject_class, PROP_HOLD_AT_EOS,
      g_param_spec_boolean("hold-at-eos", "Hold at end of stream",
          "With snapshot-location set, the end of stream pauses the stream "
          "instead of ending it: the last partial segment, the tokenizer's "
          "held-back bytes and the unfinished lines are not scored but kept "
          "in the snapshot, so that the next run continues bit for bit "
          "(FALSE: score them, then snapshot)", DEFAULT_HOLD_AT_EOS,
          rw | GST_PARAM_MUTABLE_READY));

  g_object_class_install_property(gobject_class, PROP_STATE_BYTES,
      g_param_spec_uint64("state-bytes", "State bytes",
          "Bytes of recurrent state the stream holds now (its memory; grows "
          "until the memory is full)", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));
  g_object_class_install_property(gobject_class, PROP_TOKENS,
      g_param_spec_uint64("tokens", "Tokens",
          "Tokens of the stream seen so far (restored streams count from "
          "their start)", 0, G_MAXUINT64, 0,
          G_PARAM_READABLE | G_PARAM_STATIC_STRINGS));

  /**
   * GstTxlModel::snapshot:
   * @path: the file, or NULL for snapshot-location
   *
   * Writes a snapshot: at once when the stream is idle, else right after
   * the buffer being scored.  A "txl-snapshot" element message (path,
   * bytes, duration in seconds, tokens, reason) follows each snapshot.
   * Returns FALSE when there is no path or the write failed.
   */
  signals[SIGNAL_SNAPSHOT] = g_signal_new_class_handler("snapshot",
      G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST | G_SIGNAL_ACTION,
      G_CALLBACK(gst_txl_model_snapshot_action), NULL, NULL, NULL,
      G_TYPE_BOOLEAN, 1, G_TYPE_STRING);
  /**
   * GstTxlModel::restore:
   * @path: the file, or NULL for snapshot-location
   *
   * Replaces the stream with the one saved in @path (this element's and
   * its txl neighbours' state), after checking all of it.  Posts
   * "txl-restore" (path, bytes, duration, tokens).
   */
  signals[SIGNAL_RESTORE] = g_signal_new_class_handler("restore",
      G_TYPE_FROM_CLASS(klass), G_SIGNAL_RUN_LAST | G_SIGNAL_ACTION,
      G_CALLBACK(gst_txl_model_restore_action), NULL, NULL, NULL,
      G_TYPE_BOOLEAN, 1, G_TYPE_STRING);

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(element_class, "txl model",
      "Filter/Analyzer/Text",
      "Scores a token stream with a Transformer-XL language model: the "
      "log-probability of every token given all before it; snapshots of "
      "the stream post \"txl-snapshot\" and \"txl-restore\" element "
      "messages",
      "txl developers");

  element_class->change_state = gst_txl_model_change_state;

  GST_DEBUG_CATEGORY_INIT(gst_txl_model_debug, "txlmodel", 0, "txl model");
}

static void
gst_txl_model_init(GstTxlModel *self)
{
  self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
  txl_snap_sched_init(&self->snap, GST_ELEMENT(self), self->sinkpad,
                      &snap_ops);
  gst_pad_set_chain_function(self->sinkpad, gst_txl_model_chain);
  gst_pad_set_event_function(self->sinkpad, gst_txl_model_sink_event);
  gst_pad_set_query_function(self->sinkpad, gst_txl_model_sink_query);
  /* any token caps pass accept-caps; the CAPS event then checks the
   * vocabulary and says what is wrong */
  GST_PAD_SET_ACCEPT_TEMPLATE(self->sinkpad);
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template(&src_template, "src");
  gst_pad_set_query_function(self->srcpad, gst_txl_model_src_query);
  gst_pad_use_fixed_caps(self->srcpad);
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);

  self->segment = DEFAULT_SEGMENT;
  self->mem_len = DEFAULT_MEM_LEN;
  self->same_length = DEFAULT_SAME_LENGTH;
  self->clamp_len = DEFAULT_CLAMP_LEN;
  self->flush_on_newline = DEFAULT_FLUSH_ON_NEWLINE;
  self->reset_on_stream_start = DEFAULT_RESET_ON_STREAM_START;
  self->last_pts = self->last_dts = GST_CLOCK_TIME_NONE;
  self->restore = DEFAULT_RESTORE;
  self->hold_at_eos = DEFAULT_HOLD_AT_EOS;
  self->snap_precision = TXL_SNAPSHOT_F32;
  self->expect_offset = -1;
}

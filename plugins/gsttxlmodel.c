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
 * owns one stream's memory. */
#include "gsttxlcommon.h"

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
  guint32 cur_tokens;
  guint64 cur_bytes;
  gdouble cur_nll;
  GArray *done_lines; /* GstTxlLineMeta values (meta header unused) */
  GByteArray *text;  /* input bytes not yet forwarded */
  guint64 text_offset;
  gboolean text_started;
  guint64 frontier;  /* stream byte where the last emitted record ends */
  gboolean in_flush; /* scoring a partial segment */
  GstCaps *refused;  /* caps already refused with an error */
  GstClockTime last_pts, last_dts;
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
};

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
  GstTxlLineMeta m = { .line = self->cur_line, .tokens = self->cur_tokens,
                       .bytes = self->cur_bytes, .nll = self->cur_nll };
  g_array_append_val(self->done_lines, m);
  self->cur_line = 0;
  self->cur_tokens = 0;
  self->cur_bytes = 0;
  self->cur_nll = 0.0;
}

/* Per-line totals, closed at a line end (or when another line starts). */
static void
add_to_line(GstTxlModel *self, const TxlScoreRecord *r)
{
  if (self->cur_line > 0 && r->line != self->cur_line)
    close_line(self);
  self->cur_line = r->line;
  self->cur_bytes += r->byte_len;
  if (!isnan(r->logprob)) {
    self->cur_tokens++;
    self->cur_nll -= r->logprob;
  }
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
  self->done_lines = g_array_new(FALSE, FALSE, sizeof(GstTxlLineMeta));
  self->cur_line = 0;
  self->cur_tokens = 0;
  self->cur_bytes = 0;
  self->cur_nll = 0.0;
  self->text = g_byte_array_new();
  self->text_offset = 0;
  self->text_started = FALSE;
  self->frontier = 0;
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
  if (self->out->len == 0 && ntext == 0 && self->done_lines->len == 0)
    return GST_FLOW_OK;
  GstBuffer *buf = gst_buffer_new_allocate(NULL, self->out->len, NULL);
  if (self->out->len)
    gst_buffer_fill(buf, 0, self->out->data, self->out->len);
  g_byte_array_set_size(self->out, 0);
  for (guint i = 0; i < self->done_lines->len; i++) {
    const GstTxlLineMeta *m = &g_array_index(self->done_lines, GstTxlLineMeta, i);
    gst_buffer_add_txl_line_meta(buf, m->line, m->tokens, m->bytes, m->nll);
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
  return gst_pad_push(self->srcpad, buf);
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
  if (!gst_buffer_map(buf, &map, GST_MAP_READ)) {
    gst_buffer_unref(buf);
    GST_ELEMENT_ERROR(self, RESOURCE, READ, ("Could not map the input buffer"),
                      (NULL));
    return GST_FLOW_ERROR;
  }
  if (map.size % TXL_TOKEN_RECORD_SIZE != 0) {
    GST_ELEMENT_ERROR(self, STREAM, FORMAT,
                      ("A token buffer of %" G_GSIZE_FORMAT " bytes is not a "
                       "whole number of %d-byte token records", map.size,
                       TXL_TOKEN_RECORD_SIZE), (NULL));
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
  return push_out(self, FALSE);
}

/* ---- events and queries ---------------------------------------------------- */

static gboolean
check_caps(GstTxlModel *self, GstCaps *caps)
{
  const GstStructure *s = gst_caps_get_structure(caps, 0);
  const gchar *vocab = gst_structure_get_string(s, "vocab-id");
  gint n = 0;
  const gchar *want = txl_model_vocab_id(self->model);
  gint want_n = txl_tokenizer_n_tokens(txl_model_tokenizer(self->model));
  if (want_n <= 0)
    want_n = txl_model_config(self->model)->n_token;
  gst_structure_get_int(s, "n-tokens", &n);
  if (vocab && strcmp(vocab, want) == 0 && n == want_n)
    return TRUE;
  /* a refused sticky event comes back with every later push: say it once */
  if (self->refused && gst_caps_is_equal(self->refused, caps))
    return FALSE;
  gst_caps_replace(&self->refused, caps);
  GST_OBJECT_LOCK(self);
  gchar *path = g_strdup(self->model_path);
  GST_OBJECT_UNLOCK(self);
  GST_ELEMENT_ERROR(self, CORE, NEGOTIATION,
      ("Vocabulary mismatch: the tokens come from vocabulary %s (%d tokens), "
       "but the model \"%s\" uses vocabulary %s (%d tokens). Tokenize with "
       "the same model file.", vocab ? vocab : "(none)", n, path, want,
       want_n),
      ("caps %" GST_PTR_FORMAT, caps));
  g_free(path);
  return FALSE;
}

static GstCaps *
sink_caps(GstTxlModel *self)
{
  gint n = txl_tokenizer_n_tokens(txl_model_tokenizer(self->model));
  if (n <= 0)
    n = txl_model_config(self->model)->n_token;
  return gst_caps_new_simple(TXL_TOKENS_CAPS_NAME, "vocab-id", G_TYPE_STRING,
                             txl_model_vocab_id(self->model), "n-tokens",
                             G_TYPE_INT, n, NULL);
}

static gboolean
gst_txl_model_sink_event(GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstTxlModel *self = GST_TXL_MODEL(parent);
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_CAPS: {
    GstCaps *caps;
    gst_event_parse_caps(event, &caps);
    gboolean ok = self->model && check_caps(self, caps);
    gst_event_unref(event);
    if (!ok)
      return FALSE;
    GstCaps *out = gst_caps_new_simple(
        TXL_SCORES_CAPS_NAME, "vocab-id", G_TYPE_STRING,
        txl_model_vocab_id(self->model), "model-id", G_TYPE_STRING,
        txl_model_id(self->model), NULL);
    GstEvent *ev = gst_event_new_caps(out); /* takes its own reference */
    gst_caps_unref(out);
    return gst_pad_push_event(self->srcpad, ev);
  }
  case GST_EVENT_STREAM_START: {
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
    GstFlowReturn ret = finish_stream(self);
    if (ret != GST_FLOW_OK)
      GST_DEBUG_OBJECT(self, "flushing at EOS: %s", gst_flow_get_name(ret));
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
  if (GST_QUERY_TYPE(query) == GST_QUERY_CAPS && self->model) {
    GstCaps *filter, *caps = sink_caps(self);
    gst_query_parse_caps(query, &filter);
    if (filter) {
      GstCaps *c = gst_caps_intersect_full(filter, caps,
                                           GST_CAPS_INTERSECT_FIRST);
      gst_caps_unref(caps);
      caps = c;
    }
    gst_query_set_caps_result(query, caps);
    gst_caps_unref(caps);
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
    GST_OBJECT_LOCK(self);
    gchar *path = g_strdup(self->model_path);
    GST_OBJECT_UNLOCK(self);
    self->model = gst_txl_element_load_model(element, path);
    if (!self->model) {
      g_free(path);
      return GST_STATE_CHANGE_FAILURE;
    }
    GST_INFO_OBJECT(self, "model %s (%s)", path, txl_model_id(self->model));
    g_free(path);
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
  case GST_STATE_CHANGE_PAUSED_TO_READY:
    cancel_timer(self);
    free_stream(self);
    break;
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

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(element_class, "txl model",
      "Filter/Analyzer/Text",
      "Scores a token stream with a Transformer-XL language model: the "
      "log-probability of every token given all before it",
      "txl developers");

  element_class->change_state = gst_txl_model_change_state;

  GST_DEBUG_CATEGORY_INIT(gst_txl_model_debug, "txlmodel", 0, "txl model");
}

static void
gst_txl_model_init(GstTxlModel *self)
{
  self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
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
}

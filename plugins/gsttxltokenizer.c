/* txltokenizer: text or bytes in, the model's tokens out.
 *
 * gst-launch-1.0 filesrc location=app.log ! txltokenizer model=m.gguf ! ...
 *
 * The tokenizer stored in the model file splits the byte stream into
 * tokens; the encoder is streaming, so the tokens depend only on the
 * concatenated input, never on how it was cut into buffers.  Each output
 * buffer is a packed array of TxlTokenRecord (txltokens.h) with a
 * GstTxlTextMeta holding the input bytes it covers.  Pending state is
 * flushed at EOS and at a new STREAM_START (the next stream starts again
 * at line 1, offset 0), and dropped on FLUSH_STOP. */
#include "gsttxlcommon.h"

GST_DEBUG_CATEGORY_STATIC(gst_txl_tokenizer_debug);
#define GST_CAT_DEFAULT gst_txl_tokenizer_debug

#define GST_TYPE_TXL_TOKENIZER (gst_txl_tokenizer_get_type())
G_DECLARE_FINAL_TYPE(GstTxlTokenizer, gst_txl_tokenizer, GST, TXL_TOKENIZER,
                     GstElement)

struct _GstTxlTokenizer {
  GstElement parent;
  GstPad *sinkpad, *srcpad;

  /* properties, object lock */
  gchar *model_path;
  gboolean buffer_lines;

  /* from READY */
  TxlModel *model;
  /* streaming state, under the sink pad's stream lock */
  TxlEncoder *enc;
  GByteArray *records; /* packed records not yet pushed */
  GByteArray *text;    /* input bytes not yet attached to a buffer */
  guint64 text_offset; /* stream offset of text->data[0] */
  gint64 line;         /* 1-based line of the next input byte */
  guint64 n_tokens;    /* tokens produced in this stream */
  gboolean caps_sent;
  gboolean time_segment; /* upstream timestamps are meaningful */
};

enum { PROP_0, PROP_MODEL, PROP_BUFFER_LINES };

static GstStaticPadTemplate sink_template = GST_STATIC_PAD_TEMPLATE(
    "sink", GST_PAD_SINK, GST_PAD_ALWAYS,
    GST_STATIC_CAPS("text/x-raw, format = (string) utf8; "
                    "application/octet-stream"));

static GstStaticPadTemplate src_template = GST_STATIC_PAD_TEMPLATE(
    "src", GST_PAD_SRC, GST_PAD_ALWAYS,
    GST_STATIC_CAPS(TXL_TOKENS_CAPS_NAME ", n-tokens = (int) [ 1, MAX ]"));

G_DEFINE_TYPE(GstTxlTokenizer, gst_txl_tokenizer, GST_TYPE_ELEMENT)

/* ---- encoding ---------------------------------------------------------- */

static void
on_token(int32_t id, gint64 line, gsize byte_start, gsize byte_end,
         gpointer data)
{
  GstTxlTokenizer *self = data;
  TxlTokenRecord r = { 0 };
  r.id = id;
  r.byte_len = (guint32)MIN(byte_end - byte_start, G_MAXUINT32);
  r.line = line;
  r.byte_start = byte_start;
  guint at = self->records->len;
  g_byte_array_set_size(self->records, at + TXL_TOKEN_RECORD_SIZE);
  txl_token_record_write(self->records->data + at, &r);
  self->n_tokens++;
}

/* The line that just ended: flag its last token, when that token is still
 * here (a word tokenizer may have emitted it with an earlier buffer). */
static void
mark_line_end(GstTxlTokenizer *self, gint64 line)
{
  if (self->records->len < TXL_TOKEN_RECORD_SIZE)
    return;
  guint8 *last = self->records->data + self->records->len -
                 TXL_TOKEN_RECORD_SIZE;
  TxlTokenRecord r;
  txl_token_record_read(last, &r);
  if (r.line == line && !(r.flags & TXL_RECORD_LINE_END)) {
    r.flags |= TXL_RECORD_LINE_END;
    txl_token_record_write(last, &r);
  }
}

static void
encode(GstTxlTokenizer *self, const guint8 *data, gsize len)
{
  g_byte_array_append(self->text, data, (guint)len);
  /* fed line by line: after a line end every token of that line is out */
  while (len > 0) {
    const guint8 *nl = memchr(data, '\n', len);
    gsize n = nl ? (gsize)(nl - data) + 1 : len;
    txl_encoder_push(self->enc, (const char *)data, n);
    if (nl) {
      mark_line_end(self, self->line);
      self->line++;
    }
    data += n;
    len -= n;
  }
}

static void
reset_stream(GstTxlTokenizer *self)
{
  g_clear_pointer(&self->enc, txl_encoder_free);
  if (self->model)
    self->enc = txl_encoder_new(txl_model_tokenizer(self->model), on_token,
                                self);
  if (self->records)
    g_byte_array_set_size(self->records, 0);
  if (self->text)
    g_byte_array_set_size(self->text, 0);
  self->text_offset = 0;
  self->line = 1;
  self->n_tokens = 0;
}

static gboolean
ensure_caps(GstTxlTokenizer *self)
{
  if (self->caps_sent)
    return TRUE;
  const TxlTokenizer *tok = txl_model_tokenizer(self->model);
  GstCaps *caps = gst_caps_new_simple(
      TXL_TOKENS_CAPS_NAME, "vocab-id", G_TYPE_STRING,
      txl_model_vocab_id(self->model), "n-tokens", G_TYPE_INT,
      txl_tokenizer_n_tokens(tok), NULL);
  GST_DEBUG_OBJECT(self, "output caps %" GST_PTR_FORMAT, caps);
  /* the event takes its own reference */
  self->caps_sent = gst_pad_push_event(self->srcpad, gst_event_new_caps(caps));
  gst_caps_unref(caps);
  return self->caps_sent;
}

/* Pushes the records gathered so far, with the input bytes read so far.
 * Without records, the bytes wait for the next buffer unless force. */
static GstFlowReturn
push_pending(GstTxlTokenizer *self, GstBuffer *inbuf, gboolean force)
{
  guint n = self->records->len / TXL_TOKEN_RECORD_SIZE;
  if (n == 0 && (!force || self->text->len == 0))
    return GST_FLOW_OK;
  if (!ensure_caps(self))
    return GST_FLOW_NOT_NEGOTIATED;
  gsize size = self->records->len;
  GstBuffer *out = gst_buffer_new_allocate(NULL, size, NULL);
  if (size)
    gst_buffer_fill(out, 0, self->records->data, size);
  g_byte_array_set_size(self->records, 0);
  GBytes *text = g_bytes_new(self->text->data, self->text->len);
  gst_buffer_add_txl_text_meta(out, self->text_offset, text);
  g_bytes_unref(text);
  self->text_offset += self->text->len;
  g_byte_array_set_size(self->text, 0);
  GST_BUFFER_OFFSET(out) = self->n_tokens - n;
  GST_BUFFER_OFFSET_END(out) = self->n_tokens;
  if (inbuf && self->time_segment) {
    GST_BUFFER_PTS(out) = GST_BUFFER_PTS(inbuf);
    GST_BUFFER_DTS(out) = GST_BUFFER_DTS(inbuf);
  }
  GST_LOG_OBJECT(self, "pushing %u tokens", n);
  return gst_pad_push(self->srcpad, out);
}

/* The end of a stream: the encoder's last word and line end come out. */
static GstFlowReturn
finish_stream(GstTxlTokenizer *self)
{
  if (!self->enc)
    return GST_FLOW_OK;
  txl_encoder_finish(self->enc);
  mark_line_end(self, self->line);
  return push_pending(self, NULL, TRUE);
}

/* ---- pads ---------------------------------------------------------------- */

static GstFlowReturn
gst_txl_tokenizer_chain(GstPad *pad, GstObject *parent, GstBuffer *buf)
{
  GstTxlTokenizer *self = GST_TXL_TOKENIZER(parent);
  GstMapInfo map;
  if (!self->enc) {
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
  encode(self, map.data, map.size);
  GST_OBJECT_LOCK(self);
  gboolean buffer_lines = self->buffer_lines;
  GST_OBJECT_UNLOCK(self);
  /* datagram transports (syslog over UDP) send one message per buffer,
   * usually without a line end: the buffer's end is the line's */
  if (buffer_lines && map.size > 0 && map.data[map.size - 1] != '\n')
    encode(self, (const guint8 *)"\n", 1);
  gst_buffer_unmap(buf, &map);
  GstFlowReturn ret = push_pending(self, buf, FALSE);
  gst_buffer_unref(buf);
  return ret;
}

static gboolean
gst_txl_tokenizer_sink_event(GstPad *pad, GstObject *parent, GstEvent *event)
{
  GstTxlTokenizer *self = GST_TXL_TOKENIZER(parent);
  switch (GST_EVENT_TYPE(event)) {
  case GST_EVENT_CAPS:
    /* any accepted input format is just bytes to the tokenizer */
    gst_event_unref(event);
    return ensure_caps(self);
  case GST_EVENT_SEGMENT: {
    const GstSegment *in;
    gst_event_parse_segment(event, &in);
    if (!ensure_caps(self)) {
      gst_event_unref(event);
      return FALSE;
    }
    self->time_segment = in->format == GST_FORMAT_TIME;
    if (self->time_segment)
      return gst_pad_push_event(self->srcpad, event);
    /* byte positions mean nothing downstream: an open TIME segment */
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    GstEvent *out = gst_event_new_segment(&seg);
    gst_event_set_seqnum(out, gst_event_get_seqnum(event));
    gst_event_unref(event);
    return gst_pad_push_event(self->srcpad, out);
  }
  case GST_EVENT_STREAM_START:
    /* the old stream ends here; the new one starts at line 1 */
    if (self->enc && (self->n_tokens > 0 || self->text->len > 0)) {
      GstFlowReturn ret = finish_stream(self);
      if (ret != GST_FLOW_OK)
        GST_DEBUG_OBJECT(self, "flushing the last stream: %s",
                         gst_flow_get_name(ret));
    }
    reset_stream(self);
    self->caps_sent = FALSE;
    return gst_pad_event_default(pad, parent, event);
  case GST_EVENT_EOS: {
    GstFlowReturn ret = finish_stream(self);
    if (ret != GST_FLOW_OK)
      GST_DEBUG_OBJECT(self, "flushing at EOS: %s", gst_flow_get_name(ret));
    return gst_pad_event_default(pad, parent, event);
  }
  case GST_EVENT_FLUSH_STOP:
    reset_stream(self);
    return gst_pad_event_default(pad, parent, event);
  default:
    return gst_pad_event_default(pad, parent, event);
  }
}

/* ---- element ------------------------------------------------------------- */

static GstStateChangeReturn
gst_txl_tokenizer_change_state(GstElement *element, GstStateChange transition)
{
  GstTxlTokenizer *self = GST_TXL_TOKENIZER(element);
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
    if (txl_tokenizer_type(txl_model_tokenizer(self->model)) ==
        TXL_TOKENIZER_NONE) {
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS,
                        ("The model \"%s\" has no tokenizer: it only scores "
                         "token ids.", path), (NULL));
      txl_model_cache_release(g_steal_pointer(&self->model));
      g_free(path);
      return GST_STATE_CHANGE_FAILURE;
    }
    GST_INFO_OBJECT(self, "model %s, vocabulary %s", path,
                    txl_model_vocab_id(self->model));
    g_free(path);
    break;
  }
  case GST_STATE_CHANGE_READY_TO_PAUSED:
    self->records = g_byte_array_new();
    self->text = g_byte_array_new();
    reset_stream(self);
    self->caps_sent = FALSE;
    self->time_segment = FALSE;
    break;
  default:
    break;
  }

  GstStateChangeReturn ret =
      GST_ELEMENT_CLASS(gst_txl_tokenizer_parent_class)
          ->change_state(element, transition);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  switch (transition) {
  case GST_STATE_CHANGE_PAUSED_TO_READY:
    g_clear_pointer(&self->enc, txl_encoder_free);
    g_clear_pointer(&self->records, g_byte_array_unref);
    g_clear_pointer(&self->text, g_byte_array_unref);
    break;
  case GST_STATE_CHANGE_READY_TO_NULL:
    txl_model_cache_release(g_steal_pointer(&self->model));
    break;
  default:
    break;
  }
  return ret;
}

static void
gst_txl_tokenizer_set_property(GObject *object, guint prop_id,
                               const GValue *value, GParamSpec *pspec)
{
  GstTxlTokenizer *self = GST_TXL_TOKENIZER(object);
  switch (prop_id) {
  case PROP_BUFFER_LINES:
    GST_OBJECT_LOCK(self);
    self->buffer_lines = g_value_get_boolean(value);
    GST_OBJECT_UNLOCK(self);
    break;
  case PROP_MODEL:
    GST_OBJECT_LOCK(self);
    if (GST_STATE(self) != GST_STATE_NULL) {
      GST_OBJECT_UNLOCK(self);
      g_warning("txltokenizer: the model can only be changed in the NULL "
                "state");
      return;
    }
    g_free(self->model_path);
    self->model_path = g_value_dup_string(value);
    GST_OBJECT_UNLOCK(self);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    break;
  }
}

static void
gst_txl_tokenizer_get_property(GObject *object, guint prop_id, GValue *value,
                               GParamSpec *pspec)
{
  GstTxlTokenizer *self = GST_TXL_TOKENIZER(object);
  switch (prop_id) {
  case PROP_BUFFER_LINES:
    GST_OBJECT_LOCK(self);
    g_value_set_boolean(value, self->buffer_lines);
    GST_OBJECT_UNLOCK(self);
    break;
  case PROP_MODEL:
    GST_OBJECT_LOCK(self);
    g_value_set_string(value, self->model_path);
    GST_OBJECT_UNLOCK(self);
    break;
  default:
    G_OBJECT_WARN_INVALID_PROPERTY_ID(object, prop_id, pspec);
    break;
  }
}

static void
gst_txl_tokenizer_finalize(GObject *object)
{
  GstTxlTokenizer *self = GST_TXL_TOKENIZER(object);
  g_free(self->model_path);
  G_OBJECT_CLASS(gst_txl_tokenizer_parent_class)->finalize(object);
}

static void
gst_txl_tokenizer_class_init(GstTxlTokenizerClass *klass)
{
  GObjectClass *gobject_class = G_OBJECT_CLASS(klass);
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);

  gobject_class->set_property = gst_txl_tokenizer_set_property;
  gobject_class->get_property = gst_txl_tokenizer_get_property;
  gobject_class->finalize = gst_txl_tokenizer_finalize;

  g_object_class_install_property(gobject_class, PROP_BUFFER_LINES,
      g_param_spec_boolean("buffer-lines", "Buffer lines",
          "Each input buffer ends a line: a buffer without a final line end "
          "gets one (one message per datagram, e.g. syslog over UDP)", FALSE,
          G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS |
          GST_PARAM_MUTABLE_PLAYING));
  g_object_class_install_property(gobject_class, PROP_MODEL,
      g_param_spec_string("model", "Model",
          "Path of the txl model file (GGUF) whose tokenizer splits the "
          "input; loaded once per process and shared",
          NULL, G_PARAM_READWRITE | G_PARAM_STATIC_STRINGS));

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);
  gst_element_class_set_static_metadata(element_class, "txl tokenizer",
      "Filter/Converter/Text",
      "Splits text or bytes into the tokens of a txl model, with the line "
      "and byte offsets of each", "txl developers");

  element_class->change_state = gst_txl_tokenizer_change_state;

  GST_DEBUG_CATEGORY_INIT(gst_txl_tokenizer_debug, "txltokenizer", 0,
                          "txl tokenizer");
}

static void
gst_txl_tokenizer_init(GstTxlTokenizer *self)
{
  self->sinkpad = gst_pad_new_from_static_template(&sink_template, "sink");
  gst_pad_set_chain_function(self->sinkpad, gst_txl_tokenizer_chain);
  gst_pad_set_event_function(self->sinkpad, gst_txl_tokenizer_sink_event);
  gst_element_add_pad(GST_ELEMENT(self), self->sinkpad);

  self->srcpad = gst_pad_new_from_static_template(&src_template, "src");
  gst_pad_use_fixed_caps(self->srcpad);
  gst_element_add_pad(GST_ELEMENT(self), self->srcpad);
  self->line = 1;
}

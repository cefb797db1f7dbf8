/* SPDX-License-Identifier: LGPL-2.1-or-later */
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
 * at line 1, offset 0), and dropped on FLUSH_STOP.
 *
 * Its state travels in the scoring element's snapshots (txlparts.h): the encoder's
 * held-back bytes, the counters, and any tokens not yet delivered. */
#include "gsttxlcommon.h"
#include "txl_ingest.h"
#include "txl_text.h"
#include "txlparts.h"
#include "txlprops.h"

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
  gint format; /* TxlFormat */
  gchar *message_field, *time_field, *host_field, *session_field;
  gchar *continuation;

  /* from READY */
  TxlModel *model;
  /* streaming state, under the sink pad's stream lock and state_lock
   * (snapshot queries come from txlmodel, maybe on another thread) */
  GMutex state_lock;
  TxlEncoder *enc;
  /* format != raw: the input's lines become record lines (lib/ingest/
   * reader.h) before the encoder sees them; what follows (text metas,
   * offsets, line numbers) is about the record lines */
  TxlRecordReader *reader;
  GString *recs;       /* the reader's output for one push */
  gboolean warned_no_message;
  GByteArray *records; /* packed records not yet pushed */
  GByteArray *text;    /* input bytes not yet attached to a buffer */
  guint64 text_offset; /* stream offset of text->data[0] */
  guint64 n_tokens;    /* tokens produced in this stream */
  gboolean caps_sent;
  gboolean time_segment; /* upstream timestamps are meaningful */
  /* the buffer being pushed: its tokens count as delivered only once the
   * push returns, and come back into records if it fails */
  GstBuffer *inflight;
  gboolean inflight_stale; /* a restore replaced the state meanwhile */
  gboolean fetched;        /* asked txlmodel for a restored state */
  /* the source's resume position: the cursor field of the last record
   * line taken in (txljournalsrc) */
  gchar *last_cursor;
};

enum {
  PROP_0,
  PROP_MODEL,
  PROP_BUFFER_LINES,
  PROP_FORMAT,
  PROP_MESSAGE_FIELD,
  PROP_TIME_FIELD,
  PROP_HOST_FIELD,
  PROP_SESSION_FIELD,
  PROP_CONTINUATION,
};

static GType
gst_txl_format_get_type(void)
{
  static GType type = 0;
  static const GEnumValue values[] = {
    { TXL_FORMAT_RAW, "bytes as they come, nothing parsed", "raw" },
    { TXL_FORMAT_AUTO, "a line that is a JSON object is JSON, others text",
      "auto" },
    { TXL_FORMAT_JSON, "JSON lines", "json" },
    { TXL_FORMAT_TEXT, "text lines", "text" },
    { 0, NULL, NULL },
  };
  if (g_once_init_enter(&type))
    g_once_init_leave(&type, g_enum_register_static("GstTxlFormat", values));
  return type;
}

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

static void encode_records(GstTxlTokenizer *self, const guint8 *data,
                           gsize len);

/* Input bytes: through the record reader when there is one. */
static void
encode(GstTxlTokenizer *self, const guint8 *data, gsize len, gboolean end)
{
  if (!self->reader) {
    encode_records(self, data, len);
    return;
  }
  g_mutex_lock(&self->state_lock);
  g_string_truncate(self->recs, 0);
  txl_record_reader_push(self->reader, (const char *)data, len, self->recs);
  if (end)
    txl_record_reader_finish(self->reader, self->recs);
  TxlRecordReaderStats st;
  txl_record_reader_stats(self->reader, &st);
  g_mutex_unlock(&self->state_lock);
  if (st.no_message && !self->warned_no_message) {
    self->warned_no_message = TRUE;
    GST_ELEMENT_WARNING(self, STREAM, FORMAT,
        ("JSON lines without a message field: each is scored as its whole "
         "text. Name the field with message-field."),
        ("none of message, msg, MESSAGE, log, body, Body, text"));
  }
  encode_records(self, (const guint8 *)self->recs->str, self->recs->len);
}

/* A record line's cursor field (record.h): where its source would go on
 * from.  A header cut by a buffer boundary (raw input only) is not read. */
static void
note_cursor(GstTxlTokenizer *self, const char *line, gsize n)
{
  gsize h = txl_record_header_len(line, n);
  const char *v;
  gsize vl;
  if (h && txl_record_get(line, h, TXL_RECORD_CURSOR, &v, &vl)) {
    g_free(self->last_cursor);
    self->last_cursor = g_strndup(v, vl);
  }
}

static void
encode_records(GstTxlTokenizer *self, const guint8 *data, gsize len)
{
  g_mutex_lock(&self->state_lock);
  g_byte_array_append(self->text, data, (guint)len);
  /* fed line by line: after a line end every token of that line is out */
  while (len > 0) {
    const guint8 *nl = memchr(data, '\n', len);
    gsize n = nl ? (gsize)(nl - data) + 1 : len;
    if (txl_encoder_at_line_start(self->enc))
      note_cursor(self, (const char *)data, n);
    /* the line these bytes belong to: the encoder's count, which its
     * tokens carry and which a line end advances */
    gint64 line = txl_encoder_line(self->enc);
    txl_encoder_push(self->enc, (const char *)data, n);
    if (nl)
      mark_line_end(self, line);
    data += n;
    len -= n;
  }
  g_mutex_unlock(&self->state_lock);
}

/* The record reader the format properties ask for; NULL for raw (and on
 * error: a bad continuation rule or field name). */
static TxlRecordReader *
make_reader(GstTxlTokenizer *self, GError **error)
{
  TxlRecordReaderOptions o = TXL_RECORD_READER_OPTIONS_DEFAULT;
  GST_OBJECT_LOCK(self);
  o.format = (TxlFormat)self->format;
  o.message_field = self->message_field;
  o.time_field = self->time_field;
  o.host_field = self->host_field;
  o.session_field = self->session_field;
  o.continuation = self->continuation;
  TxlRecordReader *r = o.format == TXL_FORMAT_RAW
                           ? NULL : txl_record_reader_new(&o, error);
  GST_OBJECT_UNLOCK(self);
  return r;
}

static void
reset_stream(GstTxlTokenizer *self)
{
  g_mutex_lock(&self->state_lock);
  g_clear_pointer(&self->last_cursor, g_free);
  g_clear_pointer(&self->enc, txl_encoder_free);
  if (self->model)
    self->enc = txl_encoder_new(txl_model_tokenizer(self->model), on_token,
                                self);
  if (self->records)
    g_byte_array_set_size(self->records, 0);
  if (self->text)
    g_byte_array_set_size(self->text, 0);
  g_clear_pointer(&self->reader, txl_record_reader_free);
  self->reader = make_reader(self, NULL); /* the options were checked */
  self->text_offset = 0;
  self->n_tokens = 0;
  g_mutex_unlock(&self->state_lock);
}

static gboolean
ensure_caps(GstTxlTokenizer *self)
{
  if (self->caps_sent)
    return TRUE;
  GstCaps *caps = gst_txl_tokens_caps(self->model);
  GST_DEBUG_OBJECT(self, "output caps %" GST_PTR_FORMAT, caps);
  /* the event takes its own reference */
  self->caps_sent = gst_pad_push_event(self->srcpad, gst_event_new_caps(caps));
  gst_caps_unref(caps);
  return self->caps_sent;
}

/* Tokens a buffer carries at most.  A scorer notices that its pad is
 * flushing (a pipeline stopping, a seek) only between buffers: one buffer
 * for a 2 MB line would hold a service's shutdown for minutes.  Tokens not
 * pushed yet wait in `records`, where a snapshot finds them. */
#define MAX_PUSH_TOKENS 1024

/* Pushes up to MAX_PUSH_TOKENS of the records gathered so far, the first
 * with the input bytes read so far.  Without records, the bytes wait for
 * the next buffer unless force. */
static GstFlowReturn
push_one(GstTxlTokenizer *self, GstBuffer *inbuf, gboolean force)
{
  g_mutex_lock(&self->state_lock);
  guint n = self->records->len / TXL_TOKEN_RECORD_SIZE;
  if (n == 0 && (!force || self->text->len == 0)) {
    g_mutex_unlock(&self->state_lock);
    return GST_FLOW_OK;
  }
  g_mutex_unlock(&self->state_lock);
  if (!ensure_caps(self))
    return GST_FLOW_NOT_NEGOTIATED;
  g_mutex_lock(&self->state_lock);
  n = self->records->len / TXL_TOKEN_RECORD_SIZE;
  guint m = MIN(n, MAX_PUSH_TOKENS);
  gsize size = (gsize)m * TXL_TOKEN_RECORD_SIZE;
  GstBuffer *out = gst_buffer_new_allocate(NULL, size, NULL);
  if (size)
    gst_buffer_fill(out, 0, self->records->data, size);
  g_byte_array_remove_range(self->records, 0, (guint)size);
  GBytes *text = g_bytes_new(self->text->data, self->text->len);
  gst_buffer_add_txl_text_meta(out, self->text_offset, text);
  g_bytes_unref(text);
  self->text_offset += self->text->len;
  g_byte_array_set_size(self->text, 0);
  GST_BUFFER_OFFSET(out) = self->n_tokens - n;
  GST_BUFFER_OFFSET_END(out) = self->n_tokens - n + m;
  if (inbuf && self->time_segment) {
    GST_BUFFER_PTS(out) = GST_BUFFER_PTS(inbuf);
    GST_BUFFER_DTS(out) = GST_BUFFER_DTS(inbuf);
  }
  GST_LOG_OBJECT(self, "pushing %u of %u tokens", m, n);
  self->inflight = gst_buffer_ref(out);
  self->inflight_stale = FALSE;
  g_mutex_unlock(&self->state_lock);
  GstFlowReturn ret = gst_pad_push(self->srcpad, out);
  g_mutex_lock(&self->state_lock);
  GstBuffer *back = g_steal_pointer(&self->inflight);
  if (ret != GST_FLOW_OK && !self->inflight_stale) {
    /* not delivered (flushing, shutting down): the tokens and their text
     * wait here again, where a snapshot finds them */
    GstMapInfo map;
    GstTxlTextMeta *meta = gst_buffer_get_txl_text_meta(back);
    if (gst_buffer_map(back, &map, GST_MAP_READ)) {
      g_byte_array_prepend(self->records, map.data, (guint)map.size);
      gst_buffer_unmap(back, &map);
    }
    if (meta && meta->bytes) {
      gsize tn;
      const guint8 *td = g_bytes_get_data(meta->bytes, &tn);
      g_byte_array_prepend(self->text, td, (guint)tn);
      self->text_offset = meta->offset;
    }
  }
  g_mutex_unlock(&self->state_lock);
  gst_buffer_unref(back);
  return ret;
}

/* Pushes every record gathered so far, in buffers of MAX_PUSH_TOKENS,
 * until one is not delivered. */
static GstFlowReturn
push_pending(GstTxlTokenizer *self, GstBuffer *inbuf, gboolean force)
{
  GstFlowReturn ret;
  gboolean more;
  do {
    ret = push_one(self, inbuf, force);
    g_mutex_lock(&self->state_lock);
    more = self->records->len > 0;
    g_mutex_unlock(&self->state_lock);
  } while (ret == GST_FLOW_OK && more);
  return ret;
}

/* ---- state, for txlmodel's snapshots -------------------------------------- */

/* Version 2 added the source's resume cursor and the record reader's held
 * line and record (format other than
 * raw); a version 1 state resumes with none of them. */
#define STATE_VERSION 2u

/* What a snapshot needs to continue this stream, given that txlmodel has
 * received `received` tokens of it; FALSE when the two do not fit (tokens
 * between us and txlmodel that neither side holds). */
static GBytes *
save_state(GstTxlTokenizer *self, guint64 received)
{
  guint n_rec = self->records->len / TXL_TOKEN_RECORD_SIZE;
  guint64 undelivered = n_rec, inflight = 0;
  GstMapInfo map = GST_MAP_INFO_INIT;
  GstTxlTextMeta *meta = NULL;
  if (self->inflight && !self->inflight_stale)
    inflight = gst_buffer_get_size(self->inflight) / TXL_TOKEN_RECORD_SIZE;
  gboolean with_inflight;
  if (received == self->n_tokens - undelivered)
    with_inflight = FALSE; /* txlmodel has the buffer being pushed */
  else if (inflight && received == self->n_tokens - undelivered - inflight)
    with_inflight = TRUE;  /* the push has not reached txlmodel yet */
  else
    return NULL;
  GByteArray *b = g_byte_array_new();
  txl_put_u32(b, STATE_VERSION);
  GBytes *enc = txl_encoder_save(self->enc);
  gsize en;
  const guint8 *ed = g_bytes_get_data(enc, &en);
  txl_put_blob(b, ed, en);
  g_bytes_unref(enc);
  txl_put_u64(b, (guint64)txl_encoder_line(self->enc));
  txl_put_u64(b, self->n_tokens);
  GByteArray *recs = g_byte_array_new(), *text = g_byte_array_new();
  guint64 text_offset = self->text_offset;
  if (with_inflight) {
    meta = gst_buffer_get_txl_text_meta(self->inflight);
    if (gst_buffer_map(self->inflight, &map, GST_MAP_READ)) {
      g_byte_array_append(recs, map.data, (guint)map.size);
      gst_buffer_unmap(self->inflight, &map);
    }
    if (meta && meta->bytes) {
      gsize tn;
      const guint8 *td = g_bytes_get_data(meta->bytes, &tn);
      g_byte_array_append(text, td, (guint)tn);
      text_offset = meta->offset;
    }
  }
  g_byte_array_append(recs, self->records->data, self->records->len);
  g_byte_array_append(text, self->text->data, self->text->len);
  txl_put_u64(b, text_offset);
  txl_put_blob(b, text->data, text->len);
  txl_put_blob(b, recs->data, recs->len);
  txl_put_blob(b, self->last_cursor, self->last_cursor
                                          ? strlen(self->last_cursor) : 0);
  txl_put_u32(b, self->reader ? 1 : 0);
  GBytes *rs = self->reader ? txl_record_reader_save(self->reader) : NULL;
  gsize rsn = 0;
  const guint8 *rsd = rs ? g_bytes_get_data(rs, &rsn) : NULL;
  txl_put_blob(b, rsd, rsn);
  if (rs)
    g_bytes_unref(rs);
  g_byte_array_unref(recs);
  g_byte_array_unref(text);
  return g_byte_array_free_to_bytes(b);
}

/* Checks a saved state (and applies it when apply is set). */
static gboolean
restore_state(GstTxlTokenizer *self, GBytes *state, gboolean apply,
              GError **error)
{
  TxlReader r;
  guint32 version;
  if (!gst_txl_part_begin(&r, state, &version, "txltokenizer", 1,
                          STATE_VERSION, "afresh", error))
    return FALSE;
  gsize en, tn, rn;
  const guint8 *ed = txl_get_blob(&r, &en, G_MAXSIZE);
  gint64 line = (gint64)txl_get_u64(&r);
  guint64 n_tokens = txl_get_u64(&r), text_offset = txl_get_u64(&r);
  const guint8 *td = txl_get_blob(&r, &tn, G_MAXUINT32);
  const guint8 *rd = txl_get_blob(&r, &rn, G_MAXUINT32);
  guint32 has_reader = 0;
  gsize qn = 0, cn = 0;
  const guint8 *qd = NULL, *cd = NULL;
  if (version >= 2) {
    cd = txl_get_blob(&r, &cn, 4096);
    has_reader = txl_get_u32(&r);
    qd = txl_get_blob(&r, &qn, G_MAXUINT32);
  }
  if (!txl_reader_done(&r) || has_reader > 1 || line < 1 ||
      rn % TXL_TOKEN_RECORD_SIZE != 0 ||
      rn / TXL_TOKEN_RECORD_SIZE > n_tokens) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "the snapshot's txltokenizer state is malformed");
    return FALSE;
  }
  const TxlTokenizer *tok = txl_model_tokenizer(self->model);
  int n_ids = txl_tokenizer_n_tokens(tok);
  for (gsize i = 0; i < rn; i += TXL_TOKEN_RECORD_SIZE) {
    TxlTokenRecord rec;
    txl_token_record_read(rd + i, &rec);
    if (rec.id < 0 || rec.id >= n_ids) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "the snapshot's txltokenizer state holds a token outside "
                  "the vocabulary");
      return FALSE;
    }
  }
  if (has_reader && !self->reader) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "the snapshot's txltokenizer read records (format other than "
                "raw); this one has format=raw");
    return FALSE;
  }
  TxlRecordReader *reader = make_reader(self, NULL);
  if (has_reader) {
    GBytes *qb = g_bytes_new_static(qd, qn);
    gboolean rok = txl_record_reader_restore(reader, qb, error);
    g_bytes_unref(qb);
    if (!rok) {
      txl_record_reader_free(reader);
      return FALSE;
    }
  }
  if (!apply) {
    txl_record_reader_free(reader);
    reader = NULL;
  }
  TxlEncoder *enc = txl_encoder_new(tok, on_token, self);
  GBytes *eb = g_bytes_new_static(ed, en);
  gboolean ok = txl_encoder_restore(enc, eb, error);
  g_bytes_unref(eb);
  /* the line count saved is the encoder's, which the element reads;
   * one behind is a state an earlier build saved at an end of stream,
   * where a word tokenizer counts an unterminated last line */
  if (ok && line != txl_encoder_line(enc) &&
      line != txl_encoder_line(enc) - 1) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "the snapshot's txltokenizer state is malformed (its line "
                "count %" G_GINT64_FORMAT " is not its encoder's, %"
                G_GINT64_FORMAT ")", line, txl_encoder_line(enc));
    ok = FALSE;
  }
  if (!ok || !apply) {
    txl_encoder_free(enc);
    txl_record_reader_free(reader);
    return ok;
  }
  txl_encoder_free(self->enc);
  self->enc = enc;
  txl_record_reader_free(self->reader);
  self->reader = reader;
  g_free(self->last_cursor);
  self->last_cursor = cn ? g_strndup((const char *)cd, cn) : NULL;
  self->n_tokens = n_tokens;
  self->text_offset = text_offset;
  g_byte_array_set_size(self->text, 0);
  g_byte_array_append(self->text, td, (guint)tn);
  g_byte_array_set_size(self->records, 0);
  g_byte_array_append(self->records, rd, (guint)rn);
  /* a buffer still on its way to txlmodel belongs to the old stream */
  self->inflight_stale = self->inflight != NULL;
  return TRUE;
}

/* Its part of the pipeline's snapshots (txlparts.h). */
static GBytes *
part_save(GstElement *e, guint64 received)
{
  GstTxlTokenizer *self = GST_TXL_TOKENIZER(e);
  g_mutex_lock(&self->state_lock);
  GBytes *b = self->enc ? save_state(self, received) : NULL;
  g_mutex_unlock(&self->state_lock);
  return b;
}

static gboolean
part_restore(GstElement *e, GBytes *bytes, gboolean apply, gboolean *taken,
             GError **error)
{
  GstTxlTokenizer *self = GST_TXL_TOKENIZER(e);
  g_mutex_lock(&self->state_lock);
  *taken = self->enc != NULL;
  gboolean ok = !self->enc || restore_state(self, bytes, apply, error);
  g_mutex_unlock(&self->state_lock);
  return ok;
}

static const TxlPart part = { TXL_PART_UPSTREAM, TXL_PART_UPSTREAM_COUNT,
                              part_save, part_restore };

static gboolean
gst_txl_tokenizer_src_query(GstPad *pad, GstObject *parent, GstQuery *query)
{
  if (txl_parts_answer(GST_ELEMENT(parent), &part, query))
    return TRUE;
  return gst_pad_query_default(pad, parent, query);
}

/* At the first buffer: the state restored by txlmodel when it started. */
static gboolean
fetch_state(GstTxlTokenizer *self)
{
  self->fetched = TRUE;
  GstQuery *q = txl_parts_query_new(TXL_PARTS_FETCH);
  gboolean ok = TRUE;
  if (gst_pad_peer_query(self->srcpad, q)) {
    const GValue *v = gst_structure_get_value(gst_query_get_structure(q),
                                              TXL_PART_UPSTREAM);
    if (v) {
      GError *err = NULL;
      g_mutex_lock(&self->state_lock);
      ok = restore_state(self, g_value_get_boxed(v), TRUE, &err);
      g_mutex_unlock(&self->state_lock);
      if (!ok) {
        GST_ELEMENT_ERROR(self, STREAM, DECODE,
                          ("Could not restore the snapshot: %s", err->message),
                          (NULL));
        g_error_free(err);
      } else {
        GST_INFO_OBJECT(self, "continuing a snapshot at line %" G_GINT64_FORMAT
                        ", token %" G_GUINT64_FORMAT,
                        txl_encoder_line(self->enc),
                        self->n_tokens);
      }
    }
  }
  gst_query_unref(q);
  return ok;
}

/* A source asks where a restored stream left off (txlparts.h): the
 * restored state is fetched now, before the first buffer, so that the
 * source can seek there. */
static gboolean
gst_txl_tokenizer_sink_query(GstPad *pad, GstObject *parent, GstQuery *query)
{
  GstTxlTokenizer *self = GST_TXL_TOKENIZER(parent);
  const GstStructure *s = gst_query_get_structure(query);
  if (GST_QUERY_TYPE(query) != GST_QUERY_CUSTOM || !s ||
      !gst_structure_has_name(s, TXL_PARTS_SOURCE_POSITION))
    return gst_pad_query_default(pad, parent, query);
  if (!self->enc)
    return FALSE;
  if (!self->fetched && !fetch_state(self))
    return FALSE;
  g_mutex_lock(&self->state_lock);
  if (self->last_cursor)
    gst_structure_set(gst_query_writable_structure(query), "cursor",
                      G_TYPE_STRING, self->last_cursor, NULL);
  g_mutex_unlock(&self->state_lock);
  return TRUE;
}

/* The end of a stream: the encoder's last word and line end come out. */
static GstFlowReturn
finish_stream(GstTxlTokenizer *self)
{
  if (!self->enc)
    return GST_FLOW_OK;
  if (self->reader)
    encode(self, NULL, 0, TRUE); /* the reader's held line and record */
  g_mutex_lock(&self->state_lock);
  gint64 line = txl_encoder_line(self->enc);
  txl_encoder_finish(self->enc);
  mark_line_end(self, line);
  g_mutex_unlock(&self->state_lock);
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
  if (!self->fetched && !fetch_state(self)) {
    gst_buffer_unmap(buf, &map);
    gst_buffer_unref(buf);
    return GST_FLOW_ERROR;
  }
  encode(self, map.data, map.size, FALSE);
  GST_OBJECT_LOCK(self);
  gboolean buffer_lines = self->buffer_lines;
  GST_OBJECT_UNLOCK(self);
  /* datagram transports (syslog over UDP) send one message per buffer,
   * usually without a line end: the buffer's end is the line's */
  if (buffer_lines && map.size > 0 && map.data[map.size - 1] != '\n')
    encode(self, (const guint8 *)"\n", 1, FALSE);
  gst_buffer_unmap(buf, &map);
  GstFlowReturn ret = push_pending(self, buf, FALSE);
  gst_buffer_unref(buf);
  return ret;
}

static gboolean
downstream_holds(GstTxlTokenizer *self)
{
  GstQuery *q = txl_parts_query_new(TXL_PARTS_HOLD);
  gboolean hold = FALSE;
  if (gst_pad_peer_query(self->srcpad, q))
    gst_structure_get_boolean(gst_query_get_structure(q), "hold", &hold);
  gst_query_unref(q);
  return hold;
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
    /* txlmodel may keep the stream open in a snapshot (hold-at-eos): then
     * the held-back bytes stay held, for the next run to continue, once
     * that snapshot is written (else the stream ends here, all of it
     * scored) */
    if (!downstream_holds(self) || !gst_pad_push_event(self->srcpad,
            gst_event_new_custom(GST_EVENT_CUSTOM_DOWNSTREAM,
                                 gst_structure_new_empty(TXL_PARTS_PAUSE)))) {
      GstFlowReturn ret = finish_stream(self);
      if (ret != GST_FLOW_OK)
        GST_DEBUG_OBJECT(self, "flushing at EOS: %s", gst_flow_get_name(ret));
    }
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
  case GST_STATE_CHANGE_READY_TO_PAUSED: {
    GError *err = NULL;
    TxlRecordReader *check = make_reader(self, &err);
    if (err) {
      GST_ELEMENT_ERROR(self, RESOURCE, SETTINGS, ("%s", err->message),
                        (NULL));
      g_error_free(err);
      return GST_STATE_CHANGE_FAILURE;
    }
    txl_record_reader_free(check);
    self->recs = g_string_new(NULL);
    self->warned_no_message = FALSE;
    self->records = g_byte_array_new();
    self->text = g_byte_array_new();
    reset_stream(self);
    self->caps_sent = FALSE;
    self->time_segment = FALSE;
    self->fetched = FALSE;
    break;
  }
  default:
    break;
  }

  GstStateChangeReturn ret = gst_txl_element_change_state(
      element, GST_ELEMENT_CLASS(gst_txl_tokenizer_parent_class), transition,
      &self->model, TRUE);
  if (ret == GST_STATE_CHANGE_FAILURE)
    return ret;

  switch (transition) {
  case GST_STATE_CHANGE_PAUSED_TO_READY:
    g_mutex_lock(&self->state_lock);
    g_clear_pointer(&self->enc, txl_encoder_free);
    g_clear_pointer(&self->records, g_byte_array_unref);
    g_clear_pointer(&self->text, g_byte_array_unref);
    g_clear_pointer(&self->reader, txl_record_reader_free);
    if (self->recs)
      g_string_free(g_steal_pointer(&self->recs), TRUE);
    g_mutex_unlock(&self->state_lock);
    break;
  default:
    break;
  }
  return ret;
}

#define F(id, field, ...)                                                     \
  TXL_PROP_UPTO(id, GstTxlTokenizer, field, GST_STATE_READY, __VA_ARGS__)
static const TxlPropField prop_fields[] = {
  TXL_PROP(PROP_BUFFER_LINES, GstTxlTokenizer, buffer_lines,
      TXL_BOOLEAN("buffer-lines", "Buffer lines",
          "Each input buffer ends a line: a buffer without a final line end "
          "gets one (one message per datagram, e.g. syslog over UDP)", FALSE,
          TXL_RW_PLAYING)),
  F(PROP_FORMAT, format, TXL_ENUM("format", "Format",
      "How input lines are read: auto (a line that is a JSON object gives "
      "its message as text and its time, host, app, severity as fields; a "
      "trailing CR is dropped), json, text, or raw (bytes as they come)",
      gst_txl_format_get_type, TXL_FORMAT_AUTO, TXL_RW_READY)),
  F(PROP_MESSAGE_FIELD, message_field, TXL_STRING("message-field",
      "Message field", "JSON field holding the message, dotted for nested "
      "ones (unset: message, msg, MESSAGE, log, body, Body, text)", NULL,
      TXL_RW_READY)),
  F(PROP_TIME_FIELD, time_field, TXL_STRING("time-field", "Time field",
      "JSON field holding the time (unset: time, timestamp, @timestamp, ts, "
      "__REALTIME_TIMESTAMP, Timestamp, date)", NULL, TXL_RW_READY)),
  F(PROP_HOST_FIELD, host_field, TXL_STRING("host-field", "Host field",
      "JSON field holding the host (unset: host, hostname, _HOSTNAME, "
      "host.name, kubernetes.host)", NULL, TXL_RW_READY)),
  F(PROP_SESSION_FIELD, session_field, TXL_STRING("session-field",
      "Session field", "JSON field whose value becomes the record field "
      "\"session\" (txlsessions session-field=session)", NULL, TXL_RW_READY)),
  F(PROP_CONTINUATION, continuation, TXL_STRING("continuation",
      "Continuation", "Regular expression (PCRE): a line it matches joins "
      "the record before it (a stack trace: \"^(\\s|Caused by:)\"); that "
      "record is scored when the next one begins", NULL, TXL_RW_READY)),
  TXL_PROP_UPTO(PROP_MODEL, GstTxlTokenizer, model_path, GST_STATE_NULL,
      TXL_STRING("model", "Model", "Path of the txl model file (GGUF) whose "
          "tokenizer splits the input; loaded once per process and shared "
          "(unset: the bundled model, or the file TXL_MODEL names)",
          NULL, TXL_RW)),
};
#undef F

/* What the tokenizer holds besides its properties' strings. */
static void
release(GObject *object)
{
  g_mutex_clear(&GST_TXL_TOKENIZER(object)->state_lock);
  g_free(GST_TXL_TOKENIZER(object)->last_cursor);
}

static const TxlPropTable props = {
  .fields = prop_fields, .n = G_N_ELEMENTS(prop_fields),
  .finalize = release,
};

static void
gst_txl_tokenizer_class_init(GstTxlTokenizerClass *klass)
{
  GstElementClass *element_class = GST_ELEMENT_CLASS(klass);

  txl_element_class_init(element_class, &props, &gst_txl_tokenizer_debug,
      "txltokenizer", "txl tokenizer", "Filter/Converter/Text",
      "Splits text or bytes into the tokens of a txl model, with the line "
      "and byte offsets of each");

  gst_element_class_add_static_pad_template(element_class, &sink_template);
  gst_element_class_add_static_pad_template(element_class, &src_template);

  element_class->change_state = gst_txl_tokenizer_change_state;
}

static void
gst_txl_tokenizer_init(GstTxlTokenizer *self)
{
  self->sinkpad = gst_txl_add_pad(GST_ELEMENT(self), &sink_template,
      gst_txl_tokenizer_chain, gst_txl_tokenizer_sink_event,
      gst_txl_tokenizer_sink_query);
  self->srcpad = gst_txl_add_pad(GST_ELEMENT(self), &src_template, NULL,
                                 NULL, gst_txl_tokenizer_src_query);
  gst_pad_use_fixed_caps(self->srcpad);
  g_mutex_init(&self->state_lock);
  txl_props_init(self, &props);
}

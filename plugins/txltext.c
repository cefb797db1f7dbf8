/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The input text a scoring element passes through (gsttxlscorerbase.h):
 * txltokenizer puts each buffer's bytes on it as a text meta; txlmodel
 * and txlsessions send them on with the scores that cover them, so that
 * txlsink writes every line with its text. */
#include "gsttxlscorerbase.h"

#define MAX_STATE_TEXT (1u << 30)

void
gst_txl_text_reset(GstTxlText *t)
{
  if (t->data)
    g_byte_array_set_size(t->data, 0);
  else
    t->data = g_byte_array_new();
  t->offset = 0;
  t->started = FALSE;
  t->frontier = 0;
}

void
gst_txl_text_clear(GstTxlText *t)
{
  g_clear_pointer(&t->data, g_byte_array_unref);
}

gboolean
gst_txl_text_take(GstTxlText *t, GstBuffer *buf, gboolean restart_on_gap,
                  GstElement *log)
{
  GstTxlTextMeta *meta = gst_buffer_get_txl_text_meta(buf);
  if (!meta || !meta->bytes)
    return FALSE;
  gsize n;
  const guint8 *data = g_bytes_get_data(meta->bytes, &n);
  gboolean first = !t->started;
  if (first) {
    t->offset = meta->offset;
    t->started = TRUE;
  } else if (meta->offset != t->offset + t->data->len) {
    GST_WARNING_OBJECT(log, "text meta at offset %" G_GUINT64_FORMAT
                       ", expected %" G_GUINT64_FORMAT "%s", meta->offset,
                       t->offset + t->data->len,
                       restart_on_gap ? ": starting over" : "");
    if (restart_on_gap) {
      g_byte_array_set_size(t->data, 0);
      t->offset = meta->offset;
    }
  }
  if (n)
    g_byte_array_append(t->data, data, (guint)n);
  return first;
}

gsize
gst_txl_text_ready(const GstTxlText *t, guint64 frontier, gboolean all)
{
  if (!t->started)
    return 0;
  if (all)
    return t->data->len;
  return frontier > t->offset
             ? (gsize)MIN((guint64)t->data->len, frontier - t->offset)
             : 0;
}

void
gst_txl_text_attach(const GstTxlText *t, GstBuffer *buf, gsize n)
{
  if (!t->started)
    return;
  GBytes *b = g_bytes_new(t->data->data, n);
  gst_buffer_add_txl_text_meta(buf, t->offset, b);
  g_bytes_unref(b);
}

void
gst_txl_text_consume(GstTxlText *t, gsize n)
{
  if (!t->started)
    return;
  g_byte_array_remove_range(t->data, 0, (guint)n);
  t->offset += n;
}

void
gst_txl_text_put(GByteArray *b, const GstTxlText *t)
{
  txl_put_u32(b, t->started ? 1 : 0);
  txl_put_u64(b, t->offset);
  txl_put_blob(b, t->data->data, t->data->len);
  txl_put_u64(b, t->frontier);
}

gboolean
gst_txl_text_get(TxlReader *r, GstTxlText *t)
{
  guint32 started = txl_get_u32(r);
  t->offset = txl_get_u64(r);
  gsize n;
  const guint8 *d = txl_get_blob(r, &n, MAX_STATE_TEXT);
  t->frontier = txl_get_u64(r);
  if (!r->ok || started > 1)
    return FALSE;
  t->started = started;
  t->data = g_byte_array_new();
  g_byte_array_append(t->data, d, (guint)n);
  return TRUE;
}

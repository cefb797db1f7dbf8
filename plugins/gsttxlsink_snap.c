/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsink's part of the pipeline's snapshots (txlparts.h): the lines not
 * yet written, the line and record counters and the anomaly baseline, so
 * that a resumed stream writes what an uninterrupted one would. */
#include "gsttxlsink.h"

#define STATE_VERSION 5u /* 2: line scores of lib/anomaly/lines.h,
                          * 3: their metas' flags, 4: their metas' model
                          * file's cost (older: none, judged by the worst
                          * part alone), 5: the kinds flagged lately
                          * (older: none) */

#include <math.h>

GBytes *
gst_txl_sink_save_state(GstTxlSink *self)
{
  GByteArray *b = g_byte_array_new();
  txl_put_u32(b, STATE_VERSION);
  txl_put_u64(b, self->records);
  txl_put_u64(b, (guint64)self->written_upto);
  txl_put_u64(b, (guint64)self->closed_upto);
  txl_put_u64(b, (guint64)self->text_line);
  txl_put_u32(b, self->have_text);
  txl_put_u32(b, self->baseline != NULL);
  if (self->baseline) {
    GBytes *bl = txl_baseline_save(self->baseline);
    gsize n;
    const guint8 *d = g_bytes_get_data(bl, &n);
    txl_put_blob(b, d, n);
    g_bytes_unref(bl);
  }
  txl_put_u32(b, self->lines.length);
  for (GList *it = self->lines.head; it; it = it->next) {
    Line *l = it->data;
    txl_put_u64(b, (guint64)l->line);
    txl_put_u64(b, l->bytes);
    txl_put_u64(b, l->tok_bytes);
    txl_put_u32(b, l->closed);
    txl_put_blob(b, l->text->str, l->text->len);
    txl_line_acc_put(b, &l->acc);
    txl_put_u32(b, l->has_meta);
    txl_line_score_put(b, &l->meta);
    txl_put_u32(b, l->meta_flags);
    txl_put_f64(b, l->meta_ref);
  }
  txl_repeats_put(b, &self->repeats);
  return g_byte_array_free_to_bytes(b);
}

/* Checks a saved state against this element's settings, and applies it
 * when apply is set; nothing changes otherwise. */
static gboolean
restore_state(GstTxlSink *self, GBytes *state, gboolean apply, GError **error)
{
  TxlReader r;
  guint32 version;
  if (!gst_txl_part_begin(&r, state, &version, "txlsink", 2, STATE_VERSION,
                          "afresh", error))
    return FALSE;
  guint64 records = txl_get_u64(&r);
  gint64 written = (gint64)txl_get_u64(&r), closed = (gint64)txl_get_u64(&r),
         text_line = (gint64)txl_get_u64(&r);
  guint32 have_text = txl_get_u32(&r), has_bl = txl_get_u32(&r);
  GQueue lines = G_QUEUE_INIT;
  gsize bn = 0;
  const guint8 *bd = has_bl ? txl_get_blob(&r, &bn, G_MAXUINT32) : NULL;
  if (!r.ok || have_text > 1 ||
      has_bl > 1 ||
      written < 0 || closed < 0 || text_line < 1)
    goto bad;
  if ((has_bl != 0) != (self->baseline != NULL)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "the snapshot's txlsink used another threshold-mode");
    return FALSE;
  }
  guint32 n = txl_get_u32(&r);
  gint64 prev = written;
  for (guint32 i = 0; i < n && r.ok; i++) {
    Line *l = g_new0(Line, 1);
    l->line = (gint64)txl_get_u64(&r);
    l->bytes = txl_get_u64(&r);
    l->tok_bytes = txl_get_u64(&r);
    guint32 cl = txl_get_u32(&r);
    gsize tn;
    const guint8 *td = txl_get_blob(&r, &tn, TEXT_CAP_RECORD);
    l->text = g_string_new_len(td ? (const char *)td : "", (gssize)tn);
    l->closed = cl != 0;
    g_queue_push_tail(&lines, l);
    txl_line_acc_get(&r, &l->acc);
    guint32 hm = txl_get_u32(&r);
    l->has_meta = hm != 0;
    txl_line_score_get(&r, &l->meta);
    l->meta_flags = version > 2 ? txl_get_u32(&r) : 0;
    l->meta_ref = version > 3 ? txl_get_f64(&r) : NAN;
    if (cl > 1 || hm > 1 || l->line <= prev ||
        !txl_line_ref_valid(l->meta_ref) || (!isnan(l->meta_ref) && !hm) ||
        (l->meta_flags & ~(guint32)(TXL_LINE_WARMUP | TXL_LINE_NEW_WEIGHTS)))
      r.ok = FALSE;
    prev = l->line;
  }
  TxlRepeats repeats;
  txl_repeats_init(&repeats);
  if (version > 4)
    txl_repeats_get(&r, &repeats);
  if (!txl_reader_done(&r))
    goto bad;
  if (self->baseline) {
    /* checked on a copy of the settings: the live one changes only with
     * the rest */
    GBytes *bl = g_bytes_new(bd, bn);
    TxlBaseline *trial = gst_txl_sink_new_baseline(self, NULL);
    gboolean ok = trial && txl_baseline_restore(trial, bl, error);
    if (ok && apply)
      ok = txl_baseline_restore(self->baseline, bl, error);
    txl_baseline_free(trial);
    g_bytes_unref(bl);
    if (!ok) {
      g_queue_clear_full(&lines, gst_txl_sink_line_free);
      return FALSE;
    }
  }
  if (!apply) {
    g_queue_clear_full(&lines, gst_txl_sink_line_free);
    return TRUE;
  }
  g_queue_clear_full(&self->lines, gst_txl_sink_line_free);
  self->lines = lines;
  /* a restored stream goes on: what the file holds is its beginning */
  self->truncate_pending = FALSE;
  self->records = records;
  self->written_upto = written;
  self->closed_upto = closed;
  self->text_line = text_line;
  self->have_text = have_text;
  self->repeats = repeats;
  return TRUE;
bad:
  g_queue_clear_full(&lines, gst_txl_sink_line_free);
  g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
              "the snapshot's txlsink state is malformed");
  return FALSE;
}

/* Its part of the pipeline's snapshots (txlparts.h): the state that
 * accounts for exactly the records delivered, else busy. */
static GBytes *
part_save(GstElement *e, guint64 delivered)
{
  GstTxlSink *self = GST_TXL_SINK(e);
  g_rec_mutex_lock(&self->state_lock);
  GBytes *b = NULL;
  if (self->stopped && delivered == self->stopped_records)
    b = g_bytes_ref(self->stopped);
  else if (!self->stopped && !self->text_mode && delivered == self->records)
    b = gst_txl_sink_save_state(self);
  g_rec_mutex_unlock(&self->state_lock);
  return b;
}

static gboolean
part_restore(GstElement *e, GBytes *bytes, gboolean apply, gboolean *taken,
             GError **error)
{
  GstTxlSink *self = GST_TXL_SINK(e);
  g_rec_mutex_lock(&self->state_lock);
  *taken = TRUE;
  gboolean ok = restore_state(self, bytes, apply, error);
  g_rec_mutex_unlock(&self->state_lock);
  return ok;
}

const TxlPart gst_txl_sink_part = { TXL_PART_DOWNSTREAM,
                                     TXL_PART_DOWNSTREAM_COUNT, part_save,
                                     part_restore };


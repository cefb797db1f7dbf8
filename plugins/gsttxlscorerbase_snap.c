/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The snapshots of txlmodel and txlsessions (docs/snapshots.md): one file
 * holds the library's state of the scorer (the subclass's save/load), the
 * element's own section (its save_own/parse_own), the neighbours' parts
 * (txlparts.h) and the writer's name.  When they are taken is
 * txlsnapsched.c's business; this file writes and reads them. */
#include "gsttxlscorerbase.h"
#include "txlparts.h"

#include <glib/gstdio.h>

GST_DEBUG_CATEGORY_STATIC(gst_txl_scorer_snap_debug);
#define GST_CAT_DEFAULT gst_txl_scorer_snap_debug

#define CLASS(self) GST_TXL_SCORER_BASE_GET_CLASS(self)

static void
init_debug(void)
{
  GST_TXL_DEBUG_CATEGORY_ONCE(gst_txl_scorer_snap_debug, "txlscorersnap",
                              "txl scoring elements' snapshots");
}

TxlSnapResult
gst_txl_scorer_base_snapshot(GstTxlScorerBase *self, const gchar *path,
                             const gchar *reason)
{
  init_debug();
  if (!CLASS(self)->live(self))
    return TXL_SNAP_FAIL;
  gint64 t0 = g_get_monotonic_time();
  GHashTable *sect = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                           (GDestroyNotify)g_bytes_unref);
  /* the parts upstream and downstream: their own state, or their part of
   * the one restored at start that they have not taken yet */
  GstElement *e = GST_ELEMENT(self);
  if (!txl_parts_gather(e, sect, self->sinkpad, TXL_PART_UPSTREAM,
                        TXL_PART_UPSTREAM_COUNT, self->in_tokens,
                        self->tokenizer_fetched ? NULL : self->restored) ||
      !txl_parts_gather(e, sect, self->srcpad, TXL_PART_DOWNSTREAM,
                        TXL_PART_DOWNSTREAM_COUNT, self->out_count,
                        self->restored)) {
    g_hash_table_unref(sect);
    return TXL_SNAP_DEFER;
  }
  g_hash_table_insert(sect, g_strdup(CLASS(self)->section),
                      CLASS(self)->save_own(self));
  txl_parts_add_writer(e, sect);
  TxlSnapshotOptions o = TXL_SNAPSHOT_OPTIONS_DEFAULT;
  GST_OBJECT_LOCK(self);
  o.precision = self->snap_precision;
  GST_OBJECT_UNLOCK(self);
  gsize bytes = 0;
  GError *err = NULL;
  gboolean ok = CLASS(self)->save(self, path, &o, sect, &bytes, &err);
  g_hash_table_unref(sect);
  /* the position the scheduler counts from (txl_snap_sched_mark) */
  guint64 seen = CLASS(self)->progress(self);
  if (!txl_parts_written(e, ok, err, path, bytes, t0, seen, reason))
    return TXL_SNAP_FAIL;
  txl_snap_sched_mark(&self->snap);
  return TXL_SNAP_OK;
}

/* The library's part and this element's, checked; the sections in *sect. */
static gboolean
load_checked(GstTxlScorerBase *self, const gchar *path, GHashTable **sect,
             gpointer *loaded, gpointer *own, GError **error)
{
  *loaded = CLASS(self)->load(self, path, FALSE, sect, error);
  if (!*loaded)
    return FALSE;
  GBytes *b = g_hash_table_lookup(*sect, CLASS(self)->section);
  if (!b)
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT, CLASS(self)->not_ours,
                path);
  else if (txl_parts_check_writer(GST_ELEMENT(self), path, *sect, error))
    *own = CLASS(self)->parse_own(self, b, *loaded, error);
  if (*own)
    return TRUE;
  CLASS(self)->drop_loaded(*loaded);
  g_clear_pointer(sect, g_hash_table_unref);
  return FALSE;
}

void
gst_txl_scorer_base_apply_stream(GstTxlScorerBase *self, guint64 in_tokens,
                                 guint64 out_count, GstTxlText *text,
                                 GstTxlLearn **learning)
{
  self->in_tokens = in_tokens;
  self->out_count = out_count;
  gst_txl_text_clear(&self->text);
  self->text = *text;
  text->data = NULL;
  g_clear_pointer(&self->learning, gst_txl_learn_free);
  self->learning = g_steal_pointer(learning);
}

gboolean
gst_txl_scorer_base_restore_parsed(GstTxlScorerBase *self, GHashTable *sect,
                                   gpointer loaded, gpointer own,
                                   gboolean at_start, GError **error)
{
  GstElement *e = GST_ELEMENT(self);
  GBytes *tok = g_hash_table_lookup(sect, TXL_PART_UPSTREAM);
  GBytes *sink = g_hash_table_lookup(sect, TXL_PART_DOWNSTREAM);
  if (!at_start && !txl_parts_give_pair(e, self->sinkpad, tok, self->srcpad,
                                        sink, FALSE, error)) {
    CLASS(self)->drop_own(own);
    CLASS(self)->drop_loaded(loaded);
    return FALSE;
  }
  /* from here on it goes in */
  CLASS(self)->apply(self, loaded, own);
  if (CLASS(self)->publish)
    CLASS(self)->publish(self);
  g_clear_pointer(&self->restored, g_hash_table_unref);
  if (at_start) {
    self->restored = g_hash_table_ref(sect);
    self->tokenizer_fetched = FALSE;
    self->restored_fresh = TRUE;
  } else {
    /* checked above: applying cannot be refused */
    txl_parts_give_pair(e, self->sinkpad, tok, self->srcpad, sink, TRUE,
                        NULL);
    /* a buffer txltokenizer was pushing belongs to the old stream */
    self->expect_offset = (gint64)self->in_tokens;
  }
  txl_snap_sched_mark(&self->snap);
  return TRUE;
}

gboolean
gst_txl_scorer_base_restore(GstTxlScorerBase *self, const gchar *path,
                            gboolean at_start, GError **error)
{
  init_debug();
  if (!CLASS(self)->live(self)) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID, "not started");
    return FALSE;
  }
  gint64 t0 = g_get_monotonic_time();
  GHashTable *sect = NULL;
  gpointer loaded = NULL, own = NULL;
  if (!load_checked(self, path, &sect, &loaded, &own, error))
    return FALSE;
  gboolean ok = gst_txl_scorer_base_restore_parsed(self, sect, loaded, own,
                                                   at_start, error);
  g_hash_table_unref(sect);
  if (!ok)
    return FALSE;
  GStatBuf stb;
  guint64 size = g_stat(path, &stb) == 0 ? (guint64)stb.st_size : 0;
  gint64 t1 = g_get_monotonic_time();
  GST_INFO_OBJECT(self, "restored %s: %" G_GUINT64_FORMAT " tokens seen",
                  path, self->snap.seen);
  txl_parts_post(GST_ELEMENT(self), path, size, (t1 - t0) / 1e6,
                 self->snap.seen, NULL);
  return TRUE;
}

/* ---- for the snapshot scheduler ------------------------------------------ */

static TxlSnapResult
op_write(GstElement *e, const gchar *path, const gchar *reason)
{
  return gst_txl_scorer_base_snapshot(GST_TXL_SCORER_BASE(e), path, reason);
}

static gboolean
op_restore(GstElement *e, const gchar *path, GError **error)
{
  return gst_txl_scorer_base_restore(GST_TXL_SCORER_BASE(e), path, FALSE,
                                     error);
}

/* Without the stream lock: whether the file would load. */
static gboolean
op_check(GstElement *e, const gchar *path, GError **error)
{
  GstTxlScorerBase *self = GST_TXL_SCORER_BASE(e);
  GHashTable *sect = NULL;
  gpointer check = self->model
      ? CLASS(self)->load(self, path, TRUE, &sect, error) : NULL;
  if (!check)
    return FALSE;
  gboolean ok = txl_parts_check_writer(e, path, sect, error);
  CLASS(self)->drop_loaded(check);
  g_hash_table_unref(sect);
  return ok;
}

static gboolean
op_live(GstElement *e)
{
  GstTxlScorerBase *self = GST_TXL_SCORER_BASE(e);
  return CLASS(self)->live(self);
}

static guint64
op_progress(GstElement *e)
{
  GstTxlScorerBase *self = GST_TXL_SCORER_BASE(e);
  return CLASS(self)->progress(self);
}

const TxlSnapOps gst_txl_scorer_base_snap_ops = {
  op_write, op_restore, op_check, op_live, op_progress
};

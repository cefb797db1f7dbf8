/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The parts of a pipeline snapshot and the queries that move them
 * (txlparts.h). */
#include "txlparts.h"
#include "txl.h"

#include <string.h>

GstQuery *
txl_parts_query_new(const gchar *name)
{
  return gst_query_new_custom(GST_QUERY_CUSTOM, gst_structure_new_empty(name));
}

GstStructure *
txl_parts_query_structure(GstQuery *q, const gchar *name)
{
  if (GST_QUERY_TYPE(q) != GST_QUERY_CUSTOM)
    return NULL;
  const GstStructure *s = gst_query_get_structure(q);
  if (!s || !gst_structure_has_name(s, name))
    return NULL;
  return gst_query_writable_structure(q);
}

GBytes *
txl_parts_ask(GstPad *pad, const gchar *name, const gchar *count_field,
              guint64 count, gboolean *busy)
{
  GstQuery *q = txl_parts_query_new(TXL_PARTS_SAVE);
  gst_structure_set(gst_query_writable_structure(q), count_field,
                    G_TYPE_UINT64, count, NULL);
  GBytes *b = NULL;
  *busy = FALSE;
  if (gst_pad_peer_query(pad, q)) {
    const GstStructure *st = gst_query_get_structure(q);
    const GValue *v = gst_structure_get_value(st, name);
    gchar *busy_field = g_strconcat(name, "-busy", NULL);
    if (v)
      b = g_bytes_ref(g_value_get_boxed(v));
    else
      *busy = gst_structure_has_field(st, busy_field);
    g_free(busy_field);
  }
  gst_query_unref(q);
  return b;
}

gboolean
txl_parts_answer(GstElement *e, const TxlPart *part, GstQuery *q)
{
  GstStructure *st;
  g_autofree gchar *busy = g_strconcat(part->name, "-busy", NULL);
  g_autofree gchar *done = g_strconcat(part->name, "-done", NULL);
  if ((st = txl_parts_query_structure(q, TXL_PARTS_SAVE))) {
    guint64 count = 0;
    gst_structure_get_uint64(st, part->count_field, &count);
    GBytes *b = part->save(e, count);
    if (b) {
      gst_structure_set(st, part->name, G_TYPE_BYTES, b, NULL);
      g_bytes_unref(b);
    } else {
      gst_structure_set(st, busy, G_TYPE_BOOLEAN, TRUE, NULL);
    }
    return TRUE;
  }
  if ((st = txl_parts_query_structure(q, TXL_PARTS_RESTORE))) {
    const GValue *v = gst_structure_get_value(st, part->name);
    gboolean apply = FALSE;
    gst_structure_get_boolean(st, "apply", &apply);
    if (!v)
      return TRUE;
    GError *err = NULL;
    gboolean taken = TRUE;
    if (!part->restore(e, g_value_get_boxed(v), apply, &taken, &err)) {
      gst_structure_set(st, "error", G_TYPE_STRING, err->message, NULL);
      g_error_free(err);
    } else if (taken) {
      gst_structure_set(st, done, G_TYPE_BOOLEAN, TRUE, NULL);
    }
    return TRUE;
  }
  return FALSE;
}

gboolean
txl_parts_written(GstElement *element, gboolean ok, GError *err,
                  const gchar *path, gsize bytes, gint64 t0, guint64 tokens,
                  const gchar *reason)
{
  if (!ok) {
    GST_ELEMENT_WARNING(element, RESOURCE, WRITE,
                        ("Could not write the snapshot: %s", err->message),
                        (NULL));
    g_error_free(err);
    return FALSE;
  }
  gdouble s = (g_get_monotonic_time() - t0) / 1e6;
  GST_INFO_OBJECT(element, "snapshot %s (%s): %" G_GSIZE_FORMAT " bytes in "
                  "%.1f ms", path, reason, bytes, s * 1e3);
  txl_parts_post(element, path, bytes, s, tokens, reason);
  return TRUE;
}

void
txl_parts_post(GstElement *element, const gchar *path, guint64 bytes,
               gdouble duration, guint64 tokens, const gchar *reason)
{
  GstStructure *s = gst_structure_new(reason ? "txl-snapshot" : "txl-restore",
      "path", G_TYPE_STRING, path,
      "bytes", G_TYPE_UINT64, bytes,
      "duration", G_TYPE_DOUBLE, duration,
      "tokens", G_TYPE_UINT64, tokens, NULL);
  if (reason)
    gst_structure_set(s, "reason", G_TYPE_STRING, reason, NULL);
  gst_element_post_message(element,
                           gst_message_new_element(GST_OBJECT(element), s));
}

gboolean
txl_parts_gather(GstElement *element, GHashTable *sect, GstPad *pad,
                 const gchar *name, const gchar *count_field, guint64 count,
                 GHashTable *restored)
{
  GBytes *b = restored ? g_hash_table_lookup(restored, name) : NULL;
  if (b) {
    g_hash_table_insert(sect, g_strdup(name), g_bytes_ref(b));
    return TRUE;
  }
  gboolean busy;
  b = txl_parts_ask(pad, name, count_field, count, &busy);
  if (busy) {
    GST_DEBUG_OBJECT(element, "snapshot deferred: %s state in flight", name);
    return FALSE;
  }
  if (b)
    g_hash_table_insert(sect, g_strdup(name), b);
  return TRUE;
}

gboolean
txl_parts_give(GstElement *element, GstPad *pad, const gchar *name,
               GBytes *bytes, gboolean apply, GError **error)
{
  GstQuery *q = txl_parts_query_new(TXL_PARTS_RESTORE);
  gst_structure_set(gst_query_writable_structure(q), name, G_TYPE_BYTES,
                    bytes, "apply", G_TYPE_BOOLEAN, apply, NULL);
  gboolean answered = gst_pad_peer_query(pad, q);
  const GstStructure *st = gst_query_get_structure(q);
  const gchar *msg = gst_structure_get_string(st, "error");
  gchar *done = g_strconcat(name, "-done", NULL);
  gboolean ok = answered && !msg && gst_structure_has_field(st, done);
  if (!ok && msg)
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT, "%s", msg);
  else if (!ok) /* the snapshot's state would be lost: say so, go on */
    GST_ELEMENT_WARNING(element, STREAM, FAILED,
                        ("The snapshot holds the state of a %s, but none is "
                         "linked here to take it", name), (NULL));
  g_free(done);
  gst_query_unref(q);
  return ok || !msg;
}

gboolean
txl_parts_give_pair(GstElement *element, GstPad *sinkpad, GBytes *tok,
                    GstPad *srcpad, GBytes *sink, gboolean apply,
                    GError **error)
{
  /* checking stops at the first refusal; applying gives both */
  gboolean ok = !tok || txl_parts_give(element, sinkpad, TXL_PART_UPSTREAM,
                                       tok, apply, error);
  if (!ok && !apply)
    return FALSE;
  return (!sink || txl_parts_give(element, srcpad, TXL_PART_DOWNSTREAM,
                                  sink, apply, ok ? error : NULL)) && ok;
}

gboolean
txl_parts_give_sink_pending(GstElement *element, GstPad *srcpad,
                            GHashTable *restored)
{
  GBytes *b = restored ? g_hash_table_lookup(restored, TXL_PART_DOWNSTREAM)
                       : NULL;
  if (!b)
    return TRUE;
  GError *err = NULL;
  gboolean ok = txl_parts_give(element, srcpad, TXL_PART_DOWNSTREAM, b,
                               TRUE, &err);
  g_hash_table_remove(restored, TXL_PART_DOWNSTREAM);
  if (!ok) {
    GST_ELEMENT_ERROR(element, STREAM, DECODE,
                      ("Could not restore the snapshot: %s", err->message),
                      (NULL));
    g_error_free(err);
  }
  return ok;
}

/* ---- who writes a snapshot ----------------------------------------------- */

/* The prefix of the name GStreamer gives an unnamed object: its factory's
 * name, or its type's without "Gst", lower-cased. */
static gchar *
auto_prefix(GstObject *o)
{
  GstElementFactory *f = GST_IS_ELEMENT(o)
      ? gst_element_get_factory(GST_ELEMENT(o)) : NULL;
  if (f)
    return g_strdup(GST_OBJECT_NAME(f));
  const gchar *t = G_OBJECT_TYPE_NAME(o);
  if (g_str_has_prefix(t, "Gst"))
    t += 3;
  return g_ascii_strdown(t, -1);
}

/* Whether o's name is an automatic one: the prefix and a counter. */
static gboolean
auto_named(GstObject *o)
{
  g_autofree gchar *prefix = auto_prefix(o);
  const gchar *n = GST_OBJECT_NAME(o);
  gsize pl = strlen(prefix);
  if (!n || strncmp(n, prefix, pl) != 0 || !n[pl])
    return FALSE;
  for (const gchar *p = n + pl; *p; p++)
    if (!g_ascii_isdigit(*p))
      return FALSE;
  return TRUE;
}

/* An automatically named element: its factory's name and its rank among
 * the elements of that factory in its bin, in the order they were added
 * (a bin keeps its newest child first). */
static gchar *
stable_element_name(GstElement *e)
{
  if (!auto_named(GST_OBJECT(e)))
    return g_strdup(GST_OBJECT_NAME(e));
  g_autofree gchar *prefix = auto_prefix(GST_OBJECT(e));
  GstObject *parent = gst_object_get_parent(GST_OBJECT(e));
  guint rank = 0;
  if (parent && GST_IS_BIN(parent)) {
    GstElementFactory *f = gst_element_get_factory(e);
    GST_OBJECT_LOCK(parent);
    GList *l = g_list_find(GST_BIN_CHILDREN(parent), e);
    for (l = l ? l->next : NULL; l; l = l->next)
      if (gst_element_get_factory(l->data) == f)
        rank++;
    GST_OBJECT_UNLOCK(parent);
  }
  g_clear_object(&parent);
  return g_strdup_printf("%s%u", prefix, rank);
}

gchar *
txl_parts_writer(GstElement *e)
{
  GstObject *top = gst_object_ref(GST_OBJECT(e)), *up;
  while ((up = gst_object_get_parent(top))) {
    gst_object_unref(top);
    top = up;
  }
  g_autofree gchar *elem = stable_element_name(e);
  gchar *w;
  if (top == GST_OBJECT(e))
    w = g_strdup_printf("element \"%s\" (in no pipeline)", elem);
  else if (auto_named(top))
    w = g_strdup_printf("an unnamed pipeline, element \"%s\"", elem);
  else
    w = g_strdup_printf("pipeline \"%s\", element \"%s\"",
                        GST_OBJECT_NAME(top), elem);
  gst_object_unref(top);
  return w;
}

void
txl_parts_add_writer(GstElement *e, GHashTable *sect)
{
  gchar *w = txl_parts_writer(e);
  g_hash_table_insert(sect, g_strdup(TXL_SNAPSHOT_WRITER_SECTION),
                      g_bytes_new_take(w, strlen(w)));
}

gboolean
txl_parts_check_writer(GstElement *e, const gchar *path, GHashTable *sect,
                       GError **error)
{
  g_autofree gchar *w = txl_parts_writer(e);
  return txl_snapshot_check_writer(path, sect, w, error);
}

void
txl_parts_remove_stale(GstElement *e, const gchar *location)
{
  guint n = 0;
  GError *err = NULL;
  if (!txl_snapshot_remove_stale(location, &n, &err)) {
    GST_WARNING_OBJECT(e, "stale snapshot temporaries: %s", err->message);
    g_error_free(err);
  } else if (n) {
    GST_INFO_OBJECT(e, "removed %u stale temporar%s of %s (a writer killed "
                    "while writing)", n, n == 1 ? "y" : "ies", location);
  }
}

guint
txl_parts_action_signal_new(gpointer klass, const gchar *name,
                            GCallback handler)
{
  return g_signal_new_class_handler(name, G_TYPE_FROM_CLASS(klass),
      G_SIGNAL_RUN_LAST | G_SIGNAL_ACTION, handler, NULL, NULL, NULL,
      G_TYPE_BOOLEAN, 1, G_TYPE_STRING);
}

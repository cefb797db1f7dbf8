/* The state queries (txlstate.h). */
#include "txlstate.h"

#include <string.h>

GstQuery *
txl_state_query_new(const gchar *name)
{
  return gst_query_new_custom(GST_QUERY_CUSTOM, gst_structure_new_empty(name));
}

GstStructure *
txl_state_query_structure(GstQuery *q, const gchar *name)
{
  if (GST_QUERY_TYPE(q) != GST_QUERY_CUSTOM)
    return NULL;
  const GstStructure *s = gst_query_get_structure(q);
  if (!s || !gst_structure_has_name(s, name))
    return NULL;
  return gst_query_writable_structure(q);
}

GBytes *
txl_state_ask(GstPad *pad, const gchar *name, const gchar *count_field,
              guint64 count, gboolean *busy)
{
  GstQuery *q = txl_state_query_new(TXL_STATE_SAVE);
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

void
txl_state_post(GstElement *element, const gchar *path, guint64 bytes,
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

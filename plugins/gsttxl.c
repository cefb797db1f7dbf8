/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The txl plugin: Transformer-XL scoring of text and log streams.
 * Registers txltokenizer, txlmodel, txlsampler and txlsink, and the text meta that
 * carries each line's raw bytes alongside the records. */
#include "gsttxlcommon.h"

#include <math.h>

/* ---- both metas ---------------------------------------------------------- */

/* The API type of a meta without tags, registered on first use into
 * *type (each meta's getter keeps its own). */
static GType
meta_api_type(GType *type, const char *name)
{
  static const gchar *tags[] = { NULL };
  if (g_once_init_enter(type)) {
    GType t = gst_meta_api_type_register(name, tags);
    g_once_init_leave(type, t);
  }
  return *type;
}

/* The implementation of a meta, registered on first use into *info. */
static const GstMetaInfo *
meta_info(const GstMetaInfo **info, GType api, const char *impl, gsize size,
          GstMetaInitFunction init, GstMetaFreeFunction free,
          GstMetaTransformFunction transform)
{
  if (g_once_init_enter(info)) {
    const GstMetaInfo *i =
        gst_meta_register(api, impl, size, init, free, transform);
    g_once_init_leave(info, i);
  }
  return *info;
}

/* Both metas start all zero after their GstMeta header: no text, no
 * scores (gst_buffer_add_meta has set meta->info). */
static gboolean
meta_init(GstMeta *meta, gpointer params, GstBuffer *buffer)
{
  memset(meta + 1, 0, meta->info->size - sizeof *meta);
  return TRUE;
}

/* Both metas describe a buffer as a whole: only a full copy keeps them (a
 * region of the records does not stand for all of them), field for
 * field. */
static gboolean
meta_copy(GstBuffer *dest, GstMeta *meta, GstBuffer *buffer, GQuark type,
          gpointer data)
{
  if (!GST_META_TRANSFORM_IS_COPY(type) ||
      ((GstMetaTransformCopy *)data)->region)
    return FALSE;
  GstMeta *copy = gst_buffer_add_meta(dest, meta->info, NULL);
  memcpy(copy + 1, meta + 1, meta->info->size - sizeof *meta);
  return TRUE;
}

/* ---- GstTxlTextMeta ---------------------------------------------------- */

GType
gst_txl_text_meta_api_get_type(void)
{
  static GType type = 0;
  return meta_api_type(&type, GST_TXL_TEXT_META_API_NAME);
}

static void
text_meta_free(GstMeta *meta, GstBuffer *buffer)
{
  GstTxlTextMeta *m = (GstTxlTextMeta *)meta;
  g_clear_pointer(&m->bytes, g_bytes_unref);
}

static gboolean
text_meta_transform(GstBuffer *dest, GstMeta *meta, GstBuffer *buffer,
                    GQuark type, gpointer data)
{
  if (!meta_copy(dest, meta, buffer, type, data))
    return FALSE;
  /* the copy shares the bytes */
  g_bytes_ref(((GstTxlTextMeta *)meta)->bytes);
  return TRUE;
}

const GstMetaInfo *
gst_txl_text_meta_get_info(void)
{
  static const GstMetaInfo *info = NULL;
  return meta_info(&info, GST_TXL_TEXT_META_API_TYPE,
                   GST_TXL_TEXT_META_IMPL_NAME, sizeof(GstTxlTextMeta),
                   meta_init, text_meta_free, text_meta_transform);
}

GstTxlTextMeta *
gst_buffer_add_txl_text_meta(GstBuffer *buffer, guint64 offset, GBytes *bytes)
{
  g_return_val_if_fail(GST_IS_BUFFER(buffer), NULL);
  g_return_val_if_fail(bytes != NULL, NULL);
  GstTxlTextMeta *m = (GstTxlTextMeta *)gst_buffer_add_meta(
      buffer, gst_txl_text_meta_get_info(), NULL);
  m->offset = offset;
  m->bytes = g_bytes_ref(bytes);
  return m;
}

/* ---- GstTxlLineMeta ---------------------------------------------------- */

GType
gst_txl_line_meta_api_get_type(void)
{
  static GType type = 0;
  return meta_api_type(&type, GST_TXL_LINE_META_API_NAME);
}

const GstMetaInfo *
gst_txl_line_meta_get_info(void)
{
  static const GstMetaInfo *info = NULL;
  return meta_info(&info, GST_TXL_LINE_META_API_TYPE,
                   GST_TXL_LINE_META_IMPL_NAME, sizeof(GstTxlLineMeta),
                   meta_init, NULL, meta_copy);
}

GstTxlLineMeta *
gst_buffer_add_txl_line_meta(GstBuffer *buffer, gint64 line, guint64 bytes,
                             const TxlLineScore *s)
{
  g_return_val_if_fail(GST_IS_BUFFER(buffer), NULL);
  GstTxlLineMeta *m = (GstTxlLineMeta *)gst_buffer_add_meta(
      buffer, gst_txl_line_meta_get_info(), NULL);
  m->line = line;
  m->bytes = bytes;
  m->score = *s;
  m->bpb = txl_line_bpb(s);
  m->worst = txl_line_worst(s);
  m->ref_nll = NAN;
  return m;
}

/* Snapshots of version 1 of the line-scoring elements hold line scores
 * per raw byte (before docs/line-scores.md); their lines cannot be
 * continued.  A newer version is refused by name, not as malformed: the
 * user may have a newer txl to continue it with. */
gboolean
gst_txl_part_begin(TxlReader *r, GBytes *bytes, guint32 *version,
                   const gchar *element, guint32 oldest, guint32 newest,
                   const gchar *afresh, GError **error)
{
  txl_reader_init(r, bytes);
  *version = txl_get_u32(r);
  if (!r->ok || (*version >= oldest && *version <= newest))
    return TRUE;
  if (*version == 1)
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "the snapshot's %s state is version 1, written by a txl "
                "that scored lines per raw byte; this one scores them per "
                "normalised byte with a worst part (docs/line-scores.md) "
                "and cannot continue those lines: remove the snapshot to "
                "start %s", element, afresh);
  else
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "the snapshot's %s state is version %u, written by %s txl "
                "(this one reads versions %u to %u): continue it with that "
                "txl, or remove the snapshot to start %s", element, *version,
                *version > newest ? "a newer" : "an older", oldest, newest,
                afresh);
  return FALSE;
}

/* ---- pads -------------------------------------------------------------- */

GstPad *
gst_txl_add_pad(GstElement *element, GstStaticPadTemplate *templ,
                GstPadChainFunction chain, GstPadEventFunction event,
                GstPadQueryFunction query)
{
  GstPad *pad = gst_pad_new_from_static_template(templ, templ->name_template);
  if (chain)
    gst_pad_set_chain_function(pad, chain);
  if (event)
    gst_pad_set_event_function(pad, event);
  if (query)
    gst_pad_set_query_function(pad, query);
  gst_element_add_pad(element, pad);
  return pad;
}

/* ---- plugin ------------------------------------------------------------ */

/* The elements, registered by name. */
static const struct {
  const gchar *name;
  GType (*get_type)(void);
} elements[] = {
  { "txltokenizer", gst_txl_tokenizer_get_type },
  { "txlmodel", gst_txl_model_get_type },
  { "txlsampler", gst_txl_sampler_get_type },
  { "txlsink", gst_txl_sink_get_type },
  { "txlsessions", gst_txl_sessions_get_type },
  { "txljson", gst_txl_json_get_type },
  { "txlsyslogsrc", gst_txl_syslog_src_get_type },
#if TXL_HAVE_JOURNAL
  { "txljournalsrc", gst_txl_journal_src_get_type },
#endif
};

static gboolean
plugin_init(GstPlugin *plugin)
{
  gst_txl_text_meta_get_info();
  gboolean ok = TRUE;
  for (gsize i = 0; i < G_N_ELEMENTS(elements); i++)
    ok &= gst_element_register(plugin, elements[i].name, GST_RANK_NONE,
                               elements[i].get_type());
  return ok;
}

/* GST_PLUGIN_DEFINE leaves the descriptor's reserved fields implicit */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
GST_PLUGIN_DEFINE(GST_VERSION_MAJOR, GST_VERSION_MINOR, txl,
                  "Transformer-XL language-model scoring of text and log "
                  "streams",
                  plugin_init, TXL_PLUGIN_VERSION, "LGPL", "txl",
                  "the txl source tree")
#pragma GCC diagnostic pop

/* Helpers shared by the element tests: small random models, token and
 * score records, harness plumbing.  The plugin is found through
 * GST_PLUGIN_PATH (tests/meson.build points it at build/plugins). */
#ifndef TXL_TEST_ELEMENTS_H
#define TXL_TEST_ELEMENTS_H

#include "../testutil.h"
#include "txltokens.h"

#include <gst/check/gstharness.h>
#include <gst/gst.h>

/* A word-tokenizer model: <eos>, <unk>, a few words, then w6..w299. */
G_GNUC_UNUSED static char *
el_write_word_model(guint32 seed)
{
  TxlConfig c;
  tu_small_config(&c);
  static const char *base[] = { "<eos>", "<unk>", "the", "cat", "sat", "on" };
  const char *syms[300];
  gsize lens[300];
  char *owned[300] = { 0 };
  for (int i = 0; i < 300; i++) {
    syms[i] = i < 6 ? base[i] : (owned[i] = g_strdup_printf("w%d", i));
    lens[i] = strlen(syms[i]);
  }
  g_autoptr(GError) err = NULL;
  char *dir = g_dir_make_tmp("txl-el-XXXXXX", &err);
  g_assert_no_error(err);
  char *path = g_build_filename(dir, "model.gguf", NULL);
  g_free(dir);
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&c, w);
  gguf_writer_add_string(w, "tokenizer.type", "word");
  gguf_writer_add_string_array(w, "tokenizer.tokens", syms, lens, 300);
  gguf_writer_add_u32(w, "tokenizer.eos_id", 0);
  gguf_writer_add_u32(w, "tokenizer.unk_id", 1);
  gguf_writer_add_bool(w, "tokenizer.lower_case", FALSE);
  tu_add_weights(w, &c, seed, NULL);
  g_assert_true(gguf_writer_write(w, path, &err));
  gguf_writer_free(w);
  for (int i = 0; i < 300; i++)
    g_free(owned[i]);
  return path;
}

G_GNUC_UNUSED static char *
el_write_byte_model(guint32 seed)
{
  TxlConfig c;
  tu_small_config(&c);
  return tu_write_model(&c, seed, NULL);
}

/* Text of a few hundred bytes over several lines, with words of the word
 * model, unknown words and blank lines. */
G_GNUC_UNUSED static const char el_text[] =
    "the cat sat on the w17 mat\n"
    "w6 w7 w8 w9 w10 cat cat cat\n"
    "\n"
    "  the   w99 unknownword sat\n"
    "w200 w201 w202 w203 w204 w205 w206 w207 w208 w209 w210\n"
    "on on on the the cat\n"
    "last line without an end w42 w43";

/* Every record of every buffer, in order. */
G_GNUC_UNUSED static GArray *
el_token_records(GList *buffers)
{
  GArray *a = g_array_new(FALSE, FALSE, sizeof(TxlTokenRecord));
  for (GList *it = buffers; it; it = it->next) {
    GstMapInfo map;
    g_assert_true(gst_buffer_map(it->data, &map, GST_MAP_READ));
    g_assert_cmpuint(map.size % TXL_TOKEN_RECORD_SIZE, ==, 0);
    for (gsize o = 0; o < map.size; o += TXL_TOKEN_RECORD_SIZE) {
      TxlTokenRecord r;
      txl_token_record_read(map.data + o, &r);
      g_array_append_val(a, r);
    }
    gst_buffer_unmap(it->data, &map);
  }
  return a;
}

G_GNUC_UNUSED static GArray *
el_score_records(GList *buffers)
{
  GArray *a = g_array_new(FALSE, FALSE, sizeof(TxlScoreRecord));
  for (GList *it = buffers; it; it = it->next) {
    GstMapInfo map;
    g_assert_true(gst_buffer_map(it->data, &map, GST_MAP_READ));
    g_assert_cmpuint(map.size % TXL_SCORE_RECORD_SIZE, ==, 0);
    for (gsize o = 0; o < map.size; o += TXL_SCORE_RECORD_SIZE) {
      TxlScoreRecord r;
      txl_score_record_read(map.data + o, &r);
      g_array_append_val(a, r);
    }
    gst_buffer_unmap(it->data, &map);
  }
  return a;
}

/* Pulls every buffer the harness has received (a list, oldest first). */
G_GNUC_UNUSED static GList *
el_pull_all(GstHarness *h)
{
  GList *l = NULL;
  GstBuffer *b;
  while ((b = gst_harness_try_pull(h)))
    l = g_list_prepend(l, b);
  return g_list_reverse(l);
}

G_GNUC_UNUSED static void
el_buffers_free(GList *l)
{
  g_list_free_full(l, (GDestroyNotify)gst_buffer_unref);
}

/* The text metas of the buffers, concatenated; checks they are contiguous
 * from offset 0. */
G_GNUC_UNUSED static GString *
el_text_of(GList *buffers)
{
  GType api = g_type_from_name(GST_TXL_TEXT_META_API_NAME);
  g_assert_true(api != 0);
  GString *s = g_string_new(NULL);
  for (GList *it = buffers; it; it = it->next) {
    GstTxlTextMeta *m = (GstTxlTextMeta *)gst_buffer_get_meta(it->data, api);
    if (!m)
      continue;
    g_assert_cmpuint(m->offset, ==, s->len);
    gsize n;
    const char *p = g_bytes_get_data(m->bytes, &n);
    g_string_append_len(s, p, n);
  }
  return s;
}

/* An element with its model set, in a harness (started). */
G_GNUC_UNUSED static GstHarness *
el_harness(const char *factory, const char *model, const char *first_prop,
           ...)
{
  GstElement *e = gst_element_factory_make(factory, NULL);
  g_assert_nonnull(e);
  g_object_set(e, "model", model, NULL);
  if (first_prop) {
    va_list ap;
    va_start(ap, first_prop);
    g_object_set_valist(G_OBJECT(e), first_prop, ap);
    va_end(ap);
  }
  GstHarness *h = gst_harness_new_with_element(e, "sink", "src");
  gst_object_unref(e);
  return h;
}

/* The caps txlmodel expects for a model file's tokens. */
G_GNUC_UNUSED static GstCaps *
el_token_caps(const char *model_path)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = txl_model_load(model_path, &err);
  g_assert_no_error(err);
  GstCaps *caps = gst_caps_new_simple(TXL_TOKENS_CAPS_NAME,
      "vocab-id", G_TYPE_STRING, txl_model_vocab_id(m), "n-tokens",
      G_TYPE_INT, txl_tokenizer_n_tokens(txl_model_tokenizer(m)), NULL);
  txl_model_unref(m);
  return caps;
}

/* One token buffer of records for ids[0..n), with made-up positions. */
G_GNUC_UNUSED static GstBuffer *
el_token_buffer(const int32_t *ids, const gint64 *lines, const guint32 *flags,
                gsize n, guint64 first_pos)
{
  GstBuffer *b = gst_buffer_new_allocate(NULL, n * TXL_TOKEN_RECORD_SIZE, NULL);
  GstMapInfo map;
  g_assert_true(gst_buffer_map(b, &map, GST_MAP_WRITE));
  for (gsize i = 0; i < n; i++) {
    TxlTokenRecord r = { 0 };
    r.id = ids[i];
    r.byte_len = 1;
    r.line = lines ? lines[i] : 1;
    r.byte_start = first_pos + i;
    r.flags = flags ? flags[i] : 0;
    txl_token_record_write(map.data + i * TXL_TOKEN_RECORD_SIZE, &r);
  }
  gst_buffer_unmap(b, &map);
  return b;
}

/* Drains a bus: the first error message's text (g_free), or NULL. */
G_GNUC_UNUSED static char *
el_bus_error(GstBus *bus)
{
  GstMessage *msg;
  char *text = NULL;
  while ((msg = gst_bus_pop_filtered(bus, GST_MESSAGE_ERROR))) {
    if (!text) {
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error(msg, &err, &dbg);
      text = g_strdup_printf("%s | %s", err->message, dbg ? dbg : "");
      g_error_free(err);
      g_free(dbg);
    }
    gst_message_unref(msg);
  }
  return text;
}

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Helpers shared by the element tests: small random models, token and
 * score records, harness plumbing.  The plugin is found through
 * GST_PLUGIN_PATH (tests/meson.build points it at build/plugins). */
#ifndef TXL_TEST_ELEMENTS_H
#define TXL_TEST_ELEMENTS_H

#include "../testutil.h"
#include "../tu_test.h"
#include "txltokens.h"

#include <gst/check/gstharness.h>
#include <gst/gst.h>

/* The start of every element test's main: GLib's test framework, then
 * GStreamer, then the program's TU_TESTs. */
G_GNUC_UNUSED static void
el_test_init(int *argc, char ***argv)
{
  g_test_init(argc, argv, NULL);
  gst_init(argc, argv);
  tu_add_tests();
}

/* The whole main of an element test with no set-up of its own. */
#define EL_TEST_MAIN()                                                         \
  int main(int argc, char **argv)                                              \
  {                                                                            \
    el_test_init(&argc, &argv);                                                \
    return g_test_run();                                                       \
  }

/* A word-tokenizer model: <eos>, <unk>, a few words, then w6..w299. */
G_GNUC_UNUSED static char *
el_write_word_model(guint32 seed)
{
  static const char *const base[] = { "<eos>", "<unk>", "the",
                                      "cat",   "sat",   "on" };
  return tu_write_word_model(base, seed, FALSE);
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

/* Every record of every buffer, in order: size bytes each, decoded by
 * read into elements of elem_size. */
typedef void (*ElRecordRead)(const guint8 *p, gpointer out);

G_GNUC_UNUSED static GArray *
el_records(GList *buffers, gsize size, gsize elem_size, ElRecordRead read)
{
  GArray *a = g_array_new(FALSE, TRUE, (guint)elem_size);
  for (GList *it = buffers; it; it = it->next) {
    GstMapInfo map;
    g_assert_true(gst_buffer_map(it->data, &map, GST_MAP_READ));
    g_assert_cmpuint(map.size % size, ==, 0);
    for (gsize o = 0; o < map.size; o += size) {
      g_array_set_size(a, a->len + 1);
      read(map.data + o, a->data + (a->len - 1) * elem_size);
    }
    gst_buffer_unmap(it->data, &map);
  }
  return a;
}

#define el_token_records(buffers)                                             \
  el_records((buffers), TXL_TOKEN_RECORD_SIZE, sizeof(TxlTokenRecord),        \
             (ElRecordRead)txl_token_record_read)
#define el_score_records(buffers)                                             \
  el_records((buffers), TXL_SCORE_RECORD_SIZE, sizeof(TxlScoreRecord),        \
             (ElRecordRead)txl_score_record_read)

/* A TxlScorer callback: the log-probs by stream position in the GArray of
 * float `data`, grown as positions come (elements with no position stay
 * as they were). */
G_GNUC_UNUSED static void
el_lp_by_pos(gint64 pos, int32_t token, float logprob, gpointer data)
{
  GArray *lp = data;
  if ((guint)pos >= lp->len)
    g_array_set_size(lp, pos + 1);
  g_array_index(lp, float, pos) = logprob;
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
el_harness_valist(const char *factory, const char *model,
                  const char *first_prop, va_list ap)
{
  GstElement *e = gst_element_factory_make(factory, NULL);
  g_assert_nonnull(e);
  g_object_set(e, "model", model, NULL);
  if (first_prop)
    g_object_set_valist(G_OBJECT(e), first_prop, ap);
  GstHarness *h = gst_harness_new_with_element(e, "sink", "src");
  gst_object_unref(e);
  return h;
}

G_GNUC_UNUSED static GstHarness *
el_harness(const char *factory, const char *model, const char *first_prop,
           ...)
{
  va_list ap;
  va_start(ap, first_prop);
  GstHarness *h = el_harness_valist(factory, model, first_prop, ap);
  va_end(ap);
  return h;
}

/* The caps txlmodel expects for a model file's tokens. */
G_GNUC_UNUSED static GstCaps *
el_token_caps(const char *model_path)
{
  TxlModel *m = tu_load(model_path);
  GstCaps *caps = gst_caps_new_simple(TXL_TOKENS_CAPS_NAME,
      "vocab-id", G_TYPE_STRING, txl_model_vocab_id(m), "n-tokens",
      G_TYPE_INT, txl_tokenizer_n_tokens(txl_model_tokenizer(m)), NULL);
  txl_model_unref(m);
  return caps;
}

/* A token-consuming element (txlmodel, txlsampler) in a harness, as
 * el_harness, fed the caps of its model's tokens. */
G_GNUC_UNUSED static GstHarness *
el_token_harness(const char *factory, const char *model,
                 const char *first_prop, ...)
{
  va_list ap;
  va_start(ap, first_prop);
  GstHarness *h = el_harness_valist(factory, model, first_prop, ap);
  va_end(ap);
  gst_harness_set_src_caps(h, el_token_caps(model));
  return h;
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

/* Starting e (taken) must fail: the error it posts (g_free). */
G_GNUC_UNUSED static char *
el_start_error(GstElement *e, GstState state)
{
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  g_assert_cmpint(gst_element_set_state(e, state), ==,
                  GST_STATE_CHANGE_FAILURE);
  char *msg = el_bus_error(bus);
  g_assert_nonnull(msg);
  gst_element_set_state(e, GST_STATE_NULL);
  gst_element_set_bus(e, NULL);
  gst_object_unref(bus);
  gst_object_unref(e);
  return msg;
}

/* The next message of a running pipeline among ELEMENT and also (e.g.
 * GST_MESSAGE_WARNING); NULL at the end of the stream; an error fails the
 * test. */
G_GNUC_UNUSED static GstMessage *
el_next_message(GstBus *bus, GstMessageType also)
{
  GstMessage *msg = gst_bus_timed_pop_filtered(bus, 60 * GST_SECOND,
      GST_MESSAGE_ERROR | GST_MESSAGE_EOS | GST_MESSAGE_ELEMENT | also);
  g_assert_nonnull(msg);
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_ERROR) {
    GError *e = NULL;
    gst_message_parse_error(msg, &e, NULL);
    g_error("pipeline error: %s", e->message);
  }
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_EOS)
    g_clear_pointer(&msg, gst_message_unref);
  return msg;
}

/* A pipeline from a gst-launch description, which must parse. */
G_GNUC_UNUSED static GstElement *
el_parse(const char *desc)
{
  g_autoptr(GError) err = NULL;
  GstElement *p = gst_parse_launch(desc, &err);
  g_assert_no_error(err);
  g_assert_nonnull(p);
  return p;
}

/* Stops a pipeline and drops it. */
G_GNUC_UNUSED static void
el_pipeline_free(GstElement *p)
{
  gst_element_set_state(p, GST_STATE_NULL);
  gst_object_unref(p);
}

typedef void (*ElOnMessage)(GstMessage *msg, gpointer data);

/* Plays p to its end: starting must not fail, and an error fails the test
 * (el_next_message).  Each ELEMENT message, and each of the types in
 * `also`, goes to on_message, which does not take it.  p is left playing,
 * for its elements' properties to be read. */
G_GNUC_UNUSED static void
el_play(GstElement *p, GstMessageType also, ElOnMessage on_message,
        gpointer data)
{
  GstBus *bus = gst_element_get_bus(p);
  g_assert_cmpint(gst_element_set_state(p, GST_STATE_PLAYING), !=,
                  GST_STATE_CHANGE_FAILURE);
  GstMessage *msg;
  while ((msg = el_next_message(bus, also))) {
    on_message(msg, data);
    gst_message_unref(msg);
  }
  gst_object_unref(bus);
}

/* Plays p to its end of stream or its first error (a start that fails
 * posts one): the error's text (g_free), NULL at the end of the stream.
 * Element messages named `name` go into msgs as GstStructure copies
 * (when name is given). */
G_GNUC_UNUSED static char *
el_run(GstElement *p, const char *name, GPtrArray *msgs)
{
  GstBus *bus = gst_element_get_bus(p);
  char *error = NULL;
  gst_element_set_state(p, GST_STATE_PLAYING);
  for (;;) {
    GstMessage *m = gst_bus_timed_pop(bus, 60 * GST_SECOND);
    g_assert_nonnull(m);
    GstMessageType type = GST_MESSAGE_TYPE(m);
    if (type == GST_MESSAGE_ELEMENT && name &&
        gst_structure_has_name(gst_message_get_structure(m), name))
      g_ptr_array_add(msgs, gst_structure_copy(gst_message_get_structure(m)));
    if (type == GST_MESSAGE_ERROR) {
      GError *e = NULL;
      gst_message_parse_error(m, &e, NULL);
      error = g_strdup(e->message);
      g_error_free(e);
    }
    gst_message_unref(m);
    if (type == GST_MESSAGE_EOS || type == GST_MESSAGE_ERROR)
      break;
  }
  gst_object_unref(bus);
  return error;
}

/* Runs pipelines/<name> through gst-launch-1.0 with $INPUT and $MODEL
 * filled in (its comments dropped): its standard output (g_free), or NULL
 * when there is no gst-launch-1.0 (the test is skipped). */
G_GNUC_UNUSED static char *
el_launch_pipeline(const char *name, const char *input, const char *model)
{
  g_autofree char *launch = g_find_program_in_path("gst-launch-1.0");
  if (!launch) {
    g_test_skip("no gst-launch-1.0");
    return NULL;
  }
  g_autoptr(GError) err = NULL;
  g_autofree char *file = g_build_filename(PIPELINES_DIR, name, NULL);
  g_autofree char *desc = NULL;
  g_assert_true(g_file_get_contents(file, &desc, NULL, &err));
  GString *cmd = g_string_new(NULL);
  g_auto(GStrv) rows = g_strsplit(desc, "\n", -1);
  for (guint i = 0; rows[i]; i++)
    if (rows[i][0] != '#')
      g_string_append_printf(cmd, "%s ", rows[i]);
  g_autofree char *qin = g_shell_quote(input), *qm = g_shell_quote(model);
  g_string_replace(cmd, "$INPUT", qin, 0);
  g_string_replace(cmd, "$MODEL", qm, 0);
  g_autofree char *line = g_strdup_printf("%s -q %s", launch, cmd->str);
  g_string_free(cmd, TRUE);
  g_auto(GStrv) argv = NULL;
  g_assert_true(g_shell_parse_argv(line, NULL, &argv, &err));
  char *out = NULL;
  g_autofree char *errout = NULL;
  int status;
  g_assert_true(g_spawn_sync(NULL, argv, NULL, G_SPAWN_DEFAULT, NULL, NULL,
                             &out, &errout, &status, &err));
  if (!g_spawn_check_wait_status(status, NULL))
    g_error("%s failed: %s", line, errout);
  return out;
}

#endif

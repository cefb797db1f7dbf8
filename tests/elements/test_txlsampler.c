/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsampler: the text it generates is what lib's TxlGenerator produces
 * for the same context, settings and seed (bit for bit); max-tokens,
 * per-line continuations; a vocabulary mismatch fails negotiation. */
#include "elements.h"

#include "generate.h"

static GString *
run(const char *model, const int32_t *ids, const gint64 *lines,
    const guint32 *flags, gsize n, int *n_buffers, const char *first_prop,
    ...)
{
  va_list ap;
  va_start(ap, first_prop);
  GstHarness *h = el_harness_valist("txlsampler", model, first_prop, ap);
  va_end(ap);
  gst_harness_set_src_caps(h, el_token_caps(model));
  g_assert_cmpint(gst_harness_push(h, el_token_buffer(ids, lines, flags, n, 0)),
                  ==, GST_FLOW_OK);
  g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  GList *bufs = el_pull_all(h);
  GString *s = g_string_new(NULL);
  *n_buffers = 0;
  for (GList *it = bufs; it; it = it->next) {
    GstMapInfo map;
    g_assert_true(gst_buffer_map(it->data, &map, GST_MAP_READ));
    g_string_append_len(s, (const char *)map.data, map.size);
    gst_buffer_unmap(it->data, &map);
    (*n_buffers)++;
  }
  el_buffers_free(bufs);
  gst_harness_teardown(h);
  return s;
}

TU_TEST("/txlsampler/matches-generator", test_matches_generator)
{
  g_autoptr(TuPath) m = el_write_byte_model(51);
  const int32_t ids[6] = { 'h', 'e', 'l', 'l', 'o', '\n' };
  int nb;
  GString *a = run(m, ids, NULL, NULL, 6, &nb, "max-tokens", 40, "seed",
                   (guint64)9, "temperature", 0.9, "top-k", 50, NULL);
  GString *b = run(m, ids, NULL, NULL, 6, &nb, "max-tokens", 40, "seed",
                   (guint64)9, "temperature", 0.9, "top-k", 50, NULL);
  g_assert_cmpuint(a->len, ==, 40); /* bytes: one token, one byte */
  g_assert_cmpmem(a->str, a->len, b->str, b->len);

  /* the same through lib directly */
  g_autoptr(GError) err = NULL;
  TxlModel *model = tu_load(m);
  TxlSamplerOptions so = { 0.9f, 50, 1.0f, 9 };
  TxlGenerator *g = txl_generator_new(model, NULL, &so, &err);
  g_assert_true(txl_generator_feed(g, ids, 6, &err));
  char want[40];
  for (int i = 0; i < 40; i++) {
    int32_t id;
    g_assert_true(txl_generator_next(g, &id, &err));
    want[i] = (char)id;
  }
  g_assert_cmpmem(a->str, a->len, want, 40);
  txl_generator_free(g);
  txl_model_unref(model);

  GString *c = run(m, ids, NULL, NULL, 6, &nb, "max-tokens", 40, "seed",
                   (guint64)10, "temperature", 0.9, "top-k", 50, NULL);
  g_assert_false(c->len == a->len && memcmp(c->str, a->str, a->len) == 0);
  g_string_free(a, TRUE);
  g_string_free(b, TRUE);
  g_string_free(c, TRUE);
}

TU_TEST("/txlsampler/per-line", test_per_line)
{
  g_autoptr(TuPath) m = el_write_byte_model(52);
  const int32_t ids[6] = { 'a', 'b', '\n', 'c', 'd', '\n' };
  const gint64 lines[6] = { 1, 1, 1, 2, 2, 2 };
  const guint32 flags[6] = { 0, 0, TXL_RECORD_LINE_END, 0, 0,
                             TXL_RECORD_LINE_END };
  int nb;
  GString *s = run(m, ids, lines, flags, 6, &nb, "max-tokens", 7, "per-line",
                   TRUE, NULL);
  g_assert_cmpint(nb, ==, 2); /* one continuation per line, none at EOS */
  g_assert_cmpuint(s->len, ==, 14);
  g_string_free(s, TRUE);
}

TU_TEST("/txlsampler/vocab-mismatch", test_vocab_mismatch)
{
  g_autoptr(TuPath) m = el_write_byte_model(53);
  g_autoptr(TuPath) w = el_write_word_model(53);
  GstHarness *h = el_harness("txlsampler", m, NULL);
  gst_harness_set_src_caps(h, el_token_caps(w)); /* another vocabulary */
  const int32_t ids[2] = { 2, 3 };
  g_assert_cmpint(gst_harness_push(h, el_token_buffer(ids, NULL, NULL, 2, 0)),
                  !=, GST_FLOW_OK);
  gst_harness_teardown(h);
}

/* A buffer that is not a whole number of token records is an error, not
 * a prompt silently cut short. */
TU_TEST("/txlsampler/torn-record", test_torn_record)
{
  g_autoptr(TuPath) m = el_write_byte_model(55);
  GstHarness *h = el_token_harness("txlsampler", m, NULL);
  const int32_t ids[2] = { 2, 3 };
  GstBuffer *b = el_token_buffer(ids, NULL, NULL, 2, 0);
  gst_buffer_resize(b, 0, TXL_TOKEN_RECORD_SIZE + 5);
  g_assert_cmpint(gst_harness_push(h, b), ==, GST_FLOW_ERROR);
  gst_harness_teardown(h);
}

/* stop-at-eos: a word vocabulary's <eos> (id 0, decoded as a line end)
 * ends the continuation and is not written. */
TU_TEST("/txlsampler/stop-at-eos", test_stop_at_eos)
{
  g_autoptr(TuPath) w = el_write_word_model(54);
  g_autoptr(GError) err = NULL;
  TxlModel *m = txl_model_load(w, &err);
  g_assert_cmpint(txl_tokenizer_eos_id(txl_model_tokenizer(m)), ==, 0);
  txl_model_unref(m);
  const int32_t ids[3] = { 2, 3, 4 };
  for (guint64 seed = 1; seed <= 4; seed++) {
    int nb;
    GString *s = run(w, ids, NULL, NULL, 3, &nb, "max-tokens", 300, "seed",
                     seed, NULL);
    g_assert_null(memchr(s->str, '\n', s->len));
    g_string_free(s, TRUE);
  }
  g_autoptr(TuPath) b = el_write_byte_model(54);
  m = txl_model_load(b, &err);
  g_assert_cmpint(txl_tokenizer_eos_id(txl_model_tokenizer(m)), ==, -1);
  txl_model_unref(m);
}

EL_TEST_MAIN()

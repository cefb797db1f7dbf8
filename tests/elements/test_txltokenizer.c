/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txltokenizer: the same tokens whatever the buffer boundaries, line ends
 * flagged, the input text carried in order, junk input, bad models. */
#include "elements.h"

/* An encoder callback: token records into the GArray `recs`. */
static void
direct_token(int32_t id, gint64 line, gsize start, gsize end, gpointer recs)
{
  TxlTokenRecord r = { 0 };
  r.id = id;
  r.line = line;
  r.byte_start = start;
  r.byte_len = (guint32)(end - start);
  g_array_append_val((GArray *)recs, r);
}

/* What the library's encoder gives for the whole text at once. */
static GArray *
direct_tokens(const char *model, const char *text, gsize len)
{
  TxlModel *m = tu_load(model);
  GArray *recs = g_array_new(FALSE, FALSE, sizeof(TxlTokenRecord));
  TxlEncoder *e = txl_encoder_new(txl_model_tokenizer(m), direct_token, recs);
  txl_encoder_push(e, text, len);
  txl_encoder_finish(e);
  txl_encoder_free(e);
  txl_model_unref(m);
  return recs;
}

/* Runs text through txltokenizer in pieces of `piece` bytes (0: whole). */
static GList *
tokenize(const char *model, const char *caps, const char *text, gsize len,
         gsize piece)
{
  GstHarness *h = el_harness("txltokenizer", model, NULL);
  gst_harness_set_src_caps_str(h, caps);
  if (piece == 0)
    piece = len;
  for (gsize o = 0; o < len; o += piece) {
    gsize n = MIN(piece, len - o);
    g_assert_cmpint(gst_harness_push(h, gst_buffer_new_memdup(text + o, n)),
                    ==, GST_FLOW_OK);
  }
  g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  GList *out = el_pull_all(h);
  gst_harness_teardown(h);
  return out;
}

static void
assert_same_tokens(GArray *a, GArray *b, gboolean flags)
{
  g_assert_cmpuint(a->len, ==, b->len);
  for (guint i = 0; i < a->len; i++) {
    TxlTokenRecord *x = &g_array_index(a, TxlTokenRecord, i);
    TxlTokenRecord *y = &g_array_index(b, TxlTokenRecord, i);
    g_assert_cmpint(x->id, ==, y->id);
    g_assert_cmpint(x->line, ==, y->line);
    g_assert_cmpuint(x->byte_start, ==, y->byte_start);
    g_assert_cmpuint(x->byte_len, ==, y->byte_len);
    if (flags)
      g_assert_cmpuint(x->flags, ==, y->flags);
  }
}

/* Every line's last token, and only it, says so; except that the last
 * token of an unterminated last line may have gone out before EOS told
 * that its line was over. */
static void
assert_line_ends(GArray *a)
{
  for (guint i = 0; i + 1 < a->len; i++) {
    TxlTokenRecord *r = &g_array_index(a, TxlTokenRecord, i);
    gboolean last = g_array_index(a, TxlTokenRecord, i + 1).line > r->line;
    g_assert_cmpint(!!(r->flags & TXL_RECORD_LINE_END), ==, last);
  }
}

static void
check_splits(const char *model)
{
  gsize len = strlen(el_text);
  GArray *want = direct_tokens(model, el_text, len);
  g_assert_cmpuint(want->len, >, 20);
  GList *whole = tokenize(model, "text/x-raw,format=utf8", el_text, len, 0);
  GArray *w = el_token_records(whole);
  assert_same_tokens(w, want, FALSE);
  assert_line_ends(w);
  g_autoptr(GString) text = el_text_of(whole);
  g_assert_cmpstr(text->str, ==, el_text);

  gsize pieces[] = { 1, 2, 7, 64 };
  for (guint k = 0; k < G_N_ELEMENTS(pieces); k++) {
    GList *bufs = tokenize(model, "text/x-raw,format=utf8", el_text, len,
                           pieces[k]);
    GArray *got = el_token_records(bufs);
    assert_same_tokens(got, w, TRUE);
    g_autoptr(GString) t = el_text_of(bufs);
    g_assert_cmpstr(t->str, ==, el_text);
    g_array_unref(got);
    el_buffers_free(bufs);
  }
  g_array_unref(w);
  g_array_unref(want);
  el_buffers_free(whole);
}

TU_TEST("/txltokenizer/splits/bytes", test_splits_bytes)
{
  g_autoptr(TuPath) m = el_write_byte_model(1);
  check_splits(m);
}

TU_TEST("/txltokenizer/splits/words", test_splits_words)
{
  g_autoptr(TuPath) m = el_write_word_model(1);
  check_splits(m);
}

TU_TEST("/txltokenizer/caps", test_caps)
{
  g_autoptr(TuPath) m = el_write_word_model(2);
  GstHarness *h = el_harness("txltokenizer", m, NULL);
  gst_harness_set_src_caps_str(h, "application/octet-stream");
  g_assert_cmpint(gst_harness_push(h, gst_buffer_new_memdup("the cat\n", 8)),
                  ==, GST_FLOW_OK);
  GstCaps *caps = gst_pad_get_current_caps(h->sinkpad);
  g_assert_nonnull(caps);
  GstCaps *want = el_token_caps(m);
  g_assert_true(gst_caps_is_equal(caps, want));
  gst_caps_unref(want);
  gst_caps_unref(caps);
  gst_harness_teardown(h);
}

TU_TEST("/txltokenizer/junk", test_junk)
{
  GRand *r = g_rand_new_with_seed(7);
  guint8 junk[3000];
  for (gsize i = 0; i < sizeof junk; i++)
    junk[i] = (guint8)g_rand_int_range(r, 0, 256);
  junk[10] = 0;
  junk[11] = '\n';
  g_rand_free(r);
  for (int kind = 0; kind < 2; kind++) {
    g_autoptr(TuPath) m = kind ? el_write_word_model(3) : el_write_byte_model(3);
    g_autoptr(GArray) want = direct_tokens(m, (const char *)junk, sizeof junk);
    GList *bufs = tokenize(m, "application/octet-stream", (const char *)junk,
                           sizeof junk, 333);
    g_autoptr(GArray) got = el_token_records(bufs);
    assert_same_tokens(got, want, FALSE);
    if (!kind) {
      g_assert_cmpuint(got->len, ==, sizeof junk);
      for (guint i = 0; i < got->len; i++)
        g_assert_cmpint(g_array_index(got, TxlTokenRecord, i).id, ==, junk[i]);
    }
    g_autoptr(GString) t = el_text_of(bufs);
    g_assert_cmpmem(t->str, t->len, junk, sizeof junk);
    el_buffers_free(bufs);
  }
}

/* A new STREAM_START ends the old stream (its pending word comes out) and
 * the next stream counts lines and bytes from the start again. */
TU_TEST("/txltokenizer/stream-start", test_stream_start)
{
  g_autoptr(TuPath) m = el_write_word_model(4);
  GstHarness *h = el_harness("txltokenizer", m, NULL);
  gst_harness_set_src_caps_str(h, "text/x-raw,format=utf8");
  gst_harness_push(h, gst_buffer_new_memdup("the cat\nsat", 11));
  GList *first = el_pull_all(h);
  GArray *a = el_token_records(first);
  g_assert_cmpuint(a->len, ==, 3); /* the cat <eos>; "sat" is pending */
  g_assert_true(gst_harness_push_event(h, gst_event_new_stream_start("two")));
  GList *flushed = el_pull_all(h);
  GArray *b = el_token_records(flushed);
  g_assert_cmpuint(b->len, ==, 2); /* sat <eos> */
  g_assert_cmpint(g_array_index(b, TxlTokenRecord, 0).id, ==, 4);
  g_assert_cmpint(g_array_index(b, TxlTokenRecord, 1).id, ==, 0);
  g_assert_true(g_array_index(b, TxlTokenRecord, 1).flags &
                TXL_RECORD_LINE_END);
  GstSegment seg;
  gst_segment_init(&seg, GST_FORMAT_TIME);
  g_assert_true(gst_harness_push_event(h, gst_event_new_segment(&seg)));
  gst_harness_push(h, gst_buffer_new_memdup("cat\n", 4));
  GList *second = el_pull_all(h);
  GArray *c = el_token_records(second);
  g_assert_cmpuint(c->len, ==, 2);
  g_assert_cmpint(g_array_index(c, TxlTokenRecord, 0).line, ==, 1);
  g_assert_cmpuint(g_array_index(c, TxlTokenRecord, 0).byte_start, ==, 0);
  g_autoptr(GString) t = el_text_of(second);
  g_assert_cmpstr(t->str, ==, "cat\n");
  g_array_unref(a);
  g_array_unref(b);
  g_array_unref(c);
  el_buffers_free(first);
  el_buffers_free(flushed);
  el_buffers_free(second);
  gst_harness_teardown(h);
}

/* Missing and corrupt model files (also one TXL_MODEL names when the
 * property is unset): an element error, no crash. */
static void
check_bad_model(const char *path, const char *needle)
{
  GstElement *e = gst_element_factory_make("txltokenizer", NULL);
  if (path)
    g_object_set(e, "model", path, NULL);
  g_autofree char *msg = el_start_error(e, GST_STATE_PLAYING);
  if (!strstr(msg, needle))
    g_error("error '%s' does not mention '%s'", msg, needle);
}

TU_TEST("/txltokenizer/bad-model", test_bad_model)
{
  check_bad_model("/nonexistent/model.gguf", "/nonexistent/model.gguf");
  /* unset: the bundled model, here the one TXL_MODEL names */
  g_setenv("TXL_MODEL", "/nonexistent/env.gguf", TRUE);
  check_bad_model(NULL, "/nonexistent/env.gguf");
  g_unsetenv("TXL_MODEL");
  g_autoptr(GError) err = NULL;
  char *dir = g_dir_make_tmp("txl-el-XXXXXX", &err);
  g_autofree char *junk = g_build_filename(dir, "junk.gguf", NULL);
  g_assert_true(g_file_set_contents(junk, "GGUF this is no model", -1, &err));
  check_bad_model(junk, "junk.gguf");
  /* a valid model cut in half */
  g_autoptr(TuPath) m = el_write_byte_model(5);
  gchar *blob;
  gsize len;
  g_assert_true(g_file_get_contents(m, &blob, &len, &err));
  g_autofree char *cut = g_build_filename(dir, "cut.gguf", NULL);
  g_assert_true(g_file_set_contents(cut, blob, len / 2, &err));
  check_bad_model(cut, "cut.gguf");
  g_free(blob);
  g_remove(junk);
  g_remove(cut);
  g_rmdir(dir);
  g_free(dir);
}

EL_TEST_MAIN()

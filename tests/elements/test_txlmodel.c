/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlmodel: log-probs bit for bit those of TxlScorer on the same ids,
 * whatever the buffer boundaries; flush-on-newline; caps checks; resets;
 * latency; and the process-wide model cache. */
#include "elements.h"

/* the cache is plain C over libtxl: tested here on its own */
#include "../../plugins/txlcache.c"

/* Scores ids with a TxlScorer directly; flush_at[i]: call finish after i.
 * The log-probs by position ([0] unused). */
static GArray *
direct_scores(const char *model, const TxlStreamOptions *o, int segment,
              const int32_t *ids, gsize n, const gboolean *flush_at)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = tu_load(model);
  GArray *lp = g_array_new(FALSE, TRUE, sizeof(float));
  TxlScorer *s = txl_scorer_new(m, o, segment, el_lp_by_pos, lp, &err);
  g_assert_no_error(err);
  for (gsize i = 0; i < n; i++) {
    g_assert_true(txl_scorer_push(s, &ids[i], 1, &err));
    if (flush_at && flush_at[i])
      g_assert_true(txl_scorer_finish(s, &err));
  }
  g_assert_true(txl_scorer_finish(s, &err));
  txl_scorer_free(s);
  txl_model_unref(m);
  return lp;
}

#define N 97

/* N random byte tokens with their lines and line-end flags, as the
 * tokenizer would send them. */
typedef struct {
  int32_t ids[N];
  gint64 lines[N];
  guint32 flags[N];
} Input;

static void
make_input(Input *in, guint32 seed)
{
  GRand *r = g_rand_new_with_seed(seed);
  gint64 line = 1;
  for (gsize i = 0; i < N; i++) {
    in->ids[i] = g_rand_int_range(r, 0, 256);
    in->lines[i] = line;
    in->flags[i] = 0;
    if (g_rand_int_range(r, 0, 6) == 0 || i + 1 == N) {
      in->flags[i] = TXL_RECORD_LINE_END;
      line++;
    }
  }
  g_rand_free(r);
}

/* Runs the input through txlmodel in buffers of `piece` tokens. */
static GArray *
run_model(GstHarness *h, const char *model, const Input *in, gsize piece)
{
  GstCaps *caps = el_token_caps(model);
  gst_harness_set_src_caps(h, caps);
  for (gsize o = 0; o < N; o += piece) {
    gsize k = MIN(piece, N - o);
    g_assert_cmpint(gst_harness_push(h, el_token_buffer(in->ids + o,
                                                        in->lines + o,
                                                        in->flags + o, k, o)),
                    ==, GST_FLOW_OK);
  }
  g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  GList *bufs = el_pull_all(h);
  GArray *recs = el_score_records(bufs);
  el_buffers_free(bufs);
  return recs;
}

/* The records of the whole input: its ids, lines and line ends, and
 * want's log-probs bit for bit. */
static void
assert_scores(GArray *recs, GArray *want, const Input *in)
{
  g_assert_cmpuint(recs->len, ==, N);
  for (guint i = 0; i < N; i++) {
    TxlScoreRecord *r = &g_array_index(recs, TxlScoreRecord, i);
    g_assert_cmpint(r->pos, ==, i);
    g_assert_cmpint(r->id, ==, in->ids[i]);
    g_assert_cmpint(r->line, ==, in->lines[i]);
    g_assert_cmpuint(r->byte_start, ==, i);
    g_assert_cmpuint(r->flags & TXL_RECORD_LINE_END, ==, in->flags[i]);
    if (i == 0) {
      g_assert_true(isnan(r->logprob));
      g_assert_true(r->flags & TXL_RECORD_FIRST);
    } else {
      float w = g_array_index(want, float, i);
      if (memcmp(&r->logprob, &w, sizeof w) != 0)
        g_error("token %u: element %.9g, scorer %.9g", i, r->logprob, w);
    }
  }
}

TU_TEST("/txlmodel/exact", test_exact)
{
  g_autoptr(TuPath) m = el_write_byte_model(11);
  Input in;
  make_input(&in, 3);
  GArray *want = direct_scores(m, NULL, 0, in.ids, N, NULL);
  gsize pieces[] = { N, 1, 3, 7, 50 };
  for (guint k = 0; k < G_N_ELEMENTS(pieces); k++) {
    GstHarness *h = el_harness("txlmodel", m, NULL);
    GArray *recs = run_model(h, m, &in, pieces[k]);
    assert_scores(recs, want, &in);
    for (guint i = 0; i < recs->len; i++)
      g_assert_false(g_array_index(recs, TxlScoreRecord, i).flags &
                     TXL_RECORD_PARTIAL);
    g_array_unref(recs);
    gst_harness_teardown(h);
  }
  g_array_unref(want);
}

/* segment, mem-len, same-length and clamp-len reach the scorer */
TU_TEST("/txlmodel/settings", test_settings)
{
  g_autoptr(TuPath) m = el_write_byte_model(12);
  Input in;
  make_input(&in, 4);
  TxlStreamOptions o = { 6, 3, 1, 0, TXL_MEMORY_KV };
  GArray *want = direct_scores(m, &o, 4, in.ids, N, NULL);
  GArray *dflt = direct_scores(m, NULL, 0, in.ids, N, NULL);
  GstHarness *h = el_harness("txlmodel", m, "segment", 4, "mem-len", 6,
                             "same-length", 1, "clamp-len", 3, NULL);
  GArray *recs = run_model(h, m, &in, 5);
  assert_scores(recs, want, &in);
  /* and they do change the numbers */
  g_assert_true(memcmp(want->data, dflt->data, N * sizeof(float)) != 0);
  g_array_unref(recs);
  g_array_unref(want);
  g_array_unref(dflt);
  gst_harness_teardown(h);
}

/* flush-on-newline scores the partial segment at each line end: the same
 * as a scorer finished at every line end, different from offline. */
TU_TEST("/txlmodel/flush-on-newline", test_flush_on_newline)
{
  g_autoptr(TuPath) m = el_write_byte_model(13);
  Input in;
  gboolean at[N];
  make_input(&in, 5);
  for (gsize i = 0; i < N; i++)
    at[i] = in.flags[i] != 0;
  TxlStreamOptions o = { 4, -1, -1, 0, TXL_MEMORY_KV };
  GArray *want = direct_scores(m, &o, 0, in.ids, N, at);
  GArray *offline = direct_scores(m, &o, 0, in.ids, N, NULL);
  g_assert_true(memcmp(want->data, offline->data, N * sizeof(float)) != 0);
  gsize pieces[] = { N, 1, 4 };
  for (guint k = 0; k < G_N_ELEMENTS(pieces); k++) {
    GstHarness *h = el_harness("txlmodel", m, "mem-len", 4,
                               "flush-on-newline", TRUE, NULL);
    GstCaps *caps = el_token_caps(m);
    gst_harness_set_src_caps(h, caps);
    /* each line's scores are out as soon as its line end is in */
    GArray *recs = g_array_new(FALSE, FALSE, sizeof(TxlScoreRecord));
    for (gsize o2 = 0; o2 < N; o2 += pieces[k]) {
      gsize n = MIN(pieces[k], N - o2);
      GstBuffer *b = el_token_buffer(in.ids + o2, in.lines + o2,
                                     in.flags + o2, n, o2);
      g_assert_cmpint(gst_harness_push(h, b), ==, GST_FLOW_OK);
      GList *bufs = el_pull_all(h);
      GArray *got = el_score_records(bufs);
      g_array_append_vals(recs, got->data, got->len);
      g_array_unref(got);
      el_buffers_free(bufs);
      gsize last_end = 0;
      for (gsize i = 0; i < o2 + n; i++)
        if (in.flags[i])
          last_end = i + 1;
      g_assert_cmpuint(recs->len, >=, last_end);
    }
    g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    GList *bufs = el_pull_all(h);
    GArray *rest = el_score_records(bufs);
    g_array_append_vals(recs, rest->data, rest->len);
    assert_scores(recs, want, &in);
    gboolean any_partial = FALSE;
    for (guint i = 0; i < recs->len; i++)
      any_partial |= !!(g_array_index(recs, TxlScoreRecord, i).flags &
                        TXL_RECORD_PARTIAL);
    g_assert_true(any_partial);
    g_array_unref(rest);
    el_buffers_free(bufs);
    g_array_unref(recs);
    gst_harness_teardown(h);
  }
  g_array_unref(want);
  g_array_unref(offline);
}

/* Tokens of another vocabulary: negotiation fails, naming both ids. */
TU_TEST("/txlmodel/caps-mismatch", test_caps_mismatch)
{
  g_autoptr(TuPath) bytes = el_write_byte_model(14);
  g_autoptr(TuPath) words = el_write_word_model(14);
  GstCaps *wcaps = el_token_caps(words);
  GstCaps *bcaps = el_token_caps(bytes);
  const char *wid =
      gst_structure_get_string(gst_caps_get_structure(wcaps, 0), "vocab-id");
  const char *bid =
      gst_structure_get_string(gst_caps_get_structure(bcaps, 0), "vocab-id");
  g_assert_cmpstr(wid, !=, bid);

  GstHarness *h = el_harness("txlmodel", bytes, NULL);
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  g_assert_true(gst_harness_push_event(h, gst_event_new_stream_start("s")));
  /* a refused sticky event is still stored: its push may report success */
  gst_harness_push_event(h, gst_event_new_caps(wcaps));
  g_autofree char *msg = el_bus_error(bus);
  g_assert_nonnull(msg);
  g_assert_nonnull(strstr(msg, wid));
  g_assert_nonnull(strstr(msg, bid));
  GstSegment seg;
  gst_segment_init(&seg, GST_FORMAT_TIME);
  gst_harness_push_event(h, gst_event_new_segment(&seg));
  int32_t id = 3;
  g_assert_cmpint(gst_harness_push(h, el_token_buffer(&id, NULL, NULL, 1, 0)),
                  ==, GST_FLOW_NOT_NEGOTIATED);
  gst_element_set_bus(h->element, NULL);
  gst_object_unref(bus);
  gst_harness_teardown(h);

  /* the caps query says what the model wants */
  h = el_harness("txlmodel", bytes, NULL);
  GstCaps *q = gst_pad_peer_query_caps(h->srcpad, NULL);
  g_assert_true(gst_caps_is_equal(q, bcaps));
  gst_caps_unref(q);
  /* another model with the same vocabulary takes the tokens */
  gst_harness_teardown(h);
  g_autoptr(TuPath) bytes2 = el_write_byte_model(15);
  h = el_harness("txlmodel", bytes2, NULL);
  gst_harness_set_src_caps(h, gst_caps_ref(bcaps));
  gst_harness_teardown(h);

  gst_caps_unref(bcaps);
  gst_caps_unref(wcaps);
}

TU_TEST("/txlmodel/bad-model", test_bad_model)
{
  /* unset: the bundled model, here the one TXL_MODEL names */
  const char *paths[] = { "/nonexistent/m.gguf", NULL };
  g_setenv("TXL_MODEL", "/nonexistent/env.gguf", TRUE);
  for (int k = 0; k < 2; k++) {
    GstElement *e = gst_element_factory_make("txlmodel", NULL);
    if (paths[k])
      g_object_set(e, "model", paths[k], NULL);
    g_autofree char *msg = el_start_error(e, GST_STATE_PLAYING);
    g_assert_nonnull(strstr(msg, paths[k] ? paths[k]
                                          : "/nonexistent/env.gguf"));
  }
  g_unsetenv("TXL_MODEL");
  /* impossible settings: an error when starting, not a crash */
  g_autoptr(TuPath) m = el_write_byte_model(16);
  GstElement *e = gst_element_factory_make("txlmodel", NULL);
  g_object_set(e, "model", m, "mem-len", 0, "same-length", 1, NULL);
  g_autofree char *msg = el_start_error(e, GST_STATE_PAUSED);
  g_assert_nonnull(strstr(msg, "mem_len"));
}

/* A model with an inf or NaN weight does not start: an element error that
 * names the tensor, not a stream of inf and null scores. */
TU_TEST("/txlmodel/non-finite-model", test_non_finite_model)
{
  const float bad[] = { INFINITY, NAN };
  for (int k = 0; k < 2; k++) {
    char *m = el_write_byte_model(16);
    tu_poison_weight(m, "blk.0.ffn_up.weight", 9, bad[k]);
    GstElement *e = gst_element_factory_make("txlmodel", NULL);
    g_object_set(e, "model", m, NULL);
    g_autofree char *msg = el_start_error(e, GST_STATE_PLAYING);
    g_assert_nonnull(strstr(msg, "'blk.0.ffn_up.weight' holds"));
    g_assert_nonnull(strstr(msg, k == 0 ? "inf at index 9" : "NaN at index 9"));
    tu_remove(m);
    g_free(m);
  }
}

/* A buffer that is not whole records, and an id outside the vocabulary:
 * element errors. */
TU_TEST("/txlmodel/bad-input", test_bad_input)
{
  g_autoptr(TuPath) m = el_write_byte_model(17);
  GstHarness *h = el_token_harness("txlmodel", m, NULL);
  g_assert_cmpint(gst_harness_push(h, gst_buffer_new_memdup("abc", 3)), ==,
                  GST_FLOW_ERROR);
  gst_harness_teardown(h);
  h = el_harness("txlmodel", m, NULL);
  gst_harness_set_src_caps(h, el_token_caps(m));
  int32_t ids[3] = { 1, 2, 100000 };
  g_assert_cmpint(gst_harness_push(h, el_token_buffer(ids, NULL, NULL, 3, 0)),
                  ==, GST_FLOW_ERROR);
  gst_harness_teardown(h);
}

/* FLUSH_STOP and a new STREAM_START forget the memory: the same tokens
 * again give the same scores, the first one NaN again. */
TU_TEST("/txlmodel/resets", test_resets)
{
  g_autoptr(TuPath) m = el_write_byte_model(18);
  Input in;
  make_input(&in, 6);
  GArray *want = direct_scores(m, NULL, 0, in.ids, N, NULL);
  for (int mode = 0; mode < 3; mode++) {
    GstHarness *h = el_token_harness("txlmodel", m, "reset-on-stream-start",
                                     mode != 2, NULL);
    gst_harness_push(h, el_token_buffer(in.ids, in.lines, in.flags, 40, 0));
    el_buffers_free(el_pull_all(h));
    if (mode == 0) {
      g_assert_true(gst_harness_push_event(h, gst_event_new_flush_start()));
      g_assert_true(gst_harness_push_event(h, gst_event_new_flush_stop(TRUE)));
    } else {
      g_assert_true(gst_harness_push_event(h, gst_event_new_stream_start("2")));
    }
    GstSegment seg;
    gst_segment_init(&seg, GST_FORMAT_TIME);
    gst_harness_push_event(h, gst_event_new_segment(&seg));
    el_buffers_free(el_pull_all(h));
    gst_harness_push(h, el_token_buffer(in.ids, in.lines, in.flags, N, 0));
    g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    GList *bufs = el_pull_all(h);
    GArray *recs = el_score_records(bufs);
    if (mode < 2) {
      assert_scores(recs, want, &in);
    } else {
      /* memory carried over: the first token is predicted this time */
      g_assert_cmpuint(recs->len, ==, N);
      TxlScoreRecord *r0 = &g_array_index(recs, TxlScoreRecord, 0);
      g_assert_false(isnan(r0->logprob));
      g_assert_false(r0->flags & TXL_RECORD_FIRST);
    }
    g_array_unref(recs);
    el_buffers_free(bufs);
    gst_harness_teardown(h);
  }
  g_array_unref(want);
}

TU_TEST("/txlmodel/latency", test_latency)
{
  g_autoptr(TuPath) m = el_write_byte_model(19);
  GstHarness *h = el_token_harness("txlmodel", m, NULL);
  gst_harness_set_upstream_latency(h, 20 * GST_MSECOND);
  GstQuery *q = gst_query_new_latency();
  g_assert_true(gst_pad_peer_query(h->sinkpad, q));
  gboolean live;
  GstClockTime min, max;
  gst_query_parse_latency(q, &live, &min, &max);
  g_assert_true(live);
  g_assert_cmpuint(min, ==, 20 * GST_MSECOND);
  g_assert_cmpuint(max, ==, GST_CLOCK_TIME_NONE);
  gst_query_unref(q);
  gst_harness_teardown(h);
}

/* The text meta goes through, cut at the last scored token. */
TU_TEST("/txlmodel/text", test_text)
{
  g_autoptr(TuPath) m = el_write_byte_model(20);
  const char *text = "ab\ncdefgh\nij";
  gsize n = strlen(text);
  GstHarness *h = el_token_harness("txlmodel", m, NULL);
  int32_t ids[16];
  gint64 lines[16];
  for (gsize i = 0; i < n; i++) {
    ids[i] = (guchar)text[i];
    lines[i] = i < 3 ? 1 : i < 10 ? 2 : 3;
  }
  GstBuffer *b = el_token_buffer(ids, lines, NULL, n, 0);
  GBytes *bytes = g_bytes_new_static(text, n);
  gst_buffer_add_meta(b, gst_meta_get_info(GST_TXL_TEXT_META_IMPL_NAME), NULL);
  GstTxlTextMeta *meta = (GstTxlTextMeta *)gst_buffer_get_meta(
      b, g_type_from_name(GST_TXL_TEXT_META_API_NAME));
  meta->offset = 0;
  meta->bytes = bytes;
  gst_harness_push(h, b);
  /* segment 5: tokens 1..5 scored, then 6..10; text up to token 10's end */
  GList *bufs = el_pull_all(h);
  GString *got = el_text_of(bufs);
  GArray *recs = el_score_records(bufs);
  g_assert_cmpuint(recs->len, ==, 11);
  g_assert_cmpstr(got->str, ==, "ab\ncdefgh\ni");
  g_string_free(got, TRUE);
  g_array_unref(recs);
  g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  bufs = g_list_concat(bufs, el_pull_all(h));
  got = el_text_of(bufs);
  g_assert_cmpstr(got->str, ==, text); /* the rest at EOS, contiguous */
  g_string_free(got, TRUE);
  el_buffers_free(bufs);
  gst_harness_teardown(h);
}

TU_TEST("/txlmodel/cache", test_cache)
{
  g_autoptr(TuPath) m = el_write_byte_model(21);
  g_autoptr(GError) err = NULL;
  g_assert_cmpuint(txl_model_cache_size(), ==, 0);
  TxlModel *a = txl_model_cache_acquire(m, &err);
  g_assert_no_error(err);
  g_autofree char *dir = g_path_get_dirname(m);
  g_autofree char *other = g_build_filename(dir, ".", "model.gguf", NULL);
  TxlModel *b = txl_model_cache_acquire(other, &err);
  g_assert_no_error(err);
  g_assert_true(a == b);
  g_assert_cmpuint(txl_model_cache_size(), ==, 1);
  /* a file replaced on disk is a new model */
  g_autoptr(TuPath) m2 = el_write_byte_model(22);
  g_assert_cmpint(g_rename(m2, m), ==, 0);
  TxlModel *c = txl_model_cache_acquire(m, &err);
  g_assert_no_error(err);
  g_assert_true(c != a);
  g_assert_cmpuint(txl_model_cache_size(), ==, 2);
  txl_model_cache_release(a);
  txl_model_cache_release(b);
  g_assert_cmpuint(txl_model_cache_size(), ==, 1);
  txl_model_cache_release(c);
  g_assert_cmpuint(txl_model_cache_size(), ==, 0);
  g_assert_null(txl_model_cache_acquire("/nonexistent.gguf", &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_IO);
}

/* Every line's scores ride on the buffers as a GstTxlLineMeta: one per
 * line, in order, summing exactly the score records of that line (bits
 * per normalised byte, lib/anomaly/lines.h); the
 * unterminated last line is closed at EOS. */
#define NL 11

TU_TEST("/txlmodel/line-meta", test_line_meta)
{
  g_autoptr(TuPath) m = el_write_byte_model(61);
  GstHarness *h = el_token_harness("txlmodel", m, "segment", 4, NULL);
  const int32_t ids[NL] = { 'a', 'b', '\n', 'c', 'd', 'e', '\n', 'f', 'g', 'h', 'i' };
  const gint64 lines[NL] = { 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3 };
  guint32 flags[NL] = { 0 };
  flags[2] = flags[6] = TXL_RECORD_LINE_END;
  /* in two buffers, the second starting mid-line */
  g_assert_cmpint(gst_harness_push(h, el_token_buffer(ids, lines, flags, 5, 0)),
                  ==, GST_FLOW_OK);
  g_assert_cmpint(gst_harness_push(h, el_token_buffer(ids + 5, lines + 5,
                                                      flags + 5, NL - 5, 5)),
                  ==, GST_FLOW_OK);
  g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  GList *bufs = el_pull_all(h);
  GArray *rec = el_score_records(bufs);
  g_assert_cmpuint(rec->len, ==, NL);
  GType api = g_type_from_name(GST_TXL_LINE_META_API_NAME);
  g_assert_true(api != 0);
  int seen = 0;
  for (GList *it = bufs; it; it = it->next) {
    gpointer state = NULL;
    GstMeta *meta;
    while ((meta = gst_buffer_iterate_meta_filtered(it->data, &state, api))) {
      const GstTxlLineMeta *lm = (const GstTxlLineMeta *)meta;
      seen++;
      g_assert_cmpint(lm->line, ==, seen);
      double nll = 0;
      guint32 tokens = 0;
      guint64 bytes = 0;
      for (guint i = 0; i < rec->len; i++) {
        const TxlScoreRecord *r = &g_array_index(rec, TxlScoreRecord, i);
        if (r->line != lm->line)
          continue;
        bytes += r->byte_len;
        if (!isnan(r->logprob)) {
          tokens++;
          nll -= r->logprob;
        }
      }
      g_assert_cmpuint(lm->score.tokens, ==, tokens);
      g_assert_cmpuint(lm->bytes, ==, bytes);
      g_assert_cmpfloat(fabs(lm->score.nll - nll), <, 1e-9);
      /* bits per normalised byte: one per scored token of a byte model */
      g_assert_cmpuint(lm->score.norm_bytes, ==, tokens);
      g_assert_cmpfloat(fabs(lm->bpb - nll / G_LN2 / tokens), <, 1e-9);
      g_assert_cmpfloat(lm->worst, >=, lm->bpb);
      g_assert_cmpuint(lm->score.nonfinite, ==, 0);
    }
  }
  g_assert_cmpint(seen, ==, 3);
  g_array_unref(rec);
  el_buffers_free(bufs);
  gst_harness_teardown(h);
}

/* max-latency: tokens that wait for their segment, with no line end and no
 * more input, are scored by the deadline; without it they keep waiting. */
static gsize
records_after_quiet(const char *m, guint64 max_latency)
{
  GstHarness *h = el_token_harness("txlmodel", m, "segment", 64,
                                   "max-latency", max_latency, NULL);
  const int32_t ids[5] = { 'q', 'u', 'i', 'e', 't' };
  g_assert_cmpint(gst_harness_push(h, el_token_buffer(ids, NULL, NULL, 5, 0)),
                  ==, GST_FLOW_OK);
  g_usleep(300 * 1000); /* a quiet stream */
  GList *bufs = el_pull_all(h);
  GArray *rec = el_score_records(bufs);
  gsize n = rec->len;
  g_array_unref(rec);
  el_buffers_free(bufs);
  gst_harness_teardown(h);
  return n;
}

TU_TEST("/txlmodel/max-latency", test_max_latency)
{
  g_autoptr(TuPath) m = el_write_byte_model(71);
  /* the first token's record goes out at once; the other four need their
   * segment (64 tokens) or the deadline */
  g_assert_cmpuint(records_after_quiet(m, 0), ==, 1);
  g_assert_cmpuint(records_after_quiet(m, 30 * GST_MSECOND), ==, 5);
}

EL_TEST_MAIN()

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlmodel learn=true (plugins/txllearn.c, docs/learning.md): the adapted
 * weights take over right after the warm-up line, bit for bit as a
 * TxlScorer and a TxlLearner run directly on the same ids, at any buffer
 * split; warm-up lines and the landing line are marked on their line
 * metas; the txl-learn message and learn-rounds; txlsink's default
 * threshold marks warm-up lines and never flags them; a pipeline cut
 * before, at and after the warm-up continues from its snapshot byte for
 * byte; snapshots continue only the way they were written; txlsessions
 * learns what TxlSessions and a learner grouping sessions learn. */
#include "elements.h"
#include "../tu_config.h"
#include "learner.h"
#include "params.h"

#include <glib/gstdio.h>

#define N_LINES 90
#define WARMUP 30

static char *model;

/* A tiny byte model that training supports (a plain softmax). */
static char *
tiny_model(void)
{
  TxlConfig c = tu_plain_config((TuDims){
      .n_token = 300, .d_model = 16, .n_head = 2, .d_head = 8,
      .d_inner = 32, .n_layer = 1, .mem_len = 8, .tgt_len = 8 });
  return tu_write_model(&c, 11, NULL);
}

/* A little log: line i as bytes, with its line end. */
static void
log_line(GString *s, int i)
{
  if (i == 70)
    g_string_append(s, "kernel: BUG at 0xdeadbeef!\n");
  else
    g_string_append_printf(s, "sshd[%d]: accepted %s from 10.0.%d.%d\n",
                           100 + (i * 37) % 900,
                           (const char *[]){ "alice", "bob", "carol" }[i % 3],
                           i % 4, (i * 53) % 256);
}

static GString *
log_text(void)
{
  GString *s = g_string_new(NULL);
  for (int i = 0; i < N_LINES; i++)
    log_line(s, i);
  return s;
}

/* The log (the test's to free), and its token records of the byte
 * tokenizer, one id per byte, in arrays freed when the test ends. */
static GString *
log_records(int32_t **ids, gint64 **lines, guint32 **flags)
{
  GString *t = log_text();
  *ids = g_new(int32_t, t->len);
  *lines = g_new(gint64, t->len);
  *flags = g_new(guint32, t->len);
  g_test_queue_free(*ids);
  g_test_queue_free(*lines);
  g_test_queue_free(*flags);
  gint64 line = 1;
  for (gsize i = 0; i < t->len; i++) {
    (*ids)[i] = (guint8)t->str[i];
    (*lines)[i] = line;
    (*flags)[i] = t->str[i] == '\n' ? TXL_RECORD_LINE_END : 0;
    line += t->str[i] == '\n';
  }
  return t;
}

/* ---- the element in a harness --------------------------------------- */

/* A line meta's line and flags. */
typedef struct {
  gint64 line;
  guint32 flags;
} LineMark;

/* What a run in the harness got; it lives until the test ends. */
typedef struct {
  GArray *lp;        /* float, per stream position */
  GArray *metas;     /* LineMark, per line meta */
  GPtrArray *learnt; /* txl-learn structures */
  guint rounds;
  char *warning;     /* the first warning message's text */
} Got;

static const LineMark *
mark_at(const Got *g, guint i)
{
  return &g_array_index(g->metas, LineMark, i);
}

static gboolean
take_meta(GstBuffer *b, GstMeta **meta, gpointer data)
{
  Got *g = data;
  if ((*meta)->info->api == g_type_from_name(GST_TXL_LINE_META_API_NAME)) {
    const GstTxlLineMeta *m = (const GstTxlLineMeta *)*meta;
    LineMark x = { m->line, m->flags };
    g_array_append_val(g->metas, x);
  }
  return TRUE;
}

/* seconds > 0: learn-warmup-seconds, flush-on-newline, and one buffer a
 * line, line i's stamped i seconds (chunk unused). */
static Got
run_harness_timed(const char *path, const int32_t *ids, const gint64 *lines,
                  const guint32 *flags, gsize n, gsize chunk, gboolean learn,
                  double seconds)
{
  GstElement *e = gst_element_factory_make("txlmodel", NULL);
  g_object_set(e, "model", path, "learn", learn, "learn-warmup", WARMUP,
               NULL);
  if (seconds > 0)
    g_object_set(e, "learn-warmup-seconds", seconds, "flush-on-newline",
                 TRUE, NULL);
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(e, bus);
  GstHarness *h = gst_harness_new_with_element(e, "sink", "src");
  gst_harness_set_src_caps(h, el_token_caps(path));
  for (gsize at = 0, k; at < n; at += k) {
    k = MIN(chunk, n - at);
    if (seconds > 0)
      for (k = 1; !(flags[at + k - 1] & TXL_RECORD_LINE_END); k++)
        ;
    GstBuffer *b = el_token_buffer(ids + at, lines + at, flags + at, k, at);
    if (seconds > 0)
      GST_BUFFER_PTS(b) = (GstClockTime)(lines[at] - 1) * GST_SECOND;
    g_assert_cmpint(gst_harness_push(h, b), ==, GST_FLOW_OK);
  }
  g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  Got g = { g_array_new(FALSE, TRUE, sizeof(float)),
            g_array_new(FALSE, FALSE, sizeof(LineMark)),
            g_ptr_array_new_with_free_func((GDestroyNotify)gst_structure_free),
            0, NULL };
  GList *bufs = el_pull_all(h);
  GArray *recs = el_score_records(bufs);
  for (guint i = 0; i < recs->len; i++) {
    const TxlScoreRecord *r = &g_array_index(recs, TxlScoreRecord, i);
    g_assert_cmpint(r->pos, ==, i);
    g_array_append_val(g.lp, r->logprob);
  }
  g_array_unref(recs);
  for (GList *it = bufs; it; it = it->next)
    gst_buffer_foreach_meta(it->data, take_meta, &g);
  el_buffers_free(bufs);
  g_object_get(e, "learn-rounds", &g.rounds, NULL);
  GstMessage *m;
  while ((m = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT |
                                             GST_MESSAGE_WARNING))) {
    if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_WARNING && !g.warning) {
      GError *w = NULL;
      gst_message_parse_warning(m, &w, NULL);
      g.warning = g_strdup(w->message);
      g_error_free(w);
    } else if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ELEMENT &&
               gst_structure_has_name(gst_message_get_structure(m),
                                      "txl-learn"))
      g_ptr_array_add(g.learnt,
                      gst_structure_copy(gst_message_get_structure(m)));
    gst_message_unref(m);
  }
  gst_harness_teardown(h);
  gst_element_set_bus(e, NULL);
  gst_object_unref(bus);
  g_test_queue_destroy((GDestroyNotify)g_array_unref, g.lp);
  g_test_queue_destroy((GDestroyNotify)g_array_unref, g.metas);
  g_test_queue_destroy((GDestroyNotify)g_ptr_array_unref, g.learnt);
  g_test_queue_free(g.warning);
  return g;
}

static Got
run_harness_on(const char *path, const int32_t *ids, const gint64 *lines,
               const guint32 *flags, gsize n, gsize chunk, gboolean learn)
{
  return run_harness_timed(path, ids, lines, flags, n, chunk, learn, 0.0);
}

static Got
run_harness(const int32_t *ids, const gint64 *lines, const guint32 *flags,
            gsize n, gsize chunk, gboolean learn)
{
  return run_harness_on(model, ids, lines, flags, n, chunk, learn);
}

/* ---- the same with the library directly ------------------------------ */

typedef struct {
  GArray *lp;
  const guint32 *flags;
  gint64 closed; /* lines whose line end has been scored */
} Direct;

static void
direct_score(gint64 pos, int32_t token, float logprob, gpointer data)
{
  Direct *d = data;
  el_lp_by_pos(pos, token, logprob, d->lp);
  d->closed += (d->flags[pos] & TXL_RECORD_LINE_END) != 0;
}

/* Scores ids while a TxlLearner learns from each completed line, new
 * weights set after the push that completed the landing line; returns
 * the log-probs and the landing line. */
static GArray *
direct(const int32_t *ids, const guint32 *flags, gsize n, gint64 *landed)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = tu_load(model);
  Direct d = { g_array_new(FALSE, TRUE, sizeof(float)), flags, 0 };
  g_array_set_size(d.lp, 1);
  g_array_index(d.lp, float, 0) = NAN;
  TxlScorer *s = txl_scorer_new(m, NULL, 0, direct_score, &d, &err);
  TxlLearnOptions o = txl_learn_options_default();
  o.warmup_lines = WARMUP;
  TxlLearner *l = txl_learner_new(m, &o, &err);
  g_assert_no_error(err);
  gint64 given = 0;
  gsize line_start = 0, at = 0;
  *landed = 0;
  for (gsize i = 0; i < n; i++) {
    g_assert_true(txl_scorer_push(s, &ids[i], 1, &err));
    for (; given < d.closed; given++) {
      while (!(flags[at] & TXL_RECORD_LINE_END))
        at++;
      at++;
      TxlModel *w = txl_learner_line(l, ids + line_start, at - line_start,
                                     FALSE, &err);
      g_assert_no_error(err);
      line_start = at;
      if (w) {
        g_assert_true(txl_scorer_set_model(s, w, &err));
        *landed = given + 1;
        txl_model_unref(w);
      }
    }
  }
  g_assert_true(txl_scorer_finish(s, &err));
  txl_learner_free(l);
  txl_scorer_free(s);
  txl_model_unref(m);
  return d.lp;
}

TU_TEST("/learn/landing", test_landing)
{
  int32_t *ids;
  gint64 *lines;
  guint32 *flags;
  GString *t = log_records(&ids, &lines, &flags);
  gsize n = t->len;
  gint64 landed = 0;
  GArray *want = direct(ids, flags, n, &landed);
  g_assert_cmpint(landed, ==, WARMUP);
  Got plain = run_harness(ids, lines, flags, n, n, FALSE);
  gsize chunks[] = { 1, 7, 97, n };
  for (guint k = 0; k < G_N_ELEMENTS(chunks); k++) {
    Got g = run_harness(ids, lines, flags, n, chunks[k], TRUE);
    /* bit for bit the library's scores: the weights changed at the same
     * token whatever the buffers */
    g_assert_cmpuint(g.lp->len, ==, n);
    g_assert_cmpmem(g.lp->data + 4, (n - 1) * 4, want->data + 4,
                    (n - 1) * 4);
    /* the same as without learning up to the landing line, not after */
    gsize end = 0;
    for (int i = 0; i < WARMUP; i++)
      end = (gsize)(strchr(t->str + end, '\n') - t->str) + 1;
    g_assert_cmpmem(g.lp->data + 4, (end - 1) * 4, plain.lp->data + 4,
                    (end - 1) * 4);
    g_assert_true(memcmp(g.lp->data + 4 * end, plain.lp->data + 4 * end,
                         (n - end) * 4) != 0);
    /* the metas: every line once; warm-up lines first, the landing line
     * marked, nothing marked without learning */
    g_assert_cmpuint(g.metas->len, ==, N_LINES);
    guint warm = 0;
    for (guint i = 0; i < g.metas->len; i++) {
      guint32 f = mark_at(&g, i)->flags;
      g_assert_cmpint(mark_at(&g, i)->line, ==, i + 1);
      g_assert_cmpint(!!(f & TXL_LINE_NEW_WEIGHTS), ==, i + 1 == WARMUP);
      if (f & TXL_LINE_WARMUP)
        g_assert_cmpuint(warm++, ==, i);
      g_assert_cmpuint(mark_at(&plain, i)->flags, ==, 0);
    }
    /* the line after the landing line began in its segment */
    g_assert_cmpuint(warm, >=, WARMUP);
    g_assert_cmpuint(warm, <=, WARMUP + 1);
    g_assert_cmpuint(g.rounds, ==, 1);
    g_assert_cmpuint(g.learnt->len, ==, 1);
    const GstStructure *s = g.learnt->pdata[0];
    gint round = 0;
    gint64 line = 0, steps = 0;
    gdouble l0 = 0, l1 = 0, sec = -1;
    g_assert_true(gst_structure_get(s, "round", G_TYPE_INT, &round, "line",
                                    G_TYPE_INT64, &line, "steps",
                                    G_TYPE_INT64, &steps, "loss-first",
                                    G_TYPE_DOUBLE, &l0, "loss-last",
                                    G_TYPE_DOUBLE, &l1, "seconds",
                                    G_TYPE_DOUBLE, &sec, NULL));
    g_assert_cmpint(round, ==, 1);
    g_assert_cmpint(line, ==, WARMUP);
    g_assert_cmpint(steps, >, 0);
    g_assert_true(isfinite(l0) && isfinite(l1) && sec >= 0);
  }
  g_assert_cmpuint(plain.rounds, ==, 0);
  g_assert_cmpuint(plain.learnt->len, ==, 0);
  g_array_unref(want);
  g_string_free(t, TRUE);
}

/* A stream that ends before the first round: every line warm-up, and a
 * warning that none was judged; after a round, no such warning. */
TU_TEST("/learn/ended-in-warmup", test_ended_in_warmup)
{
  int32_t *ids;
  gint64 *lines;
  guint32 *flags;
  GString *t = log_records(&ids, &lines, &flags);
  gsize n = 0;
  for (int i = 0; i < 20; i++)
    n = (gsize)(strchr(t->str + n, '\n') - t->str) + 1;
  Got g = run_harness(ids, lines, flags, n, 64, TRUE);
  g_assert_cmpuint(g.metas->len, ==, 20);
  for (guint i = 0; i < g.metas->len; i++)
    g_assert_cmpuint(mark_at(&g, i)->flags, ==, TXL_LINE_WARMUP);
  g_assert_nonnull(g.warning);
  g_assert_nonnull(strstr(g.warning, "ended in the learning warm-up: none "
                                     "of its 20 lines was judged"));
  Got whole = run_harness(ids, lines, flags, t->len, 64, TRUE);
  g_assert_cmpuint(whole.rounds, ==, 1);
  g_assert_null(whole.warning);
  Got plain = run_harness(ids, lines, flags, n, 64, FALSE);
  g_assert_null(plain.warning);
  g_string_free(t, TRUE);
}

/* learn-warmup-seconds: with line i stamped i seconds, the warm-up ends
 * at line 12 (11 s after line 1) instead of learn-warmup's 30; the
 * landing line is marked and named in txl-learn. */
TU_TEST("/learn/warmup-seconds", test_warmup_seconds)
{
  int32_t *ids;
  gint64 *lines;
  guint32 *flags;
  GString *t = log_records(&ids, &lines, &flags);
  for (guint k = 0; k < 2; k++) {
    /* 10.5 s: time ends it; 100 s: the line count does */
    double secs = k == 0 ? 10.5 : 100.0;
    gint64 want = k == 0 ? 12 : WARMUP;
    Got g = run_harness_timed(model, ids, lines, flags, t->len, 0, TRUE,
                              secs);
    g_assert_cmpuint(g.rounds, ==, 1);
    g_assert_cmpuint(g.learnt->len, ==, 1);
    gint64 line = 0;
    g_assert_true(gst_structure_get_int64(g.learnt->pdata[0], "line", &line));
    g_assert_cmpint(line, ==, want);
    g_assert_cmpuint(g.metas->len, ==, N_LINES);
    for (guint i = 0; i < g.metas->len; i++) {
      guint32 f = mark_at(&g, i)->flags;
      g_assert_cmpint(!!(f & TXL_LINE_NEW_WEIGHTS), ==, i + 1 == want);
      g_assert_cmpint(!!(f & TXL_LINE_WARMUP), ==, i + 1 <= want);
    }
  }
  g_string_free(t, TRUE);
}

/* A round whose loss goes non-finite (weights scaled by 1e18) is dropped
 * with a warning; the stream goes on with the model file's weights. */
TU_TEST("/learn/failed-round", test_failed_round)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = tu_load(model);
  TxlParams *p = txl_params_from_model(m, &err);
  g_assert_no_error(err);
  for (gsize i = 0; i < p->n; i++)
    p->data[i] *= 1e18f;
  g_autofree char *huge = g_strconcat(model, ".huge.gguf", NULL);
  g_assert_true(txl_params_write_gguf(p, txl_params_write_tokenizer,
                                      (gpointer)txl_model_tokenizer(m), huge,
                                      &err));
  txl_params_free(p);
  txl_model_unref(m);
  int32_t *ids;
  gint64 *lines;
  guint32 *flags;
  GString *t = log_records(&ids, &lines, &flags);
  gsize n = t->len;
  Got g = run_harness_on(huge, ids, lines, flags, n, 64, TRUE);
  Got plain = run_harness_on(huge, ids, lines, flags, n, 64, FALSE);
  g_assert_nonnull(g.warning);
  g_assert_nonnull(strstr(g.warning, "round of learning failed"));
  g_assert_cmpuint(g.rounds, ==, 0);
  g_assert_cmpuint(g.learnt->len, ==, 0);
  /* still the model file's weights: every line warm-up, the same scores */
  for (guint i = 0; i < g.metas->len; i++)
    g_assert_cmpuint(mark_at(&g, i)->flags, ==, TXL_LINE_WARMUP);
  g_assert_cmpmem(g.lp->data + 4, (n - 1) * 4, plain.lp->data + 4,
                  (n - 1) * 4);
  tu_remove(huge);
  g_string_free(t, TRUE);
}

/* ---- txlsessions learns whole sessions -------------------------------- */

/* Line i of an interleaved log: three sessions open at a time, four lines
 * each, three lines apart; a key comes back after its session ended idle
 * (session-idle-lines=4), as a new session. */
static void
sessions_line(GString *s, int i)
{
  static const char *what[] = { "open", "read 4096 bytes", "write 12 bytes",
                                "close" };
  g_string_append_printf(s, "sess=%d %s\n", ((i / 12) * 3 + i % 3) % 6,
                         what[(i % 12) / 3]);
}

typedef struct {
  TxlLearner *l;
  GArray *ids;     /* of every pushed line, one after the other */
  GArray *starts;  /* gsize: where line n's ids start (n - 1) */
  GPtrArray *todo; /* what the last push reported, in order: "line key" or
                    * "end key" */
} LibLearn;

static void
lib_learn_line(const TxlSessionLine *x, gpointer data)
{
  LibLearn *c = data;
  g_ptr_array_add(c->todo, g_strdup_printf("%" G_GINT64_FORMAT " %s",
                                           x->line, x->key));
}

static void
lib_learn_end(const TxlSessionResult *r, gpointer data)
{
  LibLearn *c = data;
  g_ptr_array_add(c->todo, g_strdup_printf("end %s", r->key));
}

/* The library's TxlSessions with a grouping TxlLearner as txlsessions
 * drives them (gsttxlsessions_learn.c): each scored line and ended session
 * to the learner after every push, new weights into the sessions.
 * Returns the bytes of the adapted model after the first round. */
static GBytes *
sessions_direct(const char *text, const char *dir)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = tu_load(model);
  TxlSessionOptions so = TXL_SESSION_OPTIONS_DEFAULT;
  so.key_regex = "sess=[0-9]+";
  so.prime = TRUE;
  so.idle_lines = 4;
  so.max_bytes = 1ull << 32;
  LibLearn c = { NULL, g_array_new(FALSE, FALSE, sizeof(int32_t)),
                 g_array_new(FALSE, FALSE, sizeof(gsize)),
                 g_ptr_array_new_with_free_func(g_free) };
  TxlSessions *s = txl_sessions_new(m, &so, lib_learn_line, lib_learn_end,
                                    &c, &err);
  g_assert_no_error(err);
  TxlLearnOptions o = txl_learn_options_default();
  o.warmup_lines = WARMUP;
  c.l = txl_learner_new(m, &o, &err);
  g_assert_no_error(err);
  gsize np;
  const int32_t *primer = txl_sessions_primer(s, &np);
  g_assert_true(txl_learner_group_sessions(c.l, primer, np, &err));
  int landed = 0;
  for (const char *p = text; *p;) {
    const char *nl = strchr(p, '\n');
    gsize start = c.ids->len;
    g_array_append_val(c.starts, start);
    for (const char *q = p; q <= nl; q++) /* the byte model: one id each */
      g_array_append_val(c.ids, (int32_t){ (guint8)*q });
    g_autofree char *key = txl_sessions_key(s, p, nl - p);
    g_assert_cmpint(txl_sessions_push_tokens(s, key,
                        &g_array_index(c.ids, int32_t, start),
                        c.ids->len - start, nl + 1 - p, &err), >, 0);
    for (guint i = 0; i < c.todo->len; i++) {
      const char *t = c.todo->pdata[i];
      if (g_str_has_prefix(t, "end ")) {
        txl_learner_session_end(c.l, t + 4, FALSE);
        continue;
      }
      gint64 line = g_ascii_strtoll(t, NULL, 10);
      gsize a = g_array_index(c.starts, gsize, line - 1);
      gsize b = line < (gint64)c.starts->len
                    ? g_array_index(c.starts, gsize, line) : c.ids->len;
      TxlModel *w = txl_learner_session_line(c.l, strchr(t, ' ') + 1,
          &g_array_index(c.ids, int32_t, a), b - a, FALSE, &err);
      g_assert_no_error(err);
      if (w) {
        g_assert_true(txl_sessions_set_model(s, w, &err));
        landed++;
        txl_model_unref(w);
      }
    }
    g_ptr_array_set_size(c.todo, 0);
    p = nl + 1;
  }
  g_assert_cmpint(landed, ==, 1);
  g_autofree char *path = g_build_filename(dir, "direct.gguf", NULL);
  g_assert_true(txl_learner_write_model(c.l, path, &err));
  char *bytes;
  gsize n;
  g_assert_true(g_file_get_contents(path, &bytes, &n, NULL));
  tu_remove(path);
  txl_learner_free(c.l);
  txl_sessions_free(s);
  txl_model_unref(m);
  g_array_unref(c.ids);
  g_array_unref(c.starts);
  g_ptr_array_unref(c.todo);
  return g_bytes_new_take(bytes, n);
}

/* txlsessions learn-warmup-seconds: text lines stamped i seconds each,
 * through txltokenizer (which keeps the timestamps): the warm-up ends at
 * line 12 (11 s after line 1), not at learn-warmup's 30. */
TU_TEST("/learn/sessions-warmup-seconds", test_sessions_warmup_seconds)
{
  g_autofree char *desc = g_strdup_printf(
      "txltokenizer model=\"%s\" ! txlsessions model=\"%s\" "
      "session-key=sess=[0-9]+ session-idle-lines=4 flush-on-newline=true "
      "learn=true learn-warmup=%d learn-warmup-seconds=10.5", model, model,
      WARMUP);
  GstHarness *h = gst_harness_new_parse(desc);
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  gst_harness_set_src_caps_str(h, "text/x-raw,format=utf8");
  for (int i = 0; i < 60; i++) {
    GString *t = g_string_new(NULL);
    sessions_line(t, i);
    gsize n = t->len;
    GstBuffer *b = gst_buffer_new_wrapped(g_string_free(t, FALSE), n);
    GST_BUFFER_PTS(b) = (GstClockTime)i * GST_SECOND;
    g_assert_cmpint(gst_harness_push(h, b), ==, GST_FLOW_OK);
  }
  g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  el_buffers_free(el_pull_all(h));
  gint64 line = 0;
  int learnt = 0;
  GstMessage *m;
  while ((m = gst_bus_pop_filtered(bus, GST_MESSAGE_ELEMENT))) {
    const GstStructure *st = gst_message_get_structure(m);
    if (gst_structure_has_name(st, "txl-learn")) {
      learnt++;
      g_assert_true(gst_structure_get_int64(st, "line", &line));
    }
    gst_message_unref(m);
  }
  g_assert_cmpint(learnt, ==, 1);
  g_assert_cmpint(line, ==, 12);
  gst_harness_teardown(h);
  gst_object_unref(bus);
}

/* txlsessions learn=true learns what the library's TxlSessions and a
 * learner grouping sessions learn: its adapted model is the same, byte
 * for byte, and not the model that learning the same lines as they come
 * gives. */
TU_TEST("/learn/sessions-whole", test_sessions_whole)
{
  GString *t = g_string_new(NULL);
  for (int i = 0; i < 60; i++)
    sessions_line(t, i);
  char *dir = tu_test_dir("txl-learn-sess-XXXXXX");
  char *in = tu_test_file(dir, "in.txt");
  char *out = tu_test_file(dir, "out.jsonl");
  char *adapted = tu_test_file(dir, "adapted.gguf");
  g_assert_true(g_file_set_contents(in, t->str, (gssize)t->len, NULL));
  g_autofree char *desc = g_strdup_printf(
      "filesrc blocksize=61 location=\"%s\" ! txltokenizer model=\"%s\" ! "
      "txlsessions model=\"%s\" session-key=sess=[0-9]+ "
      "session-idle-lines=4 learn=true learn-warmup=%d "
      "learn-model=\"%s\" ! txlsink location=\"%s\"", in, model, model,
      WARMUP, adapted, out);
  GstElement *p = el_parse(desc);
  g_assert_null(el_run(p, NULL, NULL));
  el_pipeline_free(p);
  char *got;
  gsize n;
  g_assert_true(g_file_get_contents(adapted, &got, &n, NULL));
  g_autoptr(GBytes) element = g_bytes_new_take(got, n);
  g_autoptr(GBytes) want = sessions_direct(t->str, dir);
  g_assert_true(g_bytes_equal(element, want));
  /* the same lines learnt as they come give other weights */
  g_autoptr(GError) err = NULL;
  TxlModel *m = tu_load(model);
  TxlLearnOptions o = txl_learn_options_default();
  o.warmup_lines = WARMUP;
  TxlLearner *flat = txl_learner_new(m, &o, &err);
  const char *q = t->str;
  for (int i = 0; i < WARMUP; i++) {
    const char *nl = strchr(q, '\n');
    int32_t ids[64];
    int k = 0;
    for (; q <= nl; q++)
      ids[k++] = (guint8)*q;
    txl_model_unref(txl_learner_line(flat, ids, k, FALSE, &err));
  }
  char *fpath = tu_test_file(dir, "flat.gguf");
  g_assert_true(txl_learner_write_model(flat, fpath, &err));
  g_assert_true(g_file_get_contents(fpath, &got, &n, NULL));
  g_autoptr(GBytes) fb = g_bytes_new_take(got, n);
  g_assert_false(g_bytes_equal(fb, want));
  txl_learner_free(flat);
  txl_model_unref(m);
  g_string_free(t, TRUE);
}

/* ---- pipelines: txlsink's marks, snapshots -------------------------- */

typedef struct {
  char *dir, *text, *out, *snap;
  GString *data;
} Fixture;

/* The files in a directory of the test's (tu_test_dir); f->data, the
 * log, is the test's to free. */
static void
fixture_init(Fixture *f)
{
  f->dir = tu_test_dir("txl-learn-XXXXXX");
  f->text = tu_test_file(f->dir, "in.txt");
  f->out = tu_test_file(f->dir, "out.jsonl");
  f->snap = tu_test_file(f->dir, "s.snap");
  f->data = log_text();
}

/* Runs text [from, to) through filesrc ! txltokenizer ! txlmodel PROPS !
 * txlsink; returns the error text (g_free), NULL when it ran to EOS. */
static char *
run_pipeline(Fixture *f, gsize from, gsize to, const char *props)
{
  g_assert_true(g_file_set_contents(f->text, f->data->str + from,
                                    (gssize)(to - from), NULL));
  g_autofree char *desc = g_strdup_printf(
      "filesrc blocksize=61 location=\"%s\" ! txltokenizer model=\"%s\" ! "
      "txlmodel model=\"%s\" learn-warmup=%d %s ! txlsink location=\"%s\" "
      "append=true", f->text, model, model, WARMUP, props, f->out);
  GstElement *p = el_parse(desc);
  char *error = el_run(p, NULL, NULL);
  el_pipeline_free(p);
  return error;
}

static char *
output(Fixture *f)
{
  char *s = NULL;
  g_assert_true(g_file_get_contents(f->out, &s, NULL, NULL));
  return s;
}

TU_TEST("/learn/sink-marks", test_sink_marks)
{
  Fixture f;
  fixture_init(&f);
  g_autofree char *adapted = g_build_filename(f.dir, "adapted.gguf", NULL);
  g_autofree char *props = g_strdup_printf("learn=true learn-model=\"%s\"",
                                           adapted);
  g_assert_null(run_pipeline(&f, 0, f.data->len, props));
  g_autofree char *out = output(&f);
  g_auto(GStrv) rows = g_strsplit(out, "\n", -1);
  g_assert_cmpuint(g_strv_length(rows), ==, N_LINES + 1);
  int warm = 0;
  for (int i = 0; i < N_LINES; i++) {
    gboolean w = strstr(rows[i], "\"warmup\": true") != NULL;
    g_assert_true(w || strstr(rows[i], "\"warmup\": false"));
    /* warm-up lines come first and are never flagged */
    g_assert_true(!w || warm == i);
    warm += w;
    if (w)
      g_assert_nonnull(strstr(rows[i], "\"flag\": false"));
  }
  /* the learning's warm-up (and the line begun in the landing line's
   * segment), then TXL_STREAM_RULE_WARMUP lines for the recent scores */
  g_assert_cmpint(warm, >=, WARMUP + 50);
  g_assert_cmpint(warm, <=, WARMUP + 1 + 50);
  /* the adapted model file loads and names the model it came from */
  g_autoptr(GError) err = NULL;
  TxlModel *a = tu_load(adapted);
  TxlModel *b = txl_model_load(model, &err);
  g_assert_cmpstr(txl_model_vocab_id(a), ==, txl_model_vocab_id(b));
  txl_model_unref(a);
  txl_model_unref(b);
  g_string_free(f.data, TRUE);
}

TU_TEST("/learn/snapshot-cuts", test_snapshot_cuts)
{
  Fixture f;
  fixture_init(&f);
  const char *learn = "learn=true";
  g_assert_null(run_pipeline(&f, 0, f.data->len, learn));
  g_autofree char *whole = output(&f);
  /* byte offsets: mid-warm-up, at the landing line's end, just after it,
   * mid-line later on, and before the last byte */
  gsize ends[N_LINES];
  for (gsize i = 0, k = 0; i < f.data->len; i++)
    if (f.data->str[i] == '\n')
      ends[k++] = i + 1;
  gsize cuts[] = { 9, ends[WARMUP / 2] - 5, ends[WARMUP - 1], ends[WARMUP],
                   ends[WARMUP] + 17, ends[60] + 3, f.data->len - 1 };
  g_autofree char *first = g_strdup_printf("%s snapshot-location=\"%s\"",
                                           learn, f.snap);
  g_autofree char *second = g_strdup_printf("%s hold-at-eos=false", first);
  for (guint k = 0; k < G_N_ELEMENTS(cuts); k++) {
    g_remove(f.out);
    g_remove(f.snap);
    g_assert_null(run_pipeline(&f, 0, cuts[k], first));
    g_assert_null(run_pipeline(&f, cuts[k], f.data->len, second));
    g_autofree char *got = output(&f);
    g_assert_cmpstr(got, ==, whole);
  }
  /* a snapshot continues only the way it was written */
  g_remove(f.snap);
  g_assert_null(run_pipeline(&f, 0, 200, first));
  g_autofree char *plain = g_strdup_printf("snapshot-location=\"%s\"",
                                           f.snap);
  g_autofree char *e1 = run_pipeline(&f, 200, 300, plain);
  g_assert_nonnull(strstr(e1 ? e1 : "", "written by a txlmodel with "
                                        "learning"));
  g_remove(f.snap);
  g_assert_null(run_pipeline(&f, 0, 200, plain));
  g_autofree char *e2 = run_pipeline(&f, 200, 300, first);
  g_assert_nonnull(strstr(e2 ? e2 : "", "without learning"));
  g_string_free(f.data, TRUE);
}

int
main(int argc, char **argv)
{
  el_test_init(&argc, &argv);
  model = tiny_model();
  int rc = g_test_run();
  tu_remove(model);
  g_free(model);
  return rc;
}

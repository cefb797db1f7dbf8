/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsink and whole pipelines: filesrc ! txltokenizer ! txlmodel ! txlsink
 * gives the per-line numbers of `txl score` on the same file, through
 * gst_parse_launch and through gst-launch-1.0 with pipelines/score-file.txt;
 * the line-scored signal and txl-anomaly messages; binary input; score
 * records without text. */
#include "elements.h"

#include <json-glib/json-glib.h>
#include <math.h>

typedef struct {
  int lines, flagged, anomalies;
  int warming;        /* lines without an anomaly score (NaN) */
  int flagged_early;  /* flagged among the first `early` lines */
  int early;
  int scores;         /* txl-score messages */
  gint64 last_line;
} Counts;

static void
on_line_scored(GstElement *sink, const GstStructure *s, gpointer data)
{
  Counts *c = data;
  gint64 line = 0;
  gboolean flag = FALSE;
  g_assert_true(gst_structure_get_int64(s, "line", &line));
  g_assert_true(gst_structure_get_boolean(s, "flag", &flag));
  g_assert_true(gst_structure_has_field(s, "bpb"));
  g_assert_cmpint(line, ==, c->last_line + 1);
  c->last_line = line;
  c->lines++;
  c->flagged += flag;
  double anomaly = 0;
  g_assert_true(gst_structure_get_double(s, "anomaly", &anomaly));
  c->warming += isnan(anomaly);
  if (line <= c->early)
    c->flagged_early += flag;
}

/* The score and anomaly messages of a run, counted in the Counts `data`. */
static void
on_message(GstMessage *msg, gpointer data)
{
  Counts *c = data;
  const GstStructure *s = gst_message_get_structure(msg);
  if (gst_structure_has_name(s, "txl-score")) {
    GstClockTime rt;
    g_assert_true(gst_structure_has_field(s, "bpb"));
    g_assert_true(gst_structure_get_clock_time(s, "running-time", &rt));
    c->scores++;
  }
  if (gst_structure_has_name(s, "txl-anomaly")) {
    gint64 line;
    double bpb, nll;
    GstClockTime rt, st;
    g_assert_true(gst_structure_get_int64(s, "line", &line));
    g_assert_true(gst_structure_get_double(s, "bpb", &bpb));
    g_assert_true(gst_structure_get_double(s, "nll", &nll));
    g_assert_true(gst_structure_get_clock_time(s, "running-time", &rt));
    g_assert_true(gst_structure_get_clock_time(s, "stream-time", &st));
    g_assert_true(gst_structure_has_field(s, "text"));
    c->anomalies++;
  }
}

static void
run_pipeline(const char *desc, Counts *c)
{
  GstElement *p = el_parse(desc);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(p), "sink");
  g_assert_nonnull(sink);
  g_signal_connect(sink, "line-scored", G_CALLBACK(on_line_scored), c);
  el_play(p, 0, on_message, c);
  el_pipeline_free(p);
  gst_object_unref(sink);
}

/* txlsink alone in a harness, score records in: it writes `out`, flags
 * lines above the threshold and counts its line-scored signals into c. */
static GstHarness *
sink_harness(const char *out, double threshold, Counts *c)
{
  GstElement *sink = gst_element_factory_make("txlsink", NULL);
  g_object_set(sink, "location", out, "threshold", threshold, NULL);
  g_signal_connect(sink, "line-scored", G_CALLBACK(on_line_scored), c);
  GstHarness *h = gst_harness_new_with_element(sink, "sink", NULL);
  gst_object_unref(sink);
  gst_harness_set_src_caps_str(h, TXL_SCORES_CAPS_NAME);
  return h;
}

/* One buffer of the score records given. */
static GstBuffer *
score_buffer(const TxlScoreRecord *recs, gsize n)
{
  GstBuffer *b = gst_buffer_new_allocate(NULL, n * TXL_SCORE_RECORD_SIZE, NULL);
  GstMapInfo map;
  g_assert_true(gst_buffer_map(b, &map, GST_MAP_WRITE));
  for (gsize i = 0; i < n; i++)
    txl_score_record_write(map.data + i * TXL_SCORE_RECORD_SIZE, &recs[i]);
  gst_buffer_unmap(b, &map);
  return b;
}

static JsonNode **
parse_lines(const char *text, guint *n)
{
  g_auto(GStrv) rows = g_strsplit(text, "\n", -1);
  GPtrArray *a = g_ptr_array_new();
  for (guint i = 0; rows[i]; i++) {
    if (!*rows[i])
      continue;
    g_autoptr(GError) err = NULL;
    JsonNode *node = json_from_string(rows[i], &err);
    g_assert_no_error(err);
    g_ptr_array_add(a, node);
  }
  *n = a->len;
  return (JsonNode **)g_ptr_array_free(a, FALSE);
}

static void
free_lines(JsonNode **l, guint n)
{
  for (guint i = 0; i < n; i++)
    json_node_unref(l[i]);
  g_free(l);
}

static char *
txl_score(const char *model, const char *input)
{
  const char *bin = g_getenv("TXL_BIN");
  g_assert_nonnull(bin);
  const char *argv[] = { bin, "score", "-m", model, input, NULL };
  char *out = NULL;
  int status;
  g_autoptr(GError) err = NULL;
  g_assert_true(g_spawn_sync(NULL, (char **)argv, NULL,
                             G_SPAWN_STDERR_TO_DEV_NULL, NULL, NULL, &out,
                             NULL, &status, &err));
  g_assert_no_error(err);
  g_assert_true(g_spawn_check_wait_status(status, NULL));
  return out;
}

/* Same lines, same numbers (the same printed digits) as txl score. */
static void
assert_same_as_cli(const char *ours, const char *cli, gboolean text)
{
  guint n1, n2;
  JsonNode **a = parse_lines(ours, &n1), **b = parse_lines(cli, &n2);
  g_assert_cmpuint(n1, ==, n2);
  g_assert_cmpuint(n1, >, 0);
  const char *keys[] = { "line", "tokens", "bytes", "nll", "ppl", "bpb",
                         "text" };
  for (guint i = 0; i < n1; i++) {
    JsonObject *x = json_node_get_object(a[i]), *y = json_node_get_object(b[i]);
    for (guint k = 0; k < G_N_ELEMENTS(keys); k++) {
      if (!text && !strcmp(keys[k], "text"))
        continue;
      JsonNode *u = json_object_get_member(x, keys[k]);
      JsonNode *v = json_object_get_member(y, keys[k]);
      g_assert_nonnull(u);
      g_assert_nonnull(v);
      if (!json_node_equal(u, v))
        g_error("line %u, %s: %s vs txl score %s", i + 1, keys[k],
                json_to_string(u, FALSE), json_to_string(v, FALSE));
    }
    g_assert_true(json_object_has_member(x, "anomaly"));
    g_assert_true(json_object_has_member(x, "flag"));
  }
  free_lines(a, n1);
  free_lines(b, n2);
}

static char *
write_input(const char *dir, const char *name, const char *data, gsize len)
{
  char *path = g_build_filename(dir, name, NULL);
  g_autoptr(GError) err = NULL;
  g_assert_true(g_file_set_contents(path, data, len, &err));
  return path;
}

static void
check_file(const char *model, const char *input, gboolean text)
{
  g_autoptr(GError) err = NULL;
  g_autofree char *dir = g_path_get_dirname(input);
  g_autofree char *out = g_build_filename(dir, "out.jsonl", NULL);
  guint blocks[] = { 1, 7, 65536 };
  g_autofree char *cli = txl_score(model, input);
  g_autofree char *first = NULL;
  for (guint k = 0; k < G_N_ELEMENTS(blocks); k++) {
    g_autofree char *desc = g_strdup_printf(
        "filesrc location=\"%s\" blocksize=%u ! txltokenizer model=\"%s\" ! "
        "txlmodel model=\"%s\" ! txlsink name=sink location=\"%s\" "
        "threshold=0", input, blocks[k], model, model, out);
    Counts c = { 0 };
    run_pipeline(desc, &c);
    g_autofree char *ours = NULL;
    g_assert_true(g_file_get_contents(out, &ours, NULL, &err));
    assert_same_as_cli(ours, cli, text);
    /* and byte for byte the same whatever the blocksize */
    if (!first)
      first = g_strdup(ours);
    g_assert_cmpstr(ours, ==, first);
    guint n;
    JsonNode **l = parse_lines(ours, &n);
    g_assert_cmpint(c.lines, ==, n);
    /* threshold 0: every line with a scored token is flagged */
    g_assert_cmpint(c.flagged, ==, c.anomalies);
    g_assert_cmpint(c.flagged, >=, (int)n - 1);
    free_lines(l, n);
  }
  g_remove(out);
}

TU_TEST("/txlsink/matches-cli", test_matches_cli)
{
  g_autoptr(GError) err = NULL;
  for (int kind = 0; kind < 2; kind++) {
    char *m = kind ? el_write_word_model(31) : el_write_byte_model(31);
    g_autofree char *dir = g_path_get_dirname(m);
    g_autofree char *in = write_input(dir, "in.txt", el_text, strlen(el_text));
    check_file(m, in, TRUE);
    g_remove(in);
    tu_remove(m);
    g_free(m);
  }
}

TU_TEST("/txlsink/binary", test_binary)
{
  g_autoptr(TuPath) m = el_write_byte_model(32);
  g_autofree char *dir = g_path_get_dirname(m);
  GRand *r = g_rand_new_with_seed(9);
  guint8 junk[700];
  for (gsize i = 0; i < sizeof junk; i++)
    junk[i] = (guint8)g_rand_int_range(r, 0, 256);
  g_rand_free(r);
  g_autofree char *in = write_input(dir, "junk.bin", (const char *)junk,
                                    sizeof junk);
  check_file(m, in, TRUE);
  g_remove(in);
}

/* The ready pipeline description, through gst-launch-1.0. */
TU_TEST("/txlsink/gst-launch", test_gst_launch)
{
  char *m = el_write_word_model(33);
  g_autofree char *dir = g_path_get_dirname(m);
  g_autofree char *in = write_input(dir, "in.log", el_text, strlen(el_text));
  char *out = el_launch_pipeline("score-file.txt", in, m);
  if (!out) {
    g_remove(in);
    tu_remove(m);
    g_free(m);
    return;
  }
  g_autofree char *cli = txl_score(m, in);
  assert_same_as_cli(out, cli, TRUE);
  g_free(out);
  g_remove(in);
  tu_remove(m);
  g_free(m);
}

/* Score records alone: lines close on their line-end flag, bytes are the
 * tokens' bytes, text is null. */
TU_TEST("/txlsink/records-only", test_records_only)
{
  g_autoptr(GError) err = NULL;
  g_autoptr(TuPath) out = tu_tmp_path("out.jsonl");
  Counts c = { 0 };
  GstHarness *h = sink_harness(out, 2.0, &c);
  TxlScoreRecord recs[5] = {
    { 5, NAN, 1, 0, 2, TXL_RECORD_FIRST, 0 },
    { 6, -1.0f, 1, 2, 3, TXL_RECORD_LINE_END, 1 },
    { 7, -0.5f, 2, 5, 1, 0, 2 },
    { 8, -0.25f, 2, 6, 1, TXL_RECORD_LINE_END, 3 },
    { 9, -4.0f, 3, 7, 1, 0, 4 },
  };
  g_assert_cmpint(gst_harness_push(h, score_buffer(recs, 5)), ==, GST_FLOW_OK);
  g_assert_cmpint(c.lines, ==, 2); /* line 3 may still get tokens */
  g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  g_assert_cmpint(c.lines, ==, 3);
  gst_harness_teardown(h);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(out, &text, NULL, &err));
  guint n;
  JsonNode **l = parse_lines(text, &n);
  g_assert_cmpuint(n, ==, 3);
  JsonObject *o = json_node_get_object(l[0]);
  g_assert_cmpint(json_object_get_int_member(o, "tokens"), ==, 1);
  g_assert_cmpint(json_object_get_int_member(o, "bytes"), ==, 5);
  g_assert_cmpfloat_with_epsilon(json_object_get_double_member(o, "nll"), 1.0,
                                 1e-6);
  g_assert_true(JSON_NODE_HOLDS_NULL(json_object_get_member(o, "text")));
  g_assert_false(json_object_get_boolean_member(o, "flag"));
  o = json_node_get_object(l[2]);
  /* 4 nats over 1 byte: 5.77 bits per byte, over the threshold */
  g_assert_true(json_object_get_boolean_member(o, "flag"));
  g_assert_cmpfloat_with_epsilon(json_object_get_double_member(o, "anomaly"),
                                 4.0 / G_LN2 - 2.0, 1e-5);
  free_lines(l, n);
}

TU_TEST("/txlsink/bad-location", test_bad_location)
{
  GstElement *sink = gst_element_factory_make("txlsink", NULL);
  g_object_set(sink, "location", "/nonexistent/dir/out.jsonl", NULL);
  g_autofree char *msg = el_start_error(sink, GST_STATE_PAUSED);
  g_assert_nonnull(strstr(msg, "/nonexistent/dir/out.jsonl"));
}

/* threshold-mode mad and quantile: nothing is judged during the warm-up,
 * every line after it is; a median cut flags some lines but not all. */
TU_TEST("/txlsink/calibrated", test_calibrated)
{
  g_autoptr(TuPath) m = el_write_byte_model(41);
  g_autofree char *dir = g_path_get_dirname(m);
  GString *text = g_string_new(NULL);
  for (int i = 0; i < 120; i++)
    g_string_append_printf(text, "line %d of a steady stream %s\n", i,
                           i % 7 ? "ok" : "with a longer tail here");
  g_autofree char *in = write_input(dir, "cal.txt", text->str, text->len);
  const char *modes[] = {
    "threshold-mode=quantile quantile=0.5 warmup=40 window=100 post-scores=true",
    "threshold-mode=mad z-threshold=1000 warmup=40 window=100",
  };
  /* zscore: a fixed baseline, judged from the first line: all lines or none */
  for (int k = 0; k < 2; k++) {
    g_autofree char *desc = g_strdup_printf(
        "filesrc location=%s ! txltokenizer model=%s ! txlmodel model=%s ! "
        "txlsink name=sink location=%s/cal.jsonl threshold-mode=zscore "
        "mean=%s stddev=0.001 z-threshold=3", in, m, m, dir,
        k == 0 ? "0" : "1000");
    Counts c = { .early = 40 };
    run_pipeline(desc, &c);
    g_assert_cmpint(c.warming, ==, 0);
    g_assert_cmpint(c.flagged, ==, k == 0 ? 120 : 0);
  }
  for (int k = 0; k < 2; k++) {
    g_autofree char *desc = g_strdup_printf(
        "filesrc location=%s ! txltokenizer model=%s ! txlmodel model=%s ! "
        "txlsink name=sink location=%s/cal.jsonl %s", in, m, m, dir, modes[k]);
    Counts c = { .early = 40 };
    run_pipeline(desc, &c);
    g_assert_cmpint(c.lines, ==, 120);
    g_assert_cmpint(c.warming, ==, 40);
    g_assert_cmpint(c.flagged_early, ==, 0);
    if (k == 0) {
      g_assert_cmpint(c.flagged, >, 0);
      g_assert_cmpint(c.flagged, <, 80);
    } else {
      g_assert_cmpint(c.flagged, ==, 0);
    }
    g_assert_cmpint(c.anomalies, ==, c.flagged);
    /* txl-score only when asked, one per line */
    g_assert_cmpint(c.scores, ==, k == 0 ? 120 : 0);
  }
  g_autofree char *out = g_build_filename(dir, "cal.jsonl", NULL);
  g_remove(out);
  g_remove(in);
  g_string_free(text, TRUE);
}

/* GstHarness on txlsink alone: score records in, one JSON line per input
 * line out, with the totals of that line's records. */
TU_TEST("/txlsink/harness", test_harness)
{
  g_autoptr(TuPath) out = tu_tmp_path("out.jsonl");
  Counts c = { 0 };
  GstHarness *h = sink_harness(out, 100.0, &c);
  /* line 1: 3 tokens (the first unscored), line 2: 2 tokens */
  const float lp[5] = { NAN, -1.0f, -2.0f, -0.5f, -0.25f };
  const gint64 line[5] = { 1, 1, 1, 2, 2 };
  TxlScoreRecord recs[5] = { 0 };
  for (int i = 0; i < 5; i++) {
    TxlScoreRecord *r = &recs[i];
    r->id = 'a' + i;
    r->logprob = lp[i];
    r->line = line[i];
    r->byte_start = i;
    r->byte_len = 2;
    r->pos = i;
    r->flags = (i == 2 || i == 4 ? TXL_RECORD_LINE_END : 0) |
               (i == 0 ? TXL_RECORD_FIRST : 0);
  }
  g_assert_cmpint(gst_harness_push(h, score_buffer(recs, 5)), ==, GST_FLOW_OK);
  g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  gst_harness_teardown(h);
  g_assert_cmpint(c.lines, ==, 2);
  g_autofree char *text = NULL;
  g_assert_true(g_file_get_contents(out, &text, NULL, NULL));
  guint n;
  JsonNode **rows = parse_lines(text, &n);
  g_assert_cmpuint(n, ==, 2);
  JsonObject *o1 = json_node_get_object(rows[0]), *o2 = json_node_get_object(rows[1]);
  g_assert_cmpint(json_object_get_int_member(o1, "tokens"), ==, 2);
  g_assert_cmpfloat(fabs(json_object_get_double_member(o1, "nll") - 1.5), <, 1e-6);
  g_assert_cmpint(json_object_get_int_member(o2, "tokens"), ==, 2);
  g_assert_cmpfloat(fabs(json_object_get_double_member(o2, "nll") - 0.375), <, 1e-6);
  g_assert_false(json_object_get_boolean_member(o1, "flag"));
  free_lines(rows, n);
}

EL_TEST_MAIN()

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The calibration a model file carries (txl eval writes it) sets the
 * elements' defaults: txlsessions' key, score kind and threshold, and
 * txlsink's line threshold through the score caps; what the application
 * sets itself wins, and a calibration made one way (per session, or one
 * stream) is not applied to the other. */
#include "elements.h"

#include <json-glib/json-glib.h>

static char *model, *log_path;

static char *
make_log(void)
{
  GRand *r = g_rand_new_with_seed(11);
  GString *s = g_string_new(NULL);
  for (int i = 0; i < 160; i++) {
    int req = g_rand_int_range(r, 1, 9);
    if (g_rand_int_range(r, 0, 10) == 0)
      g_string_append_printf(s, "heartbeat %d\n", i);
    else if (req == 7)
      g_string_append_printf(s, "zq#%d!! req=%d ~~%x\n", i * 31, req, i * 977);
    else
      g_string_append_printf(s, "GET /item/%d req=%d ok\n", i % 5, req);
  }
  g_rand_free(r);
  g_autoptr(GError) err = NULL;
  char *dir = g_dir_make_tmp("txl-cal-XXXXXX", &err);
  g_assert_no_error(err);
  char *path = g_build_filename(dir, "app.log", NULL);
  g_free(dir);
  g_assert_true(g_file_set_contents(path, s->str, s->len, &err));
  g_string_free(s, TRUE);
  return path;
}

/* A txl-session message's key, score and flag. */
typedef struct {
  char *key;
  double score;
  gboolean flag;
} Sess;

/* A scored line of the JSON output: its cost and its anomaly. */
typedef struct {
  double bpb, anomaly;
} Scored;

typedef struct {
  GArray *sessions; /* Sess, as the messages came */
  GArray *lines;    /* Scored */
  gchar *kind;      /* the sessions' score kind */
  int warnings;
} Run;

static void
sess_clear(gpointer p)
{
  g_free(((Sess *)p)->key);
}

static void
run_free(Run *r)
{
  g_array_unref(r->sessions);
  g_array_unref(r->lines);
  g_free(r->kind);
}

static double
score_at(const Run *r, guint i)
{
  return g_array_index(r->sessions, Sess, i).score;
}

/* Warnings counted, and the txl-session messages' fields, into the Run
 * `data`. */
static void
on_message(GstMessage *msg, gpointer data)
{
  Run *r = data;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_WARNING) {
    r->warnings++;
    return;
  }
  const GstStructure *st = gst_message_get_structure(msg);
  if (gst_structure_has_name(st, "txl-session")) {
    Sess x = { g_strdup(gst_structure_get_string(st, "key")), 0, FALSE };
    g_assert_true(gst_structure_get_double(st, "score", &x.score));
    g_assert_true(gst_structure_get_boolean(st, "flag", &x.flag));
    g_array_append_val(r->sessions, x);
    g_free(r->kind);
    r->kind = g_strdup(gst_structure_get_string(st, "score-kind"));
  }
}

/* Runs "filesrc ! txltokenizer ! ELEMENT PROPS ! txlsink SINK_PROPS";
 * element properties are read back into *props_out (when given) after the
 * run.  txlsink is in threshold-mode fixed, the mode the calibration's
 * line threshold is for (its default judges by the stream's own scores). */
static Run
run(const char *element, const char *props, const char *sink_props,
    double *thr_out, char **key_out)
{
  Run r = { g_array_new(FALSE, FALSE, sizeof(Sess)),
            g_array_new(FALSE, FALSE, sizeof(Scored)), NULL, 0 };
  g_array_set_clear_func(r.sessions, sess_clear);
  g_autoptr(TuPath) out = tu_tmp_path("out.jsonl");
  g_autofree char *desc = g_strdup_printf(
      "filesrc location=\"%s\" ! txltokenizer model=\"%s\" ! %s name=e "
      "model=\"%s\" %s ! txlsink location=\"%s\" threshold-mode=fixed %s",
      log_path, model, element, model, props, out, sink_props);
  GstElement *p = el_parse(desc);
  el_play(p, GST_MESSAGE_WARNING, on_message, &r);
  GstElement *e = gst_bin_get_by_name(GST_BIN(p), "e");
  if (thr_out)
    g_object_get(e, "session-threshold", thr_out, NULL);
  if (key_out)
    g_object_get(e, "session-key", key_out, NULL);
  gst_object_unref(e);
  el_pipeline_free(p);
  g_autofree char *json = NULL;
  g_assert_true(g_file_get_contents(out, &json, NULL, NULL));
  g_auto(GStrv) lines = g_strsplit(json, "\n", -1);
  for (int i = 0; lines[i]; i++) {
    if (!*lines[i] || g_str_has_prefix(lines[i], "{\"session\""))
      continue;
    JsonParser *jp = json_parser_new();
    g_assert_true(json_parser_load_from_data(jp, lines[i], -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(jp));
    JsonNode *a = json_object_get_member(o, "anomaly");
    if (a && !json_node_is_null(a)) {
      Scored l = { json_object_get_double_member(o, "bpb"),
                   json_node_get_double(a) };
      g_array_append_val(r.lines, l);
    }
    g_object_unref(jp);
  }
  return r;
}

/* every scored line's anomaly is its cost above this threshold */
static void
assert_line_threshold(const Run *r, double thr)
{
  g_assert_cmpuint(r->lines->len, >, 100);
  for (guint i = 0; i < r->lines->len; i++) {
    const Scored *l = &g_array_index(r->lines, Scored, i);
    g_assert_cmpfloat_with_epsilon(l->anomaly, l->bpb - thr, 2e-6);
  }
}

static char *
calibrated(const TxlCalibration *c)
{
  g_autoptr(GError) err = NULL;
  char *path = g_strconcat(model, ".cal.gguf", NULL);
  g_assert_true(txl_model_file_set_calibration(model, path, c, &err));
  g_assert_no_error(err);
  return path;
}

TU_TEST("/calibration/sessions", test_sessions_calibration)
{
  /* uncalibrated, everything set by hand: the reference */
  Run ref = run("txlsessions", "session-key=\"req=([0-9]+)\" "
                "session-key-group=1 session-score=max-token", "", NULL,
                NULL);
  g_assert_cmpuint(ref.sessions->len, ==, 9); /* 8 keys and the lines without one */
  double lo = INFINITY, hi = -INFINITY;
  for (guint i = 0; i < ref.sessions->len; i++) {
    lo = MIN(lo, score_at(&ref, i));
    hi = MAX(hi, score_at(&ref, i));
  }
  g_assert_cmpfloat(lo, <, hi);
  assert_line_threshold(&ref, 4.0); /* txlsink's own default */
  TxlCalibration c = { .sessions = TRUE, .session_key = "req=([0-9]+)",
                       .session_key_group = 1, .session_score = 2,
                       .session_threshold = 0.5 * (lo + hi),
                       .line_threshold_bpb = 1.5, .rule = "test" };
  g_autofree char *plain = model;
  model = calibrated(&c);

  /* nothing set: the calibration's key, kind, threshold and line threshold */
  double thr = 0;
  g_autofree char *key = NULL;
  Run cal = run("txlsessions", "", "", &thr, &key);
  g_assert_cmpfloat(thr, ==, c.session_threshold);
  g_assert_cmpstr(key, ==, c.session_key);
  g_assert_cmpstr(cal.kind, ==, "max-token");
  g_assert_cmpuint(cal.sessions->len, ==, ref.sessions->len);
  int n_flag = 0;
  for (guint i = 0; i < cal.sessions->len; i++) {
    const Sess *x = &g_array_index(cal.sessions, Sess, i);
    g_assert_cmpstr(x->key, ==, g_array_index(ref.sessions, Sess, i).key);
    g_assert_true(x->score == score_at(&ref, i));
    g_assert_true(x->flag == (x->score > c.session_threshold));
    n_flag += x->score > c.session_threshold;
  }
  g_assert_cmpint(n_flag, >, 0);
  g_assert_cmpint(n_flag, <, (int)cal.sessions->len);
  assert_line_threshold(&cal, 1.5);

  /* what the application sets wins */
  Run own = run("txlsessions", "session-threshold=0 session-score=mean",
                "threshold=7", &thr, NULL);
  g_assert_cmpfloat(thr, ==, 0);
  g_assert_cmpstr(own.kind, ==, "mean");
  for (guint i = 0; i < own.sessions->len; i++)
    g_assert_false(g_array_index(own.sessions, Sess, i).flag);
  assert_line_threshold(&own, 7.0);

  /* one stream: a per-session calibration does not apply */
  Run one = run("txlmodel", "", "", NULL, NULL);
  assert_line_threshold(&one, 4.0);
  g_assert_cmpint(one.warnings, ==, 1); /* pointing at txlsessions */
  g_assert_cmpint(cal.warnings + own.warnings + ref.warnings, ==, 0);

  run_free(&ref);
  run_free(&cal);
  run_free(&own);
  run_free(&one);
  tu_remove(model);
  g_free(model);
  model = g_steal_pointer(&plain);
}

TU_TEST("/calibration/single-stream", test_single_stream_calibration)
{
  TxlCalibration c = { .sessions = FALSE, .session_score = 3,
                       .line_threshold_bpb = 2.25 };
  g_autofree char *plain = model;
  model = calibrated(&c);
  Run one = run("txlmodel", "", "", NULL, NULL);
  assert_line_threshold(&one, 2.25);
  g_assert_cmpint(one.warnings, ==, 0);
  Run own = run("txlmodel", "", "threshold=3.5", NULL, NULL);
  assert_line_threshold(&own, 3.5);
  /* txlsessions: its own defaults (HDFS key, no threshold) */
  double thr = -1;
  g_autofree char *key = NULL;
  Run s = run("txlsessions", "", "", &thr, &key);
  g_assert_cmpfloat(thr, ==, 0);
  g_assert_cmpstr(key, ==, "blk_-?[0-9]+");
  assert_line_threshold(&s, 4.0);
  run_free(&one);
  run_free(&own);
  run_free(&s);
  tu_remove(model);
  g_free(model);
  model = g_steal_pointer(&plain);
}

int
main(int argc, char **argv)
{
  el_test_init(&argc, &argv);
  model = el_write_byte_model(5);
  log_path = make_log();
  int rc = g_test_run();
  tu_remove(model);
  tu_remove(log_path);
  g_free(model);
  g_free(log_path);
  return rc;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlmodel and txlsessions snapshots in a pipeline (filesrc ! txltokenizer
 * ! txlmodel|txlsessions ! txlsink): the action signals and their bus
 * messages, periodic snapshots, restore at start, and refusals that leave
 * the live stream alone. */
#include "elements.h"
#include "bytes.h"

#include <fcntl.h>
#include <glib/gstdio.h>
#include <sys/file.h>
#include <unistd.h>

typedef struct {
  char *dir, *model, *text, *out;
} Fixture;

/* the element under test: txlmodel, or txlsessions with a few sessions */
static const char *element = "txlmodel";

/* Setup of every test: the element under test is the test's data. */
static void
fixture_init(Fixture *f, gconstpointer el)
{
  element = el;
  f->model = el_write_word_model(7);
  f->dir = g_path_get_dirname(f->model);
  f->text = g_build_filename(f->dir, "in.txt", NULL);
  f->out = g_build_filename(f->dir, "out.jsonl", NULL);
  GString *t = g_string_new(NULL);
  for (int i = 0; i < 8; i++)
    g_string_append(t, el_text);
  g_string_append_c(t, '\n');
  g_assert_true(g_file_set_contents(f->text, t->str, t->len, NULL));
  g_string_free(t, TRUE);
}

static void
fixture_clear(Fixture *f, gconstpointer el)
{
  tu_remove_dir(f->dir);
  g_free(f->dir);
  g_free(f->model);
  g_free(f->text);
  g_free(f->out);
}

static GstElement *
pipeline(Fixture *f, const char *model_props)
{
  g_autofree char *desc = g_strdup_printf(
      "filesrc blocksize=50 location=\"%s\" ! txltokenizer model=\"%s\" ! "
      "%s name=m model=\"%s\" segment=4 %s %s ! txlsink location=\"%s\"",
      f->text, f->model, element, f->model,
      strcmp(element, "txlsessions") ? "" : "session-key=\"(cat|sat|on)\"",
      model_props, f->out);
  return el_parse(desc);
}

/* Runs to EOS (or error); returns the element messages named `name`
 * (GstStructure copies), and the error text when one came. */
static GPtrArray *
run(GstElement *p, const char *name, char **error)
{
  GPtrArray *msgs = g_ptr_array_new_with_free_func(
      (GDestroyNotify)gst_structure_free);
  char *e = el_run(p, name, msgs);
  if (error)
    *error = e;
  else
    g_free(e);
  return msgs;
}

static GstStructure *
pop_element_message(GstElement *p, const char *name)
{
  GstBus *bus = gst_element_get_bus(p);
  GstStructure *s = NULL;
  GstMessage *m;
  while (!s && (m = gst_bus_timed_pop_filtered(bus, 5 * GST_SECOND,
                                               GST_MESSAGE_ELEMENT))) {
    if (gst_structure_has_name(gst_message_get_structure(m), name))
      s = gst_structure_copy(gst_message_get_structure(m));
    gst_message_unref(m);
  }
  gst_object_unref(bus);
  return s;
}

static GBytes *
slurp(const char *path)
{
  gchar *d;
  gsize n;
  g_assert_true(g_file_get_contents(path, &d, &n, NULL));
  return g_bytes_new_take(d, n);
}

/* The streaming thread can still be finishing the EOS the test waited for;
 * a snapshot or restore asked for meanwhile is queued for the next buffer
 * (a restore checked for its container only, TRUE), so wait for the thread
 * to let go of the stream.  Seen twice on a loaded 2-core machine, a
 * refused restore accepted: a suite run, and 1 of 42 runs beside two busy
 * loops. */
static void
wait_stream_idle(GstElement *e)
{
  GstPad *sink = gst_element_get_static_pad(e, "sink");
  GST_PAD_STREAM_LOCK(sink);
  GST_PAD_STREAM_UNLOCK(sink);
  gst_object_unref(sink);
}

static void
test_signals(Fixture *f, gconstpointer el)
{
  g_autofree char *a = g_build_filename(f->dir, "a.snap", NULL);
  g_autofree char *b = g_build_filename(f->dir, "b.snap", NULL);
  g_autofree char *c = g_build_filename(f->dir, "c.snap", NULL);
  g_autofree char *bad = g_build_filename(f->dir, "bad.snap", NULL);
  g_autofree char *props = g_strdup_printf("snapshot-location=\"%s\"", a);
  GstElement *p = pipeline(f, props);
  GPtrArray *snaps = run(p, "txl-snapshot", NULL);
  /* hold-at-eos: one snapshot at the end of stream */
  g_assert_cmpuint(snaps->len, ==, 1);
  GstStructure *s = g_ptr_array_index(snaps, 0);
  g_assert_cmpstr(gst_structure_get_string(s, "reason"), ==, "eos");
  g_assert_cmpstr(gst_structure_get_string(s, "path"), ==, a);
  guint64 bytes = 0, tokens = 0;
  gdouble duration = -1;
  g_assert_true(gst_structure_get_uint64(s, "bytes", &bytes));
  g_assert_true(gst_structure_get_uint64(s, "tokens", &tokens));
  g_assert_true(gst_structure_get_double(s, "duration", &duration));
  GStatBuf st;
  g_assert_cmpint(g_stat(a, &st), ==, 0);
  g_assert_cmpuint(bytes, ==, (guint64)st.st_size);
  g_assert_cmpuint(tokens, >, 100);
  g_assert_cmpfloat(duration, >=, 0.0);
  g_ptr_array_unref(snaps);

  /* the stream is idle: a requested snapshot is written at once, and is
   * the same state, byte for byte */
  GstElement *m = gst_bin_get_by_name(GST_BIN(p), "m");
  wait_stream_idle(m);
  gboolean ok = FALSE;
  g_signal_emit_by_name(m, "snapshot", b, &ok);
  g_assert_true(ok);
  s = pop_element_message(p, "txl-snapshot");
  g_assert_nonnull(s);
  g_assert_cmpstr(gst_structure_get_string(s, "reason"), ==, "signal");
  gst_structure_free(s);
  GBytes *ba = slurp(a), *bb = slurp(b);
  g_assert_true(g_bytes_equal(ba, bb));

  /* a corrupt file is refused and changes nothing */
  gsize n;
  const guint8 *d = g_bytes_get_data(ba, &n);
  guint8 *flipped = g_memdup2(d, n);
  flipped[n / 2] ^= 1;
  g_assert_true(g_file_set_contents(bad, (char *)flipped, n, NULL));
  g_free(flipped);
  ok = TRUE;
  g_signal_emit_by_name(m, "restore", bad, &ok);
  g_assert_false(ok);
  g_signal_emit_by_name(m, "snapshot", c, &ok);
  g_assert_true(ok);
  s = pop_element_message(p, "txl-snapshot"); /* it may follow the call */
  g_assert_nonnull(s);
  gst_structure_free(s);
  GBytes *bc = slurp(c);
  g_assert_true(g_bytes_equal(ba, bc));
  g_bytes_unref(bc);

  /* restore of a good one: a message, and the same state again */
  g_signal_emit_by_name(m, "restore", b, &ok);
  g_assert_true(ok);
  s = pop_element_message(p, "txl-restore");
  g_assert_nonnull(s);
  g_assert_cmpstr(gst_structure_get_string(s, "path"), ==, b);
  gst_structure_free(s);
  g_remove(c);
  g_signal_emit_by_name(m, "snapshot", c, &ok);
  s = pop_element_message(p, "txl-snapshot");
  g_assert_nonnull(s);
  gst_structure_free(s);
  bc = slurp(c);
  g_assert_true(g_bytes_equal(ba, bc));
  g_bytes_unref(bc);
  /* no path and no location */
  g_object_set(m, "snapshot-location", NULL, NULL);
  g_signal_emit_by_name(m, "snapshot", NULL, &ok);
  g_assert_false(ok);
  gst_element_set_state(p, GST_STATE_NULL);
  g_bytes_unref(ba);
  g_bytes_unref(bb);
  gst_object_unref(m);
  gst_object_unref(p);
}

static void
test_periodic(Fixture *f, gconstpointer el)
{
  g_autofree char *a = g_build_filename(f->dir, "a.snap", NULL);
  g_autofree char *props = g_strdup_printf(
      "snapshot-location=\"%s\" snapshot-tokens=25 hold-at-eos=false", a);
  GstElement *p = pipeline(f, props);
  GPtrArray *snaps = run(p, "txl-snapshot", NULL);
  guint by_tokens = 0, at_eos = 0;
  guint64 last = 0;
  for (guint i = 0; i < snaps->len; i++) {
    GstStructure *s = g_ptr_array_index(snaps, i);
    const char *r = gst_structure_get_string(s, "reason");
    guint64 t;
    gst_structure_get_uint64(s, "tokens", &t);
    g_assert_cmpuint(t, >=, last);
    last = t;
    by_tokens += g_strcmp0(r, "tokens") == 0;
    at_eos += g_strcmp0(r, "eos") == 0;
  }
  /* a snapshot at least every 25 tokens (buffers may hold more) */
  g_assert_cmpuint(by_tokens, >=, 3);
  g_assert_cmpuint(at_eos, ==, 1);
  g_ptr_array_unref(snaps);
  el_pipeline_free(p);

  /* restore at start: the second run continues the stream */
  p = pipeline(f, props);
  GPtrArray *restores = run(p, "txl-restore", NULL);
  g_assert_cmpuint(restores->len, ==, 1);
  guint64 t = 0;
  gst_structure_get_uint64(g_ptr_array_index(restores, 0), "tokens", &t);
  g_assert_cmpuint(t, ==, last);
  g_ptr_array_unref(restores);
  el_pipeline_free(p);
}

static void
test_refused_at_start(Fixture *f, gconstpointer el)
{
  g_autofree char *a = g_build_filename(f->dir, "a.snap", NULL);
  g_autofree char *props = g_strdup_printf("snapshot-location=\"%s\"", a);
  /* not a snapshot at all */
  g_assert_true(g_file_set_contents(a, "garbage", -1, NULL));
  GstElement *p = pipeline(f, props);
  char *err = NULL;
  g_ptr_array_unref(run(p, "txl-restore", &err));
  g_assert_nonnull(err);
  g_assert_nonnull(strstr(err, "Could not restore the snapshot"));
  g_free(err);
  el_pipeline_free(p);
  /* restore=false starts a new stream over it */
  g_autofree char *props2 = g_strdup_printf("%s restore=false", props);
  p = pipeline(f, props2);
  g_ptr_array_unref(run(p, "txl-restore", &err));
  g_assert_null(err);
  el_pipeline_free(p);
  /* a snapshot of another model */
  g_autoptr(TuPath) other = el_write_word_model(8);
  g_autofree char *desc = g_strdup_printf(
      "filesrc location=\"%s\" ! txltokenizer model=\"%s\" ! %s "
      "model=\"%s\" %s ! txlsink location=\"%s\"", f->text, other, element,
      other, props, f->out);
  p = gst_parse_launch(desc, NULL);
  g_ptr_array_unref(run(p, "txl-restore", &err));
  g_assert_nonnull(err);
  g_assert_nonnull(strstr(err, "another model"));
  g_free(err);
  el_pipeline_free(p);
}

/* Line numbers of the GstTxlLineMetas of every buffer the harness has. */
static void
pull_lines(GstHarness *h, GArray *lines)
{
  GType api = g_type_from_name(GST_TXL_LINE_META_API_NAME);
  GstBuffer *b;
  while ((b = gst_harness_try_pull(h))) {
    gpointer state = NULL;
    GstMeta *m;
    while ((m = gst_buffer_iterate_meta_filtered(b, &state, api)))
      g_array_append_val(lines, ((GstTxlLineMeta *)m)->line);
    gst_buffer_unref(b);
  }
}

static void
push_text(GstHarness *h, int from, int to, GstFlowReturn want)
{
  GString *t = g_string_new(NULL);
  for (int i = from; i <= to; i++)
    g_string_append_printf(t, "the cat k%d sat on w%d\n", i % 3, 6 + i);
  GstBuffer *b = gst_buffer_new_memdup(t->str, t->len);
  g_string_free(t, TRUE);
  g_assert_cmpint(gst_harness_push(h, b), ==, want);
}

/* Lines the element could not push because downstream was shutting down
 * stay in its state (the push is taken as received, so txltokenizer's
 * count agrees): the shutdown snapshot keeps them and the next run sends
 * them, so every line comes out exactly once over the two runs. */
static void
test_failed_push_kept(Fixture *f, gconstpointer el)
{
  g_autofree char *snap = g_build_filename(f->dir, "s.snap", NULL);
  g_autofree char *d1 = g_strdup_printf(
      "txltokenizer model=\"%s\" ! %s model=\"%s\" flush-on-newline=true "
      "%s snapshot-location=\"%s\"", f->model, element, f->model,
      strcmp(element, "txlsessions") ? "" : "session-key=\"k[0-9]\"", snap);
  GArray *lines = g_array_new(FALSE, FALSE, sizeof(gint64));
  GstHarness *h = gst_harness_new_parse(d1);
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  push_text(h, 1, 10, GST_FLOW_OK);
  pull_lines(h, lines);
  guint first = lines->len;
  g_assert_cmpuint(first, >=, 9); /* the line being read may wait */
  /* downstream goes away: the next lines cannot be delivered */
  gst_pad_set_active(h->sinkpad, FALSE);
  push_text(h, 11, 20, GST_FLOW_OK);
  gst_harness_teardown(h); /* the shutdown snapshot */
  g_assert_true(g_file_test(snap, G_FILE_TEST_EXISTS));

  g_autofree char *d2 = g_strdup_printf("%s hold-at-eos=false", d1);
  h = gst_harness_new_parse(d2);
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  push_text(h, 21, 22, GST_FLOW_OK);
  g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
  pull_lines(h, lines);
  gst_harness_teardown(h);
  g_assert_cmpuint(lines->len, ==, 22);
  for (guint i = 0; i < lines->len; i++)
    g_assert_cmpint(g_array_index(lines, gint64, i), ==, (gint64)i + 1);
  g_array_unref(lines);
}

/* A stream whose last line has no line end: the end of stream ends that
 * line (a word tokenizer counts it then), the snapshot is taken after it,
 * and the resumed stream's lines still end when their line ends come
 * (not when the next line starts), numbered on. */
static void
test_unterminated_then_resumed(Fixture *f, gconstpointer el)
{
  g_autofree char *snap = g_build_filename(f->dir, "u.snap", NULL);
  g_autofree char *desc = g_strdup_printf(
      "txltokenizer model=\"%s\" ! %s model=\"%s\" flush-on-newline=true "
      "%s snapshot-location=\"%s\" hold-at-eos=false", f->model, element,
      f->model, strcmp(element, "txlsessions") ? "" : "session-key=\"k[0-9]\"",
      snap);
  GArray *lines = g_array_new(FALSE, FALSE, sizeof(gint64));
  static const char *const parts[] = {
    "the cat k1 sat on w6\nthe cat k1 sat", /* line 2 is ended by EOS */
    "the cat k1 sat on w7\non the cat k1 w8\n",
  };
  for (int run = 0; run < 2; run++) {
    GstHarness *h = gst_harness_new_parse(desc);
    gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
    g_assert_cmpint(gst_harness_push(h, gst_buffer_new_memdup(parts[run],
                    strlen(parts[run]))), ==, GST_FLOW_OK);
    pull_lines(h, lines);
    /* every complete line out at its line end, before the end of stream:
     * the line ends were marked (lines 1, then 3 and 4) */
    g_assert_cmpuint(lines->len, ==, run == 0 ? 1 : 4);
    g_assert_true(gst_harness_push_event(h, gst_event_new_eos()));
    pull_lines(h, lines);
    gst_harness_teardown(h);
    g_assert_true(g_file_test(snap, G_FILE_TEST_EXISTS));
  }
  g_assert_cmpuint(lines->len, ==, 4);
  for (guint i = 0; i < lines->len; i++)
    g_assert_cmpint(g_array_index(lines, gint64, i), ==, (gint64)i + 1);
  g_array_unref(lines);
}

/* Runs a pipeline named `name` (NULL: gst-launch's automatic name) with
 * snapshot-location=snap to its end; returns the error text, if any. */
static char *
run_named(Fixture *f, const char *name, const char *snap)
{
  g_autofree char *props = g_strdup_printf("snapshot-location=\"%s\"", snap);
  GstElement *p = pipeline(f, props);
  if (name)
    gst_object_set_name(GST_OBJECT(p), name);
  char *err = NULL;
  g_ptr_array_unref(run(p, "txl-restore", &err));
  el_pipeline_free(p);
  return err;
}

/* Each snapshot records which pipeline and element wrote it; a restore
 * into another pipeline is refused naming both, the same pipeline built
 * again (automatic names count up within a process) restores it, and a
 * file without a writer (older) is accepted. */
static void
test_writer(Fixture *f, gconstpointer el)
{
  g_autofree char *snap = g_build_filename(f->dir, "w.snap", NULL);
  g_assert_null(run_named(f, "alpha", snap));
  GString *info = g_string_new(NULL);
  g_assert_true(txl_snapshot_describe(snap, info, NULL));
  g_autofree char *want = g_strdup_printf(
      "\"writer\": \"pipeline \\\"alpha\\\", element \\\"m\\\"\"");
  g_assert_nonnull(strstr(info->str, want));
  g_string_free(info, TRUE);
  GBytes *before = slurp(snap);
  char *err = run_named(f, "beta", snap);
  g_assert_nonnull(err);
  g_assert_nonnull(strstr(err, "written by pipeline \"alpha\""));
  g_assert_nonnull(strstr(err, "not by pipeline \"beta\""));
  g_free(err);
  GBytes *after = slurp(snap); /* the refused run wrote nothing */
  g_assert_true(g_bytes_equal(before, after));
  g_bytes_unref(after);
  g_bytes_unref(before);
  g_assert_null(run_named(f, "alpha", snap));
  /* gst-launch's pipelines: pipeline0 in each process, pipelineN here */
  g_remove(snap);
  g_assert_null(run_named(f, NULL, snap));
  g_assert_null(run_named(f, NULL, snap));
  err = run_named(f, "alpha", snap);
  g_assert_nonnull(err);
  g_assert_nonnull(strstr(err, "an unnamed pipeline"));
  g_free(err);
}

/* What a writer killed mid-write leaves (PATH.XXXXXX) is removed when the
 * element starts; other names, other files, a directory and a temporary
 * a live writer holds locked are kept. */
static void
test_stale_temporaries(Fixture *f, gconstpointer el)
{
  g_autofree char *snap = g_build_filename(f->dir, "t.snap", NULL);
  static const char *stale[] = { "t.snap.Ab3dE9", "t.snap.000000" };
  static const char *keep[] = { "t.snap.Ab3dE", "t.snap.Ab3dE9x",
                                "t.snap.Ab-dE9", "u.snap.Ab3dE9", "t.snap",
                                "t.snapXAb3dE9" };
  for (guint i = 0; i < G_N_ELEMENTS(stale); i++) {
    g_autofree char *q = g_build_filename(f->dir, stale[i], NULL);
    g_assert_true(g_file_set_contents(q, "partial", -1, NULL));
  }
  for (guint i = 0; i < G_N_ELEMENTS(keep); i++) {
    g_autofree char *q = g_build_filename(f->dir, keep[i], NULL);
    g_assert_true(g_file_set_contents(q, "other", -1, NULL));
  }
  g_autofree char *dir = g_build_filename(f->dir, "t.snap.Dir123", NULL);
  g_assert_cmpint(g_mkdir(dir, 0700), ==, 0);
  g_autofree char *locked = g_build_filename(f->dir, "t.snap.Lck123", NULL);
  g_assert_true(g_file_set_contents(locked, "live", -1, NULL));
  int fd = open(locked, O_RDONLY);
  g_assert_cmpint(flock(fd, LOCK_EX), ==, 0);
  g_autofree char *props = g_strdup_printf("snapshot-location=\"%s\" restore=false",
                                snap);
  GstElement *p = pipeline(f, props);
  g_assert_cmpint(gst_element_set_state(p, GST_STATE_PAUSED), !=,
                  GST_STATE_CHANGE_FAILURE);
  gst_element_get_state(p, NULL, NULL, 10 * GST_SECOND);
  for (guint i = 0; i < G_N_ELEMENTS(stale); i++) {
    g_autofree char *q = g_build_filename(f->dir, stale[i], NULL);
    g_assert_false(g_file_test(q, G_FILE_TEST_EXISTS));
  }
  for (guint i = 0; i < G_N_ELEMENTS(keep); i++) {
    g_autofree char *q = g_build_filename(f->dir, keep[i], NULL);
    g_assert_true(g_file_test(q, G_FILE_TEST_EXISTS));
  }
  g_assert_true(g_file_test(dir, G_FILE_TEST_IS_DIR));
  g_assert_true(g_file_test(locked, G_FILE_TEST_EXISTS));
  el_pipeline_free(p);
  close(fd);
  g_rmdir(dir);
}

static void
nop_score(gint64 pos, int32_t token, float lp, gpointer data)
{
}

/* The pipeline run to its end, its snapshot (hold-at-eos) in *a; *b: a
 * name beside it for a rewritten copy. */
static GstElement *
held_snapshot(Fixture *f, char **a, char **b)
{
  *a = g_build_filename(f->dir, "a.snap", NULL);
  *b = g_build_filename(f->dir, "b.snap", NULL);
  g_autofree char *props = g_strdup_printf("snapshot-location=\"%s\"", *a);
  GstElement *p = pipeline(f, props);
  g_ptr_array_unref(run(p, NULL, NULL));
  return p;
}

/* The element "m" of p refuses the snapshot bad and still restores good;
 * then p goes. */
static void
refused_then_good(GstElement *p, const char *bad, const char *good)
{
  GstElement *e = gst_bin_get_by_name(GST_BIN(p), "m");
  wait_stream_idle(e);
  gboolean ok = TRUE;
  g_signal_emit_by_name(e, "restore", bad, &ok);
  g_assert_false(ok);
  g_signal_emit_by_name(e, "restore", good, &ok);
  g_assert_true(ok);
  gst_object_unref(e);
  el_pipeline_free(p);
}

/* The snapshot a rewritten into b with the library's writer (the element
 * under test's loader and saver, so the file is whole and its checksum
 * good) after edit changed its sections. */
typedef void (*EditFunc)(GHashTable *sect, gpointer loaded, gpointer data);

static void
rewrite(Fixture *f, const char *a, const char *b, EditFunc edit,
        gpointer data)
{
  TxlModel *m = tu_test_load(f->model);
  g_autoptr(GHashTable) sect = NULL;
  g_autoptr(GError) err = NULL;
  if (!strcmp(element, "txlsessions")) {
    TxlSessionOptions o = txl_session_options_default();
    o.key_regex = "(cat|sat|on)";
    o.segment = 4;
    o.prime = TRUE;
    TxlSessions *s = txl_sessions_load(m, a, &o, NULL, NULL, NULL, &sect,
                                       &err);
    g_assert_no_error(err);
    edit(sect, s, data);
    g_assert_true(txl_sessions_save(s, b, NULL, sect, NULL, &err));
    txl_sessions_free(s);
  } else {
    TxlScorer *sc = txl_scorer_load_full(m, a, nop_score, NULL, &sect, &err);
    g_assert_no_error(err);
    edit(sect, sc, data);
    g_assert_true(txl_scorer_save_full(sc, b, NULL, sect, NULL, &err));
    txl_scorer_free(sc);
  }
  g_assert_no_error(err);
}

/* A copy of section name's bytes (*n of them, at least min), for an edit
 * to put back with put_section. */
static guint8 *
section_copy(GHashTable *sect, const char *name, gsize *n, gsize min)
{
  const guint8 *src = g_bytes_get_data(g_hash_table_lookup(sect, name), n);
  g_assert_cmpuint(*n, >=, min);
  return g_memdup2(src, *n);
}

static void
put_section(GHashTable *sect, const char *name, guint8 *d, gsize n)
{
  g_hash_table_insert(sect, g_strdup(name), g_bytes_new_take(d, n));
}

/* The section named data gets version 99. */
static void
bump_version(GHashTable *sect, gpointer loaded, gpointer data)
{
  gsize n;
  guint8 *d = section_copy(sect, data, &n, 4);
  txl_le_put32(d, 99);
  put_section(sect, data, d, n);
}

static void
list_names(GHashTable *sect, gpointer loaded, gpointer data)
{
  GHashTableIter it;
  gpointer k;
  g_hash_table_iter_init(&it, sect);
  while (g_hash_table_iter_next(&it, &k, NULL))
    if (strcmp(k, TXL_SNAPSHOT_WRITER_SECTION))
      g_ptr_array_add(data, g_strdup(k));
}

/* The pipeline's snapshot rewritten after edit is refused by its element,
 * and the snapshot as written still restores. */
static void
refused_after(Fixture *f, EditFunc edit)
{
  g_autofree char *a = NULL, *b = NULL;
  GstElement *p = held_snapshot(f, &a, &b);
  rewrite(f, a, b, edit, NULL);
  refused_then_good(p, b, a);
}

/* version, tokens in, records out, pending records, then the records:
 * the first pending record's id moved */
static void
shift_pending_id(GHashTable *sect, gpointer loaded, gpointer data)
{
  gsize n;
  guint8 *d = section_copy(sect, "txlmodel", &n, 29 + TXL_SCORE_RECORD_SIZE);
  g_assert_cmpuint(d[20], >, 0); /* a pending record at least */
  TxlScoreRecord rec;
  txl_score_record_read(d + 28, &rec);
  rec.id = (rec.id + 1) % 300;
  txl_score_record_write(d + 28, &rec);
  put_section(sect, "txlmodel", d, n);
}

/* txlmodel: a snapshot whose section gives a pending token another id than
 * the scorer's (a file rewritten with the library's writer, its checksum
 * good) is refused and leaves the stream as it was.  fuzz_elements found
 * it accepted: the scores that came for those tokens then tripped
 * on_score's check. */
static void
test_pending_id_mismatch(Fixture *f, gconstpointer el)
{
  refused_after(f, shift_pending_id);
}

/* version, tokens in, records out, then the lines pushed (at 20) and,
 * after the clock, the number of the first line held (at 36): both moved */
static void
move_lines(GHashTable *sect, gpointer loaded, gpointer data)
{
  gsize n;
  guint8 *d = section_copy(sect, "txlsessions", &n, 45);
  g_assert_cmpuint(txl_le_get64(d + 20), ==, txl_sessions_lines(loaded));
  txl_le_put64(d + 20, txl_le_get64(d + 20) + 1000);
  txl_le_put64(d + 36, txl_le_get64(d + 36) + 1000);
  put_section(sect, "txlsessions", d, n);
}

/* txlsessions: a snapshot whose section numbers the lines differently
 * from its sessions (pushed and the first waiting line moved together, so
 * that the section alone is consistent; the file rewritten with the
 * library's writer) is refused, and the good one still restores.
 * fuzz_elements found it accepted: the sessions then reported lines the
 * element did not hold. */
static void
test_lines_mismatch(Fixture *f, gconstpointer el)
{
  refused_after(f, move_lines);
}

/* Each part of a learning pipeline's snapshot (the element's own, its
 * learning, txltokenizer's, txlsink's) of a version newer than this build
 * reads is refused at start with a message that names the version, not as
 * malformed. */
static void
test_newer_version(Fixture *f, gconstpointer el)
{
  g_autofree char *a = g_build_filename(f->dir, "a.snap", NULL);
  g_autofree char *b = g_build_filename(f->dir, "b.snap", NULL);
  /* the fixture's word model, with the plain softmax that learning needs */
  static const char *const base[] = { "<eos>", "<unk>", "the",
                                      "cat",   "sat",   "on" };
  TxlConfig c = tu_plain_config((TuDims){ .n_token = 300, .d_model = 16,
      .n_head = 2, .d_head = 8, .d_inner = 32, .n_layer = 2, .mem_len = 12,
      .tgt_len = 5 });
  char *word = f->model;
  f->model = tu_write_word_model_of(&c, base, 7, FALSE);
  const char *learn = "learn=true learn-warmup=2";
  g_autofree char *pa = g_strdup_printf("snapshot-location=\"%s\" %s", a,
                                        learn);
  GstElement *p = pipeline(f, pa);
  char *err = NULL;
  g_ptr_array_unref(run(p, NULL, &err));
  if (err)
    g_error("%s", err);
  el_pipeline_free(p);
  g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
  rewrite(f, a, b, list_names, names);
  g_assert_cmpuint(names->len, >=, 4);
  g_autofree char *pb = g_strdup_printf("snapshot-location=\"%s\" %s", b,
                                        learn);
  for (guint i = 0; i < names->len; i++) {
    rewrite(f, a, b, bump_version, g_ptr_array_index(names, i));
    p = pipeline(f, pb);
    g_ptr_array_unref(run(p, "txl-restore", &err));
    if (!err || !strstr(err, "version 99, written by a newer txl"))
      g_error("part %s: %s", (char *)g_ptr_array_index(names, i), err);
    g_free(err);
    el_pipeline_free(p);
  }
  tu_remove(f->model);
  g_free(f->model);
  f->model = word;
}

int
main(int argc, char **argv)
{
  el_test_init(&argc, &argv);
  static const char *elements[] = { "txlmodel", "txlsessions" };
  static const struct {
    const char *name;
    void (*func)(Fixture *f, gconstpointer el);
  } tests[] = {
    { "signals", test_signals },
    { "periodic", test_periodic },
    { "refused-at-start", test_refused_at_start },
    { "failed-push-kept", test_failed_push_kept },
    { "unterminated-then-resumed", test_unterminated_then_resumed },
    { "writer", test_writer },
    { "stale-temporaries", test_stale_temporaries },
    { "newer-version", test_newer_version },
  };
  for (int i = 0; i < 2; i++)
    for (gsize t = 0; t < G_N_ELEMENTS(tests); t++) {
      g_autofree char *n = g_strdup_printf("/snapshots/%s/%s", elements[i],
                                           tests[t].name);
      g_test_add_vtable(n, sizeof(Fixture), elements[i],
                        (GTestFixtureFunc)fixture_init,
                        (GTestFixtureFunc)tests[t].func,
                        (GTestFixtureFunc)fixture_clear);
    }
  g_test_add_vtable("/snapshots/txlmodel/pending-id-mismatch",
                    sizeof(Fixture), "txlmodel",
                    (GTestFixtureFunc)fixture_init,
                    (GTestFixtureFunc)test_pending_id_mismatch,
                    (GTestFixtureFunc)fixture_clear);
  g_test_add_vtable("/snapshots/txlsessions/lines-mismatch",
                    sizeof(Fixture), "txlsessions",
                    (GTestFixtureFunc)fixture_init,
                    (GTestFixtureFunc)test_lines_mismatch,
                    (GTestFixtureFunc)fixture_clear);
  return g_test_run();
}

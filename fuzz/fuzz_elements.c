/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libFuzzer target: the plugin elements' own parts of pipeline snapshots,
 * the bytes each element writes and reads back itself (docs/snapshots.md):
 *
 *   txlmodel's section     parse_own of gsttxlmodel.c, learning or not
 *   txlsessions' section   gst_txl_sessions_parse_own (pending lines, ended
 *                          sessions' GstStructures, learning flags and ids)
 *   the learning sections  txllearn.c's, through parse_own's resume, of
 *                          txlmodel and txlsessions with learn=true
 *   txltokenizer's part    its restore_state (encoder, reader, cursor),
 *                          asked over the pad as txlmodel asks it
 *   txlsink's part         its restore_state (txljson's too), likewise
 *   txlsampler's snapshot  load_snapshot of gsttxlsampler.c at start: its
 *                          section "txlsampler" (version, tokens received,
 *                          context ids not yet fed), the generator's
 *                          "sampler" (txl_generator_load), the writer
 *                          section, and txltokenizer's part, which the
 *                          tokenizer fetches from it at its first buffer
 *
 * The plugin and the library are compiled in (instrumented) and the plugin
 * registered statically.  At start each element runs in a harness on a
 * small random word model, takes a few lines and writes a real snapshot;
 * its sections are the real ones.  Per input, the first byte picks the
 * case (low 4 bits) and whether the rest is the section itself or XORed
 * over the real one (bit 7), so that mutations reach past the first
 * checks.  A scorer's section is parsed against the library's part loaded
 * fresh from the real file, as a restore does, and applied the way a live
 * restore applies it.  A txlsampler section goes into a copy of the real
 * generation snapshot, written with the library's container writer (the
 * one txl_generator_save uses; the rest of the file is the real one, byte
 * for byte), and a txlsampler restores it when it starts, as restore=true
 * does.
 *
 * What must hold: a refusal comes with an error message; an accepted part
 * leaves the element working: more lines go through it, and it saves its
 * part again; then the real state is restored, which must succeed.  For
 * txlsampler: a refused file fails its start with an error message naming
 * the file; an accepted one generates from more lines (an error only from
 * txltokenizer refusing its own part, the case of that part) and
 * snapshots again, and the real file still restores.  Run with
 * G_DEBUG=fatal-criticals: a GLib critical is a finding too.
 *
 * Seeds: FUZZ_ELEMENTS_SEEDS=<dir> makes the target write each case's real
 * section there at start, caseN-<name>, and xor-caseN, the one byte that
 * XORs nothing over it (fuzz/corpus-elements, docs/fuzzing.md). */
#include "../tests/testutil.h"
#include "gsttxlscorerbase.h"
#include "gsttxlsink.h"
#include "txllearn.h"
#include "txlparts.h"
#include "fuzz_check.h"

#include <gst/check/gstharness.h>
#include <gst/gst.h>
#include <glib/gstdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CLASS(b) GST_TXL_SCORER_BASE_GET_CLASS(b)

/* GST_PLUGIN_DEFINE's accessor of the plugin compiled in (gsttxl.c) */
const GstPluginDesc *gst_plugin_txl_get_desc(void);

/* A tokenizer and a scoring element in a harness, with its real snapshot. */
typedef struct {
  GstHarness *h;
  GstTxlScorerBase *base;
  char *snap;      /* the real snapshot */
  GHashTable *sect; /* its sections */
} Chain;

enum { CH_MODEL, CH_SESSIONS, CH_SESSIONS_LEARN, CH_MODEL_LEARN, N_CHAINS };

static Chain chains[N_CHAINS];
static char *model_path;
static GstHarness *sink_h;     /* txlsink alone, score buffers in */
static GstTxlSink *sink;
static GBytes *sink_real;      /* its part after the first buffers */
static GPtrArray *sink_more;   /* buffers to push after an accepted part */

/* txlsampler: its real generation snapshot, in a directory of its own
 * (the sampler's start looks for stale temporaries beside its file) */
static char *samp_dir, *samp_real, *samp_fuzz, *samp_again;
static GHashTable *samp_sect;  /* the real file's sections, "sampler" too */
static TxlModel *samp_model;
static TxlScorer *samp_scorer; /* the real file's stream, written again */
static GstElement *samp_probe; /* a bin with a txlsampler "s" alone */
static GstElement *samp_el;
static GstBus *samp_bus;

/* The chains of the cases besides CH_*: txlsink alone, txlsampler. */
enum { SINK = -1, SAMPLER = -2 };

/* The cases of the first byte's low 4 bits: which chain, which section
 * (NULL: the tokenizer's part; the sink's case has no chain), and the
 * seed's name when not the section's.  txlsampler's own section, the one
 * of its parsers that is the element's alone, has four slots. */
typedef struct {
  int chain;
  const char *section;
  const char *seed;
} Case;

#define N_CASES 16
static const Case cases[N_CASES] = {
  { CH_MODEL, "txlmodel", NULL },
  { CH_SESSIONS, "txlsessions", NULL },
  { CH_SESSIONS_LEARN, "txlsessions", NULL },
  { CH_SESSIONS_LEARN, GST_TXL_LEARN_SESSIONS_SECTION, NULL },
  { CH_MODEL_LEARN, GST_TXL_LEARN_SECTION, NULL },
  { CH_MODEL, NULL, NULL },
  { SINK, NULL, NULL },
  { CH_MODEL_LEARN, "txlmodel", NULL },
  { SAMPLER, "txlsampler", NULL },
  { SAMPLER, TXL_PART_UPSTREAM, "txlsampler-tokenizer" },
  { SAMPLER, "txlsampler", NULL },
  { SAMPLER, "sampler", "txlsampler-rng" },
  { SAMPLER, "txlsampler", NULL },
  { SAMPLER, TXL_PART_UPSTREAM, "txlsampler-tokenizer" },
  { SAMPLER, "txlsampler", NULL },
  { SAMPLER, TXL_SNAPSHOT_WRITER_SECTION, "txlsampler-writer" },
};

/* txlsampler's settings in every case (the probe's too: only the model
 * matters to a restore, and the element's name, which the writer section
 * records) */
#define SAMPLER_PROPS "per-line=true max-tokens=3 seed=7 stop-at-eos=false"

/* A word model small enough to be fast and trainable (no adaptive
 * softmax): <eos>, <unk>, a few words, then w6..w39. */
static char *
write_model(void)
{
  TxlConfig c = tu_plain_config((TuDims){
      .n_token = 40, .d_model = 8, .n_head = 2, .d_head = 4,
      .d_inner = 16, .n_layer = 1, .mem_len = 4, .tgt_len = 4 });
  static const char *const base[] = { "<eos>", "<unk>", "the",
                                      "cat",   "sat",   "on" };
  return tu_write_word_model_of(&c, base, 11, FALSE);
}

/* Pushes lines from..to through a harness's chain, with session keys
 * (k0..k4), words in and out of the vocabulary, short lines, a last line
 * cut short (the tokenizer holds bytes back, the sessions a line being
 * assembled); the output is dropped, or kept in keep when given.  The
 * push's flow return; *n_out (may be NULL) receives the buffers out. */
static GstFlowReturn
push_text(GstHarness *h, int from, int to, GPtrArray *keep, guint *n_out)
{
  GString *t = g_string_new(NULL);
  for (int i = from; i <= to; i++)
    if (i % 3 == 0) /* short: its session's segment waits, later lines
                     * of other sessions are scored before it */
      g_string_append_printf(t, "k%d w%d\n", i % 4, 6 + i % 30);
    else
      g_string_append_printf(t, "the cat k%d sat on w%d unknown%d\n", i % 4,
                             6 + i % 30, i % 3);
  g_string_append_printf(t, "w%d the k%d sa", 6 + from % 30, to % 5);
  gsize n = t->len;
  GstFlowReturn ret = gst_harness_push(
      h, gst_buffer_new_wrapped(g_string_free(t, FALSE), n));
  GstBuffer *b;
  guint got = 0;
  while ((b = gst_harness_try_pull(h))) {
    got++;
    if (keep)
      g_ptr_array_add(keep, b);
    else
      gst_buffer_unref(b);
  }
  if (n_out)
    *n_out = got;
  return ret;
}

static void
push_lines(Chain *c, int from, int to, GPtrArray *keep)
{
  push_text(c->h, from, to, keep, NULL);
}

/* A chain "txltokenizer ! <scorer>" started, given lines, with a snapshot
 * written to a file of its own and its sections read back. */
static void
chain_init(Chain *c, const char *scorer, const char *props, const char *tok)
{
  char *desc = g_strdup_printf(
      "txltokenizer model=\"%s\" %s ! %s name=s model=\"%s\" %s",
      model_path, tok, scorer, model_path, props);
  c->h = gst_harness_new_parse(desc);
  g_free(desc);
  gst_harness_set_src_caps_str(c->h, "text/x-raw, format=(string)utf8");
  GstElement *s = gst_bin_get_by_name(GST_BIN(c->h->element), "s");
  c->base = GST_TXL_SCORER_BASE(s);
  gst_object_unref(s); /* the harness's bin keeps it */
  push_lines(c, 1, 12, NULL);
  push_lines(c, 13, 17, NULL);
  /* sessions: k1 (line 17 done) becomes the least recently used and is
   * evicted by k5, its end waiting behind the lines still pending */
  static const char tail[] = "k3 w9\nk0 w10\nthe cat k5 sat on w11 w12\n";
  gst_harness_push(c->h, gst_buffer_new_memdup(tail, sizeof tail - 1));
  GstBuffer *b;
  while ((b = gst_harness_try_pull(c->h)))
    gst_buffer_unref(b);
  c->snap = g_strdup_printf("%s/fuzz-elements-%d-%s-%p.snap",
                            g_get_tmp_dir(), (int)getpid(), scorer,
                            (void *)c);
  gboolean ok = FALSE;
  g_signal_emit_by_name(c->base, "snapshot", c->snap, &ok);
  GError *err = NULL;
  gpointer loaded = ok ? CLASS(c->base)->load(c->base, c->snap, FALSE,
                                              &c->sect, &err)
                       : NULL;
  if (!loaded) {
    fprintf(stderr, "fuzz_elements: no snapshot of %s: %s\n", scorer,
            err ? err->message : "refused");
    abort();
  }
  CLASS(c->base)->drop_loaded(loaded);
}

/* txlsink alone, fed the score buffers of the txlmodel chain: half of
 * them before its real part is saved, the rest kept for later. */
static void
sink_init(void)
{
  GPtrArray *bufs = g_ptr_array_new_with_free_func(
      (GDestroyNotify)gst_buffer_unref);
  Chain *m = &chains[CH_MODEL];
  for (int i = 0; i < 8; i++) /* a buffer or two per push */
    push_lines(m, 30 + 3 * i, 32 + 3 * i, bufs);
  GstElement *e = gst_element_factory_make("txlsink", NULL);
  g_object_set(e, "location", "/dev/null", NULL);
  sink = GST_TXL_SINK(e);
  sink_h = gst_harness_new_with_element(e, "sink", NULL);
  gst_object_unref(e);
  GstCaps *caps = gst_pad_get_current_caps(m->h->sinkpad);
  if (!caps || bufs->len < 4) {
    fprintf(stderr, "fuzz_elements: %u score buffers, caps %p\n", bufs->len,
            (void *)caps);
    abort();
  }
  gst_harness_set_src_caps(sink_h, caps);
  guint half = bufs->len / 2;
  for (guint i = 0; i < half; i++)
    gst_harness_push(sink_h, gst_buffer_ref(g_ptr_array_index(bufs, i)));
  g_rec_mutex_lock(&sink->state_lock);
  sink_real = gst_txl_sink_save_state(sink);
  g_rec_mutex_unlock(&sink->state_lock);
  sink_more = g_ptr_array_new_with_free_func(
      (GDestroyNotify)gst_buffer_unref);
  for (guint i = half; i < bufs->len; i++)
    g_ptr_array_add(sink_more, gst_buffer_ref(g_ptr_array_index(bufs, i)));
  g_ptr_array_unref(bufs);
}

/* The real bytes of a case. */
static GBytes *
real_of(int k)
{
  const Case *c = &cases[k];
  if (c->chain == SINK)
    return sink_real;
  if (c->chain == SAMPLER)
    return g_hash_table_lookup(samp_sect, c->section);
  return g_hash_table_lookup(chains[c->chain].sect,
                             c->section ? c->section : TXL_PART_UPSTREAM);
}

/* Each case's real section as "caseN-<name>" (the section's, or "part"),
 * and "xor-caseN" (XOR with nothing: the real section); a slot that
 * repeats an earlier one's case has none. */
static void
write_seeds(const char *dir)
{
  for (int k = 0; k < N_CASES; k++) {
    gboolean again = FALSE;
    for (int j = 0; j < k && !again; j++)
      again = cases[j].chain == cases[k].chain &&
              g_strcmp0(cases[j].section, cases[k].section) == 0;
    if (again)
      continue;
    gsize n;
    const guint8 *d = g_bytes_get_data(real_of(k), &n);
    guint8 *b = g_malloc(n + 1);
    b[0] = (guint8)k;
    memcpy(b + 1, d, n);
    const char *name = cases[k].seed ? cases[k].seed
                       : cases[k].section ? cases[k].section : "part";
    char *p = g_strdup_printf("%s/case%d-%s", dir, k, name);
    if (!g_file_set_contents(p, (const char *)b, (gssize)n + 1, NULL))
      abort();
    g_free(p);
    g_free(b);
    guint8 x = (guint8)(0x80 | k);
    p = g_strdup_printf("%s/xor-case%d", dir, k);
    if (!g_file_set_contents(p, (const char *)&x, 1, NULL))
      abort();
    g_free(p);
  }
}

/* ---- txlsampler ---------------------------------------------------------- */

/* "txltokenizer ! txlsampler" reading and writing location (NULL: none). */
static GstHarness *
sampler_harness(const char *location)
{
  char *loc = location ? g_strdup_printf(" snapshot-location=\"%s\"", location)
                       : g_strdup("");
  char *desc = g_strdup_printf(
      "txltokenizer model=\"%s\" ! txlsampler name=s model=\"%s\" "
      SAMPLER_PROPS "%s", model_path, model_path, loc);
  GstHarness *h = gst_harness_new_parse(desc);
  g_free(desc);
  g_free(loc);
  gst_harness_set_src_caps_str(h, "text/x-raw, format=(string)utf8");
  return h;
}

/* Empties a bus: the first error's message and debug text (g_free), or
 * NULL; *src (may be NULL) receives the name of the element that posted
 * it (g_free). */
static char *
drain_bus(GstBus *bus, char **src)
{
  GstMessage *m;
  char *text = NULL;
  while ((m = gst_bus_pop(bus))) {
    if (GST_MESSAGE_TYPE(m) == GST_MESSAGE_ERROR && !text) {
      GError *err = NULL;
      gchar *dbg = NULL;
      gst_message_parse_error(m, &err, &dbg);
      CHECK(err && err->message && *err->message);
      text = g_strdup_printf("%s | %s", err->message, dbg ? dbg : "");
      if (src)
        *src = gst_object_get_name(GST_MESSAGE_SRC(m));
      g_error_free(err);
      g_free(dbg);
    }
    gst_message_unref(m);
  }
  return text;
}

/* The probe started on path, as a txlsampler with restore=true starts:
 * TRUE when it restored the file; a refusal must fail the start with an
 * error that names the file.  Back to NULL either way. */
static gboolean
probe_start(const char *path)
{
  g_object_set(samp_el, "snapshot-location", path, NULL);
  GstStateChangeReturn r = gst_element_set_state(samp_probe,
                                                 GST_STATE_PAUSED);
  gst_element_set_state(samp_probe, GST_STATE_NULL);
  char *msg = drain_bus(samp_bus, NULL);
  if (r == GST_STATE_CHANGE_FAILURE) {
    CHECK(msg && strstr(msg, path));
    g_free(msg);
    return FALSE;
  }
  CHECK(msg == NULL);
  return TRUE;
}

/* The real generation snapshot with `section` replaced by in (NULL: the
 * real one) into samp_fuzz, by the writer of txl_generator_save. */
static void
sampler_write(const char *section, GBytes *in)
{
  GHashTable *t = g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                        (GDestroyNotify)g_bytes_unref);
  GHashTableIter it;
  gpointer name, bytes;
  g_hash_table_iter_init(&it, samp_sect);
  while (g_hash_table_iter_next(&it, &name, &bytes))
    g_hash_table_insert(t, g_strdup(name), g_bytes_ref(bytes));
  if (section && in)
    g_hash_table_insert(t, g_strdup(section), g_bytes_ref(in));
  GError *err = NULL;
  if (!txl_scorer_save_full(samp_scorer, samp_fuzz, NULL, t, NULL, &err)) {
    fprintf(stderr, "fuzz_elements: writing %s: %s\n", samp_fuzz,
            err->message);
    abort();
  }
  g_hash_table_unref(t);
}

/* An accepted file in use: a txlsampler restores it at start (the probe
 * did), lines go through txltokenizer (which fetches its part from the
 * sampler at its first buffer) and are continued, then a snapshot again.
 * An error is only allowed from txltokenizer refusing its own part when
 * that part is the one fuzzed. */
static void
sampler_run(const char *section)
{
  GstHarness *h = sampler_harness(samp_fuzz);
  GstBus *bus = gst_bus_new();
  gst_element_set_bus(h->element, bus);
  guint n_out = 0;
  GstFlowReturn r = push_text(h, 20, 24, NULL, &n_out);
  char *src = NULL;
  char *msg = drain_bus(bus, &src);
  if (r != GST_FLOW_OK) {
    CHECK(msg && src && g_str_has_prefix(src, "txltokenizer"));
    CHECK(strcmp(section, TXL_PART_UPSTREAM) == 0);
  } else {
    /* something generated: the lines pushed ended (a tokenizer part whose
     * line count was not its encoder's left every line end unmarked, and
     * per-line never continued: found by this target, now refused) */
    CHECK(msg == NULL && n_out > 0);
    GstElement *s = gst_bin_get_by_name(GST_BIN(h->element), "s");
    gboolean ok = FALSE;
    g_signal_emit_by_name(s, "snapshot", samp_again, &ok);
    CHECK(ok);
    gst_object_unref(s);
  }
  g_free(msg);
  g_free(src);
  gst_harness_teardown(h); /* its shutdown snapshot goes to samp_fuzz */
  drain_bus(bus, NULL);
  gst_object_unref(bus);
}

/* One txlsampler case: TRUE when the file was accepted. */
static gboolean
sampler_case(const char *section, GBytes *in)
{
  sampler_write(section, in);
  if (!probe_start(samp_fuzz))
    return FALSE;
  sampler_run(section);
  CHECK(probe_start(samp_real));
  return TRUE;
}

/* A txlsampler given lines (continued, then more not continued yet, the
 * last one cut short: bytes the tokenizer holds back) writes the real snapshot through its
 * "snapshot" signal; its stream and sections are kept to write the cases'
 * files with.  The real sections must pass every sampler case. */
static void
sampler_init(void)
{
  samp_real = tu_tmp_path("real.snap");
  samp_dir = g_path_get_dirname(samp_real);
  samp_fuzz = g_build_filename(samp_dir, "case.snap", NULL);
  samp_again = g_build_filename(samp_dir, "again.snap", NULL);
  GstHarness *h = sampler_harness(NULL);
  push_text(h, 1, 9, NULL, NULL);
  /* then lines taken but not continued: context not yet fed */
  GstElement *s = gst_bin_get_by_name(GST_BIN(h->element), "s");
  g_object_set(s, "per-line", FALSE, NULL);
  push_text(h, 10, 12, NULL, NULL);
  gboolean ok = FALSE;
  g_signal_emit_by_name(s, "snapshot", samp_real, &ok);
  gst_object_unref(s);
  gst_harness_teardown(h);
  GError *err = NULL;
  if (ok)
    samp_model = txl_model_load(model_path, &err);
  if (samp_model)
    samp_scorer = txl_scorer_load_full(samp_model, samp_real, NULL, NULL,
                                       &samp_sect, &err);
  if (!samp_scorer) {
    fprintf(stderr, "fuzz_elements: no txlsampler snapshot: %s\n",
            err ? err->message : "refused");
    abort();
  }
  static const char *const want[] = { "txlsampler", "sampler",
                                      TXL_PART_UPSTREAM,
                                      TXL_SNAPSHOT_WRITER_SECTION };
  for (guint i = 0; i < G_N_ELEMENTS(want); i++)
    if (!g_hash_table_contains(samp_sect, want[i])) {
      fprintf(stderr, "fuzz_elements: no section %s in %s\n", want[i],
              samp_real);
      abort();
    }
  /* the writer gives the real file back byte for byte: a case's file
   * differs from it in the case's section alone */
  sampler_write(NULL, NULL);
  gchar *a = NULL, *b = NULL;
  gsize na = 0, nb = 0;
  if (!g_file_get_contents(samp_real, &a, &na, NULL) ||
      !g_file_get_contents(samp_fuzz, &b, &nb, NULL) || na != nb ||
      memcmp(a, b, na) != 0) {
    fprintf(stderr, "fuzz_elements: %s is not written back as it was\n",
            samp_real);
    abort();
  }
  g_free(a);
  g_free(b);
  samp_probe = gst_bin_new(NULL);
  samp_el = gst_element_factory_make("txlsampler", "s");
  g_object_set(samp_el, "model", model_path, NULL);
  gst_bin_add(GST_BIN(samp_probe), samp_el);
  samp_bus = gst_bus_new();
  gst_element_set_bus(samp_probe, samp_bus);
  for (int k = 0; k < N_CASES; k++)
    if (cases[k].chain == SAMPLER &&
        !sampler_case(cases[k].section, real_of(k))) {
      fprintf(stderr, "fuzz_elements: the real section %s refused\n",
              cases[k].section);
      abort();
    }
}

/* A GLib critical or warning (GStreamer's own included, such as a string
 * field that is not UTF-8) is a finding: abort, which libFuzzer catches
 * and saves the input of (G_DEBUG=fatal-criticals alone raises SIGTRAP,
 * which it does not). */
static GLogWriterOutput
writer(GLogLevelFlags level, const GLogField *fields, gsize n, gpointer data)
{
  g_log_writer_standard_streams(level, fields, n, data);
  if (level & (G_LOG_LEVEL_ERROR | G_LOG_LEVEL_CRITICAL | G_LOG_LEVEL_WARNING))
    abort();
  return G_LOG_WRITER_HANDLED;
}

/* The files written at start go at exit (libFuzzer's own exits too). */
static void
remove_files(void)
{
  for (int i = 0; i < N_CHAINS; i++)
    if (chains[i].snap)
      g_remove(chains[i].snap);
  if (samp_dir)
    tu_remove_dir(samp_dir);
  if (model_path)
    tu_remove(model_path);
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
  g_log_set_writer_func(writer, NULL, NULL);
  atexit(remove_files);
  g_setenv("TXL_NUM_THREADS", "1", TRUE);
  /* only the plugin compiled in: no registry, no plugin scanned (an
   * installed txl plugin would clash with it) */
  g_setenv("GST_REGISTRY_DISABLE", "yes", TRUE);
  g_setenv("GST_PLUGIN_SYSTEM_PATH_1_0", "", TRUE);
  g_unsetenv("GST_PLUGIN_PATH_1_0");
  g_unsetenv("GST_PLUGIN_PATH");
  gst_init(NULL, NULL);
  const GstPluginDesc *d = gst_plugin_txl_get_desc();
  if (!gst_plugin_register_static(d->major_version, d->minor_version,
                                  d->name, d->description, d->plugin_init,
                                  d->version, d->license, d->source,
                                  d->package, d->origin))
    abort();
  model_path = write_model();
  const char *sess = "segment=8 session-key=\"k[0-9]\" max-sessions=3 "
                     "session-idle-lines=7";
  char *sess_learn = g_strdup_printf("%s learn=true learn-warmup=3", sess);
  chain_init(&chains[CH_MODEL], "txlmodel", "segment=4", "format=auto");
  chain_init(&chains[CH_SESSIONS], "txlsessions", sess, "");
  chain_init(&chains[CH_SESSIONS_LEARN], "txlsessions", sess_learn, "");
  chain_init(&chains[CH_MODEL_LEARN], "txlmodel", "segment=4 learn=true learn-warmup=3",
             "");
  g_free(sess_learn);
  sink_init();
  sampler_init();
  const char *seeds = g_getenv("FUZZ_ELEMENTS_SEEDS");
  if (seeds)
    write_seeds(seeds);
  return 0;
}

/* Back to the real state after an accepted input: must succeed. */
static void
restore_real(Chain *c)
{
  GError *err = NULL;
  if (!gst_txl_scorer_base_restore(c->base, c->snap, FALSE, &err)) {
    fprintf(stderr, "fuzz_elements: the real snapshot: %s\n", err->message);
    abort();
  }
}

/* An accepted state must work: more lines through the chain, then its
 * section saved again. */
static void
check_usable(Chain *c)
{
  push_lines(c, 50, 54, NULL);
  GBytes *again = CLASS(c->base)->save_own(c->base);
  CHECK(again && g_bytes_get_size(again) > 0);
  g_bytes_unref(again);
}

/* A scorer's section (own, or learning: in its place in what load()
 * returned), parsed against the library's part of the real file and, when
 * accepted, applied as a live restore applies it. */
static void
scorer_case(Chain *c, const char *section, GBytes *in)
{
  GHashTable *sect = NULL;
  GError *err = NULL;
  GstTxlLearnLoaded *ld = CLASS(c->base)->load(c->base, c->snap, FALSE,
                                               &sect, &err);
  CHECK(ld != NULL);
  GBytes *own = g_hash_table_lookup(sect, CLASS(c->base)->section);
  if (strcmp(section, CLASS(c->base)->section) == 0) {
    own = in;
  } else {
    CHECK(ld->learn != NULL);
    g_bytes_unref(ld->learn);
    ld->learn = g_bytes_ref(in);
  }
  gpointer parsed = CLASS(c->base)->parse_own(c->base, own, ld, &err);
  if (!parsed) {
    CHECK_REFUSED(err);
    CLASS(c->base)->drop_loaded(ld);
    g_hash_table_unref(sect);
    return;
  }
  gboolean ok = gst_txl_scorer_base_restore_parsed(c->base, sect, ld, parsed,
                                                   FALSE, &err);
  g_hash_table_unref(sect);
  CHECK(ok); /* the neighbours' parts are the real ones */
  check_usable(c);
  restore_real(c);
}

/* txltokenizer's part, given over the pad as txlmodel gives it: checked,
 * then applied. */
static void
tokenizer_case(Chain *c, GBytes *in)
{
  GError *err = NULL;
  GstElement *e = GST_ELEMENT(c->base);
  if (!txl_parts_give(e, c->base->sinkpad, TXL_PART_UPSTREAM, in, FALSE,
                      &err)) {
    CHECK_REFUSED(err);
    return;
  }
  CHECK(err == NULL);
  CHECK(txl_parts_give(e, c->base->sinkpad, TXL_PART_UPSTREAM, in, TRUE,
                       &err));
  push_lines(c, 60, 63, NULL);
  gboolean busy = FALSE;
  GBytes *again = txl_parts_ask(c->base->sinkpad, TXL_PART_UPSTREAM,
                                TXL_PART_UPSTREAM_COUNT, c->base->in_tokens,
                                &busy);
  CHECK(again || busy);
  if (again)
    g_bytes_unref(again);
  restore_real(c);
}

/* txlsink's part, given over its sink pad: checked, then applied. */
static void
sink_case(GBytes *in)
{
  GError *err = NULL;
  GstElement *e = GST_ELEMENT(sink);
  if (!txl_parts_give(e, sink_h->srcpad, TXL_PART_DOWNSTREAM, in, FALSE,
                      &err)) {
    CHECK_REFUSED(err);
    return;
  }
  CHECK(err == NULL);
  CHECK(txl_parts_give(e, sink_h->srcpad, TXL_PART_DOWNSTREAM, in, TRUE,
                       &err));
  for (guint i = 0; i < sink_more->len; i++)
    gst_harness_push(sink_h, gst_buffer_ref(g_ptr_array_index(sink_more, i)));
  g_rec_mutex_lock(&sink->state_lock);
  GBytes *again = gst_txl_sink_save_state(sink);
  g_rec_mutex_unlock(&sink->state_lock);
  CHECK(again && g_bytes_get_size(again) > 0);
  g_bytes_unref(again);
  CHECK(txl_parts_give(e, sink_h->srcpad, TXL_PART_DOWNSTREAM, sink_real,
                       TRUE, &err));
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
  if (size < 1)
    return 0;
  int k = data[0] & (N_CASES - 1);
  GBytes *in;
  if (data[0] & 0x80) {
    gsize n;
    const guint8 *r = g_bytes_get_data(real_of(k), &n);
    guint8 *m = g_memdup2(r, n);
    for (size_t i = 1; i < size && n; i++)
      m[(i - 1) % n] ^= data[i];
    in = g_bytes_new_take(m, n);
  } else {
    in = g_bytes_new(data + 1, size - 1);
  }
  const Case *c = &cases[k];
  if (c->chain == SAMPLER)
    sampler_case(c->section, in);
  else if (c->chain == SINK)
    sink_case(in);
  else if (!c->section)
    tokenizer_case(&chains[c->chain], in);
  else
    scorer_case(&chains[c->chain], c->section, in);
  g_bytes_unref(in);
  return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txlsessions: interleaved sessions scored in pipelines equal the library's
 * TxlSessions on the same lines, line for line and session for session
 * (bit for bit), with eviction by count, by memory and by idleness, with
 * flush-on-newline, any buffer size, byte and word models; txlsink's JSON
 * gets every line and one "session" line per ended session; the ready
 * pipelines/sessions.txt runs through gst-launch-1.0; bad settings fail at
 * start. */
#include "elements.h"

#include <json-glib/json-glib.h>
#include <math.h>

/* A synthetic interleaved log: sessions "blk_<id>" (some negative) of a
 * few event kinds, opening and closing over time, a key anywhere in the
 * line, and lines without a key. */
static char *
make_log(guint32 seed, int n_lines, gboolean words)
{
  GRand *r = g_rand_new_with_seed(seed);
  GString *s = g_string_new(NULL);
  gint64 open[6] = { 0 };
  int next = 1;
  static const char *ev[] = { "Receiving block %s src 10.0.0.%d",
                              "PacketResponder %d for block %s terminating",
                              "Received block %s of size %d",
                              "addStoredBlock blockMap updated %s size %d",
                              "Deleting block %s file /data/%d" };
  static const char *wev[] = { "the cat %s w%d", "w%d on %s sat",
                               "%s the the w%d", "on on %s w%d cat" };
  for (int i = 0; i < n_lines; i++) {
    int slot = g_rand_int_range(r, 0, 6);
    if (open[slot] == 0 || g_rand_int_range(r, 0, 8) == 0)
      open[slot] = next++ * (g_rand_int_range(r, 0, 3) == 0 ? -7 : 13);
    char key[32];
    if (words)
      g_snprintf(key, sizeof key, "w%d",
                 200 + (int)(ABS(open[slot]) % 100));
    else
      g_snprintf(key, sizeof key, "blk_%" G_GINT64_FORMAT, open[slot]);
    int num = g_rand_int_range(r, 0, 100);
    if (g_rand_int_range(r, 0, 15) == 0) {
      g_string_append_printf(s, words ? "cat sat w%d\n"
                                      : "INFO namesystem heartbeat %d\n",
                             num);
      continue;
    }
    if (words) {
      int k = g_rand_int_range(r, 0, G_N_ELEMENTS(wev));
      if (k == 1)
        g_string_append_printf(s, wev[k], 6 + num, key);
      else
        g_string_append_printf(s, wev[k], key, 6 + num);
    } else {
      int k = g_rand_int_range(r, 0, G_N_ELEMENTS(ev));
      g_string_append_printf(s, "081109 2035%02d INFO ", num % 60);
      if (k == 1)
        g_string_append_printf(s, ev[k], num, key);
      else
        g_string_append_printf(s, ev[k], key, num);
    }
    g_string_append_c(s, '\n');
  }
  g_rand_free(r);
  return g_string_free(s, FALSE);
}

typedef struct {
  gint64 line;
  gint64 tokens;
  guint64 bytes;
  double nll; /* total */
} LineRes;

typedef struct {
  char *key;
  const char *reason; /* one of a few words: interned */
  gint64 first, last, lines, tokens;
  guint64 bytes;
  double nll, score, max_line, max_token;
  gboolean flag;
} SessRes;

/* The numbers of a SessRes, for X(member, its field in a txl-session
 * message, the field's type, the g_assert_cmp* that compares two). */
#define SESS_NUMBERS(X)                                                        \
  X(first, "first-line", int64, g_assert_cmpint)                               \
  X(last, "last-line", int64, g_assert_cmpint)                                 \
  X(lines, "lines", int64, g_assert_cmpint)                                    \
  X(tokens, "tokens", int64, g_assert_cmpint)                                  \
  X(bytes, "bytes", uint64, g_assert_cmpuint)                                  \
  X(nll, "nll", double, g_assert_cmpfloat)                                     \
  X(score, "score", double, g_assert_cmpfloat)                                 \
  X(max_line, "max-line", double, g_assert_cmpfloat)                           \
  X(max_token, "max-token", double, g_assert_cmpfloat)                         \
  X(flag, "flag", boolean, g_assert_cmpint)

static void
sess_res_clear(gpointer p)
{
  SessRes *s = p;
  g_free(s->key);
}

typedef struct {
  GArray *lines;    /* LineRes */
  GArray *sessions; /* SessRes */
  double threshold;
  int evict_warnings; /* warnings that name eviction */
} Results;

static void
results_init(Results *r, double threshold)
{
  r->lines = g_array_new(FALSE, TRUE, sizeof(LineRes));
  r->sessions = g_array_new(FALSE, TRUE, sizeof(SessRes));
  g_array_set_clear_func(r->sessions, sess_res_clear);
  r->threshold = threshold;
  r->evict_warnings = 0;
}

static void
results_clear(Results *r)
{
  g_array_unref(r->lines);
  g_array_unref(r->sessions);
}

/* ---- the library, as the reference ------------------------------------- */

typedef struct {
  Results *r;
  GHashTable *first; /* key -> first line (gint64*) */
} LibCtx;

static void
lib_line(const TxlSessionLine *l, gpointer p)
{
  LibCtx *c = p;
  if ((gint64)c->r->lines->len < l->line)
    g_array_set_size(c->r->lines, l->line);
  LineRes *x = &g_array_index(c->r->lines, LineRes, l->line - 1);
  x->line = l->line;
  x->tokens = l->tokens;
  x->bytes = l->bytes;
  x->nll = l->nll;
}

static void
lib_end(const TxlSessionResult *s, gpointer p)
{
  LibCtx *c = p;
  static const char *reasons[] = { "ended", "idle", "evicted" };
  SessRes x = { 0 };
  x.key = g_strdup(s->key);
  x.reason = g_intern_static_string(reasons[s->reason]);
  x.first = s->first_line;
  x.last = s->last_line;
  x.lines = s->lines;
  x.tokens = s->tokens;
  x.bytes = s->bytes;
  x.nll = s->nll;
  x.score = s->score;
  x.max_line = s->max_line_mean;
  x.max_token = s->max_token;
  x.flag = c->r->threshold > 0 && s->score > c->r->threshold;
  g_array_append_val(c->r->sessions, x);
}

typedef struct {
  const char *key;
  int group;
  guint max_sessions;
  guint64 max_memory; /* G_MAXUINT64: the element's default */
  guint64 idle;
  gboolean flush;
  int score; /* TxlSessionScore */
  int blocksize;
  double threshold;
} Cfg;

static void
run_lib(const char *model_path, const char *text, const Cfg *cfg, Results *r)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = tu_load(model_path);
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.key_regex = cfg->key;
  o.key_group = cfg->group;
  o.flush_lines = cfg->flush;
  o.prime = TRUE;
  o.max_sessions = cfg->max_sessions;
  o.max_bytes = cfg->max_memory == G_MAXUINT64 ? (1ull << 30)
                                               : cfg->max_memory;
  o.idle_lines = cfg->idle;
  o.score = cfg->score;
  LibCtx c = { r, NULL };
  TxlSessions *s = txl_sessions_new(m, &o, lib_line, lib_end, &c, &err);
  g_assert_no_error(err);
  const char *p = text;
  while (*p) {
    const char *nl = strchr(p, '\n');
    gsize len = nl ? (gsize)(nl - p) : strlen(p);
    g_assert_cmpint(txl_sessions_push_line(s, p, len, &err), >, 0);
    g_assert_no_error(err);
    p += len + (nl ? 1 : 0);
  }
  g_assert_true(txl_sessions_finish(s, &err));
  g_assert_no_error(err);
  txl_sessions_free(s);
  txl_model_unref(m);
}

/* ---- the pipeline -------------------------------------------------------- */

static void
on_line_scored(GstElement *sink, const GstStructure *s, gpointer p)
{
  Results *r = p;
  LineRes x = { 0 };
  double mean = NAN;
  g_assert_true(gst_structure_get_int64(s, "line", &x.line));
  g_assert_true(gst_structure_get_int64(s, "tokens", &x.tokens));
  g_assert_true(gst_structure_get_uint64(s, "bytes", &x.bytes));
  g_assert_true(gst_structure_get_double(s, "nll", &mean));
  x.nll = mean; /* the mean; compared as such */
  g_assert_cmpint(x.line, ==, (gint64)r->lines->len + 1);
  g_array_append_val(r->lines, x);
}

static int n_session_signals;

static void
on_session_scored(GstElement *sink, const GstStructure *s, gpointer p)
{
  n_session_signals++;
}

static SessRes
sess_from_structure(const GstStructure *s)
{
  SessRes x = { 0 };
  g_assert_true(gst_structure_has_name(s, "txl-session"));
  x.key = g_strdup(gst_structure_get_string(s, "key"));
  x.reason = g_intern_string(gst_structure_get_string(s, "reason"));
#define GET(member, field, type, cmp)                                          \
  g_assert_true(gst_structure_get_##type(s, field, &x.member));
  SESS_NUMBERS(GET)
#undef GET
  return x;
}

/* A txl-session message into the Results `data`. */
static void
on_message(GstMessage *msg, gpointer data)
{
  Results *r = data;
  if (GST_MESSAGE_TYPE(msg) == GST_MESSAGE_WARNING) {
    g_autoptr(GError) w = NULL;
    gst_message_parse_warning(msg, &w, NULL);
    r->evict_warnings += strstr(w->message, "evicted") != NULL;
    return;
  }
  const GstStructure *st = gst_message_get_structure(msg);
  if (gst_structure_has_name(st, "txl-session")) {
    SessRes x = sess_from_structure(st);
    g_array_append_val(r->sessions, x);
  }
}

/* Runs the pipeline; the element's sessions from its bus messages, the
 * lines from txlsink's signal; the JSON output is returned (g_free). */
static char *
run_pipeline(const char *model, const char *input, const Cfg *cfg,
             Results *r)
{
  g_autoptr(TuPath) out = tu_tmp_path("out.jsonl");
  g_autofree char *desc = g_strdup_printf(
      "filesrc location=\"%s\" blocksize=%d ! txltokenizer model=\"%s\" ! "
      "txlsessions name=s model=\"%s\" ! txlsink name=sink location=\"%s\" "
      "threshold=1000", input, cfg->blocksize, model, model, out);
  GstElement *p = el_parse(desc);
  GstElement *s = gst_bin_get_by_name(GST_BIN(p), "s");
  g_object_set(s, "session-key", cfg->key, "session-key-group", cfg->group,
               "max-sessions", cfg->max_sessions, "session-idle-lines",
               cfg->idle, "flush-on-newline", cfg->flush, "session-score",
               cfg->score, "session-threshold", cfg->threshold, NULL);
  if (cfg->max_memory != G_MAXUINT64)
    g_object_set(s, "max-session-memory", cfg->max_memory, NULL);
  gst_object_unref(s);
  GstElement *sink = gst_bin_get_by_name(GST_BIN(p), "sink");
  g_signal_connect(sink, "line-scored", G_CALLBACK(on_line_scored), r);
  g_signal_connect(sink, "session-scored", G_CALLBACK(on_session_scored),
                   NULL);
  gst_object_unref(sink);
  n_session_signals = 0;
  el_play(p, GST_MESSAGE_WARNING, on_message, r);
  el_pipeline_free(p);
  char *json = NULL;
  g_assert_true(g_file_get_contents(out, &json, NULL, NULL));
  return json;
}

/* The element's results against the library's, bit for bit; the JSON
 * holds every line and every session, in order, and the flags. */
static void
check_config(const char *model, const char *text, const Cfg *cfg)
{
  g_autofree char *dir = g_dir_make_tmp("txl-sess-XXXXXX", NULL);
  g_autofree char *in = g_build_filename(dir, "in.log", NULL);
  g_assert_true(g_file_set_contents(in, text, -1, NULL));
  Results lib, el;
  results_init(&lib, cfg->threshold);
  results_init(&el, cfg->threshold);
  run_lib(model, text, cfg, &lib);
  g_autofree char *json = run_pipeline(model, in, cfg, &el);
  g_unlink(in);
  g_rmdir(dir);

  /* lines: every one, in order, with the library's numbers */
  g_assert_cmpuint(el.lines->len, ==, lib.lines->len);
  for (guint i = 0; i < lib.lines->len; i++) {
    LineRes *a = &g_array_index(lib.lines, LineRes, i);
    LineRes *b = &g_array_index(el.lines, LineRes, i);
    g_assert_cmpint(a->line, ==, (gint64)i + 1);
    g_assert_cmpint(b->tokens, ==, a->tokens);
    g_assert_cmpuint(b->bytes, ==, a->bytes);
    g_assert_true(a->tokens > 0);
    g_assert_cmpfloat(b->nll, ==, a->nll / a->tokens);
  }
  /* sessions: each once, in the same order, the same numbers */
  g_assert_cmpuint(el.sessions->len, ==, lib.sessions->len);
  g_assert_cmpint(n_session_signals, ==, (int)lib.sessions->len);
  int flagged = 0, evicted = 0, idle = 0;
  for (guint i = 0; i < lib.sessions->len; i++) {
    SessRes *a = &g_array_index(lib.sessions, SessRes, i);
    SessRes *b = &g_array_index(el.sessions, SessRes, i);
    g_assert_cmpstr(b->key, ==, a->key);
    g_assert_cmpstr(b->reason, ==, a->reason);
    /* every number; line numbers: the library counts pushes, the element
     * the input's lines, the same here */
#define SAME(member, field, type, cmp) cmp(b->member, ==, a->member);
    SESS_NUMBERS(SAME)
#undef SAME
    flagged += a->flag;
    evicted += !strcmp(a->reason, "evicted");
    idle += !strcmp(a->reason, "idle");
  }
  g_test_message("%u lines, %u sessions (%d evicted, %d idle, %d flagged)",
                 lib.lines->len, lib.sessions->len, evicted, idle, flagged);
  if (cfg->max_sessions || cfg->max_memory != G_MAXUINT64)
    g_assert_cmpint(evicted, >, 0);
  /* eviction costs quality: one warning says so, none without it */
  g_assert_cmpint(el.evict_warnings, ==, evicted > 0 ? 1 : 0);
  if (cfg->idle)
    g_assert_cmpint(idle, >, 0);
  if (cfg->threshold > 0)
    g_assert_true(flagged > 0 && flagged < (int)lib.sessions->len);

  /* the JSON: lines in order, a session line after its session's last
   * line, as many as ended */
  g_auto(GStrv) rows = g_strsplit(json, "\n", -1);
  gint64 last_line = 0;
  guint n_sess = 0, n_lines = 0, n_flag = 0;
  for (int i = 0; rows[i] && rows[i][0]; i++) {
    g_autoptr(JsonParser) jp = json_parser_new();
    g_assert_true(json_parser_load_from_data(jp, rows[i], -1, NULL));
    JsonObject *o = json_node_get_object(json_parser_get_root(jp));
    if (json_object_has_member(o, "session")) {
      SessRes *a = &g_array_index(lib.sessions, SessRes, n_sess);
      g_assert_cmpstr(json_object_get_string_member(o, "session"), ==,
                      a->key);
      g_assert_cmpint(json_object_get_int_member(o, "lines"), ==, a->lines);
      g_assert_cmpint(json_object_get_int_member(o, "last_line"), <=,
                      last_line);
      g_assert_cmpstr(json_object_get_string_member(o, "reason"), ==,
                      a->reason);
      g_assert_cmpfloat_with_epsilon(
          json_object_get_double_member(o, "score"), a->score, 1e-6);
      n_flag += json_object_get_boolean_member(o, "flag");
      n_sess++;
    } else {
      gint64 line = json_object_get_int_member(o, "line");
      g_assert_cmpint(line, ==, last_line + 1);
      last_line = line;
      n_lines++;
    }
  }
  g_assert_cmpuint(n_lines, ==, lib.lines->len);
  g_assert_cmpuint(n_sess, ==, lib.sessions->len);
  g_assert_cmpuint(n_flag, ==, (guint)flagged);
  results_clear(&lib);
  results_clear(&el);
}

static char *byte_model, *word_model, *log_bytes, *log_words;

/* a threshold in the middle of the sessions' scores */
static double
mid_threshold(const char *model, const char *text, const Cfg *cfg)
{
  Results r;
  results_init(&r, 0);
  run_lib(model, text, cfg, &r);
  GArray *v = g_array_new(FALSE, FALSE, sizeof(double));
  for (guint i = 0; i < r.sessions->len; i++)
    g_array_append_val(v, g_array_index(r.sessions, SessRes, i).score);
  double lo = INFINITY, hi = -INFINITY;
  for (guint i = 0; i < v->len; i++) {
    lo = MIN(lo, g_array_index(v, double, i));
    hi = MAX(hi, g_array_index(v, double, i));
  }
  g_array_unref(v);
  results_clear(&r);
  return 0.5 * (lo + hi);
}

TU_TEST("/txlsessions/default", test_default)
{
  Cfg c = { "blk_-?[0-9]+", 0, 0, G_MAXUINT64, 0, FALSE,
            TXL_SESSION_SCORE_MEAN, 4096, 0 };
  c.threshold = mid_threshold(byte_model, log_bytes, &c);
  check_config(byte_model, log_bytes, &c);
  /* small buffers: the same */
  c.blocksize = 7;
  check_config(byte_model, log_bytes, &c);
}

TU_TEST("/txlsessions/evict-count", test_evict_count)
{
  Cfg c = { "blk_(-?[0-9]+)", 1, 3, G_MAXUINT64, 0, FALSE,
            TXL_SESSION_SCORE_MAX_LINE, 64, 0 };
  check_config(byte_model, log_bytes, &c);
}

TU_TEST("/txlsessions/evict-memory", test_evict_memory)
{
  /* a bound of about two and a half sessions at full memory */
  g_autoptr(GError) err = NULL;
  TxlModel *m = tu_load(byte_model);
  TxlSessions *s = txl_sessions_new(m, NULL, NULL, NULL, NULL, &err);
  g_assert_no_error(err);
  guint64 one = txl_sessions_session_max_bytes(s);
  txl_sessions_free(s);
  txl_model_unref(m);
  Cfg c = { "blk_-?[0-9]+", 0, 0, one * 5 / 2, 0, FALSE,
            TXL_SESSION_SCORE_MEAN, 333, 0 };
  check_config(byte_model, log_bytes, &c);
}

TU_TEST("/txlsessions/idle-flush", test_idle_flush)
{
  Cfg c = { "blk_-?[0-9]+", 0, 0, G_MAXUINT64, 9, TRUE,
            TXL_SESSION_SCORE_MAX_TOKEN, 100, 0 };
  check_config(byte_model, log_bytes, &c);
  c.idle = 0;
  c.score = TXL_SESSION_SCORE_MEAN;
  check_config(byte_model, log_bytes, &c);
}

TU_TEST("/txlsessions/word-model", test_word_model)
{
  Cfg c = { "w2[0-9][0-9]", 0, 4, G_MAXUINT64, 0, FALSE,
            TXL_SESSION_SCORE_MEAN, 13, 0 };
  c.threshold = mid_threshold(word_model, log_words, &c);
  check_config(word_model, log_words, &c);
}

/* Bad settings fail the start with an element error that says why. */
TU_TEST("/txlsessions/bad-settings", test_bad_settings)
{
  struct {
    const char *prop;
    const char *value;
    const char *want;
  } cases[] = {
    { "session-key", "blk_(", "session key regex" },
    { "session-key", "", "session-key is empty" },
    { "session-key-group", "3", "capture group" },
    { "max-session-memory", "1000", "below what one session" },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    GstElement *e = gst_element_factory_make("txlsessions", NULL);
    g_object_set(e, "model", byte_model, NULL);
    gst_util_set_object_arg(G_OBJECT(e), cases[i].prop, cases[i].value);
    g_autofree char *msg = el_start_error(e, GST_STATE_PAUSED);
    g_assert_nonnull(strstr(msg, cases[i].want));
  }
}

/* pipelines/sessions.txt through gst-launch-1.0: every line and one
 * session line per session. */
TU_TEST("/txlsessions/gst-launch", test_gst_launch)
{
  g_autofree char *dir = g_dir_make_tmp("txl-sess-XXXXXX", NULL);
  g_autofree char *in = g_build_filename(dir, "in.log", NULL);
  g_assert_true(g_file_set_contents(in, log_bytes, -1, NULL));
  g_autofree char *out = el_launch_pipeline("sessions.txt", in, byte_model);
  if (!out) {
    g_unlink(in);
    g_rmdir(dir);
    return;
  }
  Cfg c = { "blk_-?[0-9]+", 0, 0, G_MAXUINT64, 0, FALSE,
            TXL_SESSION_SCORE_MEAN, 4096, 0.5 };
  Results lib;
  results_init(&lib, 0.5);
  run_lib(byte_model, log_bytes, &c, &lib);
  guint n_sess = 0, n_lines = 0;
  g_auto(GStrv) rows = g_strsplit(out, "\n", -1);
  for (int i = 0; rows[i] && rows[i][0]; i++) {
    if (g_str_has_prefix(rows[i], "{\"session\": "))
      n_sess++;
    else if (g_str_has_prefix(rows[i], "{\"line\": "))
      n_lines++;
  }
  g_assert_cmpuint(n_lines, ==, lib.lines->len);
  g_assert_cmpuint(n_sess, ==, lib.sessions->len);
  results_clear(&lib);
  g_unlink(in);
  g_rmdir(dir);
}

int
main(int argc, char **argv)
{
  el_test_init(&argc, &argv);
  byte_model = el_write_byte_model(7);
  word_model = el_write_word_model(8);
  log_bytes = make_log(1, 300, FALSE);
  log_words = make_log(2, 200, TRUE);
  int rc = g_test_run();
  g_free(log_bytes);
  g_free(log_words);
  tu_remove(byte_model);
  tu_remove(word_model);
  g_free(byte_model);
  g_free(word_model);
  return rc;
}

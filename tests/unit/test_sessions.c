/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* TxlSessions: per-session results equal each session scored alone by a
 * TxlScorer; memory and count bounds hold; every session is finalised
 * exactly once; the weights can be swapped mid-stream for ones of the same
 * shape only. */
#include "bpe.h"
#include "normalize.h"
#include "params.h"
#include "testutil.h"
#include "tu_test.h"

/* ---- models ---------------------------------------------------------- */

static char *
byte_model(void)
{
  TxlConfig c;
  tu_small_config(&c); /* adaptive softmax over 300 ids, mem 12, segment 5 */
  return tu_write_model(&c, 7, NULL);
}

static char *
bpe_model(const char *text)
{
  TxlBpeTrainOptions o = TXL_BPE_TRAIN_OPTIONS_DEFAULT;
  o.vocab_size = 400;
  o.normalize = TXL_NORM_ALL;
  gsize len = strlen(text);
  g_autoptr(GError) err = NULL;
  TxlBpe *b = txl_bpe_train(&text, &len, 1, &o, &err);
  g_assert_no_error(err);
  TxlConfig c;
  tu_small_config(&c);
  c.n_token = txl_bpe_n_tokens(b);
  c.div_val = 1;
  c.n_cutoffs = 0;
  c.mem_len = 16;
  c.tgt_len = 7;
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&c, w);
  txl_bpe_write_gguf(b, w);
  tu_add_weights(w, &c, 3, NULL);
  char *path = tu_write_gguf(w);
  txl_bpe_free(b);
  return path;
}

/* An interleaved log: n lines over k sessions "s<i>", random order. */
static GPtrArray *
make_lines(int n, int k, guint32 seed)
{
  GRand *r = g_rand_new_with_seed(seed);
  GPtrArray *a = g_ptr_array_new_with_free_func(g_free);
  const char *words[] = { "open", "read block", "write", "close", "retry",
                          "served", "deleting file /data/x1234567/part" };
  for (int i = 0; i < n; i++) {
    int s = g_rand_int_range(r, 0, k);
    g_ptr_array_add(a, g_strdup_printf(
      "0811%02d %d INFO node%d: %s req=s%d size %d", i % 60,
      g_rand_int_range(r, 100, 99999), g_rand_int_range(r, 0, 9),
      words[g_rand_int_range(r, 0, G_N_ELEMENTS(words))], s,
      g_rand_int_range(r, 0, 100000)));
  }
  g_rand_free(r);
  return a;
}

/* ---- the reference: each session alone --------------------------------- */

/* An encoder callback: the ids into the GArray `ids`. */
static void
collect(int32_t id, gint64 line, gsize a, gsize b, gpointer ids)
{
  g_array_append_val((GArray *)ids, id);
}

static GArray *
encode_line(const TxlTokenizer *tok, const char *line)
{
  GArray *ids = g_array_new(FALSE, FALSE, sizeof(int32_t));
  TxlEncoder *e = txl_encoder_new(tok, collect, ids);
  txl_encoder_push(e, line, strlen(line));
  txl_encoder_push(e, "\n", 1);
  txl_encoder_finish(e);
  txl_encoder_free(e);
  return ids;
}

/* A scorer callback: the NLL of each scored token, in order, into the
 * GArray of double `nll`. */
static void
ref_token(gint64 pos, int32_t token, float logprob, gpointer nll)
{
  double v = -(double)logprob;
  g_array_append_val((GArray *)nll, v);
}

/* Per-line NLL sums (and the end marker's) of one session's lines. */
static GArray *
score_alone(TxlModel *m, const TxlSessionOptions *o, GPtrArray *lines,
            double *end_nll)
{
  const TxlTokenizer *tok = txl_model_tokenizer(m);
  GArray *ref = g_array_new(FALSE, FALSE, sizeof(double));
  g_autoptr(GError) err = NULL;
  TxlScorer *sc = txl_scorer_new(m, &o->stream, o->segment, ref_token, ref,
                                 &err);
  g_assert_no_error(err);
  GArray *nl = encode_line(tok, "");
  GArray *counts = g_array_new(FALSE, FALSE, sizeof(int));
  if (o->prime)
    g_assert_true(txl_scorer_push(sc, (int32_t *)nl->data, nl->len, &err));
  for (guint i = 0; i < lines->len; i++) {
    GArray *ids = encode_line(tok, lines->pdata[i]);
    int n = (int)ids->len - (txl_scorer_tokens_seen(sc) == 0);
    g_array_append_val(counts, n);
    g_assert_true(txl_scorer_push(sc, (int32_t *)ids->data, ids->len, &err));
    if (o->flush_lines)
      g_assert_true(txl_scorer_finish(sc, &err));
    g_array_free(ids, TRUE);
  }
  int n_end = 0;
  if (o->score_end) {
    g_assert_true(txl_scorer_push(sc, (int32_t *)nl->data, nl->len, &err));
    n_end = nl->len;
  }
  g_assert_true(txl_scorer_finish(sc, &err));
  g_assert_no_error(err);
  GArray *sums = g_array_new(FALSE, FALSE, sizeof(double));
  guint at = 0;
  for (guint i = 0; i < counts->len; i++) {
    double s = 0;
    for (int j = 0; j < g_array_index(counts, int, i); j++)
      s += g_array_index(ref, double, at++);
    g_array_append_val(sums, s);
  }
  *end_nll = NAN;
  if (n_end) {
    double s = 0;
    for (int j = 0; j < n_end; j++)
      s += g_array_index(ref, double, at++);
    *end_nll = s;
  }
  g_assert_cmpuint(at, ==, ref->len);
  txl_scorer_free(sc);
  g_array_free(nl, TRUE);
  g_array_free(counts, TRUE);
  g_array_free(ref, TRUE);
  return sums;
}

/* ---- what TxlSessions reports ------------------------------------------ */

typedef struct {
  GHashTable *line_nll;  /* seq -> double* */
  GHashTable *line_key;  /* seq -> key */
  GHashTable *results;   /* key -> TxlSessionResult* (copied, key owned) */
  GHashTable *open;      /* key -> line count since it opened (test's mirror) */
  int ends;
  gint64 lines_in_results;
  TxlSessions *s;
  guint64 max_bytes_seen;
  guint max_count_seen;
} Got;

static void
got_line(const TxlSessionLine *l, gpointer p)
{
  Got *g = p;
  g_assert_false(g_hash_table_contains(g->line_nll, GINT_TO_POINTER(l->line)));
  double *v = g_new(double, 1);
  *v = l->nll;
  g_hash_table_insert(g->line_nll, GINT_TO_POINTER(l->line), v);
  g_hash_table_insert(g->line_key, GINT_TO_POINTER(l->line), g_strdup(l->key));
}

static void
got_end(const TxlSessionResult *r, gpointer p)
{
  Got *g = p;
  g->ends++;
  g->lines_in_results += r->lines;
  /* fires once per session: the key must be open in the test's mirror */
  gpointer n;
  g_assert_true(g_hash_table_lookup_extended(g->open, r->key, NULL, &n));
  g_assert_cmpint(GPOINTER_TO_INT(n), ==, r->lines);
  g_hash_table_remove(g->open, r->key);
  /* a key evicted and seen again ends again: the last result counts */
  TxlSessionResult *old = g_hash_table_lookup(g->results, r->key);
  if (old) {
    g_hash_table_steal(g->results, r->key);
    g_free((char *)old->key);
    g_free(old);
  }
  TxlSessionResult *c = g_memdup2(r, sizeof *r);
  c->key = g_strdup(r->key);
  g_hash_table_insert(g->results, (char *)c->key, c);
}

static void
got_init(Got *g)
{
  memset(g, 0, sizeof *g);
  g->line_nll = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  g->line_key = g_hash_table_new_full(NULL, NULL, NULL, g_free);
  g->results = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, g_free);
  g->open = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
}

static void
got_clear(Got *g)
{
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, g->results);
  while (g_hash_table_iter_next(&it, &k, &v))
    g_free(k);
  g_hash_table_destroy(g->line_nll);
  g_hash_table_destroy(g->line_key);
  g_hash_table_destroy(g->results);
  g_hash_table_destroy(g->open);
}

static void
push_all(Got *g, TxlSessions *s, GPtrArray *lines)
{
  g_autoptr(GError) err = NULL;
  for (guint i = 0; i < lines->len; i++) {
    const char *line = lines->pdata[i];
    g_autofree char *key = txl_sessions_key(s, line, -1);
    if (!key)
      key = g_strdup("");
    gpointer n = NULL;
    gboolean was_open = g_hash_table_lookup_extended(g->open, key, NULL, &n);
    g_hash_table_replace(g->open, g_strdup(key),
                         GINT_TO_POINTER(was_open ? GPOINTER_TO_INT(n) + 1 : 1));
    gint64 seq = txl_sessions_push_line(s, line, -1, &err);
    g_assert_no_error(err);
    g_assert_cmpint(seq, ==, (gint64)i + 1);
    g->max_bytes_seen = MAX(g->max_bytes_seen, txl_sessions_bytes(s));
    g->max_count_seen = MAX(g->max_count_seen, txl_sessions_count(s));
  }
  g_assert_true(txl_sessions_finish(s, &err));
  g_assert_no_error(err);
  g_assert_cmpuint(txl_sessions_count(s), ==, 0);
  g_assert_cmpuint(txl_sessions_bytes(s), ==, 0);
  g_assert_cmpuint(g_hash_table_size(g->open), ==, 0);
  /* every line reported once */
  g_assert_cmpuint(g_hash_table_size(g->line_nll), ==, lines->len);
  g_assert_cmpint(g->lines_in_results, ==, lines->len);
}

/* ---- tests ------------------------------------------------------------- */

static void
check_alone(const char *model_path, GPtrArray *lines, int k)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = tu_load(model_path);
  for (int variant = 0; variant < 8; variant++) {
    TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
    o.key_regex = "req=(s[0-9]+)";
    o.key_group = 1;
    o.flush_lines = variant & 1;
    o.score_end = (variant >> 1) & 1;
    o.prime = !((variant >> 2) & 1);
    o.stream.memory = variant == 3 ? TXL_MEMORY_HIDDEN : TXL_MEMORY_KV;
    Got g;
    got_init(&g);
    TxlSessions *s = txl_sessions_new(m, &o, got_line, got_end, &g, &err);
    g_assert_no_error(err);
    push_all(&g, s, lines);
    g_assert_cmpint(g.ends, ==, k);
    g_assert_cmpuint(txl_sessions_ended(s, TXL_SESSION_END_CLOSED), ==, k);
    txl_sessions_free(s);
    /* each session alone: the same numbers, bit for bit */
    for (int i = 0; i < k; i++) {
      g_autofree char *key = g_strdup_printf("s%d", i);
      GPtrArray *mine = g_ptr_array_new();
      GArray *seqs = g_array_new(FALSE, FALSE, sizeof(gint64));
      for (guint j = 0; j < lines->len; j++) {
        g_autofree char *want = g_strdup_printf("req=%s ", key);
        if (strstr(lines->pdata[j], want)) {
          g_ptr_array_add(mine, lines->pdata[j]);
          gint64 seq = j + 1;
          g_array_append_val(seqs, seq);
        }
      }
      double end_nll;
      GArray *sums = score_alone(m, &o, mine, &end_nll);
      double total = 0, maxsum = 0;
      for (guint j = 0; j < seqs->len; j++) {
        gint64 seq = g_array_index(seqs, gint64, j);
        double *v = g_hash_table_lookup(g.line_nll, GINT_TO_POINTER(seq));
        g_assert_nonnull(v);
        g_assert_cmpstr(g_hash_table_lookup(g.line_key, GINT_TO_POINTER(seq)),
                        ==, key);
        g_assert_cmpfloat(*v, ==, g_array_index(sums, double, j));
        total += *v;
        maxsum = MAX(maxsum, *v);
      }
      TxlSessionResult *r = g_hash_table_lookup(g.results, key);
      g_assert_nonnull(r);
      g_assert_cmpint(r->lines, ==, seqs->len);
      g_assert_cmpint(r->first_line, ==, g_array_index(seqs, gint64, 0));
      g_assert_cmpint(r->last_line, ==,
                      g_array_index(seqs, gint64, seqs->len - 1));
      g_assert_cmpfloat(r->max_line_sum, ==, maxsum);
      if (o.score_end) {
        g_assert_cmpfloat(r->end_nll, ==, end_nll);
      } else {
        g_assert_true(isnan(r->end_nll));
      }
      g_assert_cmpfloat(fabs(r->nll - total), <=, 1e-9 * total);
      g_assert_cmpfloat(r->score, >=, r->max_line_mean);
      g_array_free(sums, TRUE);
      g_array_free(seqs, TRUE);
      g_ptr_array_free(mine, TRUE);
    }
    got_clear(&g);
  }
  txl_model_unref(m);
}

TU_TEST("/sessions/alone-bytes", test_alone_bytes)
{
  char *path = byte_model();
  g_autoptr(GPtrArray) lines = make_lines(120, 6, 11);
  check_alone(path, lines, 6);
  tu_remove(path);
  g_free(path);
}

TU_TEST("/sessions/alone-bpe", test_alone_bpe)
{
  g_autoptr(GPtrArray) train = make_lines(400, 20, 5);
  g_ptr_array_add(train, NULL);
  g_autofree char *text = g_strjoinv("\n", (char **)train->pdata);
  char *path = bpe_model(text);
  g_autoptr(GPtrArray) lines = make_lines(150, 7, 12);
  check_alone(path, lines, 7);
  tu_remove(path);
  g_free(path);
}

static void
reported(const TxlSessionLine *l, gpointer p)
{
  g_hash_table_add(p, GINT_TO_POINTER(l->line));
}

/* What a caller holding lines checks a restore against: the lines pushed,
 * and those not reported yet, ascending across interleaved sessions. */
TU_TEST("/sessions/waiting-lines", test_waiting_lines)
{
  g_autofree char *path = byte_model();
  TxlModel *m = tu_load(path);
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.key_regex = "req=s[0-9]+";
  o.segment = 256; /* lines wait for their session's segment to fill */
  GHashTable *done = g_hash_table_new(NULL, NULL);
  g_autoptr(GError) err = NULL;
  TxlSessions *s = txl_sessions_new(m, &o, reported, NULL, done, &err);
  g_assert_no_error(err);
  g_autoptr(GPtrArray) lines = make_lines(40, 3, 5);
  GArray *w = g_array_new(FALSE, FALSE, sizeof(gint64));
  guint most = 0;
  for (guint i = 0; i < lines->len; i++) {
    g_assert_cmpint(txl_sessions_push_line(s, lines->pdata[i], -1, &err), ==,
                    i + 1);
    g_assert_cmpint(txl_sessions_lines(s), ==, i + 1);
    g_array_set_size(w, 0);
    txl_sessions_waiting_lines(s, w);
    guint k = 0;
    for (gint64 n = 1; n <= (gint64)i + 1; n++)
      if (!g_hash_table_contains(done, GINT_TO_POINTER(n))) {
        g_assert_cmpuint(k, <, w->len);
        g_assert_cmpint(g_array_index(w, gint64, k), ==, n);
        k++;
      }
    g_assert_cmpuint(k, ==, w->len);
    most = MAX(most, w->len);
  }
  g_assert_cmpuint(most, >, 6); /* lines of several sessions waited */
  g_assert_true(txl_sessions_finish(s, &err));
  g_array_set_size(w, 0);
  txl_sessions_waiting_lines(s, w);
  g_assert_cmpuint(w->len, ==, 0);
  g_assert_cmpuint(g_hash_table_size(done), ==, lines->len);
  g_array_unref(w);
  g_hash_table_unref(done);
  txl_sessions_free(s);
  txl_model_unref(m);
  tu_remove(path);
}

/* Without a key every line is one stream: the numbers of txl_scorer over
 * the whole text (no primer, no flushes), as txl score computes them. */
TU_TEST("/sessions/single-stream", test_single_stream)
{
  TxlModel *m = tu_test_small_model(7); /* 300 ids, mem 12, segment 5 */
  g_autoptr(GError) err = NULL;
  g_autoptr(GPtrArray) lines = make_lines(60, 4, 3);
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.prime = FALSE;
  Got g;
  got_init(&g);
  TxlSessions *s = txl_sessions_new(m, &o, got_line, got_end, &g, &err);
  g_assert_no_error(err);
  push_all(&g, s, lines);
  g_assert_cmpint(g.ends, ==, 1);
  double end_nll;
  GArray *sums = score_alone(m, &o, lines, &end_nll);
  for (guint j = 0; j < lines->len; j++) {
    double *v = g_hash_table_lookup(g.line_nll, GINT_TO_POINTER(j + 1));
    g_assert_cmpfloat(*v, ==, g_array_index(sums, double, j));
  }
  g_array_free(sums, TRUE);
  txl_sessions_free(s);
  got_clear(&g);
}

TU_TEST("/sessions/bounds", test_bounds)
{
  TxlModel *m = tu_test_small_model(7); /* 300 ids, mem 12, segment 5 */
  g_autoptr(GError) err = NULL;
  g_autoptr(GPtrArray) lines = make_lines(400, 40, 21);
  for (int kind = 0; kind < 3; kind++) {
    TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
    o.key_regex = "req=s[0-9]+";
    o.score_end = TRUE;
    Got g;
    got_init(&g);
    /* a probe for the size of one session */
    TxlSessions *probe = txl_sessions_new(m, &o, NULL, NULL, NULL, &err);
    guint64 one = txl_sessions_session_max_bytes(probe);
    txl_sessions_free(probe);
    if (kind == 0)
      o.max_bytes = 5 * one;
    else if (kind == 1)
      o.max_sessions = 7;
    else
      o.idle_lines = 15;
    TxlSessions *s = txl_sessions_new(m, &o, got_line, got_end, &g, &err);
    g_assert_no_error(err);
    push_all(&g, s, lines);
    if (kind == 0) {
      g_assert_cmpuint(g.max_bytes_seen, <=, o.max_bytes);
      g_assert_cmpuint(g.max_bytes_seen, >, 3 * one); /* it was used */
    } else if (kind == 1) {
      g_assert_cmpuint(g.max_count_seen, ==, 7);
    } else {
      /* about 15 / 40 of the keys stay open at a time */
      g_assert_cmpuint(g.max_count_seen, <=, 15);
    }
    TxlSessionEnd why = kind == 2 ? TXL_SESSION_END_IDLE
                                  : TXL_SESSION_END_EVICTED;
    g_assert_cmpuint(txl_sessions_ended(s, why), >, 40);
    g_assert_cmpint(g.ends, ==,
                    txl_sessions_ended(s, TXL_SESSION_END_CLOSED) +
                    txl_sessions_ended(s, why));
    txl_sessions_free(s);
    got_clear(&g);
  }
}

TU_TEST("/sessions/errors", test_errors)
{
  TxlModel *m = tu_test_small_model(7); /* 300 ids, mem 12, segment 5 */
  g_autoptr(GError) err = NULL;
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.key_regex = "blk_(";
  g_assert_null(txl_sessions_new(m, &o, NULL, NULL, NULL, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  g_assert_nonnull(strstr(err->message, "regex"));
  g_clear_error(&err);
  o.key_regex = "blk_[0-9]+";
  o.key_group = 1;
  g_assert_null(txl_sessions_new(m, &o, NULL, NULL, NULL, &err));
  g_assert_nonnull(strstr(err->message, "group"));
  g_clear_error(&err);
  o.key_group = 0;
  o.max_bytes = 1000;
  g_assert_null(txl_sessions_new(m, &o, NULL, NULL, NULL, &err));
  g_assert_nonnull(strstr(err->message, "max_bytes"));
  g_clear_error(&err);
  o.max_bytes = 0;
  TxlSessions *s = txl_sessions_new(m, &o, NULL, NULL, NULL, &err);
  g_assert_no_error(err);
  g_assert_cmpint(txl_sessions_push_line(s, "a\nb", -1, &err), ==, -1);
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  g_clear_error(&err);
  int32_t bad = 100000;
  g_assert_cmpint(txl_sessions_push_tokens(s, "k", &bad, 1, 1, &err), ==, -1);
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  g_clear_error(&err);
  g_assert_null(txl_sessions_key(s, "no key here", -1));
  g_autofree char *k = txl_sessions_key(s, "x blk_42 y", -1);
  g_assert_cmpstr(k, ==, "blk_42");
  /* a line without a key goes to the session "" */
  g_assert_cmpint(txl_sessions_push_line(s, "no key here", -1, &err), >, 0);
  g_assert_no_error(err);
  g_assert_cmpuint(txl_sessions_count(s), ==, 2);
  g_assert_true(txl_sessions_end(s, "", &err));
  g_assert_true(txl_sessions_end(s, "unknown", &err));
  g_assert_cmpuint(txl_sessions_count(s), ==, 1);
  txl_sessions_free(s); /* one session still open: freed unreported */
}

/* idle_after by length on a log-time clock; finish_open */
typedef struct {
  GPtrArray *keys;
  GArray *reasons;
  GArray *ends;
  GArray *lines;
} Ends;

static void
ends_got(const TxlSessionResult *r, gpointer p)
{
  Ends *e = p;
  g_ptr_array_add(e->keys, g_strdup(r->key));
  int why = r->reason;
  g_array_append_val(e->reasons, why);
  g_array_append_val(e->ends, r->end_nll);
  g_array_append_val(e->lines, r->lines);
}

TU_TEST("/sessions/idle-after", test_idle_after)
{
  TxlModel *m = tu_test_small_model(7); /* 300 ids, mem 12, segment 5 */
  g_autoptr(GError) err = NULL;
  const double after[3] = { 5, 5, 100 }; /* 1-2 lines: 5 s; 3+: 100 s */
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.key_regex = "k[0-9]+";
  o.score_end = TRUE;
  o.idle_after = after;
  o.n_idle_after = 3;
  o.finish_open = TRUE;
  Ends e = { g_ptr_array_new_with_free_func(g_free),
             g_array_new(FALSE, FALSE, sizeof(int)),
             g_array_new(FALSE, FALSE, sizeof(double)),
             g_array_new(FALSE, FALSE, sizeof(gint64)) };
  TxlSessions *s = txl_sessions_new(m, &o, NULL, ends_got, &e, &err);
  g_assert_no_error(err);
  struct { double t; const char *line; } in[] = {
    { 0, "a k1" }, { 1, "b k2" }, { 2, "c k2" }, { 3, "d k2" },
    { 5, "e k1" },  /* k1 quiet 5 s after 1 line: not more than 5 */
    { 11, "f k2" }, /* k1 (2 lines, quiet 6 s) ended before this line */
    { 12, "g k1" }, /* k1 again: a new session */
    { 200, "h k3" }, /* k2 (4 lines, quiet 189 s) and k1 ended */
  };
  for (guint i = 0; i < G_N_ELEMENTS(in); i++) {
    g_assert_true(txl_sessions_set_time(s, in[i].t, &err));
    g_assert_cmpint(txl_sessions_push_line(s, in[i].line, -1, &err), ==,
                    (gint64)i + 1);
  }
  g_assert_true(txl_sessions_set_time(s, 150, &err)); /* never goes back */
  g_assert_cmpuint(e.keys->len, ==, 3);
  g_assert_cmpstr(e.keys->pdata[0], ==, "k1");
  g_assert_cmpint(g_array_index(e.lines, gint64, 0), ==, 2);
  g_assert_cmpstr(e.keys->pdata[1], ==, "k1");
  g_assert_cmpstr(e.keys->pdata[2], ==, "k2");
  g_assert_cmpint(g_array_index(e.lines, gint64, 2), ==, 4);
  for (guint i = 0; i < 3; i++) {
    g_assert_cmpint(g_array_index(e.reasons, int, i), ==, TXL_SESSION_END_IDLE);
    g_assert_true(isfinite(g_array_index(e.ends, double, i)));
  }
  g_assert_true(txl_sessions_finish(s, &err));
  g_assert_cmpuint(e.keys->len, ==, 4);
  g_assert_cmpstr(e.keys->pdata[3], ==, "k3");
  g_assert_cmpint(g_array_index(e.reasons, int, 3), ==, TXL_SESSION_END_OPEN);
  g_assert_true(isnan(g_array_index(e.ends, double, 3)));
  g_assert_cmpuint(txl_sessions_ended(s, TXL_SESSION_END_OPEN), ==, 1);
  g_assert_cmpuint(txl_sessions_ended(s, TXL_SESSION_END_IDLE), ==, 3);
  txl_sessions_free(s);
  /* the line clock: without txl_sessions_set_time() every line is a tick;
   * evicted sessions get no end marker */
  const double two = 2;
  o.idle_after = &two;
  o.n_idle_after = 1;
  o.max_sessions = 2;
  g_ptr_array_set_size(e.keys, 0);
  g_array_set_size(e.reasons, 0);
  g_array_set_size(e.ends, 0);
  g_array_set_size(e.lines, 0);
  s = txl_sessions_new(m, &o, NULL, ends_got, &e, &err);
  const char *ll[] = { "x k1", "x k2", "x k3", "x k2", "x k2", "x k2", "x k4" };
  for (guint i = 0; i < G_N_ELEMENTS(ll); i++)
    g_assert_cmpint(txl_sessions_push_line(s, ll[i], -1, &err), >, 0);
  /* k1 evicted at k3 (3 open), k3 idle at line 6 (3 lines later) */
  g_assert_cmpstr(e.keys->pdata[0], ==, "k1");
  g_assert_cmpint(g_array_index(e.reasons, int, 0), ==, TXL_SESSION_END_EVICTED);
  g_assert_true(isnan(g_array_index(e.ends, double, 0)));
  g_assert_cmpstr(e.keys->pdata[1], ==, "k3");
  g_assert_cmpint(g_array_index(e.reasons, int, 1), ==, TXL_SESSION_END_IDLE);
  g_assert_true(isfinite(g_array_index(e.ends, double, 1)));
  g_assert_true(txl_sessions_finish(s, &err));
  txl_sessions_free(s);
  g_ptr_array_free(e.keys, TRUE);
  g_array_free(e.reasons, TRUE);
  g_array_free(e.ends, TRUE);
  g_array_free(e.lines, TRUE);
}

/* ---- swapping the weights ------------------------------------------- */

/* What a swap must keep: every line's numbers, bit for bit. */
typedef struct {
  GArray *v; /* doubles: nll, max_token, window, norm_bytes per line */
} Lines;

static void
lines_got(const TxlSessionLine *l, gpointer p)
{
  Lines *g = p;
  double v[4] = { l->nll, l->max_token, l->window, (double)l->norm_bytes };
  g_array_append_vals(g->v, v, 4);
}

/* A run over lines with `o` (key req=sN, the end marker scored): swap_to
 * set after line 20 and `then` after line 40 (NULL: none; each set_model's
 * result in ok[]), and with roundtrip the state bytes taken and set again
 * after line 50.  The lines' numbers go into *g, each result to end(). */
static void
run_with_swaps(TxlModel *m, GPtrArray *lines, TxlSessionOptions o,
               TxlModel *swap_to, TxlModel *then, gboolean ok[2],
               gboolean roundtrip, TxlSessionEndFunc end, Lines *g)
{
  o.key_regex = "req=s[0-9]+";
  o.score_end = TRUE;
  g_autoptr(GError) err = NULL;
  TxlSessions *s = txl_sessions_new(m, &o, lines_got, end, g, &err);
  g_assert_no_error(err);
  for (guint i = 0; i < lines->len; i++) {
    g_assert_cmpint(txl_sessions_push_line(s, lines->pdata[i], -1, &err), >,
                    0);
    g_assert_no_error(err);
    TxlModel *to = i == 20 ? swap_to : i == 40 ? then : NULL;
    if (to) {
      GError *e = NULL;
      ok[i == 40] = txl_sessions_set_model(s, to, &e);
      g_assert_true(ok[i == 40] == (e == NULL));
      g_clear_error(&e);
    }
    if (roundtrip && i == 50) {
      gsize n = txl_sessions_state_get_size(s);
      guint8 *b = g_malloc(n);
      g_assert_cmpuint(txl_sessions_state_get_data(s, b, n), ==, n);
      g_assert_true(txl_sessions_state_set_data(s, b, n, &err));
      g_assert_no_error(err);
      g_free(b);
    }
  }
  g_assert_true(txl_sessions_finish(s, &err));
  g_assert_no_error(err);
  txl_sessions_free(s);
}

/* The lines' numbers with swap_to set after line 20 (and, for a view,
 * again after line 40); the result of each set_model in *ok.  roundtrip:
 * the state bytes taken and set again after line 50. */
static GArray *
swapped_run(TxlModel *m, GPtrArray *lines, TxlModel *swap_to,
            TxlModel *then, gboolean ok[2], gboolean roundtrip)
{
  Lines g = { g_array_new(FALSE, FALSE, sizeof(double)) };
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  run_with_swaps(m, lines, o, swap_to, then, ok, roundtrip, NULL, &g);
  return g.v;
}

/* The same weights (another load of the file, and a view over them with no
 * tokenizer of its own, as the learner makes) change nothing; another
 * shape is refused and the sessions go on as before; other weights of the
 * same shape do change the scores, and stay through the state bytes. */
TU_TEST("/sessions/set-model", test_set_model)
{
  TxlConfig c;
  tu_small_config(&c);
  c.div_val = 1; /* what training, and so a view over params, supports */
  c.n_cutoffs = 0;
  char *path = tu_write_model(&c, 7, NULL);
  g_autoptr(GError) err = NULL;
  TxlModel *m = tu_load(path);
  TxlModel *again = tu_load(path);
  TxlParams *p = txl_params_from_model(m, &err);
  g_assert_no_error(err);
  TxlModel *view = txl_model_from_params_owned(p);
  TxlConfig oc = c;
  oc.d_inner = 48;
  char *other_path = tu_write_model(&oc, 7, NULL);
  TxlModel *other = tu_load(other_path);
  char *seed8_path = tu_write_model(&c, 8, NULL);
  TxlModel *seed8 = tu_load(seed8_path);
  g_autoptr(GPtrArray) lines = make_lines(80, 6, 5);
  gboolean ok[2] = { FALSE, FALSE };

  GArray *ref = swapped_run(m, lines, NULL, NULL, ok, FALSE);
  GArray *same = swapped_run(m, lines, again, view, ok, FALSE);
  g_assert_true(ok[0] && ok[1]);
  g_assert_cmpuint(same->len, ==, ref->len);
  g_assert_cmpmem(same->data, same->len * sizeof(double), ref->data,
                  ref->len * sizeof(double));
  ok[0] = TRUE;
  GArray *refused = swapped_run(m, lines, other, NULL, ok, FALSE);
  g_assert_false(ok[0]);
  g_assert_cmpmem(refused->data, refused->len * sizeof(double), ref->data,
                  ref->len * sizeof(double));
  GArray *changed = swapped_run(m, lines, seed8, NULL, ok, FALSE);
  g_assert_true(ok[0]);
  g_assert_cmpuint(changed->len, ==, ref->len);
  g_assert_true(memcmp(changed->data, ref->data,
                       ref->len * sizeof(double)) != 0);
  /* state bytes carry memories, not weights: the swapped ones stay */
  GArray *kept = swapped_run(m, lines, seed8, NULL, ok, TRUE);
  g_assert_cmpmem(kept->data, kept->len * sizeof(double), changed->data,
                  changed->len * sizeof(double));
  g_array_free(kept, TRUE);

  g_array_free(ref, TRUE);
  g_array_free(same, TRUE);
  g_array_free(refused, TRUE);
  g_array_free(changed, TRUE);
  txl_model_unref(again);
  txl_model_unref(view);
  tu_model_done(other, other_path);
  tu_model_done(seed8, seed8_path);
  tu_model_done(m, path);
}

/* ---- judging by the weights in use at the end (rescore) ----------------- */

typedef struct {
  Lines l;            /* first: lines_got takes it */
  GHashTable *res;    /* key -> TxlSessionResult (copied; key NULL) */
} Rescored;

static void
result_got(const TxlSessionResult *r, gpointer p)
{
  TxlSessionResult *c = g_memdup2(r, sizeof *r);
  c->key = NULL;
  g_hash_table_replace(((Rescored *)p)->res, g_strdup(r->key), c);
}

/* A run over lines with the weights swapped to `to` after line 20 (NULL:
 * never); roundtrip: the state bytes taken and set again after line 50. */
static Rescored
rescored_run(TxlModel *m, GPtrArray *lines, TxlModel *to, gboolean rescore,
             gboolean flush, gboolean roundtrip)
{
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.flush_lines = flush;
  o.rescore = rescore;
  Rescored g = { { g_array_new(FALSE, FALSE, sizeof(double)) },
                 g_hash_table_new_full(g_str_hash, g_str_equal, g_free,
                                       g_free) };
  gboolean ok[2] = { TRUE, TRUE };
  run_with_swaps(m, lines, o, to, NULL, ok, roundtrip, result_got, &g.l);
  g_assert_true(ok[0]);
  return g;
}

static void
rescored_clear(Rescored *g)
{
  g_array_free(g->l.v, TRUE);
  g_hash_table_destroy(g->res);
}

/* Calls f with each key of a, its result in a and its result in b (which
 * must hold the same keys). */
static void
each_pair(GHashTable *a, GHashTable *b,
          void (*f)(gpointer key, const TxlSessionResult *x,
                    const TxlSessionResult *y, gpointer data),
          gpointer data)
{
  g_assert_cmpuint(g_hash_table_size(a), ==, g_hash_table_size(b));
  GHashTableIter it;
  gpointer k, v;
  g_hash_table_iter_init(&it, a);
  while (g_hash_table_iter_next(&it, &k, &v)) {
    const TxlSessionResult *y = g_hash_table_lookup(b, k);
    g_assert_nonnull(y);
    f(k, v, y, data);
  }
}

static void
count_differing(gpointer key, const TxlSessionResult *x,
                const TxlSessionResult *y, gpointer differ)
{
  g_assert_cmpint(x->lines, ==, y->lines);
  g_assert_cmpint(x->first_line, ==, y->first_line);
  double fx[] = { x->nll, x->max_line_mean, x->max_line_sum, x->max_token,
                  x->end_nll, x->score, (double)x->tokens,
                  (double)x->nonfinite };
  double fy[] = { y->nll, y->max_line_mean, y->max_line_sum, y->max_token,
                  y->end_nll, y->score, (double)y->tokens,
                  (double)y->nonfinite };
  *(guint *)differ += memcmp(fx, fy, sizeof fx) != 0;
}

/* The figures of a's results and b's, key by key: how many differ. */
static guint
results_differ(GHashTable *a, GHashTable *b)
{
  guint differ = 0;
  each_pair(a, b, count_differing, &differ);
  return differ;
}

static void
take_lower(gpointer key, const TxlSessionResult *first,
           const TxlSessionResult *again, gpointer low)
{
  g_hash_table_insert(low, key,
                      (gpointer)(again->score < first->score ? again : first));
}

/* The results a rescoring run should give: key by key, scored again
 * (again) where that scores lower than as scored (first), else first. */
static GHashTable *
lower_of(GHashTable *first, GHashTable *again)
{
  GHashTable *low = g_hash_table_new(g_str_hash, g_str_equal);
  each_pair(first, again, take_lower, low);
  return low;
}

/* With rescore, a session the new weights took over mid-way is scored
 * again whole by them, and judged by the lower of the two results: bit
 * for bit, either what a run with the new weights from the start gives
 * (the segments as it had them: flush_lines off) or the mixed result of
 * the run without rescore, whichever scores lower; the lines keep the
 * scores they went out with; through the state bytes too. */
TU_TEST("/sessions/rescore", test_rescore)
{
  TxlConfig c;
  tu_small_config(&c);
  c.div_val = 1;
  c.n_cutoffs = 0;
  char *path = tu_write_model(&c, 7, NULL);
  char *seed8_path = tu_write_model(&c, 8, NULL);
  TxlModel *m = tu_load(path), *seed8 = tu_load(seed8_path);
  g_autoptr(GPtrArray) lines = make_lines(80, 6, 5);

  Rescored ref = rescored_run(seed8, lines, NULL, FALSE, FALSE, FALSE);
  Rescored mixed = rescored_run(m, lines, seed8, FALSE, FALSE, FALSE);
  Rescored re = rescored_run(m, lines, seed8, TRUE, FALSE, FALSE);
  Rescored trip = rescored_run(m, lines, seed8, TRUE, FALSE, TRUE);
  Rescored flushed = rescored_run(m, lines, seed8, TRUE, TRUE, FALSE);
  Rescored flushed_mixed = rescored_run(m, lines, seed8, FALSE, TRUE, FALSE);
  g_assert_cmpuint(g_hash_table_size(ref.res), ==, 6);
  /* the six sessions all began before the swap */
  g_assert_cmpuint(results_differ(mixed.res, ref.res), ==, 6);
  GHashTable *low = lower_of(mixed.res, ref.res);
  /* the swap the other way round, so that the test sees both branches of
   * the choice: the new weights' result and the mixed one */
  Rescored ref7 = rescored_run(m, lines, NULL, FALSE, FALSE, FALSE);
  Rescored mixed7 = rescored_run(seed8, lines, m, FALSE, FALSE, FALSE);
  Rescored re7 = rescored_run(seed8, lines, m, TRUE, FALSE, FALSE);
  GHashTable *low7 = lower_of(mixed7.res, ref7.res);
  g_assert_cmpuint(results_differ(re7.res, low7), ==, 0);
  guint took_new = 0, took_mixed = 0;
  GHashTable *lows[] = { low, low7 }, *news[] = { ref.res, ref7.res };
  for (guint i = 0; i < 2; i++) {
    GHashTableIter it;
    gpointer k, v;
    g_hash_table_iter_init(&it, lows[i]);
    while (g_hash_table_iter_next(&it, &k, &v)) {
      const TxlSessionResult *n = g_hash_table_lookup(news[i], k);
      took_new += v == n;
      took_mixed += v != n && ((const TxlSessionResult *)v)->score < n->score;
    }
  }
  g_assert_cmpuint(took_new, >, 0);
  g_assert_cmpuint(took_mixed, >, 0);
  g_assert_cmpuint(results_differ(re.res, low), ==, 0);
  g_assert_cmpuint(results_differ(trip.res, low), ==, 0);
  /* flushed segments the first time, whole ones again: the results are
   * the lower of the new weights' and the flushed run's, the lines those
   * of the swap */
  GHashTable *flow = lower_of(flushed_mixed.res, ref.res);
  g_assert_cmpuint(results_differ(flushed.res, flow), ==, 0);
  g_assert_cmpmem(re.l.v->data, re.l.v->len * sizeof(double),
                  mixed.l.v->data, mixed.l.v->len * sizeof(double));
  g_assert_cmpmem(flushed.l.v->data, flushed.l.v->len * sizeof(double),
                  flushed_mixed.l.v->data,
                  flushed_mixed.l.v->len * sizeof(double));
  /* no swap, nothing scored again */
  Rescored same = rescored_run(m, lines, NULL, TRUE, TRUE, FALSE);
  Rescored plain = rescored_run(m, lines, NULL, FALSE, TRUE, FALSE);
  g_assert_cmpuint(results_differ(same.res, plain.res), ==, 0);

  g_hash_table_destroy(low);
  g_hash_table_destroy(low7);
  g_hash_table_destroy(flow);
  Rescored *all[] = { &ref, &mixed, &re, &trip, &flushed, &flushed_mixed,
                      &ref7, &mixed7, &re7,
                      &same, &plain };
  for (guint i = 0; i < G_N_ELEMENTS(all); i++)
    rescored_clear(all[i]);
  tu_model_done(seed8, seed8_path);
  tu_model_done(m, path);
}

TU_MAIN()

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* State as bytes (docs/api.md): for the scorer, the encoder, sessions,
 * the baseline, the sampler, a bare stream, a line's accumulator and the
 * learner, get_data then set_data into a fresh
 * object continues exactly as the original; every truncation and a
 * sweep of mutated bytes are refused without a crash, or (a mutated float
 * that is still a number) accepted, and a refused set leaves the object
 * as it was. */
#include "baseline.h"
#include "bytes.h"
#include "learner.h"
#include "lines.h"
#include "sampler.h"
#include "testutil.h"
#include "tu_config.h"

#include <math.h>
#include "tu_test.h"

/* One object kind behind the three calls. */
typedef struct {
  gsize (*size)(gpointer o);
  gsize (*get)(gpointer o, guint8 *dst, gsize n);
  gboolean (*set)(gpointer o, const guint8 *src, gsize n, GError **e);
} Api;

/* The three calls of one kind, over gpointer. */
#define STATE_API(api, fn)                                                  \
  static gsize api##_size(gpointer o) { return fn##_get_size(o); }          \
  static gsize api##_get(gpointer o, guint8 *d, gsize n)                    \
  {                                                                         \
    return fn##_get_data(o, d, n);                                          \
  }                                                                         \
  static gboolean api##_set(gpointer o, const guint8 *s, gsize n,           \
                            GError **e)                                     \
  {                                                                         \
    return fn##_set_data(o, s, n, e);                                       \
  }                                                                         \
  static const Api api = { api##_size, api##_get, api##_set };

static GBytes *
state_of(const Api *a, gpointer o)
{
  gsize n = a->size(o);
  guint8 *b = g_malloc(n + 1);
  g_assert_cmpuint(a->get(o, b, n - (n > 0)), ==, n > 0 ? 0 : n);
  g_assert_cmpuint(a->get(o, b, n), ==, n);
  return g_bytes_new_take(b, n);
}

/* set must refuse or accept without a crash, and a refusal changes
 * nothing; returns whether it accepted. */
static gboolean
try_set(const Api *a, gpointer o, const guint8 *src, gsize n)
{
  GBytes *before = state_of(a, o);
  GError *err = NULL;
  gboolean ok = a->set(o, src, n, &err);
  if (!ok) {
    g_assert_nonnull(err);
    g_assert_cmpuint(strlen(err->message), >, 0);
    g_error_free(err);
    GBytes *after = state_of(a, o);
    g_assert_true(g_bytes_equal(before, after));
    g_bytes_unref(after);
  }
  g_bytes_unref(before);
  return ok;
}

/* Every truncation (at most `limit`, spread over the length) is refused;
 * mutated bytes (at most `limit` positions, three patterns) never crash
 * and leave the object as it was when refused.  o must hold another state
 * than st, so that "unchanged" is a real check. */
static void
sweep(const Api *a, gpointer o, GBytes *st, gsize limit)
{
  gsize n;
  const guint8 *d = g_bytes_get_data(st, &n);
  gsize step = MAX(1, n / limit);
  for (gsize len = 0; len < n; len += (len < 80 ? 1 : step)) {
    guint8 *cut = g_memdup2(d, len ? len : 1);
    g_assert_false(try_set(a, o, len ? cut : NULL, len));
    g_free(cut);
  }
  guint8 *m = g_memdup2(d, n);
  static const guint8 xors[] = { 0x01, 0x80, 0xff };
  for (gsize i = 0; i < n; i += (i < 80 ? 1 : step)) {
    for (guint k = 0; k < G_N_ELEMENTS(xors); k++) {
      m[i] ^= xors[k];
      try_set(a, o, m, n);
      m[i] ^= xors[k];
    }
  }
  g_free(m);
}

/* A small byte-tokenizer model written for the test (*path: its file). */
static TxlModel *
small_model(guint32 seed, char **path)
{
  TxlConfig c;
  tu_small_config(&c);
  *path = tu_write_model(&c, seed, NULL);
  TxlModel *m = txl_model_load(*path, NULL);
  g_assert_nonnull(m);
  return m;
}

static void
drop_model(TxlModel *m, char *path)
{
  tu_model_done(m, path);
}

/* ---- scorer ----------------------------------------------------------- */

static void
collect(gint64 pos, int32_t tok, float lp, gpointer data)
{
  guint32 u;
  memcpy(&u, &lp, 4);
  g_string_append_printf(data, "%" G_GINT64_FORMAT ":%d:%08x ", pos, tok, u);
}

STATE_API(scorer_api, txl_scorer_state)

static void
push_ids(TxlScorer *sc, int from, int n)
{
  int32_t ids[64];
  for (int i = 0; i < n; i++)
    ids[i] = (from + i) * 37 % 300;
  g_assert_true(txl_scorer_push(sc, ids, n, NULL));
}

TU_TEST("/state-bytes/scorer", test_scorer)
{
  char *path;
  TxlModel *m = small_model(11, &path);
  for (int kind = TXL_MEMORY_KV; kind <= TXL_MEMORY_HIDDEN; kind++) {
    TxlStreamOptions so = TXL_STREAM_OPTIONS_DEFAULT;
    so.memory = kind;
    GString *a = g_string_new(NULL), *b = g_string_new(NULL);
    TxlScorer *s1 = txl_scorer_new(m, &so, 5, collect, a, NULL);
    push_ids(s1, 0, 23); /* memory full, three tokens pending */
    GBytes *st = state_of(&scorer_api, s1);
    TxlScorer *s2 = txl_scorer_new(m, &so, 5, collect, b, NULL);
    push_ids(s2, 100, 3); /* another state, replaced */
    gsize n;
    const guint8 *d = g_bytes_get_data(st, &n);
    g_assert_true(try_set(&scorer_api, s2, d, n));
    g_assert_cmpint(txl_scorer_tokens_seen(s2), ==, 23);
    g_string_truncate(a, 0);
    g_string_truncate(b, 0);
    push_ids(s1, 23, 31);
    push_ids(s2, 23, 31);
    g_assert_true(txl_scorer_finish(s1, NULL) && txl_scorer_finish(s2, NULL));
    g_assert_cmpstr(a->str, ==, b->str);
    /* refusals: truncated, mutated, a NaN, another scorer's settings */
    sweep(&scorer_api, s2, st, 300);
    guint8 *nan = g_memdup2(d, n);
    float q = NAN;
    memcpy(nan + 64 + 4 * 7, &q, 4);
    g_assert_false(try_set(&scorer_api, s2, nan, n));
    nan[4] = 9; /* a version from the future is named */
    GError *err = NULL;
    g_assert_false(txl_scorer_state_set_data(s2, nan, n, &err));
    g_assert_error(err, TXL_ERROR, TXL_ERROR_UNSUPPORTED);
    g_assert_nonnull(strstr(err->message, "version 9"));
    g_clear_error(&err);
    g_free(nan);
    TxlStreamOptions other = so;
    other.mem_len = 7;
    TxlScorer *s3 = txl_scorer_new(m, &other, 5, NULL, NULL, NULL);
    g_assert_false(try_set(&scorer_api, s3, d, n));
    txl_scorer_free(s3);
    g_bytes_unref(st);
    txl_scorer_free(s1);
    txl_scorer_free(s2);
    g_string_free(a, TRUE);
    g_string_free(b, TRUE);
  }
  drop_model(m, path);
}

/* ---- encoder ---------------------------------------------------------- */

static void
on_token(int32_t id, gint64 line, gsize s, gsize e, gpointer data)
{
  g_string_append_printf(data, "%d@%" G_GINT64_FORMAT ":%zu-%zu ", id, line,
                         s, e);
}

STATE_API(encoder_api, txl_encoder_state)

TU_TEST("/state-bytes/encoder", test_encoder)
{
  char *path = NULL;
  TxlModel *m = tu_word_model(&path, FALSE);
  const TxlTokenizer *tok = txl_model_tokenizer(m);
  GString *a = g_string_new(NULL), *b = g_string_new(NULL);
  TxlEncoder *e1 = txl_encoder_new(tok, on_token, a);
  const char *text = "the cat sat\non the ma";
  txl_encoder_push(e1, text, strlen(text));
  GBytes *st = state_of(&encoder_api, e1);
  TxlEncoder *e2 = txl_encoder_new(tok, on_token, b);
  gsize n;
  const guint8 *d = g_bytes_get_data(st, &n);
  g_assert_true(try_set(&encoder_api, e2, d, n));
  g_string_truncate(a, 0);
  txl_encoder_push(e1, "t\nthe end\n", 10);
  txl_encoder_push(e2, "t\nthe end\n", 10);
  txl_encoder_finish(e1);
  txl_encoder_finish(e2);
  g_assert_cmpstr(a->str, ==, b->str);
  /* the GBytes form is the same bytes */
  GBytes *saved = txl_encoder_save(e1);
  GBytes *now = state_of(&encoder_api, e1);
  g_assert_true(g_bytes_equal(saved, now));
  g_bytes_unref(saved);
  g_bytes_unref(now);
  sweep(&encoder_api, e2, st, 400);
  g_bytes_unref(st);
  txl_encoder_free(e1);
  txl_encoder_free(e2);
  g_string_free(a, TRUE);
  g_string_free(b, TRUE);
  drop_model(m, path);
}

/* ---- baseline and sampler --------------------------------------------- */

STATE_API(baseline_api, txl_baseline_state)

TU_TEST("/state-bytes/baseline", test_baseline)
{
  for (int kind = TXL_BASELINE_MAD; kind <= TXL_BASELINE_QUANTILE; kind++) {
    TxlBaseline *b1 = txl_baseline_new(kind, 16, 4, 0.9, NULL);
    TxlBaseline *b2 = txl_baseline_new(kind, 16, 4, 0.9, NULL);
    for (int i = 0; i < 21; i++)
      txl_baseline_add(b1, sin(i * 0.7) * 3);
    txl_baseline_add(b2, 1.0);
    GBytes *st = state_of(&baseline_api, b1);
    gsize n;
    const guint8 *d = g_bytes_get_data(st, &n);
    g_assert_true(try_set(&baseline_api, b2, d, n));
    for (int i = 0; i < 9; i++) {
      double s1 = 0, s2 = 0;
      g_assert_cmpint(txl_baseline_score(b1, i * 0.3, &s1), ==,
                      txl_baseline_score(b2, i * 0.3, &s2));
      g_assert_cmpfloat(s1, ==, s2);
      txl_baseline_add(b1, i * 0.3);
      txl_baseline_add(b2, i * 0.3);
    }
    txl_baseline_reset(b2);
    txl_baseline_add(b2, 2.0);
    sweep(&baseline_api, b2, st, 1000);
    TxlBaseline *other = txl_baseline_new(kind, 8, 4, 0.9, NULL);
    g_assert_false(try_set(&baseline_api, other, d, n));
    txl_baseline_free(other);
    g_bytes_unref(st);
    txl_baseline_free(b1);
    txl_baseline_free(b2);
  }
}

STATE_API(sampler_api, txl_sampler_state)

TU_TEST("/state-bytes/sampler", test_sampler)
{
  TxlSamplerOptions so = TXL_SAMPLER_OPTIONS_DEFAULT;
  so.seed = 42;
  float lp[8];
  for (int i = 0; i < 8; i++)
    lp[i] = logf(1.0f / 8);
  TxlSampler *a = txl_sampler_new(&so, 8, NULL);
  so.seed = 7;
  TxlSampler *b = txl_sampler_new(&so, 8, NULL);
  for (int i = 0; i < 5; i++)
    txl_sampler_sample(a, lp);
  GBytes *st = state_of(&sampler_api, a);
  g_assert_true(try_set(&sampler_api, b, g_bytes_get_data(st, NULL), 8));
  for (int i = 0; i < 20; i++)
    g_assert_cmpint(txl_sampler_sample(a, lp), ==, txl_sampler_sample(b, lp));
  sweep(&sampler_api, b, st, 8);
  g_bytes_unref(st);
  txl_sampler_free(a);
  txl_sampler_free(b);
}

/* ---- sessions --------------------------------------------------------- */

static void
on_line(const TxlSessionLine *l, gpointer data)
{
  g_string_append_printf(data, "%" G_GINT64_FORMAT " %s %d %a %a\n", l->line,
                         l->key, l->tokens, l->nll, l->worst);
}

static void
on_end(const TxlSessionResult *r, gpointer data)
{
  g_string_append_printf(data, "end %s %d %a\n", r->key, r->reason, r->nll);
}

STATE_API(sessions_api, txl_sessions_state)

static void
push_lines(TxlSessions *s, int from, int n)
{
  for (int i = from; i < from + n; i++) {
    char *line = g_strdup_printf("%02d op%d k=s%d v%d", i % 60, i % 4,
                                 i * 7 % 5, i * 13 % 97);
    g_assert_cmpint(txl_sessions_push_line(s, line, -1, NULL), >, 0);
    g_free(line);
  }
}

TU_TEST("/state-bytes/sessions", test_sessions)
{
  char *path;
  TxlModel *m = small_model(12, &path);
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.key_regex = "k=(s[0-9]+)";
  o.key_group = 1;
  GString *a = g_string_new(NULL), *b = g_string_new(NULL);
  TxlSessions *s1 = txl_sessions_new(m, &o, on_line, on_end, a, NULL);
  TxlSessions *s2 = txl_sessions_new(m, &o, on_line, on_end, b, NULL);
  g_assert_nonnull(s1);
  push_lines(s1, 0, 17);
  push_lines(s2, 50, 2);
  GBytes *st = state_of(&sessions_api, s1);
  gsize n;
  const guint8 *d = g_bytes_get_data(st, &n);
  g_assert_true(try_set(&sessions_api, s2, d, n));
  g_assert_cmpuint(txl_sessions_count(s2), ==, txl_sessions_count(s1));
  g_string_truncate(a, 0);
  g_string_truncate(b, 0);
  push_lines(s1, 17, 23);
  push_lines(s2, 17, 23);
  g_assert_true(txl_sessions_finish(s1, NULL));
  g_assert_true(txl_sessions_finish(s2, NULL));
  g_assert_cmpstr(a->str, ==, b->str);
  g_assert_cmpuint(a->len, >, 0);
  /* refusals, on a TxlSessions holding sessions of its own */
  TxlSessions *s3 = txl_sessions_new(m, &o, NULL, NULL, NULL, NULL);
  push_lines(s3, 70, 4);
  sweep(&sessions_api, s3, st, 150);
  txl_sessions_free(s3);
  g_bytes_unref(st);
  txl_sessions_free(s1);
  txl_sessions_free(s2);
  g_string_free(a, TRUE);
  g_string_free(b, TRUE);
  drop_model(m, path);
}

/* ---- the codec -------------------------------------------------------- */

TU_TEST("/state-bytes/codec", test_codec)
{
  guint8 b[8];
  txl_le_put64(b, 0x0102030405060708ull);
  g_assert_cmpuint(b[0], ==, 8);
  g_assert_cmpuint(b[7], ==, 1);
  g_assert_cmphex(txl_le_get64(b), ==, 0x0102030405060708ull);
  g_assert_cmphex(txl_le_get32(b), ==, 0x05060708u);
  g_assert_cmphex(txl_le_get16(b), ==, 0x0708u);
  TxlReader r;
  txl_reader_init_data(&r, b, 6);
  g_assert_cmphex(txl_get_u32(&r), ==, 0x05060708u);
  g_assert_cmphex(txl_get_u32(&r), ==, 0); /* past the end: zero, not ok */
  g_assert_false(r.ok);
  g_assert_cmpuint(txl_reader_left(&r), ==, 0);
}


/* ---- a bare stream, a line, the learner --------------------------------- */

STATE_API(stream_api, txl_stream_state)
STATE_API(line_api, txl_line_acc_state)
STATE_API(learner_api, txl_learner_state)

static void
forward(TxlStream *st, int from, int n, float *lp)
{
  int32_t in[5], tg[5];
  for (int i = 0; i < n; i++) {
    in[i] = (from + i) * 37 % 300;
    tg[i] = (from + i + 1) * 37 % 300;
  }
  g_assert_true(txl_stream_forward(st, in, n, tg, lp, NULL));
}

TU_TEST("/state-bytes/stream", test_stream)
{
  char *path;
  TxlModel *m = small_model(12, &path);
  TxlStream *a = txl_stream_new(m, NULL, NULL), *b = txl_stream_new(m, NULL, NULL);
  float la[5], lb[5];
  for (int k = 0; k < 4; k++)
    forward(a, 5 * k, 5, la);
  forward(b, 90, 3, lb);
  GBytes *st = state_of(&stream_api, a);
  gsize n;
  const guint8 *d = g_bytes_get_data(st, &n);
  g_assert_true(try_set(&stream_api, b, d, n));
  forward(a, 20, 5, la);
  forward(b, 20, 5, lb);
  g_assert_cmpmem(la, sizeof la, lb, sizeof lb);
  sweep(&stream_api, b, st, 200);
  /* a scorer's bytes with tokens pending are not a stream's */
  TxlScorer *sc = txl_scorer_new(m, NULL, 5, collect, g_string_new(NULL), NULL);
  push_ids(sc, 0, 7);
  GBytes *ss = state_of(&scorer_api, sc);
  const guint8 *sd = g_bytes_get_data(ss, &n);
  g_assert_false(try_set(&stream_api, b, sd, n));
  g_bytes_unref(ss);
  g_bytes_unref(st);
  txl_stream_free(a);
  txl_stream_free(b);
  txl_scorer_free(sc);
  drop_model(m, path);
}

TU_TEST("/state-bytes/line", test_line)
{
  TxlLineAcc a, b;
  txl_line_acc_init(&a);
  txl_line_acc_init(&b);
  for (int i = 0; i < 60; i++)
    txl_line_acc_add(&a, 0.3 + (i % 7) * 0.4, 1 + i % 5);
  txl_line_acc_add(&b, 2.0, 3);
  GBytes *st = state_of(&line_api, &a);
  gsize n;
  const guint8 *d = g_bytes_get_data(st, &n);
  g_assert_true(try_set(&line_api, &b, d, n));
  for (int i = 0; i < 30; i++) {
    txl_line_acc_add(&a, 1.0 + (i % 3), 2);
    txl_line_acc_add(&b, 1.0 + (i % 3), 2);
  }
  g_assert_cmpfloat(txl_line_worst(&a.s), ==, txl_line_worst(&b.s));
  g_assert_cmpfloat(txl_line_bpb(&a.s), ==, txl_line_bpb(&b.s));
  sweep(&line_api, &b, st, 200);
  g_bytes_unref(st);
}

TU_TEST("/state-bytes/learner", test_learner)
{
  TxlConfig c = tu_train_config();
  TxlParams *p = txl_params_new(&c, NULL, 5, NULL);
  TxlModel *m = txl_model_from_params_owned(p);
  TxlLearnOptions o = tu_learn_options(10, 8, 12, 3, 3, 2, 5);
  TxlLearner *a = txl_learner_new(m, &o, NULL), *b = txl_learner_new(m, &o, NULL);
  for (int i = 0; i < 20; i++) { /* adapted weights and a round in flight */
    int32_t ids[4] = { 1, 2 + i % 5, 9, 0 };
    txl_model_unref(txl_learner_line(a, ids, 4, FALSE, NULL));
  }
  GBytes *st = state_of(&learner_api, a);
  sweep(&learner_api, b, st, 150);
  gsize n;
  const guint8 *d = g_bytes_get_data(st, &n);
  g_assert_true(try_set(&learner_api, b, d, n));
  GBytes *again = state_of(&learner_api, b);
  g_assert_true(g_bytes_equal(st, again));
  g_bytes_unref(again);
  g_bytes_unref(st);
  txl_learner_free(a);
  txl_learner_free(b);
  txl_model_unref(m);
}

TU_MAIN()

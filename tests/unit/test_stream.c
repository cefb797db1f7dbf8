/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Stream and scorer behaviour that must hold whatever the weights:
 * independence from how tokens arrive, errors that leave state untouched,
 * same_length independence from the segment length, reset, the full
 * distribution.  Parity with PyTorch is tests/reference/test_parity.py. */
#include "testutil.h"
#include "tu_test.h"

#define N_IDS 157

typedef struct {
  float lp[N_IDS];
  gint64 pos[N_IDS];
  int n;
} Collected;

static void
collect(gint64 pos, int32_t token, float logprob, gpointer data)
{
  Collected *c = data;
  g_assert_cmpint(c->n, <, N_IDS);
  c->pos[c->n] = pos;
  c->lp[c->n++] = logprob;
}

static void
random_ids(int32_t *ids, int n, int n_token, guint32 seed)
{
  GRand *r = g_rand_new_with_seed(seed);
  for (int i = 0; i < n; i++)
    ids[i] = g_rand_int_range(r, 0, n_token);
  g_rand_free(r);
}

/* Scores ids pushed in pieces of the given sizes (cycled; 0 = all at once). */
static void
score(TxlModel *m, const TxlStreamOptions *o, int seg, const int32_t *ids,
      int n, const int *pieces, int n_pieces, Collected *out)
{
  memset(out, 0, sizeof *out);
  g_autoptr(GError) err = NULL;
  TxlScorer *s = txl_scorer_new(m, o, seg, collect, out, &err);
  g_assert_no_error(err);
  int at = 0, k = 0;
  while (at < n) {
    int len = n_pieces ? pieces[k++ % n_pieces] : n;
    len = MIN(len, n - at);
    g_assert_true(txl_scorer_push(s, ids + at, len, &err));
    at += len;
  }
  g_assert_true(txl_scorer_finish(s, &err));
  txl_scorer_free(s);
  g_assert_cmpint(out->n, ==, n - 1);
}

/* The model of c, for the running test (see tu_test_model). */
static TxlModel *
load(const TxlConfig *c)
{
  return tu_test_model(tu_write_model(c, 42, NULL));
}

/* tu_small_config's model, loaded; c is its configuration. */
static TxlModel *
load_small(TxlConfig *c)
{
  tu_small_config(c);
  return load(c);
}

TU_TEST("/stream/split-independent", test_split_independent)
{
  TxlConfig c;
  TxlModel *m = load_small(&c);
  int32_t ids[N_IDS];
  random_ids(ids, N_IDS, c.n_token, 1);
  Collected whole, ones, mixed;
  static const int one[] = { 1 }, mix[] = { 3, 1, 7, 2, 11 };
  score(m, NULL, 7, ids, N_IDS, NULL, 0, &whole);
  score(m, NULL, 7, ids, N_IDS, one, 1, &ones);
  score(m, NULL, 7, ids, N_IDS, mix, 5, &mixed);
  for (int i = 0; i < N_IDS - 1; i++) {
    g_assert_cmpint(whole.pos[i], ==, i + 1);
    g_assert_true(isfinite(whole.lp[i]) && whole.lp[i] < 0.0f);
  }
  /* bit for bit: the same segments run whatever the pieces */
  g_assert_cmpmem(whole.lp, sizeof(float) * (N_IDS - 1), ones.lp,
                  sizeof(float) * (N_IDS - 1));
  g_assert_cmpmem(whole.lp, sizeof(float) * (N_IDS - 1), mixed.lp,
                  sizeof(float) * (N_IDS - 1));
}

TU_TEST("/stream/same-length-segment-independent", test_same_length_segment_independent)
{
  TxlConfig c;
  tu_small_config(&c);
  c.same_length = TRUE;
  c.clamp_len = 6;
  TxlModel *m = load(&c);
  int32_t ids[N_IDS];
  random_ids(ids, N_IDS, c.n_token, 2);
  Collected a, b;
  score(m, NULL, 3, ids, N_IDS, NULL, 0, &a);
  score(m, NULL, 11, ids, N_IDS, NULL, 0, &b);
  float worst = 0.0f;
  for (int i = 0; i < N_IDS - 1; i++)
    worst = MAX(worst, fabsf(a.lp[i] - b.lp[i]));
  g_assert_cmpfloat(worst, <=, 1e-5f);

  /* and without same_length the segment length does matter (the test
   * above could fail) */
  TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
  o.same_length = 0;
  score(m, &o, 3, ids, N_IDS, NULL, 0, &a);
  score(m, &o, 11, ids, N_IDS, NULL, 0, &b);
  worst = 0.0f;
  for (int i = 0; i < N_IDS - 1; i++)
    worst = MAX(worst, fabsf(a.lp[i] - b.lp[i]));
  g_assert_cmpfloat(worst, >, 1e-3f);
}

TU_TEST("/stream/bad-ids-leave-state", test_bad_ids_leave_state)
{
  TxlConfig c;
  TxlModel *m = load_small(&c);
  g_autoptr(GError) err = NULL;
  TxlStream *s = txl_stream_new(m, NULL, &err), *t = txl_stream_new(m, NULL, &err);
  g_assert_no_error(err);
  int32_t in[5], tg[5], bad[5];
  float lp1[5], lp2[5];
  random_ids(in, 5, c.n_token, 3);
  random_ids(tg, 5, c.n_token, 4);
  memcpy(bad, in, sizeof bad);
  bad[3] = c.n_token; /* one past the vocabulary */
  g_assert_true(txl_stream_forward(s, in, 5, tg, lp1, &err));
  g_assert_true(txl_stream_forward(t, in, 5, tg, lp2, &err));
  g_assert_false(txl_stream_forward(s, bad, 5, tg, lp1, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  g_assert_nonnull(strstr(err->message, "300"));
  g_clear_error(&err);
  bad[3] = -1;
  g_assert_false(txl_stream_forward(s, in, 5, bad, lp1, &err));
  g_clear_error(&err);
  g_assert_false(txl_stream_forward(s, in, 0, tg, lp1, &err));
  g_clear_error(&err);
  g_assert_false(txl_stream_forward(s, in, 6, tg, lp1, &err));
  g_clear_error(&err);
  g_assert_cmpint(txl_stream_mem_used(s), ==, 5);
  /* the refused calls changed nothing: both streams go on identically */
  g_assert_true(txl_stream_forward(s, tg, 5, in, lp1, &err));
  g_assert_true(txl_stream_forward(t, tg, 5, in, lp2, &err));
  g_assert_cmpmem(lp1, sizeof lp1, lp2, sizeof lp2);

  /* the scorer refuses a bad id before it joins a segment */
  Collected col = { 0 };
  TxlScorer *sc = txl_scorer_new(m, NULL, 4, collect, &col, &err);
  int32_t ids[3] = { 1, 2, 99999 };
  g_assert_false(txl_scorer_push(sc, ids, 3, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  g_clear_error(&err);
  txl_scorer_free(sc);
  txl_stream_free(s);
  txl_stream_free(t);
}

TU_TEST("/stream/reset-and-full-distribution", test_reset_and_full_distribution)
{
  /* a model of its own: the test drops its last reference itself */
  TxlConfig c;
  tu_small_config(&c);
  char *path = tu_write_model(&c, 42, NULL);
  TxlModel *m = tu_load(path);
  g_autoptr(GError) err = NULL;
  TxlStream *s = txl_stream_new(m, NULL, &err);
  float *full = g_new(float, c.n_token);
  g_assert_false(txl_stream_next_logprobs(s, full, &err));
  g_clear_error(&err);
  int32_t in[5], tg[5];
  float lp[5], lp2[5];
  random_ids(in, 5, c.n_token, 5);
  random_ids(tg, 5, c.n_token, 6);
  g_assert_true(txl_stream_forward(s, in, 5, tg, lp, &err));
  g_assert_true(txl_stream_forward(s, tg, 5, in, lp, &err));
  g_assert_true(txl_stream_next_logprobs(s, full, &err));
  double sum = 0.0;
  for (int i = 0; i < c.n_token; i++)
    sum += exp(full[i]);
  g_assert_cmpfloat(fabs(sum - 1.0), <, 1e-4);
  /* the last position's target log-prob is the same number */
  g_assert_cmpfloat(fabsf(full[in[4]] - lp[4]), <, 1e-5f);

  txl_stream_reset(s);
  g_assert_cmpint(txl_stream_mem_used(s), ==, 0);
  TxlStream *fresh = txl_stream_new(m, NULL, &err);
  g_assert_true(txl_stream_forward(s, in, 5, tg, lp, &err));
  g_assert_true(txl_stream_forward(fresh, in, 5, tg, lp2, &err));
  g_assert_cmpmem(lp, sizeof lp, lp2, sizeof lp2);
  g_free(full);
  txl_stream_free(fresh);
  /* a stream keeps its model alive */
  txl_model_unref(m);
  g_assert_true(txl_stream_forward(s, in, 5, tg, lp, &err));
  txl_stream_free(s);
  tu_remove(path);
  g_free(path);
}

TU_TEST("/stream/memory-matters", test_memory_matters)
{
  TxlConfig c;
  TxlModel *m = load_small(&c);
  g_autoptr(GError) err = NULL;
  int32_t a[5], b[5], tg[5];
  float with[5], without[5], nomem[5];
  random_ids(a, 5, c.n_token, 7);
  random_ids(b, 5, c.n_token, 8);
  random_ids(tg, 5, c.n_token, 9);
  TxlStream *s = txl_stream_new(m, NULL, &err);
  txl_stream_forward(s, a, 5, tg, with, &err);
  txl_stream_forward(s, b, 5, tg, with, &err);
  TxlStream *f = txl_stream_new(m, NULL, &err);
  txl_stream_forward(f, b, 5, tg, without, &err);
  float diff = 0.0f;
  for (int i = 0; i < 5; i++)
    diff = MAX(diff, fabsf(with[i] - without[i]));
  g_assert_cmpfloat(diff, >, 1e-3f); /* the memory of `a` is used */
  /* with mem_len 0 the previous segment is forgotten */
  TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
  o.mem_len = 0;
  TxlStream *z = txl_stream_new(m, &o, &err);
  txl_stream_forward(z, a, 5, tg, nomem, &err);
  txl_stream_forward(z, b, 5, tg, nomem, &err);
  g_assert_cmpint(txl_stream_mem_used(z), ==, 0);
  g_assert_cmpmem(nomem, sizeof nomem, without, sizeof without);
  /* same_length with no memory is refused, not silently wrong */
  o.same_length = 1;
  g_assert_null(txl_stream_new(m, &o, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  txl_stream_free(s);
  txl_stream_free(f);
  txl_stream_free(z);
}

/* Hidden-state memory re-projects what KV memory caches: same numbers. */
TU_TEST("/stream/memory-kinds-agree", test_memory_kinds_agree)
{
  for (int variant = 0; variant < 3; variant++) {
    TxlConfig c;
    tu_small_config(&c);
    c.pre_lnorm = variant == 1;
    c.same_length = variant == 2;
    c.clamp_len = variant == 2 ? 4 : 0;
    TxlModel *m = load(&c);
    int32_t ids[N_IDS];
    random_ids(ids, N_IDS, c.n_token, 10 + variant);
    Collected kv, hid;
    TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
    score(m, &o, 6, ids, N_IDS, NULL, 0, &kv);
    o.memory = TXL_MEMORY_HIDDEN;
    score(m, &o, 6, ids, N_IDS, NULL, 0, &hid);
    float worst = 0.0f;
    for (int i = 0; i < N_IDS - 1; i++)
      worst = MAX(worst, fabsf(kv.lp[i] - hid.lp[i]));
    g_assert_cmpfloat(worst, <=, 1e-5f);
    g_autoptr(GError) err = NULL;
    TxlStream *a = txl_stream_new(m, NULL, &err);
    TxlStream *b = txl_stream_new(m, &o, &err);
    /* d_model 32 vs 2 x 4 x 8 per position */
    g_assert_cmpuint(txl_stream_state_bytes(a), ==,
                     2 * txl_stream_state_bytes(b));
    txl_stream_free(a);
    txl_stream_free(b);
  }
}

TU_MAIN()

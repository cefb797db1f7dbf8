/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Scorer snapshots: a scorer saved at any point and loaded (with a freshly
 * loaded model, as another process would) continues bit for bit; a
 * truncated, bit-flipped or other-model snapshot is refused. */
#include "testutil.h"
#include "tu_test.h"

#define N_IDS 131

typedef struct {
  float lp[N_IDS];
  gboolean have[N_IDS];
} Scores;

static void
collect(gint64 pos, int32_t token, float logprob, gpointer data)
{
  Scores *s = data;
  g_assert_cmpint(pos, <, N_IDS);
  s->lp[pos] = logprob;
  s->have[pos] = TRUE;
}

static void
ids_of(int32_t *ids, guint32 seed, int n_token)
{
  GRand *r = g_rand_new_with_seed(seed);
  for (int i = 0; i < N_IDS; i++)
    ids[i] = g_rand_int_range(r, 0, n_token);
  g_rand_free(r);
}

static void
check_resume(const TxlConfig *c, TxlMemoryKind kind)
{
  g_autoptr(GError) err = NULL;
  g_autoptr(TuPath) path = tu_write_model(c, 5, NULL);
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *snap = g_build_filename(dir, "s.snap", NULL);
  int32_t ids[N_IDS];
  ids_of(ids, 9, c->n_token);
  static const int cuts[] = { 1, 2, 5, 6, 7, 13, 40, 77, 130 };
  for (gsize k = 0; k < G_N_ELEMENTS(cuts); k++) {
    int cut = cuts[k];
    TxlModel *m = txl_model_load(path, &err);
    TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
    o.memory = kind;
    Scores a = { 0 }, b = { 0 };
    TxlScorer *sa = txl_scorer_new(m, &o, 6, collect, &a, &err);
    g_assert_no_error(err);
    g_assert_true(txl_scorer_push(sa, ids, cut, &err));
    g_assert_true(txl_scorer_save(sa, snap, &err));
    g_assert_no_error(err);
    g_assert_true(txl_scorer_push(sa, ids + cut, N_IDS - cut, &err));
    g_assert_true(txl_scorer_finish(sa, &err));
    txl_scorer_free(sa);
    txl_model_unref(m);

    /* another model object, as in another process */
    TxlModel *m2 = txl_model_load(path, &err);
    TxlScorer *sb = txl_scorer_load(m2, snap, collect, &b, &err);
    g_assert_no_error(err);
    g_assert_cmpint(txl_scorer_tokens_seen(sb), ==, cut);
    g_assert_true(txl_scorer_push(sb, ids + cut, N_IDS - cut, &err));
    g_assert_true(txl_scorer_finish(sb, &err));
    int compared = 0;
    for (int i = 1; i < N_IDS; i++) {
      if (!b.have[i])
        continue;
      g_assert_true(a.have[i]);
      g_assert_cmpmem(&a.lp[i], 4, &b.lp[i], 4); /* bit for bit */
      compared++;
    }
    /* everything not reported before the snapshot is reported after it */
    g_assert_cmpint(compared, >=, N_IDS - 1 - cut);
    txl_scorer_free(sb);
    txl_model_unref(m2);
  }
  g_remove(snap);
}

TU_TEST("/snapshot/resume-kv", test_resume_kv)
{
  TxlConfig c;
  tu_small_config(&c);
  check_resume(&c, TXL_MEMORY_KV);
}

TU_TEST("/snapshot/resume-hidden-same-length", test_resume_hidden_same_length)
{
  TxlConfig c;
  tu_small_config(&c);
  c.same_length = TRUE;
  c.clamp_len = 5;
  c.pre_lnorm = TRUE;
  check_resume(&c, TXL_MEMORY_HIDDEN);
}

TU_TEST("/snapshot/refused", test_refused)
{
  g_autoptr(GError) err = NULL;
  TxlConfig c;
  tu_small_config(&c);
  g_autoptr(TuPath) path = tu_write_model(&c, 5, NULL);
  g_autoptr(TuPath) other = tu_write_model(&c, 6, NULL); /* same shapes, other weights */
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *snap = g_build_filename(dir, "s.snap", NULL);
  g_autofree char *cut = g_build_filename(dir, "cut.snap", NULL);
  TxlModel *m = txl_model_load(path, &err);
  Scores a = { 0 };
  TxlScorer *s = txl_scorer_new(m, NULL, 6, collect, &a, &err);
  int32_t ids[N_IDS];
  ids_of(ids, 3, c.n_token);
  g_assert_true(txl_scorer_push(s, ids, 50, &err));
  g_assert_true(txl_scorer_save(s, snap, &err));
  /* saving again replaces it atomically and leaves no temporary behind */
  g_assert_true(txl_scorer_save(s, snap, &err));
  GDir *d = g_dir_open(dir, 0, NULL);
  int files = 0;
  while (g_dir_read_name(d))
    files++;
  g_dir_close(d);
  g_assert_cmpint(files, ==, 2); /* model.gguf and s.snap */
  txl_scorer_free(s);

  g_autofree char *data = NULL;
  gsize len;
  g_assert_true(g_file_get_contents(snap, &data, &len, NULL));
  for (gsize n = 0; n < len; n += 7) {
    g_assert_true(g_file_set_contents(cut, data, n, NULL));
    g_assert_null(txl_scorer_load(m, cut, collect, &a, &err));
    g_assert_nonnull(err);
    g_clear_error(&err);
  }
  GRand *r = g_rand_new_with_seed(4);
  for (int i = 0; i < 200; i++) {
    g_autofree char *mut = g_memdup2(data, len);
    gsize at = g_rand_int_range(r, 0, (gint32)len);
    mut[at] ^= (char)(1u << g_rand_int_range(r, 0, 8));
    g_assert_true(g_file_set_contents(cut, mut, len, NULL));
    g_assert_null(txl_scorer_load(m, cut, collect, &a, &err));
    g_assert_nonnull(err);
    g_assert_true(err->domain == TXL_ERROR);
    g_clear_error(&err);
  }
  g_rand_free(r);
  TxlModel *mo = txl_model_load(other, &err);
  g_assert_null(txl_scorer_load(mo, snap, collect, &a, &err));
  g_assert_nonnull(strstr(err->message, "another model"));
  g_clear_error(&err);
  g_assert_null(txl_scorer_load(m, "/nonexistent/x.snap", collect, &a, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_IO);
  txl_model_unref(mo);
  txl_model_unref(m);
  g_remove(cut);
  g_remove(snap);
}

TU_MAIN()

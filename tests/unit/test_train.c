/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* TxlParams (layout, init, model files, inference view) and the training
 * state (agreement with the inference engine, memory, determinism). */
#include "params.h"
#include "testutil.h"
#include "train.h"
#include "tu_test.h"

/* ---- params ------------------------------------------------------------- */

/* p has the tensors named in `has` and none of those in `lacks` (both
 * NULL-terminated). */
static void
assert_tensors(const TxlParams *p, const char *const *has,
               const char *const *lacks)
{
  for (; *has; has++)
    if (!txl_params_find(p, *has))
      g_error("no tensor %s", *has);
  for (; *lacks; lacks++)
    if (txl_params_find(p, *lacks))
      g_error("a tensor %s", *lacks);
}

TU_TEST("/train/params/layout", test_layout)
{
  TxlConfig c = tu_train_config();
  g_autoptr(GError) err = NULL;
  TxlParams *p = txl_params_new(&c, NULL, 1, &err);
  g_assert_no_error(err);
  /* tied: one table, no out.0.weight, no r biases at the top (untie_r) */
  assert_tensors(p, (const char *[]){ "emb.0.weight", "blk.1.r_r_bias", NULL },
                 (const char *[]){ "out.0.weight", "r_w_bias", NULL });
  g_assert_true(p->w.out_w == p->w.emb);
  g_assert_true(p->g.out_w == p->g.emb);
  g_assert_null(p->w.emb_proj);
  g_assert_cmpint(p->n_tensors, ==, 2 + 2 * 13);
  /* tensors do not overlap and lie inside the buffer */
  gsize end = 0;
  for (int i = 0; i < p->n_tensors; i++) {
    const TxlParamTensor *t = &p->tensors[i];
    g_assert_cmpuint(t->offset, >=, end);
    g_assert_cmpuint(t->offset % 16, ==, 0);
    end = t->offset + t->size;
  }
  g_assert_cmpuint(end, <=, p->n);
  txl_params_free(p);

  c.d_embed = 12;
  c.tie_weight = FALSE;
  c.untie_r = FALSE;
  c.tie_projs[0] = TRUE;
  p = txl_params_new(&c, NULL, 1, &err);
  g_assert_no_error(err);
  assert_tensors(p, (const char *[]){ "out.0.weight", "r_w_bias", NULL },
                 (const char *[]){ "blk.0.r_w_bias", "out_proj.0", NULL });
  g_assert_true(p->w.out_proj == p->w.emb_proj);
  g_assert_true(p->w.layers[0].r_w_bias == p->w.layers[1].r_w_bias);
  txl_params_free(p);

  /* adaptive softmax is inference-only */
  c.n_cutoffs = 1;
  c.cutoffs[0] = 20;
  g_assert_null(txl_params_new(&c, NULL, 1, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_UNSUPPORTED);
}

static void
moments(const float *v, gsize n, double *mean, double *sd)
{
  double s = 0.0, q = 0.0;
  for (gsize i = 0; i < n; i++)
    s += v[i];
  *mean = s / n;
  for (gsize i = 0; i < n; i++)
    q += (v[i] - *mean) * (v[i] - *mean);
  *sd = sqrt(q / n);
}

TU_TEST("/train/params/init", test_init)
{
  TxlConfig c = tu_train_config();
  c.n_token = 2000;
  c.d_model = 64;
  c.d_embed = 32;
  c.d_inner = 128;
  g_autoptr(GError) err = NULL;
  TxlInitOptions io = { 0.05f, 0.01f };
  TxlParams *p = txl_params_new(&c, &io, 42, &err);
  g_assert_no_error(err);
  double m, sd;
  const TxlParamTensor *t = txl_params_find(p, "emb.0.weight");
  moments(p->data + t->offset, t->size, &m, &sd);
  g_assert_cmpfloat(fabs(m), <, 0.002);
  g_assert_cmpfloat(fabs(sd - 0.05), <, 0.002);
  t = txl_params_find(p, "emb_proj.0");
  moments(p->data + t->offset, t->size, &m, &sd);
  g_assert_cmpfloat(fabs(sd - 0.01), <, 0.001);
  t = txl_params_find(p, "blk.0.attn_norm.weight");
  moments(p->data + t->offset, t->size, &m, &sd);
  g_assert_cmpfloat(fabs(m - 1.0), <, 0.03);
  g_assert_cmpfloat(sd, >, 0.02);
  g_assert_cmpfloat(sd, <, 0.08);
  static const char *zero[] = { "blk.1.ffn_up.bias", "blk.0.attn_norm.bias",
                                "out.0.bias" };
  for (gsize i = 0; i < G_N_ELEMENTS(zero); i++) {
    t = txl_params_find(p, zero[i]);
    for (gsize j = 0; j < t->size; j++)
      g_assert_cmpfloat(p->data[t->offset + j], ==, 0.0f);
  }
  for (gsize i = 0; i < p->n; i++)
    g_assert_cmpfloat(p->grad[i], ==, 0.0f);

  /* the seed decides every bit */
  TxlParams *q = txl_params_new(&c, &io, 42, &err);
  g_assert_cmpmem(p->data, p->n * sizeof(float), q->data, q->n * sizeof(float));
  txl_params_free(q);
  q = txl_params_new(&c, &io, 43, &err);
  g_assert_true(memcmp(p->data, q->data, p->n * sizeof(float)) != 0);
  txl_params_free(q);
  txl_params_free(p);
}

/* Every tensor of a, by name, equals b's. */
static void
assert_same_params(const TxlParams *a, const TxlParams *b)
{
  g_assert_cmpint(a->n_tensors, ==, b->n_tensors);
  for (int i = 0; i < a->n_tensors; i++) {
    const TxlParamTensor *t = &a->tensors[i];
    const TxlParamTensor *u = txl_params_find(b, t->name);
    g_assert_nonnull(u);
    g_assert_cmpuint(t->size, ==, u->size);
    g_assert_cmpmem(a->data + t->offset, t->size * sizeof(float),
                    b->data + u->offset, u->size * sizeof(float));
  }
}

static void
score(TxlModel *m, const int32_t *ids, int n, int seg, float *lp)
{
  g_autoptr(GError) err = NULL;
  TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
  o.max_segment = seg;
  TxlStream *s = txl_stream_new(m, &o, &err);
  g_assert_no_error(err);
  for (int a = 0; a < n; a += seg) {
    g_assert_true(txl_stream_forward(s, ids + a, seg, ids + a + 1, lp + a,
                                     &err));
    g_assert_no_error(err);
  }
  txl_stream_free(s);
}

/* Parameters of c drawn from `seed` with larger scales than the defaults
 * (0.3), so that differences show. */
static TxlParams *
scaled_params(const TxlConfig *c, guint64 seed)
{
  g_autoptr(GError) err = NULL;
  TxlParams *p = txl_params_new(c, &(TxlInitOptions){ 0.3f, 0.3f }, seed, &err);
  g_assert_no_error(err);
  return p;
}

static void
file_case(gboolean tie, int d_embed, gboolean tie_proj)
{
  TxlConfig c = tu_train_config();
  c.tie_weight = tie;
  c.d_embed = d_embed;
  c.tie_projs[0] = tie_proj;
  g_autoptr(GError) err = NULL;
  TxlParams *p = scaled_params(&c, 9);
  char *path = tu_tmp_model_path();
  g_assert_true(txl_params_write_gguf(p, NULL, NULL, path, &err));
  g_assert_no_error(err);

  /* the file loads (tied tensors stored once, or the loader refuses it) */
  TxlModel *m = tu_load(path);
  g_assert_cmpint(txl_tokenizer_type(txl_model_tokenizer(m)), ==,
                  TXL_TOKENIZER_NONE);
  TxlParams *q = txl_params_load_gguf(path, &err);
  g_assert_no_error(err);
  assert_same_params(p, q);

  /* the in-memory view scores exactly as the file */
  enum { N = 20 };
  int32_t ids[N + 1];
  for (int i = 0; i <= N; i++)
    ids[i] = (i * 7 + 3) % c.n_token;
  float a[N], b[N];
  TxlModel *v = txl_model_from_params(p);
  g_assert_cmpstr(txl_model_id(v), ==, "in-memory");
  score(m, ids, N, 5, a);
  score(v, ids, N, 5, b);
  g_assert_cmpmem(a, sizeof a, b, sizeof b);
  /* after the weights change (and the view is told) the scores follow */
  for (gsize i = 0; i < p->n; i++)
    p->data[i] *= 0.9f;
  txl_model_weights_changed(v);
  score(v, ids, N, 5, b);
  g_assert_true(memcmp(a, b, sizeof a) != 0);
  txl_model_unref(v);

  txl_params_free(q);
  txl_model_unref(m);
  txl_params_free(p);
  tu_remove(path);
  g_free(path);
}

TU_TEST("/train/params/model-file", test_model_file)
{
  file_case(TRUE, 16, FALSE);
  file_case(FALSE, 16, FALSE);
  file_case(TRUE, 12, TRUE);
  file_case(FALSE, 12, FALSE);
}

/* ---- training forward == inference -------------------------------------- */

static void
agree_case(gboolean pre, gboolean same, int clamp)
{
  TxlConfig c = tu_train_config();
  c.pre_lnorm = pre;
  c.same_length = same;
  c.clamp_len = clamp;
  g_autoptr(GError) err = NULL;
  TxlParams *p = scaled_params(&c, 3);
  enum { B = 3, T = 4, SEGS = 4 };
  TxlTrainOptions o = TXL_TRAIN_OPTIONS_DEFAULT;
  o.batch = B;
  o.seg_len = T;
  TxlTrainState *s = txl_train_state_new(p, &o, &err);
  g_assert_no_error(err);
  int32_t seq[B][SEGS * T + 1];
  GRand *r = g_rand_new_with_seed(5);
  for (int b = 0; b < B; b++)
    for (int i = 0; i <= SEGS * T; i++)
      seq[b][i] = g_rand_int_range(r, 0, c.n_token);
  g_rand_free(r);

  /* the inference engine, stream by stream, hidden-state memory */
  TxlModel *m = txl_model_from_params(p);
  double want[SEGS] = { 0 };
  for (int b = 0; b < B; b++) {
    TxlStreamOptions so = TXL_STREAM_OPTIONS_DEFAULT;
    so.max_segment = T;
    so.memory = TXL_MEMORY_HIDDEN;
    TxlStream *st = txl_stream_new(m, &so, &err);
    g_assert_no_error(err);
    for (int k = 0; k < SEGS; k++) {
      float lp[T];
      g_assert_true(txl_stream_forward(st, seq[b] + k * T, T,
                                       seq[b] + k * T + 1, lp, &err));
      for (int t = 0; t < T; t++)
        want[k] -= lp[t] / (B * T);
    }
    txl_stream_free(st);
  }
  for (int k = 0; k < SEGS; k++) {
    int32_t in[B * T], tg[B * T];
    for (int b = 0; b < B; b++)
      for (int t = 0; t < T; t++) {
        in[b * T + t] = seq[b][k * T + t];
        tg[b * T + t] = seq[b][k * T + t + 1];
      }
    double loss = txl_train_forward(s, in, tg);
    g_assert_cmpfloat(fabs(loss - want[k]), <=, 1e-5 * MAX(1.0, want[k]));
    g_assert_cmpint(txl_train_state_mem_used(s), ==,
                    MIN(c.mem_len, (k + 1) * T));
  }
  txl_model_unref(m);
  txl_train_state_free(s);
  txl_params_free(p);
}

TU_TEST("/train/forward-agrees", test_forward_agrees)
{
  agree_case(FALSE, FALSE, 0);
  agree_case(TRUE, FALSE, 0);
  agree_case(FALSE, TRUE, 3);
  agree_case(TRUE, TRUE, 2);
}

/* ---- state: reset, rewind, dropout determinism -------------------------- */

/* Options a training state of p is refused with, as invalid. */
static void
refused(TxlParams *p, const TxlTrainOptions *o)
{
  g_autoptr(GError) err = NULL;
  g_assert_null(txl_train_state_new(p, o, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
}

TU_TEST("/train/state", test_state)
{
  TxlConfig c = tu_train_config();
  g_autoptr(GError) err = NULL;
  TxlParams *p = scaled_params(&c, 3);
  enum { B = 2, T = 5, N = B * T };
  TxlTrainOptions o = TXL_TRAIN_OPTIONS_DEFAULT;
  o.batch = B;
  o.seg_len = T;
  o.dropout = 0.1f;
  o.dropatt = 0.1f;
  o.seed = 11;
  TxlTrainState *s = txl_train_state_new(p, &o, &err);
  g_assert_no_error(err);
  g_assert_cmpuint(txl_train_state_bytes(s), >, 0);
  int32_t ids[3 * N];
  for (int i = 0; i < 3 * N; i++)
    ids[i] = (i * 13 + 1) % c.n_token;

  double l1 = txl_train_step(s, ids, ids + N);
  double l2 = txl_train_step(s, ids + N, ids + 2 * N);
  float *g = g_memdup2(p->grad, p->n * sizeof(float));
  /* a second state with the same seed draws the same masks */
  TxlTrainState *s2 = txl_train_state_new(p, &o, &err);
  txl_params_zero_grad(p);
  g_assert_cmpfloat(txl_train_step(s2, ids, ids + N), ==, l1);
  g_assert_cmpfloat(txl_train_step(s2, ids + N, ids + 2 * N), ==, l2);
  g_assert_cmpmem(g, p->n * sizeof(float), p->grad, p->n * sizeof(float));
  /* rewind: the same step again */
  txl_train_rewind(s2);
  g_assert_cmpfloat(txl_train_forward(s2, ids + N, ids + 2 * N), ==, l2);
  /* the next step draws new masks: same data, different loss */
  txl_train_state_reset(s2);
  double l3 = txl_train_forward(s2, ids, ids + N);
  g_assert_cmpfloat(l3, !=, l1);
  txl_train_state_free(s2);

  /* reset: the next segment sees no memory.  Without dropout, a segment
   * after reset scores as in a fresh state. */
  o.dropout = o.dropatt = 0.0f;
  TxlTrainState *a = txl_train_state_new(p, &o, &err);
  TxlTrainState *b = txl_train_state_new(p, &o, &err);
  txl_train_forward(a, ids, ids + N);
  double with_mem = txl_train_forward(a, ids + N, ids + 2 * N);
  txl_train_state_reset(a);
  g_assert_cmpint(txl_train_state_mem_used(a), ==, 0);
  double fresh = txl_train_forward(b, ids + N, ids + 2 * N);
  g_assert_cmpfloat(txl_train_forward(a, ids + N, ids + 2 * N), ==, fresh);
  g_assert_cmpfloat(with_mem, !=, fresh);
  txl_train_state_free(a);
  txl_train_state_free(b);

  /* bad options */
  o.dropout = 1.0f;
  refused(p, &o);
  o.dropout = 0.0f;
  o.mem_len = 0;
  o.same_length = 1;
  refused(p, &o);

  g_free(g);
  txl_train_state_free(s);
  txl_params_free(p);
}

TU_MAIN()

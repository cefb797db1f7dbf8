/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Gradient checks of the training kernels and of the whole model against
 * central finite differences (see docs/training.md for the method).
 *
 * Kernels: the scalar L = sum(G * y) with fixed random G, summed in double,
 * is differentiated with respect to every input element (tiny shapes);
 * eps = 1e-2 on inputs of order 1 keeps the truncation error near 1e-4 and
 * the float32 rounding noise of L below 1e-5, so the relative error
 * ||fd - g|| / ||fd|| must be <= 2e-3.
 *
 * Whole model: a two-layer model, two segments per stream so the second
 * one attends to memory, dropout and attention dropout on (the masks are a
 * function of the step, so every re-run draws the same ones).  For every
 * tensor: a directional derivative along a random direction of the whole
 * tensor, and a few random elements.  The model is float32, so the bound
 * on one element is 1e-2 relative plus 1e-2 of the tensor's RMS gradient:
 * finite differences of a float32 loss cannot resolve an element whose
 * gradient is far below its neighbours'. */
#include "config.h"
#include "ops.h"
#include "params.h"
#include "train.h"

#include <math.h>
#include <stdio.h>
#include <string.h>
#include "tu_config.h"
#include "tu_test.h"

static double g_worst_kernel = 0.0;

/* ---- helpers ------------------------------------------------------------ */

static void
fill(GRand *r, float *x, gsize n, double lo, double hi)
{
  for (gsize i = 0; i < n; i++)
    x[i] = (float)g_rand_double_range(r, lo, hi);
}

static double
dot(const float *g, const float *y, gsize n)
{
  double s = 0.0;
  for (gsize i = 0; i < n; i++)
    s += (double)g[i] * y[i];
  return s;
}

typedef double (*LossFunc)(gpointer ctx);

/* Relative error of the analytic gradient `an` of f with respect to the n
 * floats at x, over every element. */
static double
fd_check(const char *what, float *x, gsize n, const float *an, LossFunc f,
         gpointer ctx, float eps)
{
  double num = 0.0, den = 0.0;
  for (gsize i = 0; i < n; i++) {
    float v = x[i];
    float hi = v + eps, lo = v - eps;
    x[i] = hi;
    double fp = f(ctx);
    x[i] = lo;
    double fm = f(ctx);
    x[i] = v;
    double fd = (fp - fm) / ((double)hi - lo);
    num += (fd - an[i]) * (fd - an[i]);
    den += fd * fd;
  }
  double rel = sqrt(num / MAX(den, 1e-30));
  g_test_message("%-28s rel err %.2e (n = %zu, |g| = %.3g)", what, rel, n,
                 sqrt(den));
  if (g_test_verbose())
    printf("# %-28s rel err %.2e\n", what, rel);
  g_worst_kernel = MAX(g_worst_kernel, rel);
  g_assert_cmpfloat(rel, <=, 2e-3);
  return rel;
}

/* ---- linear ------------------------------------------------------------- */

typedef struct {
  int n, in, out;
  float *x, *W, *b, *y, *G;
} LinCtx;

static double
lin_loss(gpointer p)
{
  LinCtx *c = p;
  const TxlLinear L = { c->W, NULL, c->b, c->in, c->out };
  txl_linear(&L, c->x, c->n, c->y, FALSE, FALSE);
  return dot(c->G, c->y, (gsize)c->n * c->out);
}

TU_TEST("/grad/linear", test_linear)
{
  GRand *r = g_rand_new_with_seed(1);
  LinCtx c = { .n = 5, .in = 7, .out = 4 };
  c.x = g_new(float, 35);
  c.W = g_new(float, 28);
  c.b = g_new(float, 4);
  c.y = g_new(float, 20);
  c.G = g_new(float, 20);
  fill(r, c.x, 35, -1, 1);
  fill(r, c.W, 28, -1, 1);
  fill(r, c.b, 4, -1, 1);
  fill(r, c.G, 20, -1, 1);
  float dx[35], dW[28] = { 0 }, db[4] = { 0 };
  /* dx accumulates onto what is there with beta 1 */
  for (int i = 0; i < 35; i++)
    dx[i] = 0.5f;
  txl_linear_backward(c.G, c.x, 5, 7, c.W, 4, dx, 1.0f, dW, db);
  for (int i = 0; i < 35; i++)
    dx[i] -= 0.5f;
  fd_check("linear dx", c.x, 35, dx, lin_loss, &c, 1e-2f);
  fd_check("linear dW", c.W, 28, dW, lin_loss, &c, 1e-2f);
  fd_check("linear db", c.b, 4, db, lin_loss, &c, 1e-2f);
  g_free(c.x);
  g_free(c.W);
  g_free(c.b);
  g_free(c.y);
  g_free(c.G);
  g_rand_free(r);
}

/* ---- layer norm --------------------------------------------------------- */

typedef struct {
  int n, d;
  float *x, *w, *b, *y, *G, *mu, *rs;
} LnCtx;

static double
ln_loss(gpointer p)
{
  LnCtx *c = p;
  txl_layer_norm(c->x, c->n, c->d, c->w, c->b, 1e-5f, c->y, c->mu, c->rs);
  return dot(c->G, c->y, (gsize)c->n * c->d);
}

TU_TEST("/grad/layer-norm", test_layer_norm)
{
  GRand *r = g_rand_new_with_seed(2);
  enum { N = 4, D = 9 };
  float x[N * D], w[D], b[D], y[N * D], G[N * D], mu[N], rs[N];
  LnCtx c = { N, D, x, w, b, y, G, mu, rs };
  fill(r, x, N * D, -2, 2);
  fill(r, w, D, 0.5, 1.5);
  fill(r, b, D, -1, 1);
  fill(r, G, N * D, -1, 1);
  ln_loss(&c);
  float dx[N * D], dw[D] = { 0 }, db[D] = { 0 };
  txl_ln_backward(G, x, mu, rs, N, D, w, dx, 0.0f, dw, db);
  fd_check("layer norm dx", x, N * D, dx, ln_loss, &c, 1e-2f);
  fd_check("layer norm dw", w, D, dw, ln_loss, &c, 1e-2f);
  fd_check("layer norm db", b, D, db, ln_loss, &c, 1e-2f);

  /* in place (dx aliasing dy) gives the same */
  float g2[N * D], dw2[D] = { 0 }, db2[D] = { 0 };
  memcpy(g2, G, sizeof g2);
  txl_ln_backward(g2, x, mu, rs, N, D, w, g2, 0.0f, dw2, db2);
  for (int i = 0; i < N * D; i++)
    g_assert_cmpfloat(fabsf(g2[i] - dx[i]), <=, 1e-6f);
  g_rand_free(r);
}

/* ---- cross-entropy ------------------------------------------------------ */

typedef struct {
  int n, V;
  float *z, *lse;
  int32_t *t;
} CeCtx;

static double
ce_loss(gpointer p)
{
  CeCtx *c = p;
  double nll[16];
  g_assert_cmpint(c->n, <=, 16);
  return txl_ce_forward(c->z, c->n, c->V, c->t, c->lse, nll);
}

TU_TEST("/grad/cross-entropy", test_cross_entropy)
{
  GRand *r = g_rand_new_with_seed(3);
  enum { N = 3, V = 11 };
  float z[N * V], lse[N], g[N * V];
  int32_t t[N] = { 0, 7, 10 };
  CeCtx c = { N, V, z, lse, t };
  fill(r, z, N * V, -3, 3);
  double loss = ce_loss(&c);
  /* against a direct evaluation */
  double want = 0.0;
  for (int i = 0; i < N; i++) {
    double s = 0.0;
    for (int j = 0; j < V; j++)
      s += exp(z[i * V + j]);
    want += log(s) - z[i * V + t[i]];
  }
  g_assert_cmpfloat(fabs(loss - want / N), <=, 1e-6);
  memcpy(g, z, sizeof g);
  txl_ce_backward(g, N, V, t, lse, 1.0f / N);
  fd_check("cross-entropy dlogits", z, N * V, g, ce_loss, &c, 1e-2f);
  /* a target of -1 is context: its row adds nothing, nor any gradient */
  t[1] = -1;
  double row1 = 0.0;
  for (int j = 0; j < V; j++)
    row1 += exp(z[V + j]);
  row1 = log(row1) - z[V + 7];
  g_assert_cmpfloat(fabs(ce_loss(&c) - (want - row1) / N), <=, 1e-6);
  memcpy(g, z, sizeof g);
  txl_ce_backward(g, N, V, t, lse, 1.0f / N);
  for (int j = 0; j < V; j++)
    g_assert_cmpfloat(g[V + j], ==, 0.0f);
  fd_check("cross-entropy dlogits, a row masked", z, N * V, g, ce_loss, &c,
           1e-2f);
  g_rand_free(r);
}

/* ---- dropout ------------------------------------------------------------ */

TU_TEST("/grad/dropout", test_dropout)
{
  enum { N = 20000 };
  float *a = g_new(float, N), *b = g_new(float, N);
  for (int i = 0; i < N; i++)
    a[i] = b[i] = 1.0f;
  guint64 k = txl_dropout_key(7, 3, 2, 1);
  g_assert_true(k != txl_dropout_key(7, 4, 2, 1));
  g_assert_true(k != txl_dropout_key(8, 3, 2, 1));
  g_assert_true(k != txl_dropout_key(7, 3, 3, 1));
  g_assert_true(k != txl_dropout_key(7, 3, 2, 2));
  txl_dropout(a, N, 0.25f, k, 0);
  /* a piece at an offset draws the same mask elements */
  txl_dropout(b, 1000, 0.25f, k, 0);
  txl_dropout(b + 1000, N - 1000, 0.25f, k, 1000);
  g_assert_cmpmem(a, sizeof(float) * N, b, sizeof(float) * N);
  int kept = 0;
  double sum = 0.0;
  for (int i = 0; i < N; i++) {
    g_assert_true(a[i] == 0.0f || fabsf(a[i] - 1.0f / 0.75f) < 1e-6f);
    kept += a[i] != 0.0f;
    sum += a[i];
  }
  /* 20000 Bernoulli(0.75): sd of the kept fraction is 0.003 */
  g_assert_cmpfloat(fabs(kept / (double)N - 0.75), <, 0.015);
  g_assert_cmpfloat(fabs(sum / N - 1.0), <, 0.02);
  /* p = 0 leaves everything */
  txl_dropout(b, N, 0.0f, k, 0);
  g_assert_cmpmem(a, sizeof(float) * N, b, sizeof(float) * N);
  g_free(a);
  g_free(b);
}

/* The mask as lib/engine/layer_ops.c documents it, one element at a time:
 * keep when the top 24 bits of splitmix64's finaliser of key + i * golden
 * are >= p * 2^24.  The engine's vector path must give these bits. */
static guint64
ref_mix64(guint64 z)
{
  z = (z ^ (z >> 30)) * G_GUINT64_CONSTANT(0xbf58476d1ce4e5b9);
  z = (z ^ (z >> 27)) * G_GUINT64_CONSTANT(0x94d049bb133111eb);
  return z ^ (z >> 31);
}

TU_TEST("/grad/dropout-bits", test_dropout_bits)
{
  enum { N = 4099 };
  GRand *r = g_rand_new_with_seed(11);
  float *x = g_new(float, N), *want = g_new(float, N), *got = g_new(float, N);
  const float ps[] = { 1e-9f, 0.1f, 0.25f, 0.5f, 0.9f, 1.0f };
  for (gsize t = 0; t < G_N_ELEMENTS(ps); t++) {
    for (guint64 first = 0; first < 11; first += 5) {
      guint64 key = txl_dropout_key(t, first, 1, 2);
      for (int i = 0; i < N; i++)
        x[i] = (float)g_rand_double_range(r, -3.0, 3.0);
      x[3] = NAN;
      x[17] = INFINITY;
      x[40] = -0.0f;
      guint32 thresh = (guint32)(ps[t] * 16777216.0f);
      float scale = 1.0f / (1.0f - ps[t]);
      for (gsize n = 1; n <= N; n += n < 40 ? 1 : 1013) {
        for (gsize i = 0; i < n; i++) {
          guint64 h = ref_mix64(key + (first + i) *
                                          G_GUINT64_CONSTANT(0x9e3779b97f4a7c15));
          want[i] = (guint32)(h >> 40) >= thresh ? x[i] * scale : 0.0f;
        }
        memcpy(got, x, sizeof(float) * n);
        txl_dropout(got, n, ps[t], key, first);
        g_assert_cmpmem(got, sizeof(float) * n, want, sizeof(float) * n);
      }
    }
  }
  g_free(x);
  g_free(want);
  g_free(got);
  g_rand_free(r);
}

/* ---- attention ---------------------------------------------------------- */

typedef struct {
  TxlTrainAttn a;
  float *q, *kv, *rk, *wb, *rb, *prob, *out, *G, *scratch;
  int slots;
} AttCtx;

static double
att_loss(gpointer p)
{
  AttCtx *c = p;
  txl_train_attn_forward(&c->a, c->prob, c->out, c->scratch, c->slots);
  const TxlTrainAttn *a = &c->a;
  return dot(c->G, c->out, (gsize)a->B * a->T * a->n_head * a->d_head);
}

static void
attention_case(int B, int T, int mlen, int H, int dh, int same, int mem_len,
               float dropatt, guint32 seed)
{
  GRand *r = g_rand_new_with_seed(seed);
  const int K = mlen + T, HD = H * dh;
  AttCtx c = { 0 };
  c.a = (TxlTrainAttn){ .B = B, .T = T, .mlen = mlen, .n_head = H,
                        .d_head = dh, .same_length = same, .mem_len = mem_len,
                        .dropatt = dropatt, .key = txl_dropout_key(1, 2, 3, 4) };
  c.q = g_new(float, B * T * HD);
  c.kv = g_new(float, B * K * 2 * HD);
  c.rk = g_new(float, K * HD);
  c.wb = g_new(float, HD);
  c.rb = g_new(float, HD);
  c.prob = g_new(float, B * H * T * K);
  c.out = g_new(float, B * T * HD);
  c.G = g_new(float, B * T * HD);
  c.slots = 2;
  c.scratch = g_new(float, txl_train_attn_scratch_floats(T, K, H, dh,
                                                        c.slots));
  fill(r, c.q, B * T * HD, -1, 1);
  fill(r, c.kv, B * K * 2 * HD, -1, 1);
  fill(r, c.rk, K * HD, -1, 1);
  fill(r, c.wb, HD, -0.5, 0.5);
  fill(r, c.rb, HD, -0.5, 0.5);
  fill(r, c.G, B * T * HD, -1, 1);
  c.a.q = c.q;
  c.a.kv = c.kv;
  c.a.rk = c.rk;
  c.a.r_w_bias = c.wb;
  c.a.r_r_bias = c.rb;
  att_loss(&c);

  /* every probability row sums to 1 over its visible keys, 0 elsewhere */
  for (int b = 0; b < B; b++)
    for (int n = 0; n < H; n++)
      for (int i = 0; i < T; i++) {
        const float *p = c.prob + (((gsize)b * H + n) * T + i) * K;
        int lo = txl_attn_first_key(i, T, mlen, K, mem_len, same);
        double s = 0.0;
        for (int j = 0; j < K; j++) {
          if (j < lo || j > mlen + i)
            g_assert_cmpfloat(p[j], ==, 0.0f);
          s += p[j];
        }
        g_assert_cmpfloat(fabs(s - 1.0), <=, 1e-5);
      }

  float *dq = g_new(float, B * T * HD), *dkv = g_new(float, B * K * 2 * HD);
  float *drk = g_new0(float, K * HD);
  float *dwb = g_new0(float, HD), *drb = g_new0(float, HD);
  txl_train_attn_backward(&c.a, c.prob, c.G, dq, dkv, drk, dwb, drb,
                          c.scratch, c.slots);
  char name[64];
  const char *tag = same ? "same_length" : dropatt > 0 ? "dropatt" : "causal";
#define CHECK(what, x, n, g)                                                   \
  do {                                                                         \
    g_snprintf(name, sizeof name, "attn %s m%d %s", tag, mlen, what);          \
    fd_check(name, x, n, g, att_loss, &c, 1e-2f);                              \
  } while (0)
  CHECK("dq", c.q, B * T * HD, dq);
  CHECK("dkv", c.kv, B * K * 2 * HD, dkv);
  CHECK("drk", c.rk, K * HD, drk);
  CHECK("dr_w_bias", c.wb, HD, dwb);
  CHECK("dr_r_bias", c.rb, HD, drb);
#undef CHECK
  g_free(dq);
  g_free(dkv);
  g_free(drk);
  g_free(dwb);
  g_free(drb);
  g_free(c.q);
  g_free(c.kv);
  g_free(c.rk);
  g_free(c.wb);
  g_free(c.rb);
  g_free(c.prob);
  g_free(c.out);
  g_free(c.G);
  g_free(c.scratch);
  g_rand_free(r);
}

TU_TEST("/grad/attention", test_attention)
{
  attention_case(2, 3, 0, 2, 3, FALSE, 4, 0.0f, 10); /* no memory */
  attention_case(2, 3, 4, 2, 3, FALSE, 4, 0.0f, 11); /* memory */
  attention_case(1, 4, 3, 3, 2, TRUE, 5, 0.0f, 12);  /* same_length */
  attention_case(2, 4, 5, 3, 2, TRUE, 5, 0.0f, 14);  /* same_length, full */
  attention_case(2, 3, 2, 2, 3, FALSE, 4, 0.3f, 13); /* attention dropout */
}

/* ---- whole model -------------------------------------------------------- */

/* The configuration's switches a case turns on. */
enum {
  PRE_LN = 1 << 0,      /* pre_lnorm */
  UNTIE_R = 1 << 1,     /* untie_r */
  TIE_WEIGHT = 1 << 2,  /* tie_weight */
  SAME_LENGTH = 1 << 3, /* same_length */
  TIE_PROJ = 1 << 4,    /* tie_projs[0] */
};

typedef struct {
  const char *name;
  guint on; /* the switches on, the others off */
  int d_embed, mem_len, clamp_len;
  float dropout, dropatt;
} ModelCase;

static void
tiny_config(TxlConfig *c, const ModelCase *mc)
{
  *c = tu_plain_config((TuDims){ .n_token = 23, .d_model = 8, .n_head = 2,
                                 .d_head = 3, .d_inner = 12, .n_layer = 2,
                                 .mem_len = mc->mem_len, .tgt_len = 4 });
  /* the case's own choices, over the plain ones */
  c->d_embed = mc->d_embed;
  c->clamp_len = mc->clamp_len;
  c->same_length = (mc->on & SAME_LENGTH) != 0;
  c->pre_lnorm = (mc->on & PRE_LN) != 0;
  c->untie_r = (mc->on & UNTIE_R) != 0;
  c->tie_weight = (mc->on & TIE_WEIGHT) != 0;
  c->tie_projs[0] = (mc->on & TIE_PROJ) != 0;
}

/* Weights of order 1 / sqrt(fan-in) (much larger than a fresh init), and
 * non-zero biases, so every path carries gradient. */
static void
randomize(TxlParams *p, guint32 seed)
{
  GRand *r = g_rand_new_with_seed(seed);
  for (int i = 0; i < p->n_tensors; i++) {
    const TxlParamTensor *t = &p->tensors[i];
    float *v = p->data + t->offset;
    gboolean norm_w = g_str_has_suffix(t->name, "norm.weight");
    double s = t->n_dims == 2 ? 1.0 / sqrt((double)t->cols) : 0.3;
    for (gsize j = 0; j < t->size; j++)
      v[j] = (float)((norm_w ? 1.0 : 0.0) + s * g_rand_double_range(r, -1.7, 1.7));
  }
  g_rand_free(r);
}

typedef struct {
  TxlTrainState *s;
  const int32_t *in, *tgt;
} ModelCtx;

static double
model_loss(gpointer p)
{
  ModelCtx *c = p;
  txl_train_rewind(c->s);
  return txl_train_forward(c->s, c->in, c->tgt);
}

/* Central difference of the loss along u at x (size floats), with eps =
 * 1e-2, 1e-3, 1e-4 in turn: the first pair (10 eps, eps) that agrees
 * within tol gives the value at 10 eps.  Where none does, a ReLU changes sides within
 * eps (the loss has a kink there) and the point is skipped: FALSE. */
static double
central(ModelCtx *c, float *x, const float *x0, const float *u, gsize size,
        float eps)
{
  for (gsize j = 0; j < size; j++)
    x[j] = x0[j] + eps * u[j];
  double fp = model_loss(c);
  for (gsize j = 0; j < size; j++)
    x[j] = x0[j] - eps * u[j];
  double fm = model_loss(c);
  memcpy(x, x0, sizeof(float) * size);
  return (fp - fm) / (2.0 * eps);
}

static gboolean
smooth_fd(ModelCtx *c, float *x, const float *u, gsize size, double tol,
          double *fd)
{
  float *x0 = g_memdup2(x, sizeof(float) * size);
  double prev = central(c, x, x0, u, size, 1e-2f);
  gboolean ok = FALSE;
  for (float eps = 1e-3f; eps >= 1e-4f && !ok; eps *= 0.1f) {
    double cur = central(c, x, x0, u, size, eps);
    if (g_test_verbose())
      printf("#   eps %.0e: %.6e, at 10 eps %.6e\n", eps, cur, prev);
    ok = fabs(cur - prev) <= tol;
    /* agreeing, the larger eps is the better estimate: float32 noise in the
     * loss shrinks with 1/eps faster than the truncation error grows */
    *fd = ok ? prev : cur;
    prev = cur;
  }
  g_free(x0);
  return ok;
}

static void
model_case(gconstpointer data)
{
  const ModelCase *mc = data;
  TxlConfig cfg;
  tiny_config(&cfg, mc);
  g_autoptr(GError) err = NULL;
  TxlParams *p = txl_params_new(&cfg, NULL, 5, &err);
  g_assert_no_error(err);
  randomize(p, 77);
  TxlTrainOptions o = TXL_TRAIN_OPTIONS_DEFAULT;
  o.batch = 2;
  o.seg_len = 4;
  o.dropout = mc->dropout;
  o.dropatt = mc->dropatt;
  o.seed = 99;
  TxlTrainState *s = txl_train_state_new(p, &o, &err);
  g_assert_no_error(err);

  enum { N = 8 };
  int32_t ids[3 * N];
  GRand *r = g_rand_new_with_seed(4);
  for (int i = 0; i < 3 * N; i++)
    ids[i] = g_rand_int_range(r, 0, cfg.n_token);
  /* segment 1 fills (part of) the memory; segment 2 is differentiated */
  txl_train_forward(s, ids, ids + N);
  g_assert_cmpint(txl_train_state_mem_used(s), ==, MIN(cfg.mem_len, 4));
  txl_params_zero_grad(p);
  ModelCtx c = { s, ids + N, ids + 2 * N };
  double loss = txl_train_step(s, c.in, c.tgt);
  g_assert_true(isfinite(loss));
  /* the same forward again gives the same bits (same masks, same memory) */
  g_assert_cmpfloat(model_loss(&c), ==, loss);

  float *grad = g_memdup2(p->grad, sizeof(float) * p->n);
  double worst_dir = 0.0, worst_el = 0.0;
  int kinks = 0;
  for (int ti = 0; ti < p->n_tensors; ti++) {
    const TxlParamTensor *t = &p->tensors[ti];
    float *x = p->data + t->offset;
    const float *g = grad + t->offset;
    double rms = 0.0;
    for (gsize j = 0; j < t->size; j++)
      rms += (double)g[j] * g[j];
    rms = sqrt(rms / t->size);

    /* directional: along u, a random unit vector over the whole tensor */
    float *u = g_new(float, t->size);
    double un = 0.0, gu = 0.0;
    for (gsize j = 0; j < t->size; j++) {
      u[j] = (float)g_rand_double_range(r, -1, 1);
      un += (double)u[j] * u[j];
    }
    for (gsize j = 0; j < t->size; j++) {
      u[j] = (float)(u[j] / sqrt(un));
      gu += (double)g[j] * u[j];
    }
    double fd;
    if (!smooth_fd(&c, x, u, t->size, 1e-2 * (fabs(gu) + rms), &fd)) {
      kinks++;
    } else {
      /* as for elements: |g.u| ~ rms, and the float32 noise floor of the
       * difference scales with the tensor's gradient, not with g.u */
      double rel = fabs(fd - gu) / (fabs(gu) + rms + 1e-9);
      worst_dir = MAX(worst_dir, rel);
      if (rel > 1e-2 || g_test_verbose())
        printf("# %s %-24s dir fd %.6e an %.6e rel %.2e\n", mc->name,
               t->name, fd, gu, rel);
      g_assert_cmpfloat(rel, <=, 1e-2);
    }

    /* a few single elements */
    memset(u, 0, sizeof(float) * t->size);
    for (int k = 0; k < 3; k++) {
      gsize j = (gsize)g_rand_int_range(r, 0, (gint32)t->size);
      double bound = 1e-2 * fabs(g[j]) + 1e-2 * rms + 1e-6;
      u[j] = 1.0f;
      gboolean ok = smooth_fd(&c, x, u, t->size, bound, &fd);
      u[j] = 0.0f;
      if (!ok) {
        kinks++;
        continue;
      }
      double err_el = fabs(fd - g[j]);
      worst_el = MAX(worst_el, err_el / (fabs(g[j]) + rms + 1e-6));
      if (err_el > bound || g_test_verbose())
        printf("# %s %-24s [%zu] fd %.6e an %.6e\n", mc->name, t->name, j,
               fd, g[j]);
      g_assert_cmpfloat(err_el, <=, bound);
    }
    g_free(u);
  }
  /* a kink now and then is expected; many would mean the check is void */
  g_assert_cmpint(kinks, <=, p->n_tensors / 4);
  g_test_message("%s: directional rel err %.2e, element err %.2e", mc->name,
                 worst_dir, worst_el);
  printf("# model %-22s directional rel err <= %.2e, element err/(|g|+rms) "
         "<= %.2e, %d kinks skipped\n", mc->name, worst_dir, worst_el, kinks);

  /* backward accumulates: a second forward/backward doubles the gradient */
  txl_train_rewind(s);
  txl_train_step(s, c.in, c.tgt);
  for (gsize i = 0; i < p->n; i++)
    g_assert_cmpfloat(fabsf(p->grad[i] - 2 * grad[i]), <=,
                      1e-5f * (1 + fabsf(grad[i])));
  /* targets of -1 are context: the losses and gradients of a mask and of
   * its complement add up to the whole batch's, and a batch all context
   * has none */
  int32_t half[2][N], none[N];
  for (int i = 0; i < N; i++) {
    half[0][i] = i % 3 ? c.tgt[i] : -1;
    half[1][i] = i % 3 ? -1 : c.tgt[i];
    none[i] = -1;
  }
  double part = 0.0;
  txl_params_zero_grad(p);
  for (int k = 0; k < 2; k++) {
    txl_train_rewind(s);
    part += txl_train_step(s, c.in, half[k]);
  }
  g_assert_cmpfloat(fabs(part - loss), <=, 1e-6 * (1 + fabs(loss)));
  for (gsize i = 0; i < p->n; i++)
    g_assert_cmpfloat(fabsf(p->grad[i] - grad[i]), <=,
                      1e-5f * (1 + fabsf(grad[i])));
  txl_params_zero_grad(p);
  txl_train_rewind(s);
  g_assert_cmpfloat(txl_train_step(s, c.in, none), ==, 0.0);
  for (gsize i = 0; i < p->n; i++)
    g_assert_cmpfloat(p->grad[i], ==, 0.0f);
  g_free(grad);
  g_rand_free(r);
  txl_train_state_free(s);
  txl_params_free(p);
}

static const ModelCase cases[] = {
  { "post-LN", UNTIE_R | TIE_WEIGHT, 8, 3, 0, 0.0f, 0.0f },
  { "pre-LN", PRE_LN | UNTIE_R | TIE_WEIGHT, 8, 3, 0, 0.0f, 0.0f },
  { "shared-r untied-out", 0, 8, 3, 0, 0.0f, 0.0f },
  { "same_length clamp", PRE_LN | UNTIE_R | TIE_WEIGHT | SAME_LENGTH, 8, 5, 2, 0.0f, 0.0f },
  { "d_embed 6 tied proj", UNTIE_R | TIE_WEIGHT | TIE_PROJ, 6, 3, 0, 0.0f, 0.0f },
  { "d_embed 6 untied", PRE_LN, 6, 4, 0, 0.0f, 0.0f },
  { "dropout", UNTIE_R | TIE_WEIGHT | SAME_LENGTH, 8, 5, 3, 0.2f, 0.15f },
  { "dropout pre-LN proj", PRE_LN | TIE_PROJ, 6, 3, 0, 0.2f, 0.15f },
};

int
main(int argc, char **argv)
{
  g_test_init(&argc, &argv, NULL);
  tu_add_tests();
  for (gsize i = 0; i < G_N_ELEMENTS(cases); i++) {
    char *path = g_strdup_printf("/grad/model/%s", cases[i].name);
    g_test_add_data_func(path, &cases[i], model_case);
    g_free(path);
  }
  return g_test_run();
}

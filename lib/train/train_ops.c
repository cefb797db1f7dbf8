/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Training kernels: the backward of the linear layer and of the layer norm
 * (their forward is the engine's, ops.h), and cross-entropy.  Row-major
 * float32, caller-owned buffers. */
#include "train.h"
#include "parallel.h"

#include <math.h>
#include <string.h>

/* ---- linear ---------------------------------------------------------- */

/* db += column sums of dy, summed in double (in chunks of columns, on the
 * stack) so long batches lose nothing */
static void
col_sums(const float *dy, int n, int out, float *db)
{
  enum { CHUNK = 256 };
  double acc[CHUNK];
  for (int c0 = 0; c0 < out; c0 += CHUNK) {
    int w = MIN(CHUNK, out - c0);
    memset(acc, 0, sizeof acc);
    for (int i = 0; i < n; i++) {
      const float *r = dy + (gsize)i * out + c0;
      for (int j = 0; j < w; j++)
        acc[j] += r[j];
    }
    for (int j = 0; j < w; j++)
      db[c0 + j] += (float)acc[j];
  }
}

void
txl_linear_backward(const float *dy, const float *x, int n, int in,
                    const float *W, int out, float *dx, float beta, float *dW,
                    float *db)
{
  if (db)
    col_sums(dy, n, out, db);
  /* dW (out, in) += dy^T (out, n) x (n, in), and dx (n, in) = dy W + beta
   * dx: independent, so at once */
  TxlGemmArgs g[2] = {
    { TRUE, FALSE, out, in, n, 1.0f, dy, out, x, in, 1.0f, dW, in },
    { FALSE, FALSE, n, in, out, 1.0f, dy, out, W, in, beta, dx, in },
  };
  txl_gemm_batch(g, dx ? 2 : 1);
}

/* ---- layer norm ------------------------------------------------------ */

void
txl_ln_backward(const float *dy, const float *x, const float *mean,
                const float *rstd, int n, int d, const float *w, float *dx,
                float beta, float *dw, float *db)
{
  for (int i = 0; i < n; i++) {
    const float *dyi = dy + (gsize)i * d, *xi = x + (gsize)i * d;
    const float m = mean[i], r = rstd[i];
    /* with xh = (x - m) r and g = dy w:
     * dx = r (g - mean(g) - xh mean(g xh)) */
    double sg = 0.0, sgx = 0.0;
    for (int j = 0; j < d; j++) {
      float xh = (xi[j] - m) * r, g = dyi[j] * w[j];
      sg += g;
      sgx += (double)g * xh;
      dw[j] += dyi[j] * xh;
      db[j] += dyi[j];
    }
    if (!dx)
      continue;
    const float mg = (float)(sg / d), mgx = (float)(sgx / d);
    float *dxi = dx + (gsize)i * d;
    for (int j = 0; j < d; j++) {
      float xh = (xi[j] - m) * r;
      float v = r * (dyi[j] * w[j] - mg - xh * mgx);
      dxi[j] = beta != 0.0f ? dxi[j] + v : v;
    }
  }
}

/* ---- cross-entropy --------------------------------------------------- */

typedef struct {
  float *logits; /* read only in the forward */
  int V;
  const int32_t *targets;
  float *lse;
  double *nll;
  float scale;
} Ce;

static void
ce_rows(gsize lo, gsize hi, gpointer ctx)
{
  const Ce *c = ctx;
  for (gsize i = lo; i < hi; i++) {
    const float *z = c->logits + i * c->V;
    double s;
    float mx = txl_row_max_expsum(z, c->V, &s);
    double l = mx + log(s);
    c->lse[i] = (float)l;
    c->nll[i] = c->targets[i] < 0 ? 0.0 : l - z[c->targets[i]];
  }
}

double
txl_ce_forward(const float *logits, int n, int V, const int32_t *targets,
               float *lse, double *nll)
{
  Ce c = { (float *)logits, V, targets, lse, nll, 0.0f };
  txl_parallel_range((gsize)MAX(n, 0), MAX(1, (1 << 15) / MAX(V, 1)), 1,
                     ce_rows, &c);
  double total = 0.0;
  for (int i = 0; i < n; i++)
    total += nll[i];
  return total / n;
}

static void
ce_back_rows(gsize lo, gsize hi, gpointer ctx)
{
  const Ce *c = ctx;
  for (gsize i = lo; i < hi; i++) {
    float *z = c->logits + i * c->V;
    if (c->targets[i] < 0) { /* no loss here: no gradient */
      memset(z, 0, sizeof(float) * c->V);
      continue;
    }
    const float l = c->lse[i];
    for (int j = 0; j < c->V; j++)
      z[j] = expf(z[j] - l) * c->scale;
    z[c->targets[i]] -= c->scale;
  }
}

void
txl_ce_backward(float *logits, int n, int V, const int32_t *targets,
                const float *lse, float scale)
{
  Ce c = { logits, V, targets, (float *)lse, NULL, scale };
  txl_parallel_range((gsize)MAX(n, 0), MAX(1, (1 << 15) / MAX(V, 1)), 1,
                     ce_back_rows, &c);
}

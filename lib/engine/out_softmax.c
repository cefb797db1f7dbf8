/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Projected adaptive log-softmax.  The head scores the shortlist plus one
 * column per tail cluster; a tail token's log-prob is its cluster column
 * plus its log-prob within the cluster.  Only rows whose target falls in a
 * tail cluster pay for that cluster's logits. */
#include "cpu.h"
#include "gemm.h"
#include "ops.h"

#include <math.h>
#include <string.h>

#define TAIL_CHUNK_FLOATS (1 << 20)

static int
head_size(const TxlModel *m)
{
  return (m->out[0].end - m->out[0].start) + m->cfg.n_cutoffs;
}

static int
tail_max(const TxlModel *m, int *dmax)
{
  int t = 1, d = m->cfg.d_model;
  for (int c = 0; c < m->n_out; c++) {
    int len = m->out[c].end - m->out[c].start;
    t = len > t ? len : t;
    d = m->out[c].dim > d ? m->out[c].dim : d;
  }
  *dmax = d;
  return t;
}

static int
chunk_rows(const TxlModel *m, int n)
{
  int dmax, t = tail_max(m, &dmax);
  int r = TAIL_CHUNK_FLOATS / t;
  r = r < 1 ? 1 : r;
  return r < n ? r : n;
}

gsize
txl_out_scratch_floats(const TxlModel *m, int n)
{
  int dmax, t = tail_max(m, &dmax);
  gsize r = chunk_rows(m, n);
  return (gsize)n * dmax + (gsize)n * head_size(m) +
         r * (m->cfg.d_model + dmax + t) + 16;
}

/* hp = h @ proj (rows, dim), or h itself when the cluster is unprojected */
static const float *
project(const TxlModel *m, const TxlCluster *cl, const float *h, int rows,
        float *buf)
{
  if (!cl->proj)
    return h;
  txl_gemm(FALSE, FALSE, rows, cl->dim, m->cfg.d_model, 1.0f, h,
           m->cfg.d_model, cl->proj, cl->dim, 0.0f, buf, cl->dim);
  return buf;
}

float
txl_row_max_expsum(const float *z, int n, double *sum)
{
  float mx = -INFINITY;
  for (int i = 0; i < n; i++)
    mx = z[i] > mx ? z[i] : mx;
  double s = 0.0;
  for (int i = 0; i < n; i++)
    s += expf(z[i] - mx);
  *sum = s;
  return mx;
}

TXL_VECTORIZED
static void
log_softmax_row(float *x, int n)
{
  double s;
  float mx = txl_row_max_expsum(x, n, &s);
  float lse = mx + (float)log(s);
  for (int i = 0; i < n; i++)
    x[i] -= lse;
}

/* logits = hp @ table^T + bias, into rows of stride ld */
static void
cluster_logits(const TxlCluster *cl, const float *hp, int rows, float *out,
               int ld)
{
  int len = cl->end - cl->start;
  for (int r = 0; r < rows; r++)
    memcpy(out + (gsize)r * ld, cl->bias, sizeof(float) * len);
  txl_gemm(FALSE, TRUE, rows, len, cl->dim, 1.0f, hp, cl->dim, cl->table,
           cl->dim, 1.0f, out, ld);
}

static void
head_logprobs(const TxlModel *m, const float *h, int n, float *hp_buf,
              float *head)
{
  const TxlCluster *c0 = &m->out[0];
  int n0 = c0->end - c0->start, hs = head_size(m), C = m->cfg.n_cutoffs;
  const float *hp = project(m, c0, h, n, hp_buf);
  cluster_logits(c0, hp, n, head, hs);
  if (C > 0) {
    for (int r = 0; r < n; r++)
      memcpy(head + (gsize)r * hs + n0, m->cluster_b, sizeof(float) * C);
    txl_gemm(FALSE, TRUE, n, C, c0->dim, 1.0f, hp, c0->dim, m->cluster_w,
             c0->dim, 1.0f, head + n0, hs);
  }
  for (int r = 0; r < n; r++)
    log_softmax_row(head + (gsize)r * hs, hs);
}

static int
cluster_column(const TxlModel *m, int c)
{
  int n0 = m->out[0].end - m->out[0].start;
  if (m->cfg.cluster_order == TXL_CLUSTER_OFFICIAL)
    return head_size(m) - c;
  return n0 + c - 1;
}

void
txl_out_logprobs(const TxlModel *m, const float *h, int n,
                 const int32_t *targets, float *logprobs, float *scratch,
                 int *rows)
{
  int dmax;
  tail_max(m, &dmax);
  const int d = m->cfg.d_model, hs = head_size(m);
  const int R = chunk_rows(m, n);
  float *hp = scratch;
  float *head = hp + (gsize)n * dmax;
  float *gath = head + (gsize)n * hs;
  float *gproj = gath + (gsize)R * d;
  float *tail = gproj + (gsize)R * dmax;

  head_logprobs(m, h, n, hp, head);
  for (int i = 0; i < n; i++)
    if (targets[i] < m->out[0].end)
      logprobs[i] = head[(gsize)i * hs + targets[i]];

  for (int c = 1; c < m->n_out; c++) {
    const TxlCluster *cl = &m->out[c];
    int len = cl->end - cl->start, col = cluster_column(m, c);
    int cnt = 0;
    for (int i = 0; i <= n; i++) {
      if (i < n && targets[i] >= cl->start && targets[i] < cl->end) {
        memcpy(gath + (gsize)cnt * d, h + (gsize)i * d, sizeof(float) * d);
        rows[cnt++] = i;
      }
      if (cnt > 0 && (cnt == R || i == n)) {
        const float *gp = project(m, cl, gath, cnt, gproj);
        cluster_logits(cl, gp, cnt, tail, len);
        for (int r = 0; r < cnt; r++) {
          float *t = tail + (gsize)r * len;
          log_softmax_row(t, len);
          int row = rows[r];
          logprobs[row] = head[(gsize)row * hs + col] +
                          t[targets[row] - cl->start];
        }
        cnt = 0;
      }
    }
  }
}

void
txl_out_full(const TxlModel *m, const float *h, float *out, float *scratch)
{
  int dmax;
  tail_max(m, &dmax);
  const int hs = head_size(m);
  float *hp = scratch;
  float *head = hp + dmax;
  float *gproj = head + hs + m->cfg.d_model;
  head_logprobs(m, h, 1, hp, head);
  int n0 = m->out[0].end - m->out[0].start;
  memcpy(out, head, sizeof(float) * n0);
  for (int c = 1; c < m->n_out; c++) {
    const TxlCluster *cl = &m->out[c];
    int len = cl->end - cl->start;
    float *t = out + cl->start;
    const float *gp = project(m, cl, h, 1, gproj);
    cluster_logits(cl, gp, 1, t, len);
    log_softmax_row(t, len);
    float lc = head[cluster_column(m, c)];
    for (int i = 0; i < len; i++)
      t[i] += lc;
  }
}

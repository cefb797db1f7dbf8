/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Relative multi-head attention for training: forward saving the
 * probabilities, and backward.  Per (stream, head) everything is a handful
 * of sgemms on T x K blocks:
 *
 *   AC = (q+u) k^T,  BD[i][j] = ((q+v) rk^T)[i][j + T-1-i]   (rel shift)
 *   P = softmax(scale (AC + BD)) over the visible keys,  O = drop(P) v
 *
 * and backward runs the same products transposed, with the position
 * gradient scattered back through the shift.  Tasks own whole heads (for
 * every stream), so the accumulated drk and bias gradients of a head have
 * one writer and a fixed summation order whatever the thread count. */
#include "gemm.h"
#include "ops.h"
#include "parallel.h"
#include "train.h"

#include <math.h>
#include <string.h>

gsize
txl_train_attn_scratch_floats(int T, int K, int d_head)
{
  return 4 * (gsize)T * d_head + 3 * (gsize)T * K;
}

typedef struct {
  const TxlTrainAttn *a;
  const float *prob_in, *dout;
  float *prob, *out, *dq, *dkv, *drk, *dwb, *drb;
  float *scratch;
  gsize slot;
} Job;

static void
biased_queries(const TxlTrainAttn *a, int b, int n, float *qu, float *qv)
{
  const int T = a->T, dh = a->d_head, HD = a->n_head * dh;
  txl_attn_biased_queries(a->q + (gsize)b * T * HD + (gsize)n * dh, HD, T, dh,
                          a->r_w_bias + (gsize)n * dh,
                          a->r_r_bias + (gsize)n * dh, qu, qv);
}

static int
first_key(const TxlTrainAttn *a, int i)
{
  return txl_attn_first_key(i, a->T, a->mlen, a->mlen + a->T, a->mem_len,
                            a->same_length);
}

/* P row i from the raw scores, zero outside the visible keys [lo, hi] */
static void
softmax_rows(const TxlTrainAttn *a, const float *ac, const float *bd, float *P)
{
  const int T = a->T, K = a->mlen + T;
  const float scale = 1.0f / sqrtf((float)a->d_head);
  for (int i = 0; i < T; i++) {
    const int lo = first_key(a, i), hi = a->mlen + i, sh = T - 1 - i;
    const float *aci = ac + (gsize)i * K, *bdi = bd + (gsize)i * K;
    float *p = P + (gsize)i * K;
    float mx = -INFINITY;
    for (int j = lo; j <= hi; j++) {
      p[j] = (aci[j] + bdi[j + sh]) * scale;
      mx = p[j] > mx ? p[j] : mx;
    }
    float sum = 0.0f;
    for (int j = lo; j <= hi; j++) {
      p[j] = expf(p[j] - mx);
      sum += p[j];
    }
    const float inv = 1.0f / sum;
    for (int j = lo; j <= hi; j++)
      p[j] *= inv;
    memset(p, 0, sizeof(float) * lo);
    memset(p + hi + 1, 0, sizeof(float) * (K - hi - 1));
  }
}

static void
forward_head(const Job *job, float *s, int b, int n)
{
  const TxlTrainAttn *a = job->a;
  const int T = a->T, K = a->mlen + T, dh = a->d_head, HD = a->n_head * dh;
  float *qu = s, *qv = qu + (gsize)T * dh;
  float *ac = qv + 3 * (gsize)T * dh, *bd = ac + (gsize)T * K;
  float *pd = bd + (gsize)T * K;
  const float *kb = a->kv + (gsize)b * K * 2 * HD;
  const gsize blk = ((gsize)b * a->n_head + n) * T * K;
  float *P = job->prob + blk;

  biased_queries(a, b, n, qu, qv);
  txl_gemm(FALSE, TRUE, T, K, dh, 1.0f, qu, dh,
           kb + (gsize)n * dh, 2 * HD, 0.0f, ac, K);
  txl_gemm(FALSE, TRUE, T, K, dh, 1.0f, qv, dh,
           a->rk + (gsize)n * dh, HD, 0.0f, bd, K);
  softmax_rows(a, ac, bd, P);
  const float *use = P;
  if (a->dropatt > 0.0f) {
    memcpy(pd, P, sizeof(float) * T * K);
    txl_dropout(pd, (gsize)T * K, a->dropatt, a->key, blk);
    use = pd;
  }
  txl_gemm(FALSE, FALSE, T, dh, K, 1.0f, use,
           K, kb + HD + (gsize)n * dh, 2 * HD, 0.0f,
           job->out + (gsize)b * T * HD + (gsize)n * dh, HD);
}

static void
backward_head(const Job *job, float *s, int b, int n)
{
  const TxlTrainAttn *a = job->a;
  const int T = a->T, K = a->mlen + T, dh = a->d_head, HD = a->n_head * dh;
  const float scale = 1.0f / sqrtf((float)a->d_head);
  float *qu = s, *qv = qu + (gsize)T * dh;
  float *dqu = qv + (gsize)T * dh, *dqv = dqu + (gsize)T * dh;
  float *pd = dqv + (gsize)T * dh, *dp = pd + (gsize)T * K;
  float *dbd = dp + (gsize)T * K;
  const float *kb = a->kv + (gsize)b * K * 2 * HD;
  float *dkb = job->dkv + (gsize)b * K * 2 * HD;
  const gsize blk = ((gsize)b * a->n_head + n) * T * K;
  const float *P = job->prob_in + blk;
  const float *dO = job->dout + (gsize)b * T * HD + (gsize)n * dh;

  /* values: dv = drop(P)^T dO; dP = drop(dO v^T) */
  const float *use = P;
  if (a->dropatt > 0.0f) {
    memcpy(pd, P, sizeof(float) * T * K);
    txl_dropout(pd, (gsize)T * K, a->dropatt, a->key, blk);
    use = pd;
  }
  txl_gemm(TRUE, FALSE, K, dh, T, 1.0f, use, K,
           dO, HD, 0.0f, dkb + HD + (gsize)n * dh, 2 * HD);
  txl_gemm(FALSE, TRUE, T, K, dh, 1.0f, dO, HD,
           kb + HD + (gsize)n * dh, 2 * HD, 0.0f, dp, K);
  txl_dropout(dp, (gsize)T * K, a->dropatt, a->key, blk);

  /* softmax: dS = P (dP - <P, dP>) scale; zero where P is masked.  The
   * position part goes back through the shift into dbd. */
  memset(dbd, 0, sizeof(float) * T * K);
  for (int i = 0; i < T; i++) {
    const int lo = first_key(a, i), hi = a->mlen + i, sh = T - 1 - i;
    const float *p = P + (gsize)i * K;
    float *d = dp + (gsize)i * K;
    double dot = 0.0;
    for (int j = lo; j <= hi; j++)
      dot += (double)p[j] * d[j];
    const float fdot = (float)dot;
    for (int j = 0; j < K; j++)
      d[j] = (j >= lo && j <= hi) ? p[j] * (d[j] - fdot) * scale : 0.0f;
    for (int j = lo; j <= hi; j++)
      dbd[(gsize)i * K + j + sh] = d[j];
  }

  biased_queries(a, b, n, qu, qv);
  /* keys and positions */
  txl_gemm(TRUE, FALSE, K, dh, T, 1.0f, dp, K,
           qu, dh, 0.0f, dkb + (gsize)n * dh, 2 * HD);
  txl_gemm(TRUE, FALSE, K, dh, T, 1.0f, dbd, K,
           qv, dh, 1.0f, job->drk + (gsize)n * dh, HD);
  /* queries (and through them the r biases) */
  txl_gemm(FALSE, FALSE, T, dh, K, 1.0f, dp, K,
           kb + (gsize)n * dh, 2 * HD, 0.0f, dqu, dh);
  txl_gemm(FALSE, FALSE, T, dh, K, 1.0f, dbd,
           K, a->rk + (gsize)n * dh, HD, 0.0f, dqv, dh);
  float *wb = job->dwb + (gsize)n * dh, *rb = job->drb + (gsize)n * dh;
  for (int i = 0; i < T; i++) {
    float *dq = job->dq + ((gsize)b * T + i) * HD + (gsize)n * dh;
    const float *x = dqu + (gsize)i * dh, *y = dqv + (gsize)i * dh;
    for (int c = 0; c < dh; c++) {
      dq[c] = x[c] + y[c];
      wb[c] += x[c];
      rb[c] += y[c];
    }
  }
}

static void
heads_task(int t, int n_tasks, gpointer p)
{
  const Job *job = p;
  const int H = job->a->n_head;
  float *s = job->scratch + (gsize)t * job->slot;
  for (int n = t * H / n_tasks; n < (t + 1) * H / n_tasks; n++)
    for (int b = 0; b < job->a->B; b++) {
      if (job->dout)
        backward_head(job, s, b, n);
      else
        forward_head(job, s, b, n);
    }
}

static void
run(Job *job, int slots)
{
  const TxlTrainAttn *a = job->a;
  job->slot = txl_train_attn_scratch_floats(a->T, a->mlen + a->T, a->d_head);
  txl_parallel_run(MAX(1, MIN(slots, a->n_head)), heads_task, job);
}

void
txl_train_attn_forward(const TxlTrainAttn *a, float *prob, float *out,
                       float *scratch, int slots)
{
  Job job = { .a = a, .prob = prob, .out = out, .scratch = scratch };
  run(&job, slots);
}

void
txl_train_attn_backward(const TxlTrainAttn *a, const float *prob,
                        const float *dout, float *dq, float *dkv, float *drk,
                        float *dr_w_bias, float *dr_r_bias, float *scratch,
                        int slots)
{
  Job job = { .a = a, .prob_in = prob, .dout = dout, .dq = dq, .dkv = dkv,
              .drk = drk, .dwb = dr_w_bias, .drb = dr_r_bias,
              .scratch = scratch };
  run(&job, slots);
}

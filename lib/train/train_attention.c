/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Relative multi-head attention for training: forward saving the
 * probabilities, and backward.
 *
 *   AC = (q+u) k^T,  BD[i][j] = ((q+v) rk^T)[i][j + T-1-i]   (rel shift)
 *   P = softmax(scale (AC + BD)) over the visible keys,  O = drop(P) v
 *
 * The forward is the engine's txl_rel_attention(), stream by stream, asked
 * to save P and to drop it: the same kernels as inference, on the keys
 * transposed and the positions packed as it reads them.  Backward runs the
 * products transposed per (stream, head), a handful of txl_gemm() calls on
 * T x K blocks, with the position gradient scattered back through the
 * shift.  Tasks own whole heads (for every stream), so the accumulated drk
 * and bias gradients of a head have one writer and a fixed summation order
 * whatever the thread count. */
#include "cpu.h"
#include "gemm.h"
#include "ops.h"
#include "parallel.h"
#include "train.h"

#include <math.h>
#include <string.h>

/* backward: qu, qv, dqu, dqv; drop(P), dP, dBD */
static gsize
back_slot(int T, int K, int d_head)
{
  return 4 * (gsize)T * d_head + 3 * (gsize)T * K;
}

/* forward: the positions packed per head (padded so that distance 0 ends a
 * panel, as TxlRTable), the keys of one stream transposed, then the
 * engine's per-slot scratch */
static gsize
packed_head(int K, int d_head)
{
  const int NR = txl_gemm_nr();
  return txl_gemm_packed_floats((NR - K % NR) % NR + K, d_head);
}

gsize
txl_train_attn_scratch_floats(int T, int K, int n_head, int d_head,
                              int slots)
{
  gsize fwd = n_head * txl_gemm_packed_floats(K + txl_gemm_nr() - 1, d_head) +
              (gsize)n_head * d_head * K +
              slots * txl_attn_scratch_floats(T, K, d_head);
  return MAX(fwd, slots * back_slot(T, K, d_head));
}

typedef struct {
  const TxlTrainAttn *a;
  const float *prob, *dout;
  float *dq, *dkv, *drk, *dwb, *drb;
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
  const float *P = job->prob + blk;
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

TXL_VECTORIZED
static void
heads_task(int t, int n_tasks, gpointer p)
{
  const Job *job = p;
  const int H = job->a->n_head;
  float *s = job->scratch + (gsize)t * job->slot;
  for (int n = t * H / n_tasks; n < (t + 1) * H / n_tasks; n++)
    for (int b = 0; b < job->a->B; b++)
      backward_head(job, s, b, n);
}

void
txl_train_attn_forward(const TxlTrainAttn *a, float *prob, float *out,
                       float *scratch, int slots)
{
  const int T = a->T, K = a->mlen + T, H = a->n_head, dh = a->d_head;
  const int HD = H * dh, NR = txl_gemm_nr();
  const gsize rhead = packed_head(K, dh);
  float *rp = scratch, *kt = rp + H * rhead, *s = kt + (gsize)HD * K;
  for (int n = 0; n < H; n++)
    txl_gemm_pack_at(a->rk + (gsize)n * dh, K, dh, HD, (NR - K % NR) % NR,
                     rp + n * rhead);
  for (int b = 0; b < a->B; b++) {
    const float *kb = a->kv + (gsize)b * K * 2 * HD;
    const gsize first = (gsize)b * H * T * K;
    txl_transpose(kb, K, HD, 2 * HD, kt, K);
    TxlAttnArgs e = {
      .qlen = T, .mlen = a->mlen, .n_head = H, .d_head = dh,
      .same_length = a->same_length, .mem_len = a->mem_len,
      .q = a->q + (gsize)b * T * HD, .ldq = HD,
      .kt = kt, .ldkt = K, .v = kb + HD, .ldv = 2 * HD,
      .rp = rp, .rmaxk = K,
      .r_w_bias = a->r_w_bias, .r_r_bias = a->r_r_bias,
      .prob = prob + first, .dropatt = a->dropatt, .key = a->key,
      .first = first,
    };
    txl_rel_attention(&e, s, slots, out + (gsize)b * T * HD);
  }
}

void
txl_train_attn_backward(const TxlTrainAttn *a, const float *prob,
                        const float *dout, float *dq, float *dkv, float *drk,
                        float *dr_w_bias, float *dr_r_bias, float *scratch,
                        int slots)
{
  Job job = { .a = a, .prob = prob, .dout = dout, .dq = dq, .dkv = dkv,
              .drk = drk, .dwb = dr_w_bias, .drb = dr_r_bias,
              .scratch = scratch,
              .slot = back_slot(a->T, a->mlen + a->T, a->d_head) };
  txl_parallel_run(MAX(1, MIN(slots, a->n_head)), heads_task, &job);
}

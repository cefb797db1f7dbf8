/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Relative positional multi-head attention (Dai et al. 2019, sec. 3.3).
 * Content scores (q+u)·k and position scores (q+v)·W_R R are two products
 * per head; the position block is read shifted, so row i of the position
 * scores uses column j + qlen-1-i of the raw product (the "rel shift").
 *
 * The products run on lib/kernels/gemm.h's kernels, one block of MR
 * (txl_gemm_mr()) query rows at a time, and each block computes only the
 * keys its queries can see (causal: none past mlen + its last row), which
 * is ~10% of the attention work at segment 64 with 256 remembered
 * positions.  The right operands need no packing per segment: keys are kept
 * transposed by the stream, values are read as rows, and the position table
 * is packed once per model. */
#include "cpu.h"
#include "gemm.h"
#include "ops.h"
#include "parallel.h"
#include "vecmath.h"

#include <math.h>
#include <string.h>

int
txl_attn_first_key(int i, int qlen, int mlen, int klen, int mem_len,
                   int same_length)
{
  (void)mlen;
  if (!same_length)
    return 0;
  /* once memory is full every query sees exactly mem_len keys */
  int mask_len = klen - mem_len;
  int shift = mask_len > 0 ? qlen - mask_len : qlen;
  int lo = i - shift + 1;
  return lo > 0 ? lo : 0;
}

void
txl_attn_biased_queries(const float *q, int ldq, int rows, int dh,
                        const float *u, const float *v, float *qu, float *qv)
{
  for (int i = 0; i < rows; i++) {
    const float *qi = q + (gsize)i * ldq;
    for (int c = 0; c < dh; c++) {
      qu[(gsize)i * dh + c] = qi[c] + u[c];
      qv[(gsize)i * dh + c] = qi[c] + v[c];
    }
  }
}

/* row[j] = exp((row[j] + pos[j]) * scale - max), over n >= 1 entries;
 * returns 1 / sum, applied to the (narrower) output row instead */
TXL_VECTORIZED
static float
softmax_row(float *row, const float *pos, int n, float scale)
{
  const v8f vs = v8_set1(scale);
  int j = 0;
  v8f vmax = v8_set1(-INFINITY);
  for (; j + 8 <= n; j += 8) {
    v8f x = (v8_load(row + j) + v8_load(pos + j)) * vs;
    v8_store(row + j, x);
    vmax = v8_max(x, vmax);
  }
  float mx = v8_hmax(vmax);
  for (; j < n; j++) {
    row[j] = (row[j] + pos[j]) * scale;
    mx = row[j] > mx ? row[j] : mx;
  }
  const v8f vm = v8_set1(mx);
  v8f vsum = v8_set1(0.0f);
  for (j = 0; j + 8 <= n; j += 8) {
    v8f e = v8_exp(v8_load(row + j) - vm);
    v8_store(row + j, e);
    vsum += e;
  }
  float sum = v8_hsum(vsum);
  for (; j < n; j++) {
    row[j] = txl_exp1(row[j] - mx);
    sum += row[j];
  }
  return 1.0f / sum;
}

gsize
txl_attn_scratch_floats(int qlen, int klen, int d_head)
{
  /* qu, qv; content scores (qlen, klen); position scores (qlen, klen+NR):
   * they start at a panel boundary up to NR-1 columns before the first
   * key; 1/sum per row */
  return 2 * (gsize)qlen * d_head + (gsize)qlen * klen +
         (gsize)qlen * (klen + txl_gemm_nr()) + qlen;
}

/* Training's additions to row i of head n, e holding exp(score - max) of
 * the keys [lo, hi] and inv 1 / their sum: the probabilities saved for
 * backward, and the row dropped, so that the weighted sum after is over
 * dropped probabilities (scaling by inv commutes with the dropout). */
static void
train_row(const TxlAttnArgs *a, int n, int i, int lo, int hi, float *e,
          float inv)
{
  const int klen = a->mlen + a->qlen;
  const gsize at = ((gsize)n * a->qlen + i) * klen;
  float *p = a->prob + at;
  memset(p, 0, sizeof(float) * lo);
  for (int j = lo; j <= hi; j++)
    p[j] = e[j] * inv;
  memset(p + hi + 1, 0, sizeof(float) * (klen - hi - 1));
  txl_dropout(e + lo, hi - lo + 1, a->dropatt, a->key, a->first + at + lo);
}

typedef struct {
  const TxlAttnArgs *a;
  float *scratch;
  gsize slot;
  float *out;
} AttnJob;

TXL_VECTORIZED
static void
heads_task(int t, int n_tasks, gpointer p)
{
  const AttnJob *job = p;
  const TxlAttnArgs *a = job->a;
  const int qlen = a->qlen, dh = a->d_head, H = a->n_head;
  const int klen = a->mlen + qlen;
  const int HD = H * dh;
  const int NR = txl_gemm_nr(), MR = txl_gemm_mr();
  const float scale = 1.0f / sqrtf((float)dh);
  const int ldbd = klen + NR;
  float *qu = job->scratch + (gsize)t * job->slot;
  float *qv = qu + (gsize)qlen * dh;
  float *ac = qv + (gsize)qlen * dh, *bd = ac + (gsize)qlen * klen;
  float *inv = bd + (gsize)qlen * ldbd;
  /* the packed position table: this segment's keys are its last klen
   * columns, which end a panel; they start `off` columns into panel P0 */
  const int pad = (NR - a->rmaxk % NR) % NR;
  const gsize rhead = txl_gemm_packed_floats(pad + a->rmaxk, dh);
  const int c0 = pad + a->rmaxk - klen, P0 = c0 / NR, off = c0 % NR;

  for (int n = t * H / n_tasks; n < (t + 1) * H / n_tasks; n++) {
    const float *u = a->r_w_bias + (gsize)n * dh;
    const float *v = a->r_r_bias + (gsize)n * dh;
    const float *kt = a->kt + (gsize)n * dh * a->ldkt;
    const float *rp = a->rp + (gsize)n * rhead + (gsize)P0 * NR * dh;
    txl_attn_biased_queries(a->q + (gsize)n * dh, a->ldq, qlen, dh, u, v, qu,
                            qv);
    for (int i0 = 0; i0 < qlen; i0 += MR) {
      const int mr = MIN(MR, qlen - i0);
      /* keys seen by some query of the block: [lo0, hi1] */
      const int lo0 = txl_attn_first_key(i0, qlen, a->mlen, klen, a->mem_len,
                                         a->same_length);
      const int hi1 = a->mlen + i0 + mr - 1;
      const int cs = lo0 / NR * NR;
      TxlGemm g = {
        .M = mr, .N = hi1 + 1 - cs, .K = dh,
        .A = qu + (gsize)i0 * dh, .lda = dh,
        .B = kt + cs, .ldb = a->ldkt, .panel_stride = NR,
        .C = ac + (gsize)i0 * klen + cs, .ldc = klen,
        .init = TXL_GEMM_ZERO,
      };
      txl_gemm_run(&g);
      /* position columns used by the block: from its last row's shifted
       * first key to the end */
      const int ps = (off + (qlen - 1 - (i0 + mr - 1)) + lo0) / NR * NR;
      TxlGemm gr = {
        .M = mr, .N = off + klen - ps, .K = dh,
        .A = qv + (gsize)i0 * dh, .lda = dh,
        .B = rp + (gsize)ps * dh, .ldb = NR, .panel_stride = (gsize)NR * dh,
        .padded = TRUE,
        .C = bd + (gsize)i0 * ldbd + ps, .ldc = ldbd,
        .init = TXL_GEMM_ZERO,
      };
      txl_gemm_run(&gr);
      for (int i = i0; i < i0 + mr; i++) {
        int lo = txl_attn_first_key(i, qlen, a->mlen, klen, a->mem_len,
                                    a->same_length);
        int hi = a->mlen + i; /* causal: the query itself is the last key */
        float *row = ac + (gsize)i * klen;
        inv[i] = softmax_row(row + lo,
                             bd + (gsize)i * ldbd + off + (qlen - 1 - i) + lo,
                             hi - lo + 1, scale);
        if (a->prob)
          train_row(a, n, i, lo, hi, row, inv[i]);
        /* the weighted sum below reads keys [lo0, hi1] */
        if (lo > lo0)
          memset(row + lo0, 0, sizeof(float) * (lo - lo0));
        if (hi < hi1)
          memset(row + hi + 1, 0, sizeof(float) * (hi1 - hi));
      }
      TxlGemm gv = {
        .M = mr, .N = dh, .K = hi1 + 1 - lo0,
        .A = ac + (gsize)i0 * klen + lo0, .lda = klen,
        .B = a->v + (gsize)lo0 * a->ldv + (gsize)n * dh, .ldb = a->ldv,
        .panel_stride = NR,
        .C = job->out + (gsize)i0 * HD + (gsize)n * dh, .ldc = HD,
        .init = TXL_GEMM_ZERO,
      };
      txl_gemm_run(&gv);
      for (int i = i0; i < i0 + mr; i++) {
        float *o = job->out + (gsize)i * HD + (gsize)n * dh;
        for (int c = 0; c < dh; c++)
          o[c] *= inv[i];
      }
    }
  }
}

void
txl_rel_attention(const TxlAttnArgs *a, float *scratch, int slots, float *out)
{
  AttnJob job = { a, scratch,
                  txl_attn_scratch_floats(a->qlen, a->mlen + a->qlen,
                                          a->d_head),
                  out };
  /* heads are independent: one task per group of heads */
  txl_parallel_run(MIN(slots, a->n_head), heads_task, &job);
}

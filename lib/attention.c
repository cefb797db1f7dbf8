/* Relative positional multi-head attention (Dai et al. 2019, sec. 3.3).
 * Content scores (q+u)·k and position scores (q+v)·W_R R are two sgemms
 * per head; the position block is read shifted, so row i of the position
 * scores uses column j + qlen-1-i of the raw product (the "rel shift"). */
#include "ops.h"
#include "parallel.h"
#include "vecmath.h"

#include <cblas.h>
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

/* row[j] = exp((row[j] + pos[j]) * scale - max), over n >= 1 entries;
 * returns 1 / sum, applied to the (narrower) output row instead */
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
  return 2 * (gsize)qlen * d_head + 2 * (gsize)qlen * klen + qlen;
}

typedef struct {
  const TxlAttnArgs *a;
  float *scratch;
  gsize slot;
  float *out;
} AttnJob;

static void
heads_task(int t, int n_tasks, gpointer p)
{
  const AttnJob *job = p;
  const TxlAttnArgs *a = job->a;
  const int qlen = a->qlen, dh = a->d_head, H = a->n_head;
  const int klen = a->mlen + qlen;
  const int HD = H * dh;
  const float scale = 1.0f / sqrtf((float)dh);
  float *qu = job->scratch + (gsize)t * job->slot;
  float *qv = qu + (gsize)qlen * dh;
  float *ac = qv + (gsize)qlen * dh, *bd = ac + (gsize)qlen * klen;
  float *inv = bd + (gsize)qlen * klen;

  for (int n = t * H / n_tasks; n < (t + 1) * H / n_tasks; n++) {
    const float *u = a->r_w_bias + (gsize)n * dh;
    const float *v = a->r_r_bias + (gsize)n * dh;
    for (int i = 0; i < qlen; i++) {
      const float *qi = a->q + (gsize)i * a->ldq + (gsize)n * dh;
      for (int c = 0; c < dh; c++) {
        qu[(gsize)i * dh + c] = qi[c] + u[c];
        qv[(gsize)i * dh + c] = qi[c] + v[c];
      }
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, qlen, klen, dh, 1.0f,
                qu, dh, a->k + (gsize)n * dh, a->ldkv, 0.0f, ac, klen);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, qlen, klen, dh, 1.0f,
                qv, dh, a->rk + (gsize)n * dh, HD, 0.0f, bd, klen);
    for (int i = 0; i < qlen; i++) {
      int lo = txl_attn_first_key(i, qlen, a->mlen, klen, a->mem_len,
                                  a->same_length);
      int hi = a->mlen + i; /* causal: the query itself is the last key */
      float *row = ac + (gsize)i * klen;
      inv[i] = softmax_row(row + lo, bd + (gsize)i * klen + (qlen - 1 - i) + lo,
                           hi - lo + 1, scale);
      memset(row, 0, sizeof(float) * lo);
      memset(row + hi + 1, 0, sizeof(float) * (klen - hi - 1));
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, qlen, dh, klen,
                1.0f, ac, klen, a->v + (gsize)n * dh, a->ldkv, 0.0f,
                job->out + (gsize)n * dh, HD);
    for (int i = 0; i < qlen; i++) {
      float *o = job->out + (gsize)i * HD + (gsize)n * dh;
      for (int c = 0; c < dh; c++)
        o[c] *= inv[i];
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

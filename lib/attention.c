/* Relative positional multi-head attention (Dai et al. 2019, sec. 3.3).
 * Content scores (q+u)·k and position scores (q+v)·W_R R are two sgemms
 * per head; the position block is read shifted, so row i of the position
 * scores uses column j + qlen-1-i of the raw product (the "rel shift"). */
#include "ops.h"
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

/* row[j] = softmax_j((row[j] + pos[j]) * scale), over n >= 1 entries */
static void
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
  const v8f inv = v8_set1(1.0f / sum);
  for (j = 0; j + 8 <= n; j += 8)
    v8_store(row + j, v8_load(row + j) * inv);
  for (; j < n; j++)
    row[j] *= 1.0f / sum;
}

void
txl_rel_attention(const TxlAttnArgs *a, float *qbias, float *scores,
                  float *out)
{
  const int qlen = a->qlen, dh = a->d_head, H = a->n_head;
  const int klen = a->mlen + qlen;
  const int HD = H * dh;
  const float scale = 1.0f / sqrtf((float)dh);
  float *qu = qbias, *qv = qbias + (gsize)qlen * dh;
  float *ac = scores, *bd = scores + (gsize)qlen * klen;

  for (int n = 0; n < H; n++) {
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
      softmax_row(row + lo, bd + (gsize)i * klen + (qlen - 1 - i) + lo,
                  hi - lo + 1, scale);
      memset(row, 0, sizeof(float) * lo);
      memset(row + hi + 1, 0, sizeof(float) * (klen - hi - 1));
    }
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, qlen, dh, klen,
                1.0f, ac, klen, a->v + (gsize)n * dh, a->ldkv, 0.0f,
                out + (gsize)n * dh, HD);
  }
}

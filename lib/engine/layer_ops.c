/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "cpu.h"
#include "gemm.h"
#include "ops.h"
#include "parallel.h"

#include <math.h>
#include <string.h>
#if TXL_X86_KERNELS
#include <immintrin.h>
/* compiled for AVX2 whatever the build's flags; called only where the CPU
 * has it (txl_cpu_level()) */
#define AVX2_FN __attribute__((target("avx2")))
#endif

void
txl_linear(const TxlLinear *L, const float *x, int n, float *y, gboolean acc,
           gboolean relu)
{
  const float *b = acc ? NULL : L->b;
  if (L->packed) {
    /* bias and ReLU in the product's epilogue */
    txl_gemm_linear(x, n, L->in, L->packed, L->out, y, L->out,
                    acc ? TXL_GEMM_ACC : b ? TXL_GEMM_BIAS : TXL_GEMM_ZERO, b,
                    relu);
    return;
  }
  if (b) {
    for (int i = 0; i < n; i++)
      memcpy(y + (gsize)i * L->out, b, sizeof(float) * L->out);
  }
  txl_gemm(FALSE, TRUE, n, L->out, L->in, 1.0f, x, L->in, L->w, L->in,
           b || acc ? 1.0f : 0.0f, y, L->out);
  if (relu)
    txl_relu(y, (gsize)n * L->out);
}

typedef struct {
  const float *x, *w, *b;
  int d;
  float eps;
  float *y, *mean_out, *rstd_out;
} Norm;

TXL_VECTORIZED
static void
norm_rows(gsize lo, gsize hi, gpointer ctx)
{
  const Norm *a = ctx;
  const int d = a->d;
  const float *w = a->w, *b = a->b;
  for (gsize i = lo; i < hi; i++) {
    const float *xi = a->x + i * d;
    float *yi = a->y + i * d;
    /* double accumulation: the statistics of large rows stay exact to
     * float precision, so results do not drift with d_model */
    double s = 0.0;
    for (int j = 0; j < d; j++)
      s += xi[j];
    double mean = s / d;
    double v = 0.0;
    for (int j = 0; j < d; j++) {
      double t = xi[j] - mean;
      v += t * t;
    }
    float rstd = (float)(1.0 / sqrt(v / d + a->eps));
    float fmean = (float)mean;
    for (int j = 0; j < d; j++)
      yi[j] = (xi[j] - fmean) * rstd * w[j] + b[j];
    if (a->mean_out) {
      a->mean_out[i] = fmean;
      a->rstd_out[i] = rstd;
    }
  }
}

void
txl_layer_norm(const float *x, int n, int d, const float *w, const float *b,
               float eps, float *y, float *mean_out, float *rstd_out)
{
  Norm a = { x, w, b, d, eps, y, mean_out, rstd_out };
  /* rows are independent: a training batch's rows go over the pool, a
   * scored segment's (64 rows) stay on the calling thread */
  txl_parallel_range((gsize)MAX(n, 0), MAX(1, (1 << 16) / MAX(d, 1)), 1,
                     norm_rows, &a);
}

void
txl_transpose(const float *src, int n, int w, int lds, float *dst, int ldd)
{
  /* 8 x 8 blocks keep both sides' cache lines in use */
  for (int i0 = 0; i0 < n; i0 += 8)
    for (int c0 = 0; c0 < w; c0 += 8)
      for (int c = c0; c < MIN(c0 + 8, w); c++)
        for (int i = i0; i < MIN(i0 + 8, n); i++)
          dst[(gsize)c * ldd + i] = src[(gsize)i * lds + c];
}

void
txl_relu(float *x, gsize n)
{
  for (gsize i = 0; i < n; i++)
    x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void
txl_add(float *y, const float *x, gsize n)
{
  for (gsize i = 0; i < n; i++)
    y[i] += x[i];
}

void
txl_pos_emb(float dist, int d, float *out)
{
  int half = d / 2;
  for (int i = 0; i < half; i++) {
    /* float32 throughout, in the order PyTorch evaluates it, so positions
     * far from zero round the same way as the reference */
    float e = (float)(2 * i) / (float)d;
    float inv_freq = 1.0f / powf(10000.0f, e);
    float a = dist * inv_freq;
    out[i] = sinf(a);
    out[half + i] = cosf(a);
  }
}

void
txl_pos_table(int K, int clamp_len, int d, float *out)
{
  for (int m = 0; m < K; m++) {
    int dist = K - 1 - m;
    if (clamp_len > 0 && dist > clamp_len)
      dist = clamp_len;
    txl_pos_emb((float)dist, d, out + (gsize)m * d);
  }
}

/* splitmix64's finaliser: a good 64-bit mixer, so consecutive counters
 * give independent-looking bits (its two multipliers, and the golden-ratio
 * step between counters, are shared with the vector form below) */
#define MIX_C1 G_GUINT64_CONSTANT(0xbf58476d1ce4e5b9)
#define MIX_C2 G_GUINT64_CONSTANT(0x94d049bb133111eb)
#define GOLDEN G_GUINT64_CONSTANT(0x9e3779b97f4a7c15)

static inline guint64
mix64(guint64 z)
{
  z = (z ^ (z >> 30)) * MIX_C1;
  z = (z ^ (z >> 27)) * MIX_C2;
  return z ^ (z >> 31);
}

guint64
txl_dropout_key(guint64 seed, guint64 step, int site, int layer)
{
  guint64 k = mix64(seed + GOLDEN);
  k = mix64(k ^ (step * G_GUINT64_CONSTANT(0xd1b54a32d192ed03)));
  return mix64(k ^ ((guint64)(guint32)site << 32 | (guint32)layer));
}

typedef struct {
  float *x;
  guint32 thresh;
  float scale;
  guint64 key, first;
} Drop;

#if TXL_X86_KERNELS
/* a * c mod 2^64 in each lane: AVX2 multiplies 32-bit halves only */
static inline AVX2_FN __m256i
mul64c(__m256i a, guint64 c)
{
  const __m256i lo = _mm256_set1_epi64x((gint64)(c & 0xffffffffu));
  const __m256i hi = _mm256_set1_epi64x((gint64)(c >> 32));
  __m256i cross = _mm256_add_epi64(
      _mm256_mul_epu32(_mm256_srli_epi64(a, 32), lo),
      _mm256_mul_epu32(a, hi));
  return _mm256_add_epi64(_mm256_mul_epu32(a, lo),
                          _mm256_slli_epi64(cross, 32));
}

/* mix64() of four counters */
static inline AVX2_FN __m256i
mix64x4(__m256i z)
{
  z = mul64c(_mm256_xor_si256(z, _mm256_srli_epi64(z, 30)), MIX_C1);
  z = mul64c(_mm256_xor_si256(z, _mm256_srli_epi64(z, 27)), MIX_C2);
  return _mm256_xor_si256(z, _mm256_srli_epi64(z, 31));
}

/* The keep masks of eight elements from two sets of four hashes, as
 * eight 32-bit lanes in element order. */
static inline AVX2_FN __m256
keep8(__m256i h0, __m256i h1, __m256i lim)
{
  /* top 24 bits >= thresh; both sides below 2^24, so the signed compare
   * is exact */
  __m256i k0 = _mm256_cmpgt_epi64(_mm256_srli_epi64(h0, 40), lim);
  __m256i k1 = _mm256_cmpgt_epi64(_mm256_srli_epi64(h1, 40), lim);
  const __m256i even = _mm256_setr_epi32(0, 2, 4, 6, 1, 3, 5, 7);
  __m128i m0 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(k0, even));
  __m128i m1 = _mm256_castsi256_si128(_mm256_permutevar8x32_epi32(k1, even));
  return _mm256_castsi256_ps(
      _mm256_inserti128_si256(_mm256_castsi128_si256(m0), m1, 1));
}

/* Eight elements at a time: the same hashes and the same x * scale, so the
 * same bits as the loop in dropout_range() (/grad/dropout-bits in
 * tests/unit/test_grad.c).  Returns where it stopped. */
static AVX2_FN gsize
dropout_avx2(const Drop *d, gsize lo, gsize hi)
{
  float *x = d->x;
  const guint64 gold = GOLDEN;
  const __m256i lim = _mm256_set1_epi64x((gint64)d->thresh - 1);
  const __m256 scale = _mm256_set1_ps(d->scale);
  const __m256i step = _mm256_set1_epi64x((gint64)(8 * gold));
  guint64 c = d->key + (d->first + lo) * gold;
  __m256i z0 = _mm256_setr_epi64x((gint64)c, (gint64)(c + gold),
                                  (gint64)(c + 2 * gold),
                                  (gint64)(c + 3 * gold));
  __m256i z1 = _mm256_add_epi64(z0, _mm256_set1_epi64x((gint64)(4 * gold)));
  for (; lo + 8 <= hi; lo += 8) {
    __m256 keep = keep8(mix64x4(z0), mix64x4(z1), lim);
    __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + lo), scale);
    _mm256_storeu_ps(x + lo, _mm256_and_ps(v, keep));
    z0 = _mm256_add_epi64(z0, step);
    z1 = _mm256_add_epi64(z1, step);
  }
  return lo;
}
#endif

static void
dropout_range(gsize lo, gsize hi, gpointer ctx)
{
  const Drop *d = ctx;
  float *x = d->x;
#if TXL_X86_KERNELS
  if (txl_cpu_level() >= TXL_CPU_AVX2)
    lo = dropout_avx2(d, lo, hi);
#endif
  for (gsize i = lo; i < hi; i++) {
    guint64 h = mix64(d->key + (d->first + i) * GOLDEN);
    x[i] = (guint32)(h >> 40) >= d->thresh ? x[i] * d->scale : 0.0f;
  }
}

void
txl_dropout(float *x, gsize n, float p, guint64 key, guint64 first)
{
  if (p <= 0.0f)
    return;
  /* keep when the top 24 bits, as a fraction, are >= p; each element's
   * fate is its own counter's hash, so the range can be cut over the pool */
  Drop d = { x, (guint32)(p * 16777216.0f), 1.0f / (1.0f - p), key, first };
  txl_parallel_range(n, 1 << 15, 64, dropout_range, &d);
}

void
txl_layer_forward(const TxlLayerW *w, const float *h, int n,
                  const TxlLayerBufs *b, const TxlLayerSave *t, float *y)
{
  const int d = w->o.out;
  const gsize nd = (gsize)n * d;
  b->attend(b->ctx, b->layer, b->av);

  /* attention output projection and residual */
  if (t) {
    /* dropout sits between the product and the residual */
    txl_linear(&w->o, b->av, n, b->sum1, FALSE, FALSE);
    txl_dropout(b->sum1, nd, t->p, t->key_attn_out, 0);
    txl_add(b->sum1, h, nd);
  } else {
    /* the residual starts the product's sums: no pass over them after */
    memcpy(b->sum1, h, sizeof(float) * nd);
    txl_linear(&w->o, b->av, n, b->sum1, TRUE, FALSE);
  }
  const float *res; /* the feed-forward's residual */
  if (w->pre_lnorm) {
    txl_layer_norm(b->sum1, n, d, w->ff_ln_w, w->ff_ln_b, w->eps, b->ffin,
                   t ? t->mu2 : NULL, t ? t->rs2 : NULL);
    res = b->sum1;
  } else {
    txl_layer_norm(b->sum1, n, d, w->attn_ln_w, w->attn_ln_b, w->eps,
                   b->ffin, t ? t->mu1 : NULL, t ? t->rs1 : NULL);
    res = b->ffin;
  }

  /* position-wise feed-forward */
  float *sum2 = w->pre_lnorm ? y : b->sum2;
  txl_linear(&w->ff1, b->ffin, n, b->act, FALSE, TRUE);
  if (t)
    txl_dropout(b->act, (gsize)n * w->ff1.out, t->p, t->key_ff_mid, 0);
  txl_linear(&w->ff2, b->act, n, sum2, FALSE, FALSE);
  if (t)
    txl_dropout(sum2, nd, t->p, t->key_ff_out, 0);
  txl_add(sum2, res, nd);
  if (!w->pre_lnorm)
    txl_layer_norm(sum2, n, d, w->ff_ln_w, w->ff_ln_b, w->eps, y,
                   t ? t->mu2 : NULL, t ? t->rs2 : NULL);
}

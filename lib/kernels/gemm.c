/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl_gemm() on OpenBLAS, and small-M matrix products on pre-packed right
 * operands (see gemm.h).
 *
 * The micro-kernel keeps an MR x NR tile of C in registers (AVX-512: 8 rows
 * x 32 columns = 16 zmm accumulators; AVX2: 6 x 16 = 12 ymm) and, for each
 * k, loads one row of the B panel and broadcasts one element of each of the
 * MR rows of A.  Rows of A are read in place: at M = 64 the whole of A
 * stays in L2 and is reused by every panel, so copying it would only add
 * work.  A panel row (NR floats) is contiguous, and the panel (K x NR) is
 * reused by all M/MR row blocks while it is in L1/L2. */
#include "gemm.h"
#include "parallel.h"

#include <cblas.h>
#include <string.h>

#if TXL_GEMM_NR > 1
#include <immintrin.h>

#if defined(__AVX512F__)
typedef __m512 vf;
typedef __mmask16 vmask;
#define VL 16
#define V_ZERO() _mm512_setzero_ps()
#define V_SET1(x) _mm512_set1_ps(x)
#define V_LOAD(p) _mm512_loadu_ps(p)
#define V_LOADM(p, m) _mm512_maskz_loadu_ps((m), (p))
#define V_STORE(p, v) _mm512_storeu_ps((p), (v))
#define V_STOREM(p, v, m) _mm512_mask_storeu_ps((p), (m), (v))
#define V_FMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define V_MAX(a, b) _mm512_max_ps((a), (b))
static inline vmask
lanes(int n)
{
  return n >= VL ? (vmask)0xffff : n <= 0 ? (vmask)0 : (vmask)((1u << n) - 1);
}
#else
typedef __m256 vf;
typedef __m256i vmask;
#define VL 8
#define V_ZERO() _mm256_setzero_ps()
#define V_SET1(x) _mm256_set1_ps(x)
#define V_LOAD(p) _mm256_loadu_ps(p)
#define V_LOADM(p, m) _mm256_maskload_ps((p), (m))
#define V_STORE(p, v) _mm256_storeu_ps((p), (v))
#define V_STOREM(p, v, m) _mm256_maskstore_ps((p), (m), (v))
#define V_FMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define V_MAX(a, b) _mm256_max_ps((a), (b))
static inline vmask
lanes(int n)
{
  const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
  return _mm256_cmpgt_epi32(_mm256_set1_epi32(n), idx);
}
#endif

#define NV (TXL_GEMM_NR / VL) /* vectors per panel row: 2 */
#define MR TXL_GEMM_MR

/* One mr x NR tile of C over K.  mr and masked are constants at every call
 * site, so the loops unroll and the accumulators live in registers.
 * masked: only the first `nvalid` columns exist (last panel). */
static inline __attribute__((always_inline)) void
tile(const int mr, const int masked, int K, const float *A, int lda,
     const float *B, int ldb, float *C, int ldc, TxlGemmInit init,
     const float *bias, gboolean relu, int nvalid)
{
  vf acc[MR][NV];
  vmask m[NV];
  for (int v = 0; v < NV; v++)
    m[v] = lanes(nvalid - v * VL);
#pragma GCC unroll 8
  for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
      if (init == TXL_GEMM_ZERO)
        acc[i][v] = V_ZERO();
      else if (init == TXL_GEMM_BIAS)
        acc[i][v] = masked ? V_LOADM(bias + v * VL, m[v]) : V_LOAD(bias + v * VL);
      else
        acc[i][v] = masked ? V_LOADM(C + (gsize)i * ldc + v * VL, m[v])
                           : V_LOAD(C + (gsize)i * ldc + v * VL);
    }
  }
  const float *a[MR];
#pragma GCC unroll 8
  for (int i = 0; i < mr; i++)
    a[i] = A + (gsize)i * lda;
  for (int k = 0; k < K; k++) {
    vf b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
      b[v] = masked ? V_LOADM(B + v * VL, m[v]) : V_LOAD(B + v * VL);
    B += ldb;
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
      vf x = V_SET1(a[i][k]);
#pragma GCC unroll 4
      for (int v = 0; v < NV; v++)
        acc[i][v] = V_FMA(x, b[v], acc[i][v]);
    }
  }
#pragma GCC unroll 8
  for (int i = 0; i < mr; i++) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++) {
      vf r = relu ? V_MAX(acc[i][v], V_ZERO()) : acc[i][v];
      if (masked)
        V_STOREM(C + (gsize)i * ldc + v * VL, r, m[v]);
      else
        V_STORE(C + (gsize)i * ldc + v * VL, r);
    }
  }
}

#define TILE_FN(R)                                                           \
  static void tile_##R(int masked, int K, const float *A, int lda,           \
                       const float *B, int ldb, float *C, int ldc,           \
                       TxlGemmInit init, const float *bias, gboolean relu,   \
                       int nvalid)                                           \
  {                                                                          \
    if (masked)                                                              \
      tile(R, 1, K, A, lda, B, ldb, C, ldc, init, bias, relu, nvalid);       \
    else                                                                     \
      tile(R, 0, K, A, lda, B, ldb, C, ldc, init, bias, relu, nvalid);       \
  }
TILE_FN(1) TILE_FN(2) TILE_FN(3) TILE_FN(4) TILE_FN(5) TILE_FN(6)
#if MR > 6
TILE_FN(7) TILE_FN(8)
#endif

typedef void (*TileFn)(int, int, const float *, int, const float *, int,
                       float *, int, TxlGemmInit, const float *, gboolean,
                       int);
static const TileFn tiles[MR + 1] = {
  NULL, tile_1, tile_2, tile_3, tile_4, tile_5, tile_6,
#if MR > 6
  tile_7, tile_8,
#endif
};

void
txl_gemm_run(const TxlGemm *g)
{
  const int np = (g->N + TXL_GEMM_NR - 1) / TXL_GEMM_NR;
  for (int p = 0; p < np; p++) {
    const int nvalid = MIN(TXL_GEMM_NR, g->N - p * TXL_GEMM_NR);
    const int masked = nvalid < TXL_GEMM_NR;
    const float *B = g->B + (gsize)p * g->panel_stride;
    const float *bias = g->bias ? g->bias + p * TXL_GEMM_NR : NULL;
    for (int i = 0; i < g->M; i += MR) {
      int mr = MIN(MR, g->M - i);
      tiles[mr](masked, g->K, g->A + (gsize)i * g->lda, g->lda, B, g->ldb,
                g->C + (gsize)i * g->ldc + p * TXL_GEMM_NR, g->ldc, g->init,
                bias, g->relu, nvalid);
    }
  }
}

#else /* no AVX2+FMA: cblas, with NR = 1 (B's "panels" are its columns) */

void
txl_gemm_run(const TxlGemm *g)
{
  if (g->M <= 0 || g->N <= 0)
    return;
  /* column j, row k of B at B[j * panel_stride + k * ldb] */
  gboolean trans = g->ldb == 1 && g->panel_stride >= (gsize)MAX(g->K, 1);
  int ldb = trans ? (int)g->panel_stride : g->ldb;
  if (g->init == TXL_GEMM_BIAS) {
    for (int i = 0; i < g->M; i++)
      memcpy(g->C + (gsize)i * g->ldc, g->bias, sizeof(float) * g->N);
  }
  cblas_sgemm(CblasRowMajor, CblasNoTrans, trans ? CblasTrans : CblasNoTrans,
              g->M, g->N, g->K, 1.0f, g->A, g->lda, g->B, ldb,
              g->init == TXL_GEMM_ZERO ? 0.0f : 1.0f, g->C, g->ldc);
  if (g->relu) {
    for (int i = 0; i < g->M; i++) {
      float *c = g->C + (gsize)i * g->ldc;
      for (int j = 0; j < g->N; j++)
        c[j] = c[j] > 0.0f ? c[j] : 0.0f;
    }
  }
}

#endif

gsize
txl_gemm_packed_floats(int n, int k)
{
  gsize np = ((gsize)n + TXL_GEMM_NR - 1) / TXL_GEMM_NR;
  return np * TXL_GEMM_NR * (gsize)k;
}

void
txl_gemm_pack_at(const float *W, int n, int k, int ldw, int first,
                 float *out)
{
  const int np = (first + n + TXL_GEMM_NR - 1) / TXL_GEMM_NR;
  for (int p = 0; p < np; p++) {
    float *panel = out + (gsize)p * TXL_GEMM_NR * k;
    for (int j = 0; j < TXL_GEMM_NR; j++) {
      int row = p * TXL_GEMM_NR + j - first;
      if (row >= 0 && row < n) {
        const float *w = W + (gsize)row * ldw;
        for (int kk = 0; kk < k; kk++)
          panel[(gsize)kk * TXL_GEMM_NR + j] = w[kk];
      } else {
        for (int kk = 0; kk < k; kk++)
          panel[(gsize)kk * TXL_GEMM_NR + j] = 0.0f;
      }
    }
  }
}

void
txl_gemm_pack(const float *W, int n, int k, int ldw, float *out)
{
  txl_gemm_pack_at(W, n, k, ldw, 0, out);
}

/* Below this many multiply-adds a product runs on the calling thread: the
 * hand-off would cost more than it saves. */
#define PAR_MIN_MACS (1 << 18)
/* columns of one slice of a large txl_gemm() (whole 16-column panels) */
#define SGEMM_SLICE 256

/* One column slice of one product of a batch: slice `slice` of `step`
 * columns. */
typedef struct {
  const TxlGemmArgs *g;
  int step, first_task;
} Slices;

typedef struct {
  const Slices *s;
  int n;
} Batch;

static void
slice_run(const TxlGemmArgs *g, int step, int slice)
{
  int a = slice * step, b = MIN(g->N, a + step);
  if (a >= b)
    return;
  const float *B = g->trans_b ? g->B + (gsize)a * g->ldb : g->B + a;
  cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
              g->trans_b ? CblasTrans : CblasNoTrans, g->M, b - a, g->K,
              g->alpha, g->A, g->lda, B, g->ldb, g->beta, g->C + a, g->ldc);
}

static void
batch_task(int t, int n_tasks, gpointer p)
{
  const Batch *bt = p;
  int i = bt->n - 1;
  while (bt->s[i].first_task > t)
    i--;
  slice_run(bt->s[i].g, bt->s[i].step, t - bt->s[i].first_task);
}

void
txl_gemm_batch(const TxlGemmArgs *g, int n)
{
  enum { MAX_BATCH = 16 };
  /* independent products: a long batch may go in groups */
  for (; n > MAX_BATCH; n -= MAX_BATCH, g += MAX_BATCH)
    txl_gemm_batch(g, MAX_BATCH);
  Slices s[MAX_BATCH];
  int tasks = 0, kept = 0;
  gboolean inner = txl_parallel_in_task();
  for (int i = 0; i < n; i++) {
    if (g[i].M <= 0 || g[i].N <= 0)
      continue;
    double macs = (double)g[i].M * g[i].N * g[i].K;
    /* The column slices depend on the shape only, never on the thread
     * count or on the other products of the batch: OpenBLAS may sum a
     * product of another width in another order (its kernels for narrow
     * products differ), so slices cut by thread count made scores and
     * training depend on TXL_NUM_THREADS in the last digits. */
    int step = macs < PAR_MIN_MACS || inner ? g[i].N : SGEMM_SLICE;
    s[kept] = (Slices){ &g[i], step, tasks };
    tasks += (g[i].N + step - 1) / step;
    kept++;
  }
  Batch bt = { s, kept };
  if (tasks <= 1 || txl_parallel_threads() <= 1) {
    for (int t = 0; t < tasks; t++)
      batch_task(t, tasks, &bt);
    return;
  }
  txl_parallel_run(tasks, batch_task, &bt);
}

void
txl_gemm(gboolean trans_a, gboolean trans_b, int M, int N, int K, float alpha,
         const float *A, int lda, const float *B, int ldb, float beta,
         float *C, int ldc)
{
  TxlGemmArgs g = { trans_a, trans_b, M, N, K, alpha, A, lda, B, ldb, beta,
                    C, ldc };
  txl_gemm_batch(&g, 1);
}

static void
par_task(int t, int n_tasks, gpointer p)
{
  const TxlGemm *g = p;
  const int np = (g->N + TXL_GEMM_NR - 1) / TXL_GEMM_NR;
  int p0 = (int)((gint64)t * np / n_tasks);
  int p1 = (int)((gint64)(t + 1) * np / n_tasks);
  if (p0 >= p1)
    return;
  TxlGemm s = *g;
  s.B = g->B + (gsize)p0 * g->panel_stride;
  s.C = g->C + (gsize)p0 * TXL_GEMM_NR;
  s.bias = g->bias ? g->bias + (gsize)p0 * TXL_GEMM_NR : NULL;
  s.N = MIN(g->N, p1 * TXL_GEMM_NR) - p0 * TXL_GEMM_NR;
  txl_gemm_run(&s);
}

void
txl_gemm_par(const TxlGemm *g)
{
  const int np = (g->N + TXL_GEMM_NR - 1) / TXL_GEMM_NR;
  double macs = (double)g->M * g->N * g->K;
  int tasks = macs < PAR_MIN_MACS ? 1 : MIN(txl_parallel_threads(), np);
  /* with NR = 1 (cblas) keep slices of whole 16-column blocks */
  if (TXL_GEMM_NR == 1)
    tasks = MIN(tasks, (g->N + 15) / 16);
  if (tasks <= 1)
    txl_gemm_run(g);
  else
    txl_parallel_run(tasks, par_task, (gpointer)g);
}

void
txl_gemm_linear(const float *x, int n, int in, const float *Wp, int out,
                float *y, int ldy, TxlGemmInit init, const float *bias,
                gboolean relu)
{
  TxlGemm g = {
    .M = n, .N = out, .K = in, .A = x, .lda = in,
    .B = Wp, .ldb = TXL_GEMM_NR, .panel_stride = (gsize)TXL_GEMM_NR * in,
    .padded = TRUE, .C = y, .ldc = ldy, .init = init, .bias = bias,
    .relu = relu,
  };
  txl_gemm_par(&g);
}

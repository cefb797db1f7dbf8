/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl_gemm() on OpenBLAS or on the tiles (txl_gemm_uses_tiles()), and
 * small-M matrix products on pre-packed right operands (see gemm.h): the
 * register-tiled kernels of gemm_tile.h where the CPU has AVX-512 or AVX2
 * (chosen at run time, cpu.h), cblas_sgemm on any other. */
#include "gemm.h"
#include "cpu.h"
#include "gemm_isa.h"
#include "parallel.h"

#include <cblas.h>
#include <string.h>

int
txl_gemm_nr(void)
{
  switch (txl_cpu_level()) {
  case TXL_CPU_AVX512:
    return TXL_GEMM_AVX512_NR;
  case TXL_CPU_AVX2:
    return TXL_GEMM_AVX2_NR;
  default:
    return 1;
  }
}

int
txl_gemm_mr(void)
{
  return txl_cpu_level() == TXL_CPU_AVX2 ? TXL_GEMM_AVX2_MR
                                         : TXL_GEMM_AVX512_MR;
}

/* Without AVX2+FMA: cblas, with NR = 1 (B's "panels" are its columns). */
static void
run_generic(const TxlGemm *g)
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
  cblas_sgemm(CblasRowMajor, g->trans_a ? CblasTrans : CblasNoTrans,
              trans ? CblasTrans : CblasNoTrans,
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

void
txl_gemm_run(const TxlGemm *g)
{
  switch (txl_cpu_level()) {
#if TXL_X86_KERNELS
  case TXL_CPU_AVX512:
    txl_gemm_run_avx512(g);
    return;
  case TXL_CPU_AVX2:
    txl_gemm_run_avx2(g);
    return;
#endif
  default:
    run_generic(g);
  }
}

gsize
txl_gemm_packed_floats(int n, int k)
{
  const int NR = txl_gemm_nr();
  gsize np = ((gsize)n + NR - 1) / NR;
  return np * NR * (gsize)k;
}

void
txl_gemm_pack_at(const float *W, int n, int k, int ldw, int first,
                 float *out)
{
  /* k in blocks, so that the part of a panel written stays in L1 while its
   * NR rows of W are read */
  enum { KB = 64 };
  const int NR = txl_gemm_nr();
  const int np = (first + n + NR - 1) / NR;
  for (int p = 0; p < np; p++) {
    float *panel = out + (gsize)p * NR * k;
    for (int k0 = 0; k0 < k; k0 += KB) {
      const int k1 = MIN(k, k0 + KB);
      for (int j = 0; j < NR; j++) {
        int row = p * NR + j - first;
        if (row >= 0 && row < n) {
          const float *w = W + (gsize)row * ldw;
          for (int kk = k0; kk < k1; kk++)
            panel[(gsize)kk * NR + j] = w[kk];
        } else {
          for (int kk = k0; kk < k1; kk++)
            panel[(gsize)kk * NR + j] = 0.0f;
        }
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

/* One thread's scratch for own_slice(): B^T packed.  Freed when the
 * thread ends (the pool's threads) or kept for the process (the
 * caller's). */
typedef struct {
  gsize floats;
  float f[];
} Scratch;

static GPrivate scratch_key = G_PRIVATE_INIT(g_free);

static float *
scratch(gsize floats)
{
  Scratch *s = g_private_get(&scratch_key);
  if (!s || s->floats < floats) {
    s = g_malloc(sizeof(Scratch) + sizeof(float) * MAX(floats, 1));
    s->floats = MAX(floats, 1);
    g_private_replace(&scratch_key, s);
  }
  return s->f;
}

/* Whether this product runs on the own tiles: the C = A'B' and C += A'B'
 * that the engine and training ask for, where txl_gemm_uses_tiles(). */
static gboolean
own_kernel_takes(const TxlGemmArgs *g)
{
  return txl_gemm_uses_tiles() && g->alpha == 1.0f &&
         (g->beta == 0.0f || g->beta == 1.0f);
}

/* Columns a..b-1 of the product on the own tiles: A is read in place,
 * transposed or not; B' in place too (row-major, masked last panel) or,
 * when it is B^T, packed into panels in scratch. */
static void
own_slice(const TxlGemmArgs *g, int a, int b)
{
  const int NR = txl_gemm_nr();
  const int n = b - a;
  TxlGemm t = {
    .M = g->M, .N = n, .K = g->K, .A = g->A, .lda = g->lda,
    .trans_a = g->trans_a, .B = g->B + a, .ldb = g->ldb,
    .panel_stride = NR, .padded = FALSE, .C = g->C + a, .ldc = g->ldc,
    .init = g->beta == 0.0f ? TXL_GEMM_ZERO : TXL_GEMM_ACC,
  };
  if (g->trans_b) {
    float *panels = scratch(txl_gemm_packed_floats(n, g->K));
    txl_gemm_pack(g->B + (gsize)a * g->ldb, n, g->K, g->ldb, panels);
    t.B = panels;
    t.ldb = NR;
    t.panel_stride = (gsize)NR * g->K;
    t.padded = TRUE;
  }
  txl_gemm_run(&t);
}

static void
slice_run(const TxlGemmArgs *g, int step, int slice)
{
  int a = slice * step, b = MIN(g->N, a + step);
  if (a >= b)
    return;
  if (own_kernel_takes(g)) {
    own_slice(g, a, b);
    return;
  }
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
  const int NR = txl_gemm_nr();
  const TxlGemm *g = p;
  const int np = (g->N + NR - 1) / NR;
  int p0 = (int)((gint64)t * np / n_tasks);
  int p1 = (int)((gint64)(t + 1) * np / n_tasks);
  if (p0 >= p1)
    return;
  TxlGemm s = *g;
  s.B = g->B + (gsize)p0 * g->panel_stride;
  s.C = g->C + (gsize)p0 * NR;
  s.bias = g->bias ? g->bias + (gsize)p0 * NR : NULL;
  s.N = MIN(g->N, p1 * NR) - p0 * NR;
  txl_gemm_run(&s);
}

void
txl_gemm_par(const TxlGemm *g)
{
  const int NR = txl_gemm_nr();
  const int np = (g->N + NR - 1) / NR;
  double macs = (double)g->M * g->N * g->K;
  int tasks = macs < PAR_MIN_MACS ? 1 : MIN(txl_parallel_threads(), np);
  /* with NR = 1 (cblas) keep slices of whole 16-column blocks */
  if (NR == 1)
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
  const int NR = txl_gemm_nr();
  TxlGemm g = {
    .M = n, .N = out, .K = in, .A = x, .lda = in,
    .B = Wp, .ldb = NR, .panel_stride = (gsize)NR * in,
    .padded = TRUE, .C = y, .ldc = ldy, .init = init, .bias = bias,
    .relu = relu,
  };
  txl_gemm_par(&g);
}

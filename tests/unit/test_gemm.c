/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/kernels/gemm.c against cblas_sgemm (in double, as the reference) over odd
 * shapes: every row count up to 70, column and depth counts that are not
 * multiples of the kernel's blocks, each way of starting C (zero, bias,
 * accumulate), ReLU, B packed or read in place, and the determinism the
 * forward pass relies on (a product's rows do not depend on M, on the
 * thread split, or on which rows are computed together), and the batch
 * of independent products that training's backward runs at once. */
#include "gemm.h"
#include "parallel.h"

#include <cblas.h>
#include <glib.h>
#include <math.h>
#include <string.h>
#include "tu_test.h"

static void
fill(float *x, gsize n, GRand *r)
{
  for (gsize i = 0; i < n; i++)
    x[i] = (float)g_rand_double_range(r, -1.0, 1.0);
}

/* Reference in double: init + A W^T (W (N, K)) or A B (B (K, N)). */
static void
reference(int M, int N, int K, const float *A, int lda, const float *B,
          gboolean bt, int ldb, const float *C0, int ldc, TxlGemmInit init,
          const float *bias, gboolean relu, double *out)
{
  for (int i = 0; i < M; i++) {
    for (int j = 0; j < N; j++) {
      double s = init == TXL_GEMM_ZERO ? 0.0
                 : init == TXL_GEMM_BIAS ? bias[j]
                                         : C0[(gsize)i * ldc + j];
      for (int k = 0; k < K; k++)
        s += (double)A[(gsize)i * lda + k] *
             (bt ? B[(gsize)j * ldb + k] : B[(gsize)k * ldb + j]);
      out[(gsize)i * N + j] = relu && s < 0.0 ? 0.0 : s;
    }
  }
}

/* max |ours - ref| over rows, relative to the sum of |terms| */
static void
check(int M, int N, int K, const float *C, int ldc, const double *ref,
      const float *A, int lda)
{
  for (int i = 0; i < M; i++) {
    double amax = 0.0;
    for (int k = 0; k < K; k++)
      amax = MAX(amax, fabs(A[(gsize)i * lda + k]));
    for (int j = 0; j < N; j++) {
      double d = fabs(C[(gsize)i * ldc + j] - ref[(gsize)i * N + j]);
      /* |terms| <= 1 each: K roundings of at most 2^-24 relative to the
       * running sum, plus the start value's */
      double tol = 1e-6 * (K * amax + 2.0);
      if (d > tol)
        g_error("M %d N %d K %d: C[%d][%d] off by %g (tol %g)", M, N, K, i, j,
                d, tol);
    }
  }
}

TU_TEST("/gemm/packed-vs-reference", test_packed_vs_reference)
{
  GRand *r = g_rand_new_with_seed(7);
  const int Ns[] = { 1, 5, txl_gemm_nr() - 1, txl_gemm_nr() + 3, 77, 130 };
  const int Ks[] = { 1, 3, 17, 64, 129 };
  for (int M = 1; M <= 70; M++) {
    for (guint a = 0; a < G_N_ELEMENTS(Ns); a++) {
      for (guint b = 0; b < G_N_ELEMENTS(Ks); b++) {
        int N = Ns[a], K = Ks[b];
        /* cover every M on a few shapes, every shape on a few M */
        if (M > 3 && M != 8 && M != 13 && M != 64 && M != 70 &&
            (a + b + M) % 7 != 0)
          continue;
        int lda = K + 3, ldc = N + 5;
        float *A = g_new(float, (gsize)M * lda);
        float *W = g_new(float, (gsize)N * K);
        float *bias = g_new(float, N);
        float *C0 = g_new(float, (gsize)M * ldc);
        float *C = g_new(float, (gsize)M * ldc);
        float *P = g_new(float, txl_gemm_packed_floats(N, K));
        double *ref = g_new(double, (gsize)M * N);
        fill(A, (gsize)M * lda, r);
        fill(W, (gsize)N * K, r);
        fill(bias, N, r);
        fill(C0, (gsize)M * ldc, r);
        txl_gemm_pack(W, N, K, K, P);
        for (int init = TXL_GEMM_ZERO; init <= TXL_GEMM_ACC; init++) {
          for (int relu = 0; relu <= 1; relu++) {
            reference(M, N, K, A, lda, W, TRUE, K, C0, ldc, init, bias, relu,
                      ref);
            memcpy(C, C0, sizeof(float) * M * ldc);
            TxlGemm g = {
              .M = M, .N = N, .K = K, .A = A, .lda = lda,
              .B = P, .ldb = txl_gemm_nr(),
              .panel_stride = (gsize)txl_gemm_nr() * K, .padded = TRUE,
              .C = C, .ldc = ldc, .init = init, .bias = bias, .relu = relu,
            };
            txl_gemm_run(&g);
            check(M, N, K, C, ldc, ref, A, lda);
            /* columns beyond N untouched */
            for (int i = 0; i < M; i++)
              for (int j = N; j < ldc; j++)
                g_assert_true(C[(gsize)i * ldc + j] == C0[(gsize)i * ldc + j]);
          }
        }
        g_free(A); g_free(W); g_free(bias); g_free(C0); g_free(C);
        g_free(P); g_free(ref);
      }
    }
  }
  g_rand_free(r);
}

/* B read in place (row-major K x N with a row stride), as attention reads
 * values and transposed keys. */
TU_TEST("/gemm/direct-b", test_direct_b)
{
  GRand *r = g_rand_new_with_seed(11);
  const int Ns[] = { 1, 7, 32, 45, 64, 100 };
  for (int M = 1; M <= 70; M += 3) {
    for (guint a = 0; a < G_N_ELEMENTS(Ns); a++) {
      int N = Ns[a], K = 1 + (M * 7 + a * 13) % 90, ldb = N + 9;
      float *A = g_new(float, (gsize)M * K);
      float *B = g_new(float, (gsize)K * ldb);
      float *C = g_new(float, (gsize)M * N);
      double *ref = g_new(double, (gsize)M * N);
      fill(A, (gsize)M * K, r);
      fill(B, (gsize)K * ldb, r);
      TxlGemm g = {
        .M = M, .N = N, .K = K, .A = A, .lda = K, .B = B, .ldb = ldb,
        .panel_stride = txl_gemm_nr(), .C = C, .ldc = N, .init = TXL_GEMM_ZERO,
      };
      txl_gemm_run(&g);
      reference(M, N, K, A, K, B, FALSE, ldb, NULL, N, TXL_GEMM_ZERO, NULL,
                FALSE, ref);
      check(M, N, K, C, N, ref, A, K);
      g_free(A); g_free(B); g_free(C); g_free(ref);
    }
  }
  g_rand_free(r);
}

/* Against cblas_sgemm itself on the forward pass's shapes. */
TU_TEST("/gemm/vs-cblas", test_vs_cblas)
{
  GRand *r = g_rand_new_with_seed(3);
  const int shapes[][3] = { { 64, 768, 256 }, { 63, 256, 1024 },
                            { 1, 1000, 300 }, { 70, 33, 65 } };
  for (guint s = 0; s < G_N_ELEMENTS(shapes); s++) {
    int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
    float *A = g_new(float, (gsize)M * K), *W = g_new(float, (gsize)N * K);
    float *C = g_new(float, (gsize)M * N), *C2 = g_new(float, (gsize)M * N);
    float *P = g_new(float, txl_gemm_packed_floats(N, K));
    fill(A, (gsize)M * K, r);
    fill(W, (gsize)N * K, r);
    txl_gemm_pack(W, N, K, K, P);
    txl_gemm_linear(A, M, K, P, N, C, N, TXL_GEMM_ZERO, NULL, FALSE);
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, M, N, K, 1.0f, A, K,
                W, K, 0.0f, C2, N);
    for (gsize i = 0; i < (gsize)M * N; i++)
      g_assert_cmpfloat(fabsf(C[i] - C2[i]), <=, 2e-6f * K);
    g_free(A); g_free(W); g_free(C); g_free(C2); g_free(P);
  }
  g_rand_free(r);
}

/* A row's result is the same bits whatever M is and whichever rows and
 * columns share the call (one thread or several, whole or split
 * segment). */
TU_TEST("/gemm/deterministic", test_deterministic)
{
  if (txl_gemm_nr() == 1) {
    /* cblas fallback: OpenBLAS picks kernels by shape, so only equal shapes
     * promise equal bits (what snapshots need) */
    g_test_skip("OpenBLAS kernel (a CPU without AVX2, or TXL_CPU=generic)");
    return;
  }
  GRand *r = g_rand_new_with_seed(5);
  const int M = 67, N = 300, K = 257;
  float *A = g_new(float, (gsize)M * K), *W = g_new(float, (gsize)N * K);
  float *bias = g_new(float, N);
  float *C = g_new(float, (gsize)M * N), *C1 = g_new(float, (gsize)M * N);
  float *P = g_new(float, txl_gemm_packed_floats(N, K));
  fill(A, (gsize)M * K, r);
  fill(W, (gsize)N * K, r);
  fill(bias, N, r);
  txl_gemm_pack(W, N, K, K, P);
  txl_gemm_linear(A, M, K, P, N, C, N, TXL_GEMM_BIAS, bias, FALSE);
  /* row by row, on the calling thread */
  for (int i = 0; i < M; i++) {
    TxlGemm g = {
      .M = 1, .N = N, .K = K, .A = A + (gsize)i * K, .lda = K,
      .B = P, .ldb = txl_gemm_nr(), .panel_stride = (gsize)txl_gemm_nr() * K,
      .padded = TRUE, .C = C1 + (gsize)i * N, .ldc = N,
      .init = TXL_GEMM_BIAS, .bias = bias,
    };
    txl_gemm_run(&g);
  }
  g_assert_cmpmem(C, sizeof(float) * M * N, C1, sizeof(float) * M * N);
  /* uneven row splits */
  for (int i0 = 0; i0 < M;) {
    int m = 1 + (i0 * 5) % 11;
    m = MIN(m, M - i0);
    txl_gemm_linear(A + (gsize)i0 * K, m, K, P, N, C1 + (gsize)i0 * N, N,
                    TXL_GEMM_BIAS, bias, FALSE);
    i0 += m;
  }
  g_assert_cmpmem(C, sizeof(float) * M * N, C1, sizeof(float) * M * N);
  g_free(A); g_free(W); g_free(bias); g_free(C); g_free(C1); g_free(P);
  g_rand_free(r);
}

/* A batch of independent products gives each the bits txl_gemm() alone
 * gives it: one-slice and many-slice products, both transposes, beta 0 and
 * 1, more products than one batch call takes at once. */
TU_TEST("/gemm/batch-same-bits", test_batch_same_bits)
{
  GRand *r = g_rand_new_with_seed(9);
  enum { NP = 19 };
  TxlGemmArgs g[NP], one[NP];
  float *bufs[3 * NP], *ref[NP];
  for (int i = 0; i < NP; i++) {
    gboolean ta = i % 2, tb = (i / 2) % 2;
    /* every fourth product is wide enough for several slices */
    int M = 16 + 37 * (i % 5), N = i % 4 == 3 ? 600 : 64 + 31 * (i % 6);
    int K = 128 + 9 * i;
    float *A = bufs[3 * i] = g_new(float, (gsize)M * K);
    float *B = bufs[3 * i + 1] = g_new(float, (gsize)K * N);
    float *C = bufs[3 * i + 2] = g_new(float, (gsize)M * N);
    fill(A, (gsize)M * K, r);
    fill(B, (gsize)K * N, r);
    fill(C, (gsize)M * N, r);
    ref[i] = g_memdup2(C, sizeof(float) * M * N);
    float beta = i % 3 == 0 ? 0.0f : 1.0f;
    g[i] = (TxlGemmArgs){ ta, tb, M, N, K, 1.0f, A, ta ? M : K, B,
                          tb ? K : N, beta, C, N };
    one[i] = g[i];
    one[i].C = ref[i];
  }
  txl_gemm_batch(g, NP);
  for (int i = 0; i < NP; i++) {
    const TxlGemmArgs *o = &one[i];
    txl_gemm(o->trans_a, o->trans_b, o->M, o->N, o->K, o->alpha, o->A,
             o->lda, o->B, o->ldb, o->beta, o->C, o->ldc);
    g_assert_cmpmem(g[i].C, sizeof(float) * o->M * o->N, o->C,
                    sizeof(float) * o->M * o->N);
    g_free(ref[i]);
  }
  for (int i = 0; i < 3 * NP; i++)
    g_free(bufs[i]);
  g_rand_free(r);
}

/* TXL_GEMM decides where txl_gemm() goes; without it, OpenBLAS's kernel
 * does (the tiles take over where it is not an AVX2 or AVX-512 one). */
TU_TEST("/gemm/path", test_path)
{
  const char *env = g_getenv("TXL_GEMM");
  if (txl_gemm_nr() == 1)
    g_assert_false(txl_gemm_uses_tiles()); /* no tiles without AVX2 */
  else if (env && strcmp(env, "tiles") == 0)
    g_assert_true(txl_gemm_uses_tiles());
  else if (env && strcmp(env, "openblas") == 0)
    g_assert_false(txl_gemm_uses_tiles());
  else {
    const char *core = openblas_get_corename();
    g_test_message("OpenBLAS kernel %s: txl_gemm on %s", core,
                   txl_gemm_uses_tiles() ? "the tiles" : "OpenBLAS");
    gboolean vector = g_regex_match_simple(
        "^(haswell|zen|skylakex|cooperlake|sapphirerapids)$", core,
        G_REGEX_CASELESS, 0);
    g_assert_cmpint(txl_gemm_uses_tiles(), ==, !vector);
  }
}

/* txl_gemm() in every form training and the engine call it: both
 * transposes, beta 0 and 1, operands with row strides wider than their
 * rows, products of one and of several column slices, K = 0; against the
 * double reference.  On the own tiles (AVX2 or AVX-512) each row's bits do
 * not depend on the rows computed with it either. */
TU_TEST("/gemm/general", test_general)
{
  GRand *r = g_rand_new_with_seed(11);
  const int shapes[][3] = { { 1, 1, 1 },     { 7, 33, 65 },
                            { 70, 300, 17 }, { 64, 600, 128 },
                            { 513, 40, 96 }, { 5, 31, 0 } };
  for (guint s = 0; s < G_N_ELEMENTS(shapes); s++) {
    for (int form = 0; form < 8; form++) {
      gboolean ta = form & 1, tb = (form >> 1) & 1;
      float beta = (form >> 2) & 1 ? 1.0f : 0.0f;
      int M = shapes[s][0], N = shapes[s][1], K = shapes[s][2];
      /* row strides 3 wider than needed: the product must not read or
       * write past a row */
      int lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 3, ldc = N + 3;
      gsize na = (gsize)(ta ? K : M) * lda, nb = (gsize)(tb ? N : K) * ldb;
      float *A = g_new(float, na + 1), *B = g_new(float, nb + 1);
      float *C = g_new(float, (gsize)M * ldc), *C1 = g_new(float, (gsize)M * ldc);
      float *At = g_new(float, (gsize)M * K + 1);
      double *ref = g_new(double, (gsize)M * N);
      fill(A, na + 1, r);
      fill(B, nb + 1, r);
      fill(C, (gsize)M * ldc, r);
      memcpy(C1, C, sizeof(float) * M * ldc);
      /* the reference reads A as M x K */
      for (int i = 0; i < M; i++)
        for (int k = 0; k < K; k++)
          At[(gsize)i * K + k] = ta ? A[(gsize)k * lda + i] : A[(gsize)i * lda + k];
      reference(M, N, K, At, K, B, tb, ldb, C, ldc,
                beta == 0.0f ? TXL_GEMM_ZERO : TXL_GEMM_ACC, NULL, FALSE, ref);
      txl_gemm(ta, tb, M, N, K, 1.0f, A, lda, B, ldb, beta, C, ldc);
      check(M, N, K, C, ldc, ref, At, K);
      for (int i = 0; i < M; i++) /* past each row: untouched */
        for (int j = N; j < ldc; j++)
          g_assert_cmpfloat(C[(gsize)i * ldc + j], ==, C1[(gsize)i * ldc + j]);
      if (txl_gemm_uses_tiles()) {
        for (int i = 0; i < M; i++)
          txl_gemm(ta, tb, 1, N, K, 1.0f, ta ? A + i : A + (gsize)i * lda, lda,
                   B, ldb, beta, C1 + (gsize)i * ldc, ldc);
        g_assert_cmpmem(C, sizeof(float) * M * ldc, C1,
                        sizeof(float) * M * ldc);
      }
      g_free(A); g_free(B); g_free(C); g_free(C1); g_free(At); g_free(ref);
    }
  }
  g_rand_free(r);
}

static void
mark(gsize lo, gsize hi, gpointer ctx)
{
  guint8 *seen = ctx;
  for (gsize i = lo; i < hi; i++)
    seen[i]++;
  /* a range starts on a multiple of the alignment asked for (16 below) */
  g_assert_cmpuint(lo % 16, ==, 0);
}

/* txl_parallel_range visits every item once, from the pool or not. */
TU_TEST("/parallel/range", test_parallel_range)
{
  const gsize ns[] = { 0, 1, 15, 16, 17, 1000, 4097, 100003 };
  for (guint a = 0; a < G_N_ELEMENTS(ns); a++) {
    for (gsize grain = 1; grain <= 4096; grain *= 8) {
      guint8 *seen = g_new0(guint8, ns[a] + 1);
      txl_parallel_range(ns[a], grain, 16, mark, seen);
      for (gsize i = 0; i < ns[a]; i++)
        g_assert_cmpuint(seen[i], ==, 1);
      g_free(seen);
    }
  }
}

TU_MAIN()

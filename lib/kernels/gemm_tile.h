/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The register-tiled product on packed panels (gemm.h), written once and
 * compiled once per instruction set: gemm_avx512.c and gemm_avx2.c include
 * this file with their own compiler flags, and gemm.c picks one at run time
 * (cpu.h).  Before including it, define TILE_AVX512 (1 or 0), TILE_NR,
 * TILE_MR and TILE_RUN, the name of the entry point.
 *
 * The micro-kernel keeps an MR x NR tile of C in registers (AVX-512: 8 rows
 * x 32 columns = 16 zmm accumulators; AVX2: 6 x 16 = 12 ymm) and, for each
 * k, loads one row of the B panel and broadcasts one element of each of the
 * MR rows of A.  Rows of A are read in place: at M = 64 the whole of A
 * stays in L2 and is reused by every panel, so copying it would only add
 * work.  A panel row (NR floats) is contiguous, and the panel (K x NR) is
 * reused by all M/MR row blocks while it is in L1/L2. */
#include "gemm.h"

#include <immintrin.h>

#if TILE_AVX512
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

#define NR TILE_NR
#define MR TILE_MR
#define NV (NR / VL) /* vectors per panel row: 2 */

/* One mr x NR tile of C over K.  mr, masked and ta are constants at every
 * call site, so the loops unroll and the accumulators live in registers.
 * masked: only the first `nvalid` columns exist (last panel).  ta: A is
 * stored transposed (element i, k at A[k * lda + i]), as training's weight
 * gradients have it: the tile's MR elements of one k are then next to each
 * other, so A is read in place either way. */
static inline __attribute__((always_inline)) void
tile(const int mr, const int masked, const int ta, int K, const float *A,
     int lda,
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
    a[i] = ta ? A + i : A + (gsize)i * lda;
  for (int k = 0; k < K; k++) {
    vf b[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; v++)
      b[v] = masked ? V_LOADM(B + v * VL, m[v]) : V_LOAD(B + v * VL);
    B += ldb;
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++) {
      vf x = V_SET1(ta ? a[i][(gsize)k * lda] : a[i][k]);
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
  static void tile_##R(int masked, int ta, int K, const float *A, int lda,   \
                       const float *B, int ldb, float *C, int ldc,           \
                       TxlGemmInit init, const float *bias, gboolean relu,   \
                       int nvalid)                                           \
  {                                                                          \
    if (ta && masked)                                                        \
      tile(R, 1, 1, K, A, lda, B, ldb, C, ldc, init, bias, relu, nvalid);    \
    else if (ta)                                                             \
      tile(R, 0, 1, K, A, lda, B, ldb, C, ldc, init, bias, relu, nvalid);    \
    else if (masked)                                                         \
      tile(R, 1, 0, K, A, lda, B, ldb, C, ldc, init, bias, relu, nvalid);    \
    else                                                                     \
      tile(R, 0, 0, K, A, lda, B, ldb, C, ldc, init, bias, relu, nvalid);    \
  }
TILE_FN(1) TILE_FN(2) TILE_FN(3) TILE_FN(4) TILE_FN(5) TILE_FN(6)
#if MR > 6
TILE_FN(7) TILE_FN(8)
#endif

typedef void (*TileFn)(int, int, int, const float *, int, const float *, int,
                       float *, int, TxlGemmInit, const float *, gboolean,
                       int);
static const TileFn tiles[MR + 1] = {
  NULL, tile_1, tile_2, tile_3, tile_4, tile_5, tile_6,
#if MR > 6
  tile_7, tile_8,
#endif
};

void
TILE_RUN(const TxlGemm *g)
{
  const int np = (g->N + NR - 1) / NR;
  for (int p = 0; p < np; p++) {
    const int nvalid = MIN(NR, g->N - p * NR);
    const int masked = nvalid < NR;
    const float *B = g->B + (gsize)p * g->panel_stride;
    const float *bias = g->bias ? g->bias + p * NR : NULL;
    for (int i = 0; i < g->M; i += MR) {
      int mr = MIN(MR, g->M - i);
      const float *A = g->trans_a ? g->A + i : g->A + (gsize)i * g->lda;
      tiles[mr](masked, g->trans_a, g->K, A, g->lda, B, g->ldb,
                g->C + (gsize)i * g->ldc + p * NR, g->ldc, g->init,
                bias, g->relu, nvalid);
    }
  }
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Single-precision matrix products: the one general product, txl_gemm(),
 * that every plain (unpacked) operand goes through, engine and training
 * alike, and the inference forward's own kernels below.
 *
 * The own kernels are tuned
 * for what a segment is: few rows (M = segment length, typically 64) times
 * weights that never change.
 *
 * At M = 64 a general sgemm spends a large share of its time re-packing the
 * weight matrix into its kernel's layout on every call (OpenBLAS: 13% of the
 * small model's time in packing, and its kernel at ~56% of peak).  Here the
 * right operand B is kept in that layout ("panels") once: the weights when
 * the model is first used, the position table when it is built.  Activations
 * (the left operand A) are read in place.
 *
 * B's panel layout: the columns of B in panels of NR (txl_gemm_nr()), panel p
 * holding K rows of NR floats (columns p*NR .. p*NR+NR-1), zero padded
 * past the last column.  A weight matrix W (out, in) as PyTorch stores it is
 * B = W^T, so txl_gemm_pack() reads W's rows as B's columns.
 *
 * Determinism: every element of C is one fused multiply-add chain over k in
 * increasing order, starting from 0, the bias or C's previous value.  So its
 * value depends on its row of A and column of B only, never on M, N, how the
 * columns are split over threads, or how rows are blocked: a segment scored
 * on one thread or two, or resumed from a snapshot, rounds identically.
 *
 * The kernel is chosen when the process starts, by what the CPU offers
 * (cpu.h): AVX-512 or AVX2 + FMA tiles (gemm_tile.h), each built with its
 * own compiler flags, so one build runs on any x86-64 CPU.  On a CPU with
 * neither the kernels are cblas_sgemm and NR is 1, so the "packed" layout is
 * W itself; then only products of equal shapes are promised equal bits
 * (OpenBLAS picks its kernels by shape), which is still what snapshot
 * resume needs.  The AVX-512 and AVX2 tiles make the same chains, so they
 * give the same bits (tests/integration/test_cpu_levels.py); OpenBLAS sums
 * in its own order, so a CPU without AVX2 scores a little differently. */
#ifndef TXL_GEMM_H
#define TXL_GEMM_H

#include <glib.h>

/* C (M x N, ldc) = alpha A' B' + beta C with A' = A or A^T and B' = B or
 * B^T, as cblas_sgemm in row-major order.  A large product is cut into
 * column slices of a fixed width, spread over the thread pool: the result
 * depends on the shape only, never on the thread count.  Called from a
 * pool task (the training attention's heads) it is one product on the
 * calling thread: the pool is busy with that task's siblings already.
 * Runs on cblas_sgemm or on the tiles below (txl_gemm_uses_tiles()). */
void txl_gemm(gboolean trans_a, gboolean trans_b, int M, int N, int K,
              float alpha, const float *A, int lda, const float *B, int ldb,
              float beta, float *C, int ldc);

/* Whether txl_gemm() runs on txl's own tiles (below) rather than
 * cblas_sgemm; chosen once per process.  OpenBLAS picks its kernel from a
 * table of CPUs it knows, and Debian 12's (0.3.21) falls back to its SSE3
 * kernel ("Prescott") on newer ones: on a 2-core AVX-512 Xeon it ran
 * training's products at a quarter of the speed of its own AVX-512 kernel
 * and made a learning round 2.3 times as long.  So where OpenBLAS's kernel
 * uses neither AVX2 nor AVX-512 and the CPU has one of them, the own tiles
 * take the products (a learning round takes 1.05 to 1.29 times as long on
 * them as on OpenBLAS's AVX-512 kernel, so not where OpenBLAS knows the
 * CPU).  TXL_GEMM=tiles or
 * openblas in the environment decides instead (tests run both; tiles
 * still need AVX2, see TXL_CPU).  Bits: the tiles make every element one
 * multiply-add chain in k order, so AVX-512 and AVX2 train alike; OpenBLAS
 * sums in its own kernel's order. */
gboolean txl_gemm_uses_tiles(void);

/* One product of txl_gemm()'s arguments. */
typedef struct {
  gboolean trans_a, trans_b;
  int M, N, K;
  float alpha;
  const float *A;
  int lda;
  const float *B;
  int ldb;
  float beta;
  float *C;
  int ldc;
} TxlGemmArgs;

/* Products that do not depend on each other (no product writes what
 * another reads or writes), at once: the slices of all of them are shared
 * over the thread pool, each sliced exactly as txl_gemm() slices it, so
 * every result has the same bits as txl_gemm() would give it, whatever the
 * thread count.  Training's backward pairs a weight gradient with the
 * input gradient this way: each is one slice at d_model 256, so alone they
 * would run one after the other on one thread. */
void txl_gemm_batch(const TxlGemmArgs *g, int n);

/* The panel width NR of the packed layout (32 with AVX-512, 16 with AVX2,
 * 1 on other CPUs, where B's "panels" are its columns) and the rows MR of
 * one tile, for the kernel this process uses (cpu.h).  Packed data is only
 * valid for the process that packed it. */
int txl_gemm_nr(void);
int txl_gemm_mr(void);

/* How C starts: zero, the bias (one float per column), or C itself. */
typedef enum {
  TXL_GEMM_ZERO,
  TXL_GEMM_BIAS,
  TXL_GEMM_ACC,
} TxlGemmInit;

/* C (M x N, ldc) = init + A (M x K, lda) B (K x N), then max(0, .) when
 * relu; with trans_a, A is stored as its transpose (K x M, lda).  B's
 * column block p (columns p*NR ..) starts at B + p * panel_stride and its
 * row k at + k * ldb; `padded` says that a partial last block may be
 * read whole (packed panels are zero padded), otherwise it is read masked.
 * Packed panels: ldb = NR, panel_stride = NR * K_total.  A row-major matrix
 * read in place: ldb = its row stride, panel_stride = NR. */
typedef struct {
  int M, N, K;
  const float *A;
  int lda;
  gboolean trans_a;
  const float *B;
  int ldb;
  gsize panel_stride;
  gboolean padded;
  float *C;
  int ldc;
  TxlGemmInit init;
  const float *bias;
  gboolean relu;
} TxlGemm;

/* Floats of the packed form of B = W^T for W (n, k). */
gsize txl_gemm_packed_floats(int n, int k);
/* Packs B = W^T, W (n rows of k floats, row stride ldw), into panels
 * (txl_gemm_packed_floats(n, k) floats). */
void txl_gemm_pack(const float *W, int n, int k, int ldw, float *out);
/* Same with W's row 0 at column `first` of B, columns before it zero
 * (txl_gemm_packed_floats(first + n, k) floats). */
void txl_gemm_pack_at(const float *W, int n, int k, int ldw, int first,
                      float *out);

/* Runs the product on the calling thread. */
void txl_gemm_run(const TxlGemm *g);
/* Runs it with B's panels split over the thread pool when large enough. */
void txl_gemm_par(const TxlGemm *g);

/* y (n, out) = init + x (n, in) W^T for W packed by txl_gemm_pack(W, out,
 * in, ...), over the thread pool.  ldy: y's row stride. */
void txl_gemm_linear(const float *x, int n, int in, const float *Wp, int out,
                     float *y, int ldy, TxlGemmInit init, const float *bias,
                     gboolean relu);

#endif

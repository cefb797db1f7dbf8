/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A small process-wide thread pool.  libtxl does its own threading and runs
 * OpenBLAS single-threaded: the products of one segment are too small for
 * OpenBLAS's own threads to pay off (attention is 3 small products per
 * head), while splitting heads, and the columns of the large products,
 * over our threads does.  Tasks of one call run concurrently; calls from
 * several threads (several streams) share the pool safely. */
#ifndef TXL_PARALLEL_H
#define TXL_PARALLEL_H

#include <glib.h>

typedef void (*TxlTaskFunc)(int task, int n_tasks, gpointer ctx);

/* Threads in use (the caller's included); at least 1. */
int txl_parallel_threads(void);
/* Runs fn(0..n_tasks-1, ...) on the pool and the calling thread, returning
 * when all have finished. */
void txl_parallel_run(int n_tasks, TxlTaskFunc fn, gpointer ctx);

/* C (M x N, ldc) = alpha A' B' + beta C with A' = A or A^T and B' = B or
 * B^T, as cblas_sgemm in row-major order.  A large product is cut into
 * column slices of a fixed width, spread over the pool: the result depends on
 * the shape only, never on the thread count. */
void txl_blas_gemm(gboolean trans_a, gboolean trans_b, int M, int N, int K,
                   float alpha, const float *A, int lda, const float *B,
                   int ldb, float beta, float *C, int ldc);
/* txl_blas_gemm with A untransposed and alpha 1 */
void txl_sgemm(gboolean trans_b, int M, int N, int K, const float *A, int lda,
               const float *B, int ldb, float beta, float *C, int ldc);

#endif

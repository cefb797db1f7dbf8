/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The per-instruction-set kernels behind txl_gemm_run() (gemm_tile.h),
 * each compiled with its own flags; call one only where txl_cpu_level()
 * says the CPU has it. */
#ifndef TXL_GEMM_ISA_H
#define TXL_GEMM_ISA_H

#include "gemm.h"

/* panel width (NR) and rows per tile (MR) of each */
#define TXL_GEMM_AVX512_NR 32
#define TXL_GEMM_AVX512_MR 8
#define TXL_GEMM_AVX2_NR 16
#define TXL_GEMM_AVX2_MR 6

void txl_gemm_run_avx512(const TxlGemm *g);
void txl_gemm_run_avx2(const TxlGemm *g);

#endif

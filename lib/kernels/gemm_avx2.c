/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tiled product for AVX2 + FMA (compiled with -mavx2 -mfma). */
#include "gemm_isa.h"

#define TILE_AVX512 0
#define TILE_NR TXL_GEMM_AVX2_NR
#define TILE_MR TXL_GEMM_AVX2_MR
#define TILE_RUN txl_gemm_run_avx2
#include "gemm_tile.h"

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The tiled product for AVX-512 F (compiled with -mavx512f -mfma). */
#include "gemm_isa.h"

#define TILE_AVX512 1
#define TILE_NR TXL_GEMM_AVX512_NR
#define TILE_MR TXL_GEMM_AVX512_MR
#define TILE_RUN txl_gemm_run_avx512
#include "gemm_tile.h"

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Which instruction set the matrix-product kernels use, chosen once per
 * process from what the CPU offers, so that one build runs on any x86-64
 * machine and still uses AVX-512 or AVX2 where they are there.
 *
 * TXL_CPU=generic|avx2|avx512 in the environment lowers the choice (tests
 * run every kernel on one machine; a user can rule a kernel out); it never
 * raises it above what the CPU offers.  Where txl_gemm() goes (the tiles or
 * OpenBLAS, gemm.h) is chosen here too, at the same time. */
#ifndef TXL_CPU_H
#define TXL_CPU_H

typedef enum {
  TXL_CPU_GENERIC, /* OpenBLAS's cblas_sgemm */
  TXL_CPU_AVX2,    /* AVX2 + FMA */
  TXL_CPU_AVX512,  /* AVX-512 F */
} TxlCpuLevel;

/* The level in use: the same for the whole process (packed weights are laid
 * out for it). */
TxlCpuLevel txl_cpu_level(void);
/* The highest level this CPU and OS offer, whatever TXL_CPU says. */
TxlCpuLevel txl_cpu_detected(void);
/* "generic", "avx2" or "avx512". */
const char *txl_cpu_level_name(TxlCpuLevel level);

/* Marks a function with hot loops that the compiler vectorises (softmax,
 * layer norm, the optimizer).  In a portable build (-Dnative=false, GCC on
 * x86-64) it is compiled for AVX-512, for AVX2 and for the baseline, and
 * the loader picks the one the CPU runs best (GCC's target_clones); in a
 * -march=native build it is a plain function. */
#if defined(TXL_CLONE_HOT) && defined(__x86_64__) && defined(__GNUC__) && \
    !defined(__clang__)
#define TXL_VECTORIZED                                                   \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3",      \
                               "default")))
#else
#define TXL_VECTORIZED
#endif

#endif

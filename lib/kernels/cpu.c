/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "cpu.h"

#include <glib.h>

static const char *const names[] = { "generic", "avx2", "avx512" };

const char *
txl_cpu_level_name(TxlCpuLevel level)
{
  return level >= TXL_CPU_GENERIC && level <= TXL_CPU_AVX512 ? names[level]
                                                              : "unknown";
}

TxlCpuLevel
txl_cpu_detected(void)
{
#if TXL_X86_KERNELS
  /* (only where the build has the kernels: lib/meson.build.)  libgcc's
   * checks include the OS: a feature counts only where XGETBV says the OS
   * saves its registers */
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f"))
    return TXL_CPU_AVX512;
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
    return TXL_CPU_AVX2;
#endif
  return TXL_CPU_GENERIC;
}

static TxlCpuLevel
choose(void)
{
  TxlCpuLevel have = txl_cpu_detected();
  const char *env = g_getenv("TXL_CPU");
  if (!env || !*env)
    return have;
  for (int l = TXL_CPU_GENERIC; l <= TXL_CPU_AVX512; l++) {
    if (g_ascii_strcasecmp(env, names[l]) == 0)
      return MIN((TxlCpuLevel)l, have);
  }
  g_warning("TXL_CPU=%s is not one of generic, avx2, avx512: using %s", env,
            names[have]);
  return have;
}

TxlCpuLevel
txl_cpu_level(void)
{
  static gsize once;
  static TxlCpuLevel level;
  if (g_once_init_enter(&once)) {
    level = choose();
    g_once_init_leave(&once, 1);
  }
  return level;
}

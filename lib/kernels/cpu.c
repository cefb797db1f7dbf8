/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "cpu.h"
#include "gemm.h"

#include <cblas.h>
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

/* OpenBLAS's kernels that use AVX2 or AVX-512 (its names, lower case). */
static gboolean
openblas_core_is_vector(const char *core)
{
  static const char *const vector_cores[] = {
    "haswell", "zen", "skylakex", "cooperlake", "sapphirerapids",
  };
  for (guint i = 0; i < G_N_ELEMENTS(vector_cores); i++) {
    if (core && g_ascii_strcasecmp(core, vector_cores[i]) == 0)
      return TRUE;
  }
  return FALSE;
}

static gboolean
choose_tiles(TxlCpuLevel level)
{
  if (level == TXL_CPU_GENERIC)
    return FALSE;
  const char *env = g_getenv("TXL_GEMM");
  if (env && g_ascii_strcasecmp(env, "tiles") == 0)
    return TRUE;
  if (env && g_ascii_strcasecmp(env, "openblas") == 0)
    return FALSE;
  if (env && *env)
    g_warning("TXL_GEMM=%s is not one of tiles, openblas: choosing by CPU",
              env);
  return !openblas_core_is_vector(openblas_get_corename());
}

/* What this process's kernels are, chosen once: packed weights are laid
 * out for the level, and a product's bits depend on where it runs. */
typedef struct {
  TxlCpuLevel level;
  gboolean tiles;
} Choice;

static const Choice *
choice(void)
{
  static gsize once;
  static Choice c;
  if (g_once_init_enter(&once)) {
    c.level = choose();
    c.tiles = choose_tiles(c.level);
    g_once_init_leave(&once, 1);
  }
  return &c;
}

TxlCpuLevel
txl_cpu_level(void)
{
  return choice()->level;
}

gboolean
txl_gemm_uses_tiles(void)
{
  return choice()->tiles;
}

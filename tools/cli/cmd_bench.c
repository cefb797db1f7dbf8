/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txl bench: scoring throughput, and how it compares with this machine's
 * sgemm peak measured in the same run (shared machines are noisy, so only
 * ratios taken together mean anything). */
#include "cmd.h"
#include "txl_kernels.h"
#include "txl.h"

#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>

static double
now(void)
{
  return g_get_monotonic_time() / 1e6;
}

/* c = a b for n x n matrices, b as the product wants it. */
typedef void (*SquareProduct)(int n, const float *a, const float *b,
                              float *c);

/* The best GFLOP/s of a square product over at least three runs and at
 * least `seconds`, on fixed inputs in [-0.5, 0.5); pack (may be NULL)
 * turns the right operand into what product takes. */
static double
best_gflops(SquareProduct product, float *(*pack)(int n, const float *b),
            int n, double seconds)
{
  float *a = g_new(float, (gsize)n * n), *b = g_new(float, (gsize)n * n),
        *c = g_new0(float, (gsize)n * n);
  for (gsize i = 0; i < (gsize)n * n; i++) {
    a[i] = (float)((i * 7919) % 1000) / 1000.0f - 0.5f;
    b[i] = (float)((i * 104729) % 1000) / 1000.0f - 0.5f;
  }
  float *bp = pack ? pack(n, b) : b;
  double best = 0.0, t_end = now() + seconds;
  int runs = 0;
  while (runs < 3 || now() < t_end) {
    double t0 = now();
    product(n, a, bp, c);
    double g = 2.0 * n * n * (double)n / (now() - t0) / 1e9;
    best = g > best ? g : best;
    runs++;
  }
  if (bp != b)
    g_free(bp);
  g_free(a);
  g_free(b);
  g_free(c);
  return best;
}

static void
blas_product(int n, const float *a, const float *b, float *c)
{
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, n, n, n, 1.0f, a, n,
              b, n, 0.0f, c, n);
}

/* Best of several runs of a square sgemm: the machine's practical peak. */
static double
sgemm_peak_gflops(int n, double seconds)
{
  return best_gflops(blas_product, NULL, n, seconds);
}

static float *
own_pack(int n, const float *w)
{
  float *wp = g_new(float, txl_gemm_packed_floats(n, n));
  txl_gemm_pack(w, n, n, n, wp);
  return wp;
}

static void
own_product(int n, const float *a, const float *wp, float *c)
{
  txl_gemm_linear(a, n, n, wp, n, c, n, TXL_GEMM_ZERO, NULL, FALSE);
}

/* The same square product on our own kernels (lib/kernels/gemm.c, weights packed
 * once), over libtxl's thread pool: on a machine where they outrun the
 * BLAS (OpenBLAS held to its AVX2 kernels on an AVX-512 CPU), they set the
 * practical peak, and a ratio to the BLAS alone would exceed 100%. */
static double
own_gemm_peak_gflops(int n, double seconds)
{
  return best_gflops(own_product, own_pack, n, seconds);
}

/* FLOPs of one segment: as this engine executes it (all_rows: hidden
 * memory, re-projected each segment; else only the segment's own rows), or
 * (recompute) as the official code does, which also re-projects W_R R. */
static double
segment_flops(const TxlConfig *c, int n, int mlen, gboolean all_rows,
              gboolean recompute)
{
  double d = c->d_model, HD = (double)c->n_head * c->d_head;
  double klen = mlen + n, rows = all_rows || recompute ? klen : n;
  double per_layer = 2 * rows * d * 3 * HD      /* q, k, v */
                     + 3 * 2 * n * klen * HD     /* content, position, values */
                     + 2 * n * HD * d            /* output projection */
                     + 2 * 2 * n * d * c->d_inner; /* feed-forward */
  if (recompute)
    per_layer += 2 * klen * d * HD; /* W_R R, every segment */
  double head = c->n_cutoffs ? c->cutoffs[0] + c->n_cutoffs : c->n_token;
  double out = 2 * n * c->d_embed * head;
  if (c->d_embed != c->d_model)
    out += 2 * n * c->d_model * c->d_embed;
  return c->n_layer * per_layer + out;
}

int
txl_cmd_bench(int argc, char **argv)
{
  g_autofree char *model_path = NULL;
  int segment = 0, mem_len = -1, segments = 0, threads = 0, peak_n = 1024;
  gboolean json = FALSE;
  g_autofree char *memory = NULL;
  GOptionEntry entries[] = {
    { "model", 'm', 0, G_OPTION_ARG_FILENAME, &model_path, "Model file (default: the bundled model, or TXL_MODEL)", "MODEL" },
    { "segment", 0, 0, G_OPTION_ARG_INT, &segment, "Segment length (default: tgt_len)", "N" },
    { "mem-len", 0, 0, G_OPTION_ARG_INT, &mem_len, "Memory length (default: the model's)", "N" },
    { "segments", 0, 0, G_OPTION_ARG_INT, &segments,
      "Timed segments after the memory is full (default: about 3 s worth)", "N" },
    { "threads", 0, 0, G_OPTION_ARG_INT, &threads,
      "libtxl threads (default: TXL_NUM_THREADS, else all cores)", "N" },
    { "peak-size", 0, 0, G_OPTION_ARG_INT, &peak_n, "Matrix size of the sgemm peak run (default 1024)", "N" },
    { "memory", 0, 0, G_OPTION_ARG_STRING, &memory, "kv (default) or hidden", "KIND" },
    { "json", 0, 0, G_OPTION_ARG_NONE, &json, "Print one JSON object", NULL },
    { NULL },
  };
  g_autoptr(GOptionContext) ctx = txl_cmd_options("",
    "Measure scoring tokens/s with full memory, the GFLOPS achieved, and\n"
    "their ratio to this machine's sgemm peak measured in the same run.",
    entries);
  if (!txl_cmd_parse("txl bench", ctx, &model_path, &argc, &argv))
    return 2;
  /* the peak run holds three N x N matrices of floats: 4096 is 192 MiB */
  if (peak_n < 16 || peak_n > 4096 || segments < 0 || threads < 0 ||
      threads > 256) {
    fprintf(stderr, "txl bench: --peak-size takes 16 to 4096, --segments a "
                    "count >= 0 (0: about 3 s worth), --threads 0 to 256\n");
    return 2;
  }
  g_autoptr(GError) err = NULL;
  gboolean hidden = memory && !strcmp(memory, "hidden");
  if (memory && !hidden && strcmp(memory, "kv") != 0) {
    fprintf(stderr, "txl bench: --memory takes kv or hidden\n");
    return 2;
  }
  if (threads > 0) {
    g_autofree char *t = g_strdup_printf("%d", threads);
    g_setenv("TXL_NUM_THREADS", t, TRUE); /* read when the pool starts */
  }
  TxlModel *m = txl_cmd_load_model("txl bench", model_path);
  if (!m)
    return 1;
  const TxlConfig *c = txl_model_config(m);
  int seg = segment > 0 ? segment : c->tgt_len;
  TxlStreamOptions o = { mem_len, -1, -1, seg,
                         hidden ? TXL_MEMORY_HIDDEN : TXL_MEMORY_KV };
  TxlStream *s = txl_stream_new(m, &o, &err);
  if (!s) {
    fprintf(stderr, "txl bench: %s\n", err->message);
    txl_model_unref(m);
    return 1;
  }
  int ml = txl_stream_mem_len(s);
  int32_t *in = g_new(int32_t, seg), *tg = g_new(int32_t, seg);
  float *lp = g_new(float, seg);
  GRand *r = g_rand_new_with_seed(1234);
  /* warm up: fill the memory so every timed segment sees full length */
  int warm = ml / seg + 2;
  for (int i = 0; i < warm; i++) {
    for (int j = 0; j < seg; j++) {
      in[j] = g_rand_int_range(r, 0, c->n_token);
      tg[j] = g_rand_int_range(r, 0, c->n_token);
    }
    txl_stream_forward(s, in, seg, tg, lp, NULL);
  }
  int mlen = txl_stream_mem_used(s);
  double t0 = now(), elapsed;
  int done = 0;
  for (;;) {
    for (int j = 0; j < seg; j++) {
      in[j] = g_rand_int_range(r, 0, c->n_token);
      tg[j] = g_rand_int_range(r, 0, c->n_token);
    }
    txl_stream_forward(s, in, seg, tg, lp, NULL);
    done++;
    elapsed = now() - t0;
    if (segments > 0 ? done >= segments : (elapsed >= 3.0 && done >= 3))
      break;
  }
  double tps = (double)done * seg / elapsed;
  double flops = segment_flops(c, seg, mlen, hidden, FALSE);
  double gflops = flops * done / elapsed / 1e9;
  double naive = segment_flops(c, seg, mlen, TRUE, TRUE) * done / elapsed / 1e9;
  int nthreads = txl_num_threads();
  /* the machine's peak: OpenBLAS on as many threads as libtxl used (libtxl
   * itself keeps OpenBLAS single-threaded inside its own pool) */
  openblas_set_num_threads(nthreads);
  double blas_peak = sgemm_peak_gflops(peak_n, 2.0);
  openblas_set_num_threads(1);
  double own_peak = own_gemm_peak_gflops(peak_n, 2.0);
  double peak = MAX(blas_peak, own_peak);
  if (json) {
    printf("{\"tokens_per_s\": %.1f, \"gflops\": %.2f, \"gflops_recompute_equiv\": %.2f, "
           "\"sgemm_peak_gflops\": %.2f, \"blas_peak_gflops\": %.2f, "
           "\"own_gemm_peak_gflops\": %.2f, \"peak_ratio\": %.3f, \"segment\": %d, "
           "\"mem_len\": %d, \"segments\": %d, \"threads\": %d, \"memory\": \"%s\", "
           "\"state_bytes\": %zu, \"kernel\": \"%s\", \"cpu\": \"%s\", "
           "\"gemm\": \"%s\", \"openblas_core\": \"%s\"}\n",
           tps, gflops, naive, peak, blas_peak, own_peak, gflops / peak, seg, ml,
           done, nthreads,
           hidden ? "hidden" : "kv", txl_stream_state_bytes(s),
           txl_cpu_level_name(txl_cpu_level()),
           txl_cpu_level_name(txl_cpu_detected()),
           txl_gemm_uses_tiles() ? "tiles" : "openblas",
           openblas_get_corename());
  } else {
    printf("model        %s (d_model %d, %d layers, %d heads, d_inner %d, vocab %d)\n",
           model_path, c->d_model, c->n_layer, c->n_head, c->d_inner, c->n_token);
    printf("setting      segment %d, mem_len %d, %s memory (%.1f MiB of state), "
           "%d threads, %d segments timed\n", seg, ml,
           hidden ? "hidden" : "kv", txl_stream_state_bytes(s) / 1048576.0,
           nthreads, done);
    if (txl_cpu_level() == txl_cpu_detected())
      printf("kernel       %s (the best this CPU offers)\n",
             txl_cpu_level_name(txl_cpu_level()));
    else
      printf("kernel       %s (TXL_CPU; this CPU offers %s)\n",
             txl_cpu_level_name(txl_cpu_level()),
             txl_cpu_level_name(txl_cpu_detected()));
    /* training's products and the engine's unpacked ones (gemm.h) */
    printf("products     %s (OpenBLAS's kernel on this CPU: %s)\n",
           txl_gemm_uses_tiles() ? "txl's tiles" : "OpenBLAS",
           openblas_get_corename());
    printf("throughput   %.1f tokens/s\n", tps);
    printf("achieved     %.2f GFLOPS executed (%.2f GFLOPS counting the work the "
           "official code does)\n", gflops, naive);
    printf("sgemm peak   %.2f GFLOPS: the better of OpenBLAS (%.2f) and our own "
           "kernel (%.2f), %dx%d, %d threads, same run\n", peak, blas_peak,
           own_peak, peak_n, peak_n, nthreads);
    printf("ratio        %.1f%% of the sgemm peak\n", 100.0 * gflops / peak);
  }
  g_rand_free(r);
  g_free(in);
  g_free(tg);
  g_free(lp);
  txl_stream_free(s);
  txl_model_unref(m);
  return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "model_check.h"
#include "gemm.h"
#include "ops.h"
#include "parallel.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- the memory budget -------------------------------------------------- */

guint64
txl_stream_scratch_floats(const TxlModel *m, int seg, guint64 klen,
                          gboolean hidden, int slots)
{
  const TxlConfig *c = &m->cfg;
  const guint64 d = c->d_model, HD = (guint64)c->n_head * c->d_head;
  const guint64 S = seg;
  /* hidden memory projects all klen rows each segment: wider scratch */
  const guint64 QR = hidden ? klen : S;
  const guint64 attn =
      (guint64)slots * txl_attn_scratch_floats(seg, (int)klen, c->d_head);
  return 2 * S * d + QR * d + QR * 3 * HD + attn + S * HD + S * c->d_inner +
         S * (c->d_embed + d) + txl_out_scratch_floats(m, seg) + d +
         (hidden ? klen * HD : 0);
}

void
txl_stream_cost(const TxlModel *m, int mem_len, int seg, gboolean hidden,
                TxlStreamCost *cost)
{
  const TxlConfig *c = &m->cfg;
  const guint64 L = c->n_layer, d = c->d_model, H = c->n_head;
  const guint64 HD = H * c->d_head, K = (guint64)mem_len + seg;
  const int slots = MIN(txl_parallel_threads(), c->n_head);
  cost->memory = 4 * L * K * (hidden ? d : 2 * HD);
  cost->scratch = 4 * txl_stream_scratch_floats(m, seg, K, hidden, slots) +
                  sizeof(int) * (guint64)seg;
  /* as lib/engine/model.c builds them: per layer and head a packed (K, d_head)
   * block, and while building, R for every key and its projection */
  const int NR = txl_gemm_nr(), pad = (int)((NR - K % NR) % NR);
  cost->positions =
      4 * (L * H * txl_gemm_packed_floats(pad + (int)K, c->d_head) +
           K * (d + HD));
  const guint64 di = c->d_inner;
  cost->packed = 4 * L *
                 (txl_gemm_packed_floats(3 * (int)HD, (int)d) +
                  txl_gemm_packed_floats((int)d, (int)HD) +
                  txl_gemm_packed_floats((int)di, (int)d) +
                  txl_gemm_packed_floats((int)d, (int)di));
}

static guint64
weight_bytes(const TxlModel *m)
{
  guint64 n = 0;
  if (m->file) {
    for (gsize i = 0; i < gguf_n_tensors(m->file); i++)
      n += gguf_tensor_at(m->file, i)->nbytes;
    return n;
  }
  /* a view over weights held elsewhere (training): the layers, the
   * embedding and the output layer */
  const TxlConfig *c = &m->cfg;
  const guint64 d = c->d_model, HD = (guint64)c->n_head * c->d_head;
  n = (guint64)c->n_layer * (4 * HD * d + 2 * d * c->d_inner);
  return 4 * (n + 2 * (guint64)c->n_token * c->d_embed);
}

gboolean
txl_memory_limit_get(guint64 *limit, GError **error)
{
  const char *env = g_getenv(TXL_MEMORY_LIMIT_ENV);
  *limit = 0;
  if (!env || !*env)
    return TRUE;
  char *end = NULL;
  errno = 0;
  guint64 v = g_ascii_strtoull(env, &end, 10);
  int shift = 0;
  switch (*end) {
  case 'k': case 'K': shift = 10; end++; break;
  case 'm': case 'M': shift = 20; end++; break;
  case 'g': case 'G': shift = 30; end++; break;
  case 't': case 'T': shift = 40; end++; break;
  default: break;
  }
  if (errno || end == env || *end || v == 0 || v > (G_MAXUINT64 >> 40)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                TXL_MEMORY_LIMIT_ENV "='%s' is not a size in bytes (an "
                "integer > 0 with an optional K, M, G or T suffix, e.g. 8G)",
                env);
    return FALSE;
  }
  *limit = v << shift;
  return TRUE;
}

/* TXL_MEMORY_LIMIT, or the default for this model; *how says which, for
 * messages. */
static gboolean
memory_limit(const TxlModel *m, guint64 *limit, char **how, GError **error)
{
  if (!txl_memory_limit_get(limit, error))
    return FALSE;
  if (*limit) {
    *how = g_strdup(TXL_MEMORY_LIMIT_ENV);
    return TRUE;
  }
  guint64 w = weight_bytes(m);
  *limit = TXL_MEMORY_BASE + 2 * w;
  *how = g_strdup_printf("the default, 256 MiB plus twice the %.1f MiB of "
                         "weights", w / 1048576.0);
  return TRUE;
}

gboolean
txl_stream_cost_check(const TxlModel *m, const TxlStreamCost *cost,
                      const char *what, GError **error)
{
  guint64 limit;
  g_autofree char *how = NULL;
  if (!memory_limit(m, &limit, &how, error))
    return FALSE;
  const guint64 total =
      cost->memory + cost->scratch + cost->positions + cost->packed;
  if (total <= limit)
    return TRUE;
  const double MiB = 1048576.0;
  g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
              "%s need %.1f MiB per stream (memory %.1f, scratch %.1f, "
              "position tables %.1f, packed weights %.1f MiB), over the "
              "limit of %.1f MiB (%s); set " TXL_MEMORY_LIMIT_ENV
              " (e.g. " TXL_MEMORY_LIMIT_ENV "=%" G_GUINT64_FORMAT
              "G) to allow more", what, total / MiB, cost->memory / MiB,
              cost->scratch / MiB, cost->positions / MiB, cost->packed / MiB,
              limit / MiB, how, (total >> 30) + 1);
  return FALSE;
}

gboolean
txl_model_check_budget(const TxlModel *m, GError **error)
{
  const TxlConfig *c = &m->cfg;
  TxlStreamCost cost;
  txl_stream_cost(m, c->mem_len, c->tgt_len, FALSE, &cost);
  g_autofree char *what = g_strdup_printf(
      "txl.mem_len = %d and txl.tgt_len = %d", c->mem_len, c->tgt_len);
  return txl_stream_cost_check(m, &cost, what, error);
}

/* ---- finite weights ----------------------------------------------------- */

gboolean
txl_model_check_finite(const GgufFile *f, GError **error)
{
  for (gsize i = 0; i < gguf_n_tensors(f); i++) {
    const GgufTensor *t = gguf_tensor_at(f, i);
    if (t->type != GGUF_TENSOR_F32 || ((uintptr_t)t->data & 3) != 0)
      continue; /* the loader refuses those with its own message */
    const float *v = t->data;
    gint64 at = txl_first_nonfinite(v, t->nbytes / sizeof(float));
    if (at >= 0) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "tensor '%s' holds %s at index %" G_GINT64_FORMAT
                  " (the file is corrupt, or training diverged); weights "
                  "must be finite", t->name, isnan(v[at]) ? "NaN" : v[at] > 0 ? "inf" : "-inf",
                  at);
      return FALSE;
    }
  }
  return TRUE;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <string.h>

G_DEFINE_QUARK(txl-error-quark, txl_error)

void
txl_config_init_default(TxlConfig *cfg)
{
  memset(cfg, 0, sizeof *cfg);
  cfg->n_token = 267735;
  cfg->d_model = 1024;
  cfg->d_embed = 1024;
  cfg->n_head = 16;
  cfg->d_head = 64;
  cfg->d_inner = 4096;
  cfg->n_layer = 18;
  cfg->mem_len = 1600;
  cfg->tgt_len = 128;
  cfg->clamp_len = 1000;
  cfg->same_length = TRUE;
  cfg->pre_lnorm = FALSE;
  cfg->untie_r = TRUE;
  cfg->tie_weight = TRUE;
  cfg->div_val = 4;
  cfg->n_cutoffs = 3;
  cfg->cutoffs[0] = 20000;
  cfg->cutoffs[1] = 40000;
  cfg->cutoffs[2] = 200000;
  cfg->tie_projs[0] = FALSE;
  cfg->tie_projs[1] = cfg->tie_projs[2] = cfg->tie_projs[3] = TRUE;
  cfg->layer_norm_eps = 1e-5f;
  cfg->cluster_order = TXL_CLUSTER_HF;
}

void
txl_config_cluster_ends(const TxlConfig *cfg, int *ends)
{
  ends[0] = 0;
  for (int i = 0; i < cfg->n_cutoffs; i++)
    ends[i + 1] = cfg->cutoffs[i];
  ends[cfg->n_cutoffs + 1] = cfg->n_token;
}

int
txl_config_cluster_dim(const TxlConfig *cfg, int k)
{
  int d = cfg->d_embed;
  for (int i = 0; i < k; i++)
    d /= cfg->div_val;
  return d;
}

#define LIMIT_DIM (1 << 20)     /* no hidden size beyond a million */
#define LIMIT_TOKENS (1 << 26)  /* vocabulary */
#define LIMIT_LEN (1 << 20)     /* mem_len, tgt_len, clamp_len */

static gboolean
check_range(const char *name, long long v, long long lo, long long hi,
            GError **error)
{
  if (v < lo || v > hi) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "config: %s = %lld is out of range [%lld, %lld]", name, v, lo,
                hi);
    return FALSE;
  }
  return TRUE;
}

gboolean
txl_config_validate(const TxlConfig *c, GError **error)
{
  if (!check_range("n_token", c->n_token, 1, LIMIT_TOKENS, error) ||
      !check_range("d_model", c->d_model, 1, LIMIT_DIM, error) ||
      !check_range("d_embed", c->d_embed, 1, LIMIT_DIM, error) ||
      !check_range("n_head", c->n_head, 1, 4096, error) ||
      !check_range("d_head", c->d_head, 1, LIMIT_DIM, error) ||
      !check_range("d_inner", c->d_inner, 1, LIMIT_DIM * 4LL, error) ||
      !check_range("n_layer", c->n_layer, 1, 1024, error) ||
      !check_range("mem_len", c->mem_len, 0, LIMIT_LEN, error) ||
      !check_range("tgt_len", c->tgt_len, 1, LIMIT_LEN, error) ||
      !check_range("clamp_len", c->clamp_len, 0, LIMIT_LEN, error) ||
      !check_range("div_val", c->div_val, 1, 1 << 16, error) ||
      !check_range("n_head * d_head", (long long)c->n_head * c->d_head, 1,
                   LIMIT_DIM * 4LL, error) ||
      !check_range("cutoffs (count)", c->n_cutoffs, 0, TXL_MAX_CUTOFFS, error))
    return FALSE;
  if (!(c->layer_norm_eps > 0.0f && c->layer_norm_eps < 1.0f)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "config: layer_norm_eps = %g must be in (0, 1)",
                (double)c->layer_norm_eps);
    return FALSE;
  }
  if (c->d_model % 2 != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "config: d_model = %d must be even (sinusoidal positions)",
                c->d_model);
    return FALSE;
  }
  int prev = 0;
  for (int i = 0; i < c->n_cutoffs; i++) {
    if (c->cutoffs[i] <= prev || c->cutoffs[i] >= c->n_token) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "config: cutoffs[%d] = %d must be > %d and < n_token = %d",
                  i, c->cutoffs[i], prev, c->n_token);
      return FALSE;
    }
    prev = c->cutoffs[i];
  }
  if (c->div_val > 1) {
    for (int k = 0; k <= c->n_cutoffs; k++) {
      if (txl_config_cluster_dim(c, k) < 1) {
        g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                    "config: d_embed = %d / div_val = %d ^ %d is below 1",
                    c->d_embed, c->div_val, k);
        return FALSE;
      }
    }
  }
  /* a file's default lengths decide what a stream allocates before anyone
   * chose them: keep the attention scratch they imply under 1 GiB */
  if ((gint64)c->tgt_len * ((gint64)c->mem_len + c->tgt_len) > (1 << 28)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "config: tgt_len = %d with mem_len = %d asks for more than "
                "2^28 attention scores per head (callers may still choose "
                "longer lengths per stream)", c->tgt_len, c->mem_len);
    return FALSE;
  }
  if (c->cluster_order != TXL_CLUSTER_HF &&
      c->cluster_order != TXL_CLUSTER_OFFICIAL) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "config: unknown cluster_order %d", (int)c->cluster_order);
    return FALSE;
  }
  return TRUE;
}

static gboolean
get_int(const GgufFile *f, const char *key, int lo, gint64 hi, int *out,
        GError **error)
{
  gint64 v;
  if (!gguf_get_int(f, key, lo, hi, &v, error))
    return FALSE;
  *out = (int)v;
  return TRUE;
}

gboolean
txl_config_read_gguf(const GgufFile *f, TxlConfig *cfg, GError **error)
{
  memset(cfg, 0, sizeof *cfg);
  g_autofree char *arch = gguf_get_string(f, "general.architecture", error);
  if (!arch)
    return FALSE;
  if (strcmp(arch, TXL_ARCH) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "general.architecture is '%s', expected '" TXL_ARCH "'", arch);
    return FALSE;
  }
  int version;
  if (!get_int(f, "txl.format_version", 1, G_MAXINT32, &version, error))
    return FALSE;
  if (version > TXL_FORMAT_VERSION) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "txl.format_version %d is newer than this reader (%d)",
                version, TXL_FORMAT_VERSION);
    return FALSE;
  }
  struct { const char *key; int *dst; int lo; gint64 hi; } ints[] = {
    { "txl.n_token", &cfg->n_token, 1, LIMIT_TOKENS },
    { "txl.d_model", &cfg->d_model, 1, LIMIT_DIM },
    { "txl.d_embed", &cfg->d_embed, 1, LIMIT_DIM },
    { "txl.n_head", &cfg->n_head, 1, 4096 },
    { "txl.d_head", &cfg->d_head, 1, LIMIT_DIM },
    { "txl.d_inner", &cfg->d_inner, 1, LIMIT_DIM * 4LL },
    { "txl.n_layer", &cfg->n_layer, 1, 1024 },
    { "txl.mem_len", &cfg->mem_len, 0, LIMIT_LEN },
    { "txl.tgt_len", &cfg->tgt_len, 1, LIMIT_LEN },
    { "txl.clamp_len", &cfg->clamp_len, 0, LIMIT_LEN },
    { "txl.div_val", &cfg->div_val, 1, 1 << 16 },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(ints); i++)
    if (!get_int(f, ints[i].key, ints[i].lo, ints[i].hi, ints[i].dst, error))
      return FALSE;
  struct { const char *key; gboolean *dst; } bools[] = {
    { "txl.same_length", &cfg->same_length },
    { "txl.pre_lnorm", &cfg->pre_lnorm },
    { "txl.untie_r", &cfg->untie_r },
    { "txl.tie_weight", &cfg->tie_weight },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(bools); i++)
    if (!gguf_get_bool(f, bools[i].key, bools[i].dst, error))
      return FALSE;

  g_autofree gint64 *cut = NULL;
  gsize n_cut = 0;
  if (!gguf_get_int_array(f, "txl.cutoffs", &cut, &n_cut, error))
    return FALSE;
  if (n_cut > TXL_MAX_CUTOFFS) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "txl.cutoffs has %zu entries, at most %d are supported", n_cut,
                TXL_MAX_CUTOFFS);
    return FALSE;
  }
  cfg->n_cutoffs = (int)n_cut;
  for (gsize i = 0; i < n_cut; i++) {
    if (cut[i] <= 0 || cut[i] >= cfg->n_token) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "txl.cutoffs[%zu] = %" G_GINT64_FORMAT
                  " must lie in (0, n_token)", i, cut[i]);
      return FALSE;
    }
    cfg->cutoffs[i] = (int)cut[i];
  }
  g_autofree gboolean *tp = NULL;
  gsize n_tp = 0;
  if (!gguf_get_bool_array(f, "txl.tie_projs", &tp, &n_tp, error))
    return FALSE;
  if (n_tp != n_cut + 1) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "txl.tie_projs has %zu entries, expected len(cutoffs)+1 = %zu",
                n_tp, n_cut + 1);
    return FALSE;
  }
  for (gsize i = 0; i < n_tp; i++)
    cfg->tie_projs[i] = tp[i];
  double eps;
  if (!gguf_get_float(f, "txl.layer_norm_eps", &eps, error))
    return FALSE;
  cfg->layer_norm_eps = (float)eps;
  g_autofree char *order = gguf_get_string(f, "txl.cluster_order", error);
  if (!order)
    return FALSE;
  if (strcmp(order, "hf") == 0)
    cfg->cluster_order = TXL_CLUSTER_HF;
  else if (strcmp(order, "official") == 0)
    cfg->cluster_order = TXL_CLUSTER_OFFICIAL;
  else {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "txl.cluster_order is '%s', expected 'hf' or 'official'",
                order);
    return FALSE;
  }
  return txl_config_validate(cfg, error);
}

void
txl_config_write_gguf(const TxlConfig *c, GgufWriter *w)
{
  gguf_writer_add_string(w, "general.architecture", TXL_ARCH);
  gguf_writer_add_u32(w, "txl.format_version", TXL_FORMAT_VERSION);
  gguf_writer_add_u32(w, "txl.n_token", c->n_token);
  gguf_writer_add_u32(w, "txl.d_model", c->d_model);
  gguf_writer_add_u32(w, "txl.d_embed", c->d_embed);
  gguf_writer_add_u32(w, "txl.n_head", c->n_head);
  gguf_writer_add_u32(w, "txl.d_head", c->d_head);
  gguf_writer_add_u32(w, "txl.d_inner", c->d_inner);
  gguf_writer_add_u32(w, "txl.n_layer", c->n_layer);
  gguf_writer_add_u32(w, "txl.mem_len", c->mem_len);
  gguf_writer_add_u32(w, "txl.tgt_len", c->tgt_len);
  gguf_writer_add_u32(w, "txl.clamp_len", c->clamp_len);
  gguf_writer_add_bool(w, "txl.same_length", c->same_length);
  gguf_writer_add_bool(w, "txl.pre_lnorm", c->pre_lnorm);
  gguf_writer_add_bool(w, "txl.untie_r", c->untie_r);
  gguf_writer_add_bool(w, "txl.tie_weight", c->tie_weight);
  gguf_writer_add_u32(w, "txl.div_val", c->div_val);
  uint32_t cut[TXL_MAX_CUTOFFS];
  for (int i = 0; i < c->n_cutoffs; i++)
    cut[i] = (uint32_t)c->cutoffs[i];
  gguf_writer_add_u32_array(w, "txl.cutoffs", cut, c->n_cutoffs);
  gguf_writer_add_bool_array(w, "txl.tie_projs", c->tie_projs,
                             c->n_cutoffs + 1);
  gguf_writer_add_f32(w, "txl.layer_norm_eps", c->layer_norm_eps);
  gguf_writer_add_string(w, "txl.cluster_order",
                         c->cluster_order == TXL_CLUSTER_OFFICIAL ? "official"
                                                                   : "hf");
}

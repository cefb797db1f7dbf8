/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Loading a model file: config, tokenizer, and every weight checked
 * against the config, then used in place from the read-only mapping. */
#include "model_internal.h"
#include "gemm.h"
#include "model_check.h"
#include "ops.h"

#include <string.h>

typedef struct {
  const GgufFile *f;
  GHashTable *used;
  GError **error;
} Loader;

/* rows == 0: a vector of cols */
static const float *
tensor(Loader *ld, const char *name, gint64 rows, gint64 cols)
{
  const GgufTensor *t = gguf_find_tensor(ld->f, name);
  if (!t) {
    g_set_error(ld->error, TXL_ERROR, TXL_ERROR_FORMAT,
                "missing tensor '%s'", name);
    return NULL;
  }
  if (t->type != GGUF_TENSOR_F32) {
    g_set_error(ld->error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "tensor '%s' has ggml type %u; only F32 weights are supported",
                name, t->type);
    return NULL;
  }
  gboolean ok = rows == 0
                  ? (t->n_dims == 1 && (gint64)t->ne[0] == cols)
                  : (t->n_dims == 2 && (gint64)t->ne[0] == cols &&
                     (gint64)t->ne[1] == rows);
  if (!ok) {
    g_autoptr(GString) got = g_string_new("(");
    for (int i = (int)t->n_dims - 1; i >= 0; i--)
      g_string_append_printf(got, "%s%" G_GUINT64_FORMAT,
                             i == (int)t->n_dims - 1 ? "" : ", ", t->ne[i]);
    g_string_append(got, ")");
    if (rows == 0)
      g_set_error(ld->error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "tensor '%s' has shape %s, expected (%" G_GINT64_FORMAT ")",
                  name, got->str, cols);
    else
      g_set_error(ld->error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "tensor '%s' has shape %s, expected (%" G_GINT64_FORMAT
                  ", %" G_GINT64_FORMAT ")", name, got->str, rows, cols);
    return NULL;
  }
  if (((uintptr_t)t->data & (sizeof(float) - 1)) != 0) {
    g_set_error(ld->error, TXL_ERROR, TXL_ERROR_FORMAT,
                "tensor '%s' is not aligned to 4 bytes", name);
    return NULL;
  }
  g_hash_table_add(ld->used, (gpointer)t->name);
  return t->data;
}

#define NEED(ptr, expr)                                                        \
  do {                                                                         \
    if (!((ptr) = (expr)))                                                     \
      return FALSE;                                                            \
  } while (0)

static gboolean
load_layers(TxlModel *m, Loader *ld)
{
  const TxlConfig *c = &m->cfg;
  const gint64 d = c->d_model, HD = (gint64)c->n_head * c->d_head;
  const float *rwb = NULL, *rrb = NULL;
  if (!c->untie_r) {
    NEED(rwb, tensor(ld, "r_w_bias", c->n_head, c->d_head));
    NEED(rrb, tensor(ld, "r_r_bias", c->n_head, c->d_head));
  }
  m->layers = g_new0(TxlLayerWeights, c->n_layer);
  for (int l = 0; l < c->n_layer; l++) {
    TxlLayerWeights *L = &m->layers[l];
    char n[96];
#define T(field, suffix, r, cc)                                                \
  do {                                                                         \
    g_snprintf(n, sizeof n, "blk.%d.%s", l, suffix);                           \
    NEED(L->field, tensor(ld, n, r, cc));                                      \
  } while (0)
    T(qkv_w, "attn_qkv.weight", 3 * HD, d);
    T(r_w, "attn_r.weight", HD, d);
    T(o_w, "attn_out.weight", d, HD);
    T(attn_ln_w, "attn_norm.weight", 0, d);
    T(attn_ln_b, "attn_norm.bias", 0, d);
    T(ff1_w, "ffn_up.weight", c->d_inner, d);
    T(ff1_b, "ffn_up.bias", 0, c->d_inner);
    T(ff2_w, "ffn_down.weight", d, c->d_inner);
    T(ff2_b, "ffn_down.bias", 0, d);
    T(ff_ln_w, "ffn_norm.weight", 0, d);
    T(ff_ln_b, "ffn_norm.bias", 0, d);
    if (c->untie_r) {
      T(r_w_bias, "r_w_bias", c->n_head, c->d_head);
      T(r_r_bias, "r_r_bias", c->n_head, c->d_head);
    } else {
      L->r_w_bias = rwb;
      L->r_r_bias = rrb;
    }
#undef T
  }
  return TRUE;
}

static gboolean
load_clusters(TxlModel *m, Loader *ld)
{
  const TxlConfig *c = &m->cfg;
  int ends[TXL_MAX_CLUSTERS + 1];
  char n[64], p[64];
  txl_config_cluster_ends(c, ends);
  m->n_out = c->n_cutoffs + 1;

  if (c->div_val == 1) {
    const float *emb, *proj = NULL, *out_w, *out_b;
    NEED(emb, tensor(ld, "emb.0.weight", c->n_token, c->d_embed));
    if (c->d_model != c->d_embed)
      NEED(proj, tensor(ld, "emb_proj.0", c->d_model, c->d_embed));
    m->n_in = 1;
    m->in[0] = (TxlCluster){ 0, c->n_token, c->d_embed, emb, NULL, proj };
    if (c->tie_weight)
      out_w = emb;
    else
      NEED(out_w, tensor(ld, "out.0.weight", c->n_token, c->d_embed));
    NEED(out_b, tensor(ld, "out.0.bias", 0, c->n_token));
    for (int k = 0; k < m->n_out; k++) {
      const float *op = NULL;
      if (c->d_model != c->d_embed) {
        g_snprintf(p, sizeof p, "out_proj.%d", k);
        if (c->tie_projs[k])
          op = proj;
        else
          NEED(op, tensor(ld, p, c->d_model, c->d_embed));
      }
      m->out[k] = (TxlCluster){ ends[k], ends[k + 1], c->d_embed,
                                out_w + (gsize)ends[k] * c->d_embed,
                                out_b + ends[k], op };
    }
  } else {
    m->n_in = m->n_out;
    for (int k = 0; k < m->n_out; k++) {
      int dk = txl_config_cluster_dim(c, k), len = ends[k + 1] - ends[k];
      const float *emb, *proj, *ow, *ob, *op;
      g_snprintf(n, sizeof n, "emb.%d.weight", k);
      NEED(emb, tensor(ld, n, len, dk));
      g_snprintf(p, sizeof p, "emb_proj.%d", k);
      NEED(proj, tensor(ld, p, c->d_model, dk));
      m->in[k] = (TxlCluster){ ends[k], ends[k + 1], dk, emb, NULL, proj };
      g_snprintf(n, sizeof n, "out.%d.weight", k);
      if (c->tie_weight)
        ow = emb;
      else
        NEED(ow, tensor(ld, n, len, dk));
      g_snprintf(n, sizeof n, "out.%d.bias", k);
      NEED(ob, tensor(ld, n, 0, len));
      g_snprintf(p, sizeof p, "out_proj.%d", k);
      if (c->tie_projs[k])
        op = proj;
      else
        NEED(op, tensor(ld, p, c->d_model, dk));
      m->out[k] = (TxlCluster){ ends[k], ends[k + 1], dk, ow, ob, op };
    }
  }
  if (c->n_cutoffs > 0) {
    NEED(m->cluster_w, tensor(ld, "cluster.weight", c->n_cutoffs, c->d_embed));
    NEED(m->cluster_b, tensor(ld, "cluster.bias", 0, c->n_cutoffs));
  }
  return TRUE;
}

static gboolean
no_extra_tensors(Loader *ld)
{
  for (gsize i = 0; i < gguf_n_tensors(ld->f); i++) {
    const GgufTensor *t = gguf_tensor_at(ld->f, i);
    if (!g_hash_table_contains(ld->used, t->name)) {
      g_set_error(ld->error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "unexpected tensor '%s' (tied copies are not stored; see "
                  "docs/model-format.md)", t->name);
      return FALSE;
    }
  }
  return TRUE;
}

static void
model_free(TxlModel *m)
{
  if (m->rtables)
    g_ptr_array_unref(m->rtables);
  txl_packed_unref(m->packed);
  txl_tokenizer_clear(&m->tok);
  txl_calibration_free(m->calibration);
  g_free(m->layers);
  if (m->file)
    gguf_close(m->file);
  g_free(m->path);
  g_free(m->id);
  g_free(m->vocab_id);
  if (m->owned_free)
    m->owned_free(m->owned);
  g_mutex_clear(&m->lock);
  g_free(m);
}

static TxlModel *
model_load(const char *path, const void *buf, gsize size, GError **error)
{
  TxlModel *m = g_new0(TxlModel, 1);
  m->ref = 1;
  g_mutex_init(&m->lock);
  m->path = g_strdup(path);
  m->rtables = g_ptr_array_new_with_free_func((GDestroyNotify)txl_rtable_unref);
  GError *err = NULL;
  m->file = buf ? gguf_parse(buf, size, &err) : gguf_open(path, &err);
  if (!m->file)
    goto fail;
  if (!txl_config_read_gguf(m->file, &m->cfg, &err))
    goto fail;
  if (!txl_tokenizer_load(&m->tok, m->file, m->cfg.n_token, &err))
    goto fail;
  if (!txl_calibration_read(m->file, &m->calibration, &err))
    goto fail;
  Loader ld = { m->file, g_hash_table_new(g_str_hash, g_str_equal), &err };
  /* the budget before the one pass over every weight: a file that asks for
   * too much is refused without reading its weights */
  gboolean ok = load_clusters(m, &ld) && load_layers(m, &ld) &&
                no_extra_tensors(&ld) && txl_model_check_budget(m, &err) &&
                txl_model_check_finite(m->file, &err);
  g_hash_table_unref(ld.used);
  if (!ok)
    goto fail;
  return m;

fail:
  if (err && !g_str_has_prefix(err->message, path))
    g_prefix_error(&err, "%s: ", path);
  g_propagate_error(error, err);
  model_free(m);
  return NULL;
}

TxlModel *
txl_model_load(const char *path, GError **error)
{
  g_return_val_if_fail(path != NULL, NULL);
  return model_load(path, NULL, 0, error);
}

TxlModel *
txl_model_from_buffer(const void *data, gsize size, GError **error)
{
  return model_load("<buffer>", data, size, error);
}

TxlModel *
txl_model_ref(TxlModel *m)
{
  g_atomic_int_inc(&m->ref);
  return m;
}

void
txl_model_unref(TxlModel *m)
{
  if (m && g_atomic_int_dec_and_test(&m->ref))
    model_free(m);
}

const TxlConfig *
txl_model_config(const TxlModel *m)
{
  return &m->cfg;
}

const TxlTokenizer *
txl_model_tokenizer(const TxlModel *m)
{
  return &m->tok;
}

const char *
txl_model_id(const TxlModel *cm)
{
  TxlModel *m = (TxlModel *)cm;
  g_mutex_lock(&m->lock);
  if (!m->id && !m->file) {
    m->id = g_strdup("in-memory"); /* a view (txl_model_new_view) */
  } else if (!m->id) {
    gsize size;
    const void *buf = gguf_buffer(m->file, &size);
    m->id = g_compute_checksum_for_data(G_CHECKSUM_SHA256, buf, size);
  }
  g_mutex_unlock(&m->lock);
  return m->id;
}

const char *
txl_model_vocab_id(const TxlModel *cm)
{
  TxlModel *m = (TxlModel *)cm;
  g_mutex_lock(&m->lock);
  if (!m->vocab_id) {
    GChecksum *cs = g_checksum_new(G_CHECKSUM_SHA256);
    txl_tokenizer_checksum(&m->tok, cs);
    m->vocab_id = g_strdup(g_checksum_get_string(cs));
    g_checksum_free(cs);
  }
  g_mutex_unlock(&m->lock);
  return m->vocab_id;
}

void
txl_rtable_unref(TxlRTable *t)
{
  if (!t || !g_atomic_int_dec_and_test(&t->ref))
    return;
  for (int l = 0; t->layer && t->layer[l]; l++)
    g_free(t->layer[l]);
  g_free(t->layer);
  g_free(t);
}

static TxlRTable *
rtable_build(const TxlModel *m, int clamp_len, int maxk)
{
  const TxlConfig *c = &m->cfg;
  const int d = c->d_model, H = c->n_head, dh = c->d_head, HD = H * dh;
  const int NR = txl_gemm_nr(), pad = (NR - maxk % NR) % NR;
  const gsize per_head = txl_gemm_packed_floats(pad + maxk, dh);
  TxlRTable *t = g_new0(TxlRTable, 1);
  t->ref = 1;
  t->clamp_len = clamp_len;
  t->maxk = maxk;
  t->layer = g_new0(float *, c->n_layer + 1);
  float *pos = g_try_new(float, (gsize)maxk * d);
  float *tab = pos ? g_try_new(float, (gsize)maxk * HD) : NULL;
  gboolean ok = tab != NULL;
  for (int l = 0; ok && l < c->n_layer; l++)
    ok = (t->layer[l] = g_try_new(float, per_head * H)) != NULL;
  if (!ok) {
    g_free(pos);
    g_free(tab);
    txl_rtable_unref(t); /* what cannot be had is refused, not aborted on */
    return NULL;
  }
  txl_pos_table(maxk, clamp_len, d, pos);
  for (int l = 0; l < c->n_layer; l++) {
    const TxlLinear r = { m->layers[l].r_w, NULL, NULL, d, HD };
    txl_linear(&r, pos, maxk, tab, FALSE, FALSE);
    for (int n = 0; n < H; n++)
      txl_gemm_pack_at(tab + (gsize)n * dh, maxk, dh, HD, pad,
                       t->layer[l] + (gsize)n * per_head);
  }
  g_free(pos);
  g_free(tab);
  return t;
}

void
txl_packed_unref(TxlPacked *p)
{
  if (!p || !g_atomic_int_dec_and_test(&p->ref))
    return;
  g_free(p->layer);
  g_free(p->block);
  g_free(p);
}

static TxlPacked *
packed_build(const TxlModel *m)
{
  const TxlConfig *c = &m->cfg;
  const int d = c->d_model, HD = c->n_head * c->d_head, di = c->d_inner;
  const gsize fq = txl_gemm_packed_floats(3 * HD, d),
              fo = txl_gemm_packed_floats(d, HD),
              f1 = txl_gemm_packed_floats(di, d),
              f2 = txl_gemm_packed_floats(d, di);
  float *block = g_try_new(float, (fq + fo + f1 + f2) * c->n_layer);
  if (!block)
    return NULL;
  TxlPacked *p = g_new0(TxlPacked, 1);
  p->ref = 1;
  p->n_layer = c->n_layer;
  p->block = block;
  p->layer = g_new0(TxlPackedLayer, c->n_layer);
  for (int l = 0; l < c->n_layer; l++) {
    const TxlLayerWeights *L = &m->layers[l];
    TxlPackedLayer *P = &p->layer[l];
    P->qkv = block; block += fq;
    P->o = block; block += fo;
    P->ff1 = block; block += f1;
    P->ff2 = block; block += f2;
    txl_gemm_pack(L->qkv_w, 3 * HD, d, d, P->qkv);
    txl_gemm_pack(L->o_w, d, HD, HD, P->o);
    txl_gemm_pack(L->ff1_w, di, d, d, P->ff1);
    txl_gemm_pack(L->ff2_w, d, di, di, P->ff2);
  }
  return p;
}

TxlPacked *
txl_model_get_packed(TxlModel *m)
{
  g_mutex_lock(&m->lock);
  if (!m->packed)
    m->packed = packed_build(m);
  TxlPacked *p = m->packed;
  if (p)
    g_atomic_int_inc(&p->ref);
  g_mutex_unlock(&m->lock);
  return p;
}

TxlRTable *
txl_model_get_rtable(TxlModel *m, int clamp_len, int maxk)
{
  TxlRTable *found = NULL;
  g_mutex_lock(&m->lock);
  for (guint i = 0; i < m->rtables->len && !found; i++) {
    TxlRTable *t = g_ptr_array_index(m->rtables, i);
    if (t->clamp_len == clamp_len && t->maxk >= maxk)
      found = t;
  }
  if (!found && (found = rtable_build(m, clamp_len, maxk)))
    g_ptr_array_add(m->rtables, found);
  if (found)
    g_atomic_int_inc(&found->ref);
  g_mutex_unlock(&m->lock);
  return found;
}

/* ---- views over weights held elsewhere (training, lib/engine/params.c) ---- */

#include "params.h"

TxlModel *
txl_model_new_view(const TxlConfig *cfg)
{
  TxlModel *m = g_new0(TxlModel, 1);
  m->ref = 1;
  g_mutex_init(&m->lock);
  m->cfg = *cfg;
  m->path = g_strdup("<in-memory>");
  m->rtables = g_ptr_array_new_with_free_func((GDestroyNotify)txl_rtable_unref);
  m->tok.type = TXL_TOKENIZER_NONE;
  m->tok.n_tokens = cfg->n_token;
  m->tok.unk_id = m->tok.eos_id = -1;
  m->layers = g_new0(TxlLayerWeights, cfg->n_layer);
  return m;
}

void
txl_model_weights_changed(TxlModel *m)
{
  g_mutex_lock(&m->lock);
  g_ptr_array_set_size(m->rtables, 0);
  txl_packed_unref(m->packed);
  m->packed = NULL;
  g_mutex_unlock(&m->lock);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Test helpers: small random models written through the GGUF writer, so
 * the C tests need no Python and no downloaded weights. */
#ifndef TXL_TESTUTIL_H
#define TXL_TESTUTIL_H

#include "config.h"
#include "gguf.h"
#include "txl.h"

#include <glib/gstdio.h>
#include <math.h>
#include <string.h>

static void
tu_tensor(GgufWriter *w, GRand *r, const char *name, gint64 rows, gint64 cols,
          float scale, float offset)
{
  gsize n = (gsize)(rows ? rows : 1) * cols;
  float *v = g_new(float, n);
  for (gsize i = 0; i < n; i++)
    v[i] = offset + scale * (float)g_rand_double_range(r, -1.0, 1.0);
  uint64_t ne[2] = { (uint64_t)cols, (uint64_t)rows };
  gguf_writer_add_tensor(w, name, GGUF_TENSOR_F32, rows ? 2 : 1, ne, v,
                         n * sizeof(float));
  g_free(v);
}

/* skip: a tensor name to leave out (for negative tests), or NULL */
static void
tu_add_weights(GgufWriter *w, const TxlConfig *c, guint32 seed,
               const char *skip)
{
  GRand *r = g_rand_new_with_seed(seed);
  const gint64 d = c->d_model, HD = (gint64)c->n_head * c->d_head;
  int ends[TXL_MAX_CUTOFFS + 2];
  char n[96];
  txl_config_cluster_ends(c, ends);
#define ADD(name, rows, cols, s, o)                                            \
  do {                                                                         \
    if (!skip || strcmp(skip, name) != 0)                                      \
      tu_tensor(w, r, name, rows, cols, s, o);                                 \
  } while (0)
  if (c->div_val == 1) {
    ADD("emb.0.weight", c->n_token, c->d_embed, 0.3f, 0.0f);
    if (c->d_model != c->d_embed)
      ADD("emb_proj.0", d, c->d_embed, 0.2f, 0.0f);
    if (!c->tie_weight)
      ADD("out.0.weight", c->n_token, c->d_embed, 0.3f, 0.0f);
    ADD("out.0.bias", 0, c->n_token, 0.1f, 0.0f);
    for (int k = 0; k <= c->n_cutoffs; k++) {
      g_snprintf(n, sizeof n, "out_proj.%d", k);
      if (c->d_model != c->d_embed && !c->tie_projs[k])
        ADD(n, d, c->d_embed, 0.2f, 0.0f);
    }
  } else {
    for (int k = 0; k <= c->n_cutoffs; k++) {
      int dk = txl_config_cluster_dim(c, k), len = ends[k + 1] - ends[k];
      g_snprintf(n, sizeof n, "emb.%d.weight", k);
      ADD(n, len, dk, 0.3f, 0.0f);
      g_snprintf(n, sizeof n, "emb_proj.%d", k);
      ADD(n, d, dk, 0.3f, 0.0f);
      g_snprintf(n, sizeof n, "out.%d.weight", k);
      if (!c->tie_weight)
        ADD(n, len, dk, 0.3f, 0.0f);
      g_snprintf(n, sizeof n, "out.%d.bias", k);
      ADD(n, 0, len, 0.1f, 0.0f);
      g_snprintf(n, sizeof n, "out_proj.%d", k);
      if (!c->tie_projs[k])
        ADD(n, d, dk, 0.3f, 0.0f);
    }
  }
  if (c->n_cutoffs > 0) {
    ADD("cluster.weight", c->n_cutoffs, c->d_embed, 0.3f, 0.0f);
    ADD("cluster.bias", 0, c->n_cutoffs, 0.1f, 0.0f);
  }
  if (!c->untie_r) {
    ADD("r_w_bias", c->n_head, c->d_head, 0.1f, 0.0f);
    ADD("r_r_bias", c->n_head, c->d_head, 0.1f, 0.0f);
  }
  for (int l = 0; l < c->n_layer; l++) {
    const float ws = 1.0f / sqrtf((float)d);
#define L(suffix, rows, cols, s, o)                                            \
  do {                                                                         \
    g_snprintf(n, sizeof n, "blk.%d.%s", l, suffix);                           \
    ADD(n, rows, cols, s, o);                                                  \
  } while (0)
    L("attn_qkv.weight", 3 * HD, d, ws, 0.0f);
    L("attn_r.weight", HD, d, ws, 0.0f);
    L("attn_out.weight", d, HD, ws, 0.0f);
    L("attn_norm.weight", 0, d, 0.1f, 1.0f);
    L("attn_norm.bias", 0, d, 0.1f, 0.0f);
    L("ffn_up.weight", c->d_inner, d, ws, 0.0f);
    L("ffn_up.bias", 0, c->d_inner, 0.1f, 0.0f);
    L("ffn_down.weight", d, c->d_inner, 1.0f / sqrtf((float)c->d_inner), 0.0f);
    L("ffn_down.bias", 0, d, 0.1f, 0.0f);
    L("ffn_norm.weight", 0, d, 0.1f, 1.0f);
    L("ffn_norm.bias", 0, d, 0.1f, 0.0f);
    if (c->untie_r) {
      L("r_w_bias", c->n_head, c->d_head, 0.1f, 0.0f);
      L("r_r_bias", c->n_head, c->d_head, 0.1f, 0.0f);
    }
#undef L
  }
#undef ADD
  g_rand_free(r);
}

static void
tu_small_config(TxlConfig *c)
{
  txl_config_init_default(c);
  c->n_token = 300;
  c->d_model = 32;
  c->d_embed = 32;
  c->n_head = 4;
  c->d_head = 8;
  c->d_inner = 64;
  c->n_layer = 2;
  c->mem_len = 12;
  c->tgt_len = 5;
  c->clamp_len = 0;
  c->same_length = FALSE;
  c->div_val = 2;
  c->n_cutoffs = 2;
  c->cutoffs[0] = 100;
  c->cutoffs[1] = 200;
  c->tie_projs[0] = FALSE;
  c->tie_projs[1] = TRUE;
  c->tie_projs[2] = FALSE;
}

/* Writes a byte-tokenizer model; returns the path (g_free it). */
static char *
tu_write_model(const TxlConfig *c, guint32 seed, const char *skip_tensor)
{
  g_autoptr(GError) err = NULL;
  char *dir = g_dir_make_tmp("txl-test-XXXXXX", &err);
  g_assert_no_error(err);
  char *path = g_build_filename(dir, "model.gguf", NULL);
  g_free(dir);
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(c, w);
  gguf_writer_add_string(w, "tokenizer.type", "byte");
  tu_add_weights(w, c, seed, skip_tensor);
  g_assert_true(gguf_writer_write(w, path, &err));
  g_assert_no_error(err);
  gguf_writer_free(w);
  return path;
}

/* A word-vocabulary model: <eos>, <unk>, the, cat, sat, Mat, w6..w299. */
G_GNUC_UNUSED static TxlModel *
tu_word_model(char **path, gboolean lower)
{
  TxlConfig c;
  tu_small_config(&c);
  c.n_token = 300;
  static const char *base[] = { "<eos>", "<unk>", "the", "cat", "sat", "Mat" };
  const char *syms[300];
  gsize lens[300];
  char *owned[300] = { 0 };
  for (int i = 0; i < 300; i++) {
    if (i < 6)
      syms[i] = base[i];
    else
      syms[i] = owned[i] = g_strdup_printf("w%d", i);
    lens[i] = strlen(syms[i]);
  }
  g_autoptr(GError) err = NULL;
  char *dir = g_dir_make_tmp("txl-test-XXXXXX", &err);
  *path = g_build_filename(dir, "m.gguf", NULL);
  g_free(dir);
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&c, w);
  gguf_writer_add_string(w, "tokenizer.type", "word");
  gguf_writer_add_string_array(w, "tokenizer.tokens", syms, lens, 300);
  gguf_writer_add_u32(w, "tokenizer.eos_id", 0);
  gguf_writer_add_u32(w, "tokenizer.unk_id", 1);
  gguf_writer_add_bool(w, "tokenizer.lower_case", lower);
  tu_add_weights(w, &c, 3, NULL);
  g_assert_true(gguf_writer_write(w, *path, &err));
  gguf_writer_free(w);
  for (int i = 0; i < 300; i++)
    g_free(owned[i]);
  TxlModel *m = txl_model_load(*path, &err);
  g_assert_no_error(err);
  return m;
}

static void
tu_remove(const char *path)
{
  g_autofree char *dir = g_path_get_dirname(path);
  g_remove(path);
  g_rmdir(dir);
}

/* Overwrites element `index` of an F32 tensor in a model file with v (a
 * flipped exponent bit, say), in place. */
G_GNUC_UNUSED static void
tu_poison_weight(const char *path, const char *tensor, gsize index, float v)
{
  g_autoptr(GError) err = NULL;
  g_autofree char *buf = NULL;
  gsize len = 0;
  g_assert_true(g_file_get_contents(path, &buf, &len, &err));
  GgufFile *f = gguf_parse(buf, len, &err);
  g_assert_no_error(err);
  const GgufTensor *t = gguf_find_tensor(f, tensor);
  g_assert_nonnull(t);
  g_assert_cmpuint(index, <, t->nbytes / sizeof(float));
  gsize at = (gsize)((const char *)t->data - buf) + index * sizeof(float);
  gguf_close(f);
  memcpy(buf + at, &v, sizeof v);
  g_assert_true(g_file_set_contents(path, buf, len, &err));
}

#endif

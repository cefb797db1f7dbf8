/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Test helpers: small random models written through the GGUF writer, so
 * the C tests need no Python and no downloaded weights. */
#ifndef TXL_TESTUTIL_H
#define TXL_TESTUTIL_H

#include "config.h"
#include "gguf.h"
#include "tu_config.h"
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
  *c = tu_plain_config((TuDims){ .n_token = 300, .d_model = 32, .n_head = 4,
                                 .d_head = 8, .d_inner = 64, .n_layer = 2,
                                 .mem_len = 12, .tgt_len = 5 });
  /* with an adaptive softmax of three clusters, the middle one tied */
  c->div_val = 2;
  c->n_cutoffs = 2;
  c->cutoffs[0] = 100;
  c->cutoffs[1] = 200;
  c->tie_projs[0] = FALSE;
  c->tie_projs[1] = TRUE;
  c->tie_projs[2] = FALSE;
}

/* A file `name` in a new temporary directory: tu_remove removes both. */
G_GNUC_UNUSED static char *
tu_tmp_path(const char *name)
{
  g_autoptr(GError) err = NULL;
  char *dir = g_dir_make_tmp("txl-test-XXXXXX", &err);
  g_assert_no_error(err);
  char *path = g_build_filename(dir, name, NULL);
  g_free(dir);
  return path;
}

G_GNUC_UNUSED static char *
tu_tmp_model_path(void)
{
  return tu_tmp_path("model.gguf");
}

/* Writes w (freed) to a new temporary model file: its path (g_free it). */
static char *
tu_write_gguf(GgufWriter *w)
{
  g_autoptr(GError) err = NULL;
  char *path = tu_tmp_model_path();
  g_assert_true(gguf_writer_write(w, path, &err));
  g_assert_no_error(err);
  gguf_writer_free(w);
  return path;
}

/* tu_small_config made smaller, without the adaptive softmax that
 * training does not support: a model the trainer and the learner take. */
G_GNUC_UNUSED static TxlConfig
tu_train_config(void)
{
  return tu_plain_config((TuDims){ .n_token = 40, .d_model = 16, .n_head = 2,
                                   .d_head = 8, .d_inner = 32, .n_layer = 2,
                                   .mem_len = 6, .tgt_len = 5 });
}

/* A model file that must load. */
G_GNUC_UNUSED static TxlModel *
tu_load(const char *path)
{
  g_autoptr(GError) err = NULL;
  TxlModel *m = txl_model_load(path, &err);
  g_assert_no_error(err);
  return m;
}

/* Writes a byte-tokenizer model; returns the path (g_free it). */
G_GNUC_UNUSED static char *
tu_write_model(const TxlConfig *c, guint32 seed, const char *skip_tensor)
{
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(c, w);
  gguf_writer_add_string(w, "tokenizer.type", "byte");
  tu_add_weights(w, c, seed, skip_tensor);
  return tu_write_gguf(w);
}

/* A word-vocabulary model file of config c: the six words of base (<eos>
 * and <unk> first), then w6, w7, ... up to c's n_token. */
G_GNUC_UNUSED static char *
tu_write_word_model_of(const TxlConfig *c, const char *const base[6],
                       guint32 seed, gboolean lower)
{
  int n = c->n_token;
  const char **syms = g_new(const char *, n);
  gsize *lens = g_new(gsize, n);
  char **owned = g_new0(char *, n);
  for (int i = 0; i < n; i++) {
    syms[i] = i < 6 ? base[i] : (owned[i] = g_strdup_printf("w%d", i));
    lens[i] = strlen(syms[i]);
  }
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(c, w);
  gguf_writer_add_string(w, "tokenizer.type", "word");
  gguf_writer_add_string_array(w, "tokenizer.tokens", syms, lens, n);
  gguf_writer_add_u32(w, "tokenizer.eos_id", 0);
  gguf_writer_add_u32(w, "tokenizer.unk_id", 1);
  gguf_writer_add_bool(w, "tokenizer.lower_case", lower);
  tu_add_weights(w, c, seed, NULL);
  char *path = tu_write_gguf(w);
  for (int i = 0; i < n; i++)
    g_free(owned[i]);
  g_free(owned);
  g_free(lens);
  g_free(syms);
  return path;
}

/* The same with tu_small_config: w6..w299. */
G_GNUC_UNUSED static char *
tu_write_word_model(const char *const base[6], guint32 seed, gboolean lower)
{
  TxlConfig c;
  tu_small_config(&c);
  return tu_write_word_model_of(&c, base, seed, lower);
}

/* A word-vocabulary model: <eos>, <unk>, the, cat, sat, Mat, w6..w299. */
G_GNUC_UNUSED static TxlModel *
tu_word_model(char **path, gboolean lower)
{
  static const char *const base[] = { "<eos>", "<unk>", "the",
                                      "cat",   "sat",   "Mat" };
  *path = tu_write_word_model(base, 3, lower);
  TxlModel *m = tu_load(*path);
  return m;
}

static void
tu_remove(const char *path)
{
  g_autofree char *dir = g_path_get_dirname(path);
  g_remove(path);
  g_rmdir(dir);
}

/* Removes a directory's files, then the directory. */
G_GNUC_UNUSED static void
tu_remove_dir(const char *dir)
{
  GDir *d = g_dir_open(dir, 0, NULL);
  const char *name;
  while (d && (name = g_dir_read_name(d))) {
    g_autofree char *p = g_build_filename(dir, name, NULL);
    g_remove(p);
  }
  if (d)
    g_dir_close(d);
  g_rmdir(dir);
}

/* A temporary file's name, as tu_tmp_model_path makes them: declared
 * g_autoptr(TuPath), the file and its directory are removed, and the name
 * freed, when the name goes out of scope. */
typedef char TuPath;

G_GNUC_UNUSED static void
tu_path_done(TuPath *path)
{
  tu_remove(path);
  g_free(path);
}

G_DEFINE_AUTOPTR_CLEANUP_FUNC(TuPath, tu_path_done)

/* A new temporary directory (tmpl as g_dir_make_tmp takes it) for the
 * running test: removed with its files, and the name freed, when the test
 * ends. */
G_GNUC_UNUSED static char *
tu_test_dir(const char *tmpl)
{
  char *dir = g_dir_make_tmp(tmpl, NULL);
  g_assert_nonnull(dir);
  /* the queue runs last in, first out: removed, then freed */
  g_test_queue_free(dir);
  g_test_queue_destroy((GDestroyNotify)tu_remove_dir, dir);
  return dir;
}

/* The name of the file `name` in dir, freed when the test ends. */
G_GNUC_UNUSED static char *
tu_test_file(const char *dir, const char *name)
{
  char *path = g_build_filename(dir, name, NULL);
  g_test_queue_free(path);
  return path;
}

/* tu_small_config's byte-tokenizer model with the weights of `seed`,
 * loaded; *path is its file, for tu_model_done. */
G_GNUC_UNUSED static TxlModel *
tu_small_model(guint32 seed, char **path)
{
  TxlConfig c;
  tu_small_config(&c);
  *path = tu_write_model(&c, seed, NULL);
  TxlModel *m = tu_load(*path);
  return m;
}

/* A file name next to a model file, in its temporary directory, so that
 * tu_remove's rmdir finds the directory empty once the file is gone. */
G_GNUC_UNUSED static char *
tu_beside(const char *model_path, const char *name)
{
  g_autofree char *dir = g_path_get_dirname(model_path);
  return g_build_filename(dir, name, NULL);
}

/* Drops a test's model and removes its file (path is freed). */
G_GNUC_UNUSED static void
tu_model_done(TxlModel *m, char *path)
{
  txl_model_unref(m);
  tu_remove(path);
  g_free(path);
}

/* The model in the file path, for the running test: dropped when the test
 * ends, so that the test itself has nothing to free. */
G_GNUC_UNUSED static TxlModel *
tu_test_load(const char *path)
{
  TxlModel *m = tu_load(path);
  g_test_queue_destroy((GDestroyNotify)txl_model_unref, m);
  return m;
}

/* The same with the file path (taken) removed too, as tu_model_done does. */
G_GNUC_UNUSED static TxlModel *
tu_test_model(char *path)
{
  /* the queue runs last in, first out: the model goes before its file */
  g_test_queue_destroy((GDestroyNotify)tu_path_done, path);
  return tu_test_load(path);
}

/* tu_small_model's model for the running test (see tu_test_model). */
G_GNUC_UNUSED static TxlModel *
tu_test_small_model(guint32 seed)
{
  TxlConfig c;
  tu_small_config(&c);
  return tu_test_model(tu_write_model(&c, seed, NULL));
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

/* Every token an encoder reports, in order, as parallel arrays: the
 * tokenizer tests compare these across splits of the same input. */
typedef struct {
  GArray *ids, *lines, *starts, *ends;
} Toks;

G_GNUC_UNUSED static void
tu_on_token(int32_t id, gint64 line, gsize start, gsize end, gpointer data)
{
  Toks *t = data;
  g_array_append_val(t->ids, id);
  g_array_append_val(t->lines, line);
  g_array_append_val(t->starts, start);
  g_array_append_val(t->ends, end);
}

G_GNUC_UNUSED static Toks
toks_new(void)
{
  Toks t = { g_array_new(FALSE, FALSE, 4), g_array_new(FALSE, FALSE, 8),
             g_array_new(FALSE, FALSE, sizeof(gsize)),
             g_array_new(FALSE, FALSE, sizeof(gsize)) };
  return t;
}

G_GNUC_UNUSED static void
toks_free(Toks *t)
{
  g_array_free(t->ids, TRUE);
  g_array_free(t->lines, TRUE);
  g_array_free(t->starts, TRUE);
  g_array_free(t->ends, TRUE);
}

/* Encodes text pushed in pieces of `piece` bytes, or, with piece 0, of
 * random sizes from rng. */
G_GNUC_UNUSED static Toks
tu_encode(const TxlTokenizer *tok, const char *text, gsize len, gsize piece,
          GRand *rng)
{
  Toks t = toks_new();
  TxlEncoder *e = txl_encoder_new(tok, tu_on_token, &t);
  for (gsize at = 0; at < len;) {
    gsize n = piece ? piece : (gsize)g_rand_int_range(rng, 0, 300);
    n = MIN(n, len - at);
    txl_encoder_push(e, text + at, n);
    at += n;
  }
  txl_encoder_finish(e);
  txl_encoder_free(e);
  return t;
}

G_GNUC_UNUSED static void
toks_assert_same(const Toks *a, const Toks *b)
{
  g_assert_cmpuint(a->ids->len, ==, b->ids->len);
  g_assert_cmpmem(a->ids->data, a->ids->len * 4, b->ids->data, b->ids->len * 4);
  g_assert_cmpmem(a->lines->data, a->lines->len * 8, b->lines->data,
                  b->lines->len * 8);
  g_assert_cmpmem(a->starts->data, a->starts->len * sizeof(gsize),
                  b->starts->data, b->starts->len * sizeof(gsize));
  g_assert_cmpmem(a->ends->data, a->ends->len * sizeof(gsize), b->ends->data,
                  b->ends->len * sizeof(gsize));
}

/* The record line rec (header hlen bytes, record.h) has the field name,
 * and its value is want. */
#define tu_assert_field(rec, hlen, name, want)                                \
  G_STMT_START {                                                              \
    const char *tu_v_;                                                        \
    gsize tu_vl_;                                                             \
    g_assert_true(txl_record_get((rec), (hlen), (name), &tu_v_, &tu_vl_));    \
    g_assert_cmpmem(tu_v_, tu_vl_, (want), strlen(want));                     \
  } G_STMT_END

#endif

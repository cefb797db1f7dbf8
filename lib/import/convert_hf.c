/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Import of a Hugging Face TransfoXLLMHeadModel checkpoint directory.
 *
 * Input: config.json, model.safetensors, optionally vocab.txt and
 * tokenizer_config.json.  Output: one txl model file (docs/model-format.md).
 * Pickle files are never opened: unpickling runs arbitrary code, and a
 * converter is exactly the tool people point at files from the internet.
 *
 * The importer is deliberately unforgiving.  Every tensor the config calls
 * for must be present with exactly the expected shape, every tensor in the
 * file must be accounted for, and copies that Hugging Face ties together
 * must agree.  A checkpoint that passes computes what it computed in
 * Hugging Face; one that does not is refused with the reason, because a
 * silently half-right model is worse than none.  See docs/import-hf.md. */
#include "convert_hf.h"
#include "convert_hf_internal.h"

#include "config.h"
#include "filemap.h"
#include "gguf.h"
#include "model_check.h"
#include "model_write.h"
#include "safetensors.h"

#include <errno.h>
#include <glib/gstdio.h>
#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

#define VOCAB_MAX_BYTES (1u << 30)

/* ---- tensor plan ---------------------------------------------------- */

/* One tensor of ours and the Hugging Face tensors that may hold it: the
 * first is its own name, the others are copies tied to it.  Safetensors
 * cannot store shared storage, so save_pretrained keeps only one name of
 * each tied group, and which one has changed between versions. */
typedef struct {
  char *ours;
  GPtrArray *hf; /* char* */
  int n_dims;
  uint64_t shape[2];
} Want;

static void
want_free(gpointer p)
{
  Want *w = p;
  g_free(w->ours);
  g_ptr_array_unref(w->hf);
  g_free(w);
}

static Want *
want(GPtrArray *plan, char *ours, char *hf, int n_dims, uint64_t d0,
     uint64_t d1)
{
  Want *w = g_new0(Want, 1);
  w->ours = ours;
  w->hf = g_ptr_array_new_with_free_func(g_free);
  g_ptr_array_add(w->hf, hf);
  w->n_dims = n_dims;
  w->shape[0] = d0;
  w->shape[1] = d1;
  g_ptr_array_add(plan, w);
  return w;
}

static void
also(Want *w, char *hf)
{
  g_ptr_array_add(w->hf, hf);
}

#define S(...) g_strdup_printf(__VA_ARGS__)

/* Everything TransfoXLLMHeadModel's state dict holds for this config,
 * in the order written to the output file. */
static GPtrArray *
build_plan(const TxlConfig *c)
{
  GPtrArray *plan = g_ptr_array_new_with_free_func(want_free);
  int ends[TXL_MAX_CUTOFFS + 2];
  txl_config_cluster_ends(c, ends);
  int C = c->n_cutoffs;
  uint64_t hd = (uint64_t)c->n_head * c->d_head;

  if (c->div_val == 1) {
    /* One table for the whole vocabulary.  Projections exist only when
     * d_embed differs from d_model; then every cluster has its own output
     * projection, and a tied one reuses the single input projection. */
    Want *e = want(plan, S("emb.0.weight"),
                   S("transformer.word_emb.emb_layers.0.weight"), 2,
                   c->n_token, c->d_embed);
    if (c->tie_weight)
      also(e, S("crit.out_layers.0.weight"));
    if (c->d_model != c->d_embed) {
      Want *p = want(plan, S("emb_proj.0"), S("transformer.word_emb.emb_projs.0"),
                     2, c->d_model, c->d_embed);
      for (int k = 0; k <= C; k++)
        if (c->tie_projs[k])
          also(p, S("crit.out_projs.%d", k));
    }
  } else {
    for (int k = 0; k <= C; k++) {
      uint64_t nk = ends[k + 1] - ends[k];
      uint64_t dk = txl_config_cluster_dim(c, k);
      Want *e = want(plan, S("emb.%d.weight", k),
                     S("transformer.word_emb.emb_layers.%d.weight", k), 2, nk,
                     dk);
      if (c->tie_weight)
        also(e, S("crit.out_layers.%d.weight", k));
      Want *p = want(plan, S("emb_proj.%d", k),
                     S("transformer.word_emb.emb_projs.%d", k), 2, c->d_model,
                     dk);
      if (c->tie_projs[k])
        also(p, S("crit.out_projs.%d", k));
    }
  }

  if (!c->untie_r) {
    /* Every layer's attention holds the shared bias as well. */
    Want *w = want(plan, S("r_w_bias"), S("transformer.r_w_bias"), 2,
                   c->n_head, c->d_head);
    Want *r = want(plan, S("r_r_bias"), S("transformer.r_r_bias"), 2,
                   c->n_head, c->d_head);
    for (int l = 0; l < c->n_layer; l++) {
      also(w, S("transformer.layers.%d.dec_attn.r_w_bias", l));
      also(r, S("transformer.layers.%d.dec_attn.r_r_bias", l));
    }
  }

  for (int l = 0; l < c->n_layer; l++) {
    const char *a = "transformer.layers.%d.dec_attn.";
    g_autofree char *pa = S(a, l);
    g_autofree char *pf = S("transformer.layers.%d.pos_ff.", l);
    if (c->untie_r) {
      want(plan, S("blk.%d.r_w_bias", l), S("%sr_w_bias", pa), 2, c->n_head,
           c->d_head);
      want(plan, S("blk.%d.r_r_bias", l), S("%sr_r_bias", pa), 2, c->n_head,
           c->d_head);
    }
    want(plan, S("blk.%d.attn_qkv.weight", l), S("%sqkv_net.weight", pa), 2,
         3 * hd, c->d_model);
    want(plan, S("blk.%d.attn_r.weight", l), S("%sr_net.weight", pa), 2, hd,
         c->d_model);
    want(plan, S("blk.%d.attn_out.weight", l), S("%so_net.weight", pa), 2,
         c->d_model, hd);
    want(plan, S("blk.%d.attn_norm.weight", l), S("%slayer_norm.weight", pa),
         1, c->d_model, 0);
    want(plan, S("blk.%d.attn_norm.bias", l), S("%slayer_norm.bias", pa), 1,
         c->d_model, 0);
    want(plan, S("blk.%d.ffn_up.weight", l), S("%sCoreNet.0.weight", pf), 2,
         c->d_inner, c->d_model);
    want(plan, S("blk.%d.ffn_up.bias", l), S("%sCoreNet.0.bias", pf), 1,
         c->d_inner, 0);
    want(plan, S("blk.%d.ffn_down.weight", l), S("%sCoreNet.3.weight", pf), 2,
         c->d_model, c->d_inner);
    want(plan, S("blk.%d.ffn_down.bias", l), S("%sCoreNet.3.bias", pf), 1,
         c->d_model, 0);
    want(plan, S("blk.%d.ffn_norm.weight", l), S("%slayer_norm.weight", pf),
         1, c->d_model, 0);
    want(plan, S("blk.%d.ffn_norm.bias", l), S("%slayer_norm.bias", pf), 1,
         c->d_model, 0);
  }

  /* Output side.  With div_val == 1 there is one output layer over the
   * whole vocabulary (clusters are row ranges of it). */
  int n_out = c->div_val == 1 ? 1 : C + 1;
  for (int k = 0; k < n_out; k++) {
    uint64_t nk = c->div_val == 1 ? (uint64_t)c->n_token
                                  : (uint64_t)(ends[k + 1] - ends[k]);
    uint64_t dk = txl_config_cluster_dim(c, c->div_val == 1 ? 0 : k);
    if (!c->tie_weight)
      want(plan, S("out.%d.weight", k), S("crit.out_layers.%d.weight", k), 2,
           nk, dk);
    want(plan, S("out.%d.bias", k), S("crit.out_layers.%d.bias", k), 1, nk,
         0);
  }
  for (int k = 0; k <= C; k++) {
    if (c->tie_projs[k])
      continue;
    if (c->div_val == 1 && c->d_model != c->d_embed)
      want(plan, S("out_proj.%d", k), S("crit.out_projs.%d", k), 2,
           c->d_model, c->d_embed);
    else if (c->div_val > 1)
      want(plan, S("out_proj.%d", k), S("crit.out_projs.%d", k), 2,
           c->d_model, txl_config_cluster_dim(c, k));
  }
  if (C > 0) {
    want(plan, S("cluster.weight"), S("crit.cluster_weight"), 2, C,
         c->d_embed);
    want(plan, S("cluster.bias"), S("crit.cluster_bias"), 1, C, 0);
  }
  return plan;
}

static char *
shape_str(int n_dims, const uint64_t *shape)
{
  GString *s = g_string_new("[");
  for (int i = 0; i < n_dims; i++)
    g_string_append_printf(s, "%s%" G_GUINT64_FORMAT, i ? ", " : "", shape[i]);
  g_string_append_c(s, ']');
  return g_string_free(s, FALSE);
}

/* The sinusoid frequencies are a registered buffer, so newer savers
 * include them.  We compute them ourselves; refuse a file whose values
 * differ, since Hugging Face would have used the stored ones. */
static gboolean
check_inv_freq(const StTensor *t, const TxlConfig *c, GError **error)
{
  uint64_t n = (uint64_t)c->d_model / 2;
  if (t->n_dims != 1 || t->shape[0] != n) {
    g_autofree char *got = shape_str(t->n_dims, t->shape);
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "tensor 'transformer.pos_emb.inv_freq' has shape %s, "
                "expected [%" G_GUINT64_FORMAT "]", got, n);
    return FALSE;
  }
  gsize count;
  g_autofree float *v = st_to_f32(t, &count, error);
  if (!v)
    return FALSE;
  for (gsize m = 0; m < count; m++) {
    double want_f = 1.0 / pow(10000.0, 2.0 * (double)m / c->d_model);
    if (!(fabs(v[m] - want_f) <= 1e-4 * want_f)) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                  "tensor 'transformer.pos_emb.inv_freq'[%zu] = %g, expected "
                  "the standard sinusoid frequency %g", m, (double)v[m],
                  want_f);
      return FALSE;
    }
  }
  return TRUE;
}

static gboolean
has_prefix_tensor(const StFile *st, const char *prefix)
{
  for (gsize i = 0; i < st_n_tensors(st); i++)
    if (g_str_has_prefix(st_tensor_at(st, i)->name, prefix))
      return TRUE;
  return FALSE;
}

/* Checks names and shapes of the whole file before any conversion. */
static gboolean
check_plan(GPtrArray *plan, const StFile *st, const TxlConfig *c,
           GError **error)
{
  /* Two near misses that deserve better than a list of missing names. */
  if (!has_prefix_tensor(st, "transformer.") &&
      has_prefix_tensor(st, "word_emb.")) {
    if (has_prefix_tensor(st, "crit."))
      g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                  "model.safetensors has the names of the original "
                  "Transformer-XL PyTorch code (no 'transformer.' prefix); "
                  "only Hugging Face TransfoXLLMHeadModel checkpoints are "
                  "imported");
    else
      g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                  "model.safetensors holds a bare TransfoXLModel (no "
                  "'transformer.' prefix, no adaptive softmax 'crit.*'); txl "
                  "needs a TransfoXLLMHeadModel checkpoint");
    return FALSE;
  }

  g_autoptr(GHashTable) claimed = g_hash_table_new(g_str_hash, g_str_equal);
  for (guint i = 0; i < plan->len; i++) {
    Want *w = plan->pdata[i];
    int found = 0;
    for (guint j = 0; j < w->hf->len; j++) {
      const char *name = w->hf->pdata[j];
      g_hash_table_add(claimed, (gpointer)name);
      const StTensor *t = st_find(st, name);
      if (!t)
        continue;
      found++;
      gboolean ok = t->n_dims == w->n_dims;
      for (int d = 0; ok && d < w->n_dims; d++)
        ok = t->shape[d] == w->shape[d];
      if (!ok) {
        g_autofree char *got = shape_str(t->n_dims, t->shape);
        g_autofree char *exp = shape_str(w->n_dims, w->shape);
        g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                    "tensor '%s' has shape %s, but config.json implies %s",
                    name, got, exp);
        return FALSE;
      }
    }
    if (found == 0) {
      if (w->hf->len == 1)
        g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                    "tensor '%s' is missing from model.safetensors",
                    (const char *)w->hf->pdata[0]);
      else
        g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                    "tensor '%s' is missing from model.safetensors (and so "
                    "is its tied copy '%s')", (const char *)w->hf->pdata[0],
                    (const char *)w->hf->pdata[1]);
      return FALSE;
    }
  }

  GString *extra = g_string_new(NULL);
  int n_extra = 0;
  for (gsize i = 0; i < st_n_tensors(st); i++) {
    const StTensor *t = st_tensor_at(st, i);
    if (g_hash_table_contains(claimed, t->name))
      continue;
    if (strcmp(t->name, "transformer.pos_emb.inv_freq") == 0) {
      if (!check_inv_freq(t, c, error)) {
        g_string_free(extra, TRUE);
        return FALSE;
      }
      continue;
    }
    if (n_extra < 5)
      g_string_append_printf(extra, "%s'%s'", n_extra ? ", " : "", t->name);
    n_extra++;
  }
  if (n_extra > 0) {
    if (n_extra > 5)
      g_string_append_printf(extra, " and %d more", n_extra - 5);
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "model.safetensors holds %d tensor%s that this config does "
                "not use: %s (does config.json belong to these weights?)",
                n_extra, n_extra == 1 ? "" : "s", extra->str);
    g_string_free(extra, TRUE);
    return FALSE;
  }
  g_string_free(extra, TRUE);
  return TRUE;
}

/* Converts every tensor of the plan and hands it to the writer. */
static gboolean
write_tensors(GPtrArray *plan, const StFile *st, GgufWriter *w,
              GError **error)
{
  for (guint i = 0; i < plan->len; i++) {
    Want *wt = plan->pdata[i];
    float *data = NULL;
    gsize n = 0;
    const char *first = NULL;
    for (guint j = 0; j < wt->hf->len; j++) {
      const StTensor *t = st_find(st, wt->hf->pdata[j]);
      if (!t)
        continue;
      gsize m;
      float *v = st_to_f32(t, &m, error);
      if (!v) {
        g_free(data);
        return FALSE;
      }
      /* the loader refuses such a model: say so here, naming the source */
      gint64 bad = txl_first_nonfinite(v, m);
      if (bad >= 0) {
        g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                    "tensor '%s' holds %s at index %" G_GINT64_FORMAT
                    "; weights must be finite", t->name,
                    isnan(v[bad]) ? "NaN" : v[bad] > 0 ? "inf" : "-inf", bad);
        g_free(v);
        g_free(data);
        return FALSE;
      }
      if (!data) {
        data = v;
        n = m;
        first = t->name;
        continue;
      }
      /* Stored twice: fine as long as both are the same weights. */
      gboolean same = m == n && memcmp(v, data, n * sizeof(float)) == 0;
      g_free(v);
      if (!same) {
        g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                    "tensors '%s' and '%s' are tied by config.json but hold "
                    "different values", first, t->name);
        g_free(data);
        return FALSE;
      }
    }
    /* GGUF lists dimensions fastest first: PyTorch's shape reversed. */
    uint64_t ne[2];
    for (int d = 0; d < wt->n_dims; d++)
      ne[d] = wt->shape[wt->n_dims - 1 - d];
    gguf_writer_add_tensor(w, wt->ours, GGUF_TENSOR_F32, wt->n_dims, ne, data,
                           n * sizeof(float));
    g_free(data);
  }
  return TRUE;
}

/* ---- tokenizer -------------------------------------------------------- */

static gboolean
is_space(char ch)
{
  return ch == ' ' || ch == '\t' || ch == '\r' || ch == '\n' || ch == '\v' ||
         ch == '\f';
}

/* vocab.txt: one symbol per line, id = line number from 0.  Like the
 * original Vocab reader, a line's first whitespace-separated field is the
 * symbol (some files add a count after it).  Blank and repeated lines
 * are refused: the reference skips repeats, which silently renumbers
 * every later id. */
static gboolean
add_vocab(GgufWriter *w, const char *path, int n_token, GError **error)
{
  gsize len = 0;
  g_autofree char *text =
      txl_read_small_file(path, "a vocabulary", VOCAB_MAX_BYTES, &len, error);
  if (!text)
    return FALSE;
  if (memchr(text, '\0', len)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: contains a NUL byte", path);
    return FALSE;
  }
  g_autoptr(GPtrArray) syms = g_ptr_array_new();
  g_autoptr(GArray) lens = g_array_new(FALSE, FALSE, sizeof(gsize));
  g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
  int unk = -1, eos = -1;
  gsize pos = 0;
  while (pos < len) {
    char *line = text + pos;
    char *nl = memchr(line, '\n', len - pos);
    gsize ll = nl ? (gsize)(nl - line) : len - pos;
    pos += ll + (nl ? 1 : 0);
    gsize a = 0;
    while (a < ll && is_space(line[a]))
      a++;
    gsize b = a;
    while (b < ll && !is_space(line[b]))
      b++;
    guint lineno = syms->len + 1;
    if (a == b) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "%s: line %u is blank", path, lineno);
      return FALSE;
    }
    if (syms->len >= (guint)n_token) {
      /* keep counting so the message can say how many */
      g_ptr_array_add(syms, NULL);
      continue;
    }
    line[b] = '\0'; /* in our own copy of the file */
    char *sym = line + a;
    if (!g_hash_table_add(seen, sym)) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "%s: line %u repeats the symbol '%s'", path, lineno, sym);
      return FALSE;
    }
    if (unk < 0 && (strcmp(sym, "<unk>") == 0 || strcmp(sym, "<UNK>") == 0))
      unk = (int)syms->len;
    if (eos < 0 && strcmp(sym, "<eos>") == 0)
      eos = (int)syms->len;
    gsize sl = b - a;
    g_ptr_array_add(syms, sym);
    g_array_append_val(lens, sl);
  }
  if (syms->len != (guint)n_token) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s has %u symbols but config.json says the vocabulary has "
                "%d", path, syms->len, n_token);
    return FALSE;
  }
  gguf_writer_add_string(w, "tokenizer.type", "word");
  gguf_writer_add_string_array(w, "tokenizer.tokens",
                               (const char *const *)syms->pdata,
                               (const gsize *)lens->data, syms->len);
  if (unk >= 0)
    gguf_writer_add_u32(w, "tokenizer.unk_id", (uint32_t)unk);
  if (eos >= 0)
    gguf_writer_add_u32(w, "tokenizer.eos_id", (uint32_t)eos);
  return TRUE;
}

static gboolean
read_lower_case(const char *dir, gboolean *lower, GError **error)
{
  *lower = FALSE;
  g_autofree char *path = g_build_filename(dir, "tokenizer_config.json", NULL);
  if (!g_file_test(path, G_FILE_TEST_EXISTS))
    return TRUE;
  g_autoptr(JsonParser) p = txl_hf_load_json(path, error);
  if (!p)
    return FALSE;
  JsonObject *o = json_node_get_object(json_parser_get_root(p));
  JsonNode *n = json_object_get_member(o, "lower_case");
  if (!n)
    return TRUE;
  if (!JSON_NODE_HOLDS_VALUE(n) ||
      json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: \"lower_case\" must be true or false", path);
    return FALSE;
  }
  *lower = json_node_get_boolean(n);
  return TRUE;
}

/* ---- entry point ----------------------------------------------------- */

static gboolean
find_weights(const char *dir, char **st_path, GError **error)
{
  *st_path = g_build_filename(dir, "model.safetensors", NULL);
  if (g_file_test(*st_path, G_FILE_TEST_EXISTS))
    return TRUE;
  g_clear_pointer(st_path, g_free);

  g_autofree char *index =
      g_build_filename(dir, "model.safetensors.index.json", NULL);
  if (g_file_test(index, G_FILE_TEST_EXISTS)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "%s: sharded checkpoints (model.safetensors.index.json) are "
                "not supported; save the model as one model.safetensors",
                dir);
    return FALSE;
  }
  static const char *const pickles[] = { "pytorch_model.bin", "model.bin",
                                         "model.pt", "model.pth",
                                         "model.ckpt", "model.pkl" };
  for (gsize i = 0; i < G_N_ELEMENTS(pickles); i++) {
    g_autofree char *p = g_build_filename(dir, pickles[i], NULL);
    if (g_file_test(p, G_FILE_TEST_EXISTS)) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                  "%s has %s but no model.safetensors: txl does not read "
                  "pickle files (*.bin, *.pt, *.pkl), because loading one "
                  "can run arbitrary code.  Convert it to model.safetensors "
                  "with a Python you trust (torch.load(..., "
                  "weights_only=True), then safetensors.torch.save_file); "
                  "see docs/import-hf.md", dir, pickles[i]);
      return FALSE;
    }
  }
  g_autofree char *tf = g_build_filename(dir, "tf_model.h5", NULL);
  if (g_file_test(tf, G_FILE_TEST_EXISTS)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "%s has only TensorFlow weights (tf_model.h5); save the "
                "PyTorch model as model.safetensors first", dir);
    return FALSE;
  }
  g_set_error(error, TXL_ERROR, TXL_ERROR_IO,
              "%s: no model.safetensors in this directory", dir);
  return FALSE;
}

/* Writes the model next to out_path, loads it as any reader would, and
 * only then puts it in place: a converted file is never one that txl
 * refuses (the loader's memory budget, say, which depends on the weights
 * and the lengths together). */
static gboolean
write_gguf(const char *path, gpointer w, GError **error)
{
  return gguf_writer_write(w, path, error);
}

static gboolean
write_checked(GgufWriter *w, const char *out_path, GError **error)
{
  return txl_model_write_checked(out_path, write_gguf, w, TRUE, error);
}

gboolean
txl_convert_hf(const char *dir, const char *out_path, GError **error)
{
  g_return_val_if_fail(dir != NULL && out_path != NULL, FALSE);

  if (!g_file_test(dir, G_FILE_TEST_IS_DIR)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO,
                "%s: not a directory (expected a Hugging Face checkpoint "
                "directory)", dir);
    return FALSE;
  }
  g_autofree char *st_path = NULL;
  if (!find_weights(dir, &st_path, error))
    return FALSE;

  g_autofree char *cfg_path = g_build_filename(dir, "config.json", NULL);
  if (!g_file_test(cfg_path, G_FILE_TEST_EXISTS)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: no config.json", dir);
    return FALSE;
  }
  g_autoptr(JsonParser) cp = txl_hf_load_json(cfg_path, error);
  if (!cp)
    return FALSE;
  TxlConfig cfg;
  if (!txl_hf_parse_config(json_node_get_object(json_parser_get_root(cp)), &cfg,
                    error)) {
    g_prefix_error(error, "%s: ", cfg_path);
    return FALSE;
  }

  StFile *st = st_open(st_path, error);
  if (!st)
    return FALSE;
  g_autoptr(GPtrArray) plan = build_plan(&cfg);
  if (!check_plan(plan, st, &cfg, error)) {
    g_prefix_error(error, "%s: ", dir);
    st_close(st);
    return FALSE;
  }

  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&cfg, w);
  g_autofree char *abs = g_canonicalize_filename(dir, NULL);
  g_autofree char *base = g_path_get_basename(abs);
  gguf_writer_add_string(w, "general.name", base);

  gboolean ok = TRUE;
  g_autofree char *vocab = g_build_filename(dir, "vocab.txt", NULL);
  if (g_file_test(vocab, G_FILE_TEST_EXISTS)) {
    gboolean lower;
    ok = add_vocab(w, vocab, cfg.n_token, error) &&
         read_lower_case(dir, &lower, error);
    if (ok)
      gguf_writer_add_bool(w, "tokenizer.lower_case", lower);
  } else {
    /* vocab.pkl is a pickle: never read (see docs/import-hf.md). */
    gguf_writer_add_string(w, "tokenizer.type", "none");
  }

  if (ok && !write_tensors(plan, st, w, error)) {
    g_prefix_error(error, "%s: ", dir);
    ok = FALSE;
  }
  st_close(st);
  if (ok)
    ok = write_checked(w, out_path, error);
  gguf_writer_free(w);
  return ok;
}

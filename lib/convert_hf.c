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

#include "config.h"
#include "gguf.h"
#include "jsondepth.h"
#include "model_check.h"
#include "safetensors.h"

#include <json-glib/json-glib.h>
#include <math.h>
#include <string.h>

#define CONFIG_MAX_BYTES (16u << 20)
#define VOCAB_MAX_BYTES (1u << 30)

/* ---- config.json ----------------------------------------------------- */

static void G_GNUC_PRINTF(3, 4)
cfg_error(GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(error, TXL_ERROR, code, msg);
}

/* Integer key.  Python writes integers without a fraction, so 2.0 or
 * "2" means the file was not written by transformers and is refused. */
static gboolean
cfg_int(JsonObject *o, const char *key, gboolean required, int def, int *out,
        gboolean *present, GError **error)
{
  JsonNode *n = json_object_get_member(o, key);
  if (present)
    *present = n != NULL;
  if (!n) {
    if (required) {
      cfg_error(error, TXL_ERROR_FORMAT, "required key \"%s\" is missing",
                key);
      return FALSE;
    }
    *out = def;
    return TRUE;
  }
  if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64) {
    cfg_error(error, TXL_ERROR_FORMAT, "\"%s\" must be an integer", key);
    return FALSE;
  }
  gint64 v = json_node_get_int(n);
  if (v < G_MININT || v > G_MAXINT) {
    cfg_error(error, TXL_ERROR_FORMAT,
              "\"%s\" = %" G_GINT64_FORMAT " is out of range", key, v);
    return FALSE;
  }
  *out = (int)v;
  return TRUE;
}

static gboolean
cfg_bool(JsonObject *o, const char *key, gboolean def, gboolean *out,
         gboolean *present, GError **error)
{
  JsonNode *n = json_object_get_member(o, key);
  if (present)
    *present = n != NULL;
  if (!n) {
    *out = def;
    return TRUE;
  }
  if (!JSON_NODE_HOLDS_VALUE(n) ||
      json_node_get_value_type(n) != G_TYPE_BOOLEAN) {
    cfg_error(error, TXL_ERROR_FORMAT, "\"%s\" must be true or false", key);
    return FALSE;
  }
  *out = json_node_get_boolean(n);
  return TRUE;
}

static gboolean
cfg_number(JsonObject *o, const char *key, double def, double *out,
           GError **error)
{
  JsonNode *n = json_object_get_member(o, key);
  if (!n) {
    *out = def;
    return TRUE;
  }
  GType t = JSON_NODE_HOLDS_VALUE(n) ? json_node_get_value_type(n) : 0;
  if (t != G_TYPE_INT64 && t != G_TYPE_DOUBLE) {
    cfg_error(error, TXL_ERROR_FORMAT, "\"%s\" must be a number", key);
    return FALSE;
  }
  *out = json_node_get_double(n);
  return TRUE;
}

static gboolean
parse_config(JsonObject *o, TxlConfig *c, GError **error)
{
  txl_config_init_default(c);

  JsonNode *mt = json_object_get_member(o, "model_type");
  if (mt) {
    const char *s = JSON_NODE_HOLDS_VALUE(mt) &&
                            json_node_get_value_type(mt) == G_TYPE_STRING
                        ? json_node_get_string(mt)
                        : NULL;
    if (!s || strcmp(s, "transfo-xl") != 0) {
      cfg_error(error, TXL_ERROR_UNSUPPORTED,
                "\"model_type\" is %s%s%s, expected \"transfo-xl\"",
                s ? "\"" : "", s ? s : "not a string", s ? "\"" : "");
      return FALSE;
    }
  }

  /* Features of the original code base that Hugging Face never
   * implemented, and that we therefore cannot have weights for. */
  int attn_type, sample_softmax, ext_len;
  if (!cfg_int(o, "attn_type", FALSE, 0, &attn_type, NULL, error) ||
      !cfg_int(o, "sample_softmax", FALSE, -1, &sample_softmax, NULL, error) ||
      !cfg_int(o, "ext_len", FALSE, 0, &ext_len, NULL, error))
    return FALSE;
  if (attn_type != 0) {
    cfg_error(error, TXL_ERROR_UNSUPPORTED,
              "attn_type = %d is not supported; only 0 (Transformer-XL "
              "relative attention) is", attn_type);
    return FALSE;
  }
  if (sample_softmax > 0) {
    cfg_error(error, TXL_ERROR_UNSUPPORTED,
              "sample_softmax = %d is not supported; only the full adaptive "
              "softmax (sample_softmax <= 0) is", sample_softmax);
    return FALSE;
  }
  if (ext_len > 0) {
    cfg_error(error, TXL_ERROR_UNSUPPORTED,
              "ext_len = %d is not supported; only 0 is", ext_len);
    return FALSE;
  }

  /* Older files call the vocabulary size n_token. */
  gboolean has_vs, has_nt;
  int vs = 0, nt = 0;
  if (!cfg_int(o, "vocab_size", FALSE, 0, &vs, &has_vs, error) ||
      !cfg_int(o, "n_token", FALSE, 0, &nt, &has_nt, error))
    return FALSE;
  if (!has_vs && !has_nt) {
    cfg_error(error, TXL_ERROR_FORMAT,
              "required key \"vocab_size\" (or \"n_token\") is missing");
    return FALSE;
  }
  if (has_vs && has_nt && vs != nt) {
    cfg_error(error, TXL_ERROR_FORMAT,
              "\"vocab_size\" = %d and \"n_token\" = %d disagree", vs, nt);
    return FALSE;
  }
  c->n_token = has_vs ? vs : nt;

  /* The shape-defining keys have defaults in Hugging Face (those of the
   * WikiText-103 model), but a checkpoint without them was not written by
   * save_pretrained, and guessing would only turn a clear message into a
   * pile of shape mismatches. */
  struct { const char *key; int *dst; } req[] = {
    { "d_model", &c->d_model }, { "d_embed", &c->d_embed },
    { "n_head", &c->n_head },   { "d_head", &c->d_head },
    { "d_inner", &c->d_inner }, { "n_layer", &c->n_layer },
    { "div_val", &c->div_val },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(req); i++)
    if (!cfg_int(o, req[i].key, TRUE, 0, req[i].dst, NULL, error))
      return FALSE;

  /* Run-time defaults are Hugging Face's, so a file that leaves them out
   * behaves as it did there. */
  if (!cfg_int(o, "mem_len", FALSE, 1600, &c->mem_len, NULL, error) ||
      !cfg_int(o, "tgt_len", FALSE, 128, &c->tgt_len, NULL, error) ||
      !cfg_int(o, "clamp_len", FALSE, 1000, &c->clamp_len, NULL, error) ||
      !cfg_bool(o, "same_length", TRUE, &c->same_length, NULL, error) ||
      !cfg_bool(o, "pre_lnorm", FALSE, &c->pre_lnorm, NULL, error) ||
      !cfg_bool(o, "untie_r", TRUE, &c->untie_r, NULL, error))
    return FALSE;
  /* Hugging Face keeps no memory when mem_len <= 0 and clamps only when
   * clamp_len > 0 (its files use -1 for "never"); our 0 means both. */
  if (c->mem_len < 0)
    c->mem_len = 0;
  if (c->clamp_len < 0)
    c->clamp_len = 0;

  double eps;
  if (!cfg_number(o, "layer_norm_epsilon", 1e-5, &eps, error))
    return FALSE;
  if (!(eps > 0.0 && eps < 1.0)) {
    cfg_error(error, TXL_ERROR_FORMAT,
              "\"layer_norm_epsilon\" = %g must be in (0, 1)", eps);
    return FALSE;
  }
  c->layer_norm_eps = (float)eps;

  /* "adaptive" is ignored by Hugging Face (the adaptive softmax is built
   * from cutoffs regardless); only its type is checked. */
  gboolean adaptive;
  if (!cfg_bool(o, "adaptive", TRUE, &adaptive, NULL, error))
    return FALSE;

  JsonNode *cn = json_object_get_member(o, "cutoffs");
  if (!cn) {
    cfg_error(error, TXL_ERROR_FORMAT, "required key \"cutoffs\" is missing");
    return FALSE;
  }
  if (!JSON_NODE_HOLDS_ARRAY(cn)) {
    cfg_error(error, TXL_ERROR_FORMAT,
              "\"cutoffs\" must be an array of integers");
    return FALSE;
  }
  JsonArray *ca = json_node_get_array(cn);
  guint nc = json_array_get_length(ca);
  if (nc > TXL_MAX_CUTOFFS) {
    cfg_error(error, TXL_ERROR_UNSUPPORTED,
              "\"cutoffs\" has %u entries; at most %d are supported", nc,
              TXL_MAX_CUTOFFS);
    return FALSE;
  }
  c->n_cutoffs = (int)nc;
  for (guint i = 0; i < nc; i++) {
    JsonNode *e = json_array_get_element(ca, i);
    if (!JSON_NODE_HOLDS_VALUE(e) ||
        json_node_get_value_type(e) != G_TYPE_INT64 ||
        json_node_get_int(e) < G_MININT || json_node_get_int(e) > G_MAXINT) {
      cfg_error(error, TXL_ERROR_FORMAT, "\"cutoffs\"[%u] must be an integer",
                i);
      return FALSE;
    }
    c->cutoffs[i] = (int)json_node_get_int(e);
  }

  /* Which output projections reuse the embedding's.  Files written by
   * save_pretrained carry the list itself; the constructor argument
   * proj_share_all_but_first (default true) means [false, true, ...].
   * Versions of transformers disagree on which wins when both are
   * present, so a contradiction is refused rather than guessed. */
  gboolean share_but_first, has_share;
  if (!cfg_bool(o, "proj_share_all_but_first", TRUE, &share_but_first,
                &has_share, error))
    return FALSE;
  gboolean implied[TXL_MAX_CUTOFFS + 1];
  for (int k = 0; k <= c->n_cutoffs; k++)
    implied[k] = k > 0 && share_but_first;
  JsonNode *tn = json_object_get_member(o, "tie_projs");
  if (tn) {
    if (!JSON_NODE_HOLDS_ARRAY(tn)) {
      cfg_error(error, TXL_ERROR_FORMAT,
                "\"tie_projs\" must be an array of booleans");
      return FALSE;
    }
    JsonArray *ta = json_node_get_array(tn);
    if (json_array_get_length(ta) != nc + 1) {
      cfg_error(error, TXL_ERROR_FORMAT,
                "\"tie_projs\" has %u entries, expected len(cutoffs) + 1 = %u",
                json_array_get_length(ta), nc + 1);
      return FALSE;
    }
    for (guint i = 0; i <= nc; i++) {
      JsonNode *e = json_array_get_element(ta, i);
      if (!JSON_NODE_HOLDS_VALUE(e) ||
          json_node_get_value_type(e) != G_TYPE_BOOLEAN) {
        cfg_error(error, TXL_ERROR_FORMAT,
                  "\"tie_projs\"[%u] must be true or false", i);
        return FALSE;
      }
      c->tie_projs[i] = json_node_get_boolean(e);
      if (has_share && c->tie_projs[i] != implied[i]) {
        cfg_error(error, TXL_ERROR_FORMAT,
                  "\"tie_projs\" and \"proj_share_all_but_first\" disagree "
                  "(entry %u)", i);
        return FALSE;
      }
    }
  } else {
    for (int k = 0; k <= c->n_cutoffs; k++)
      c->tie_projs[k] = implied[k];
  }

  /* tie_weight is the name used before transformers 3. */
  gboolean twe, tw, has_twe, has_tw;
  if (!cfg_bool(o, "tie_word_embeddings", TRUE, &twe, &has_twe, error) ||
      !cfg_bool(o, "tie_weight", TRUE, &tw, &has_tw, error))
    return FALSE;
  if (has_twe && has_tw && twe != tw) {
    cfg_error(error, TXL_ERROR_FORMAT,
              "\"tie_word_embeddings\" and \"tie_weight\" disagree");
    return FALSE;
  }
  c->tie_weight = has_twe ? twe : tw;

  c->cluster_order = TXL_CLUSTER_HF;
  GError *e = NULL;
  if (!txl_config_validate(c, &e)) {
    /* its messages start "config: "; the caller names the file instead */
    const char *m = e->message;
    if (g_str_has_prefix(m, "config: "))
      m += strlen("config: ");
    g_set_error_literal(error, e->domain, e->code, m);
    g_error_free(e);
    return FALSE;
  }
  return TRUE;
}

static JsonParser *
load_json(const char *path, GError **error)
{
  g_autofree char *text = NULL;
  gsize len = 0;
  GError *e = NULL;
  if (!g_file_get_contents(path, &text, &len, &e)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s", e->message);
    g_error_free(e);
    return NULL;
  }
  if (len > CONFIG_MAX_BYTES) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: %zu bytes is too large for a JSON config", path, len);
    return NULL;
  }
  if (!txl_json_check_depth(text, len, TXL_JSON_MAX_DEPTH, path, error))
    return NULL;
  JsonParser *p = json_parser_new();
  if (!json_parser_load_from_data(p, text, (gssize)len, &e)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT, "%s: not valid JSON: %s",
                path, e->message);
    g_error_free(e);
    g_object_unref(p);
    return NULL;
  }
  JsonNode *root = json_parser_get_root(p);
  if (!root || !JSON_NODE_HOLDS_OBJECT(root)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: not a JSON object", path);
    g_object_unref(p);
    return NULL;
  }
  return p;
}

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
  g_autofree char *text = NULL;
  gsize len = 0;
  GError *e = NULL;
  if (!g_file_get_contents(path, &text, &len, &e)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s", e->message);
    g_error_free(e);
    return FALSE;
  }
  if (len > VOCAB_MAX_BYTES) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: %zu bytes is too large for a vocabulary", path, len);
    return FALSE;
  }
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
  g_autoptr(JsonParser) p = load_json(path, error);
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
  g_autoptr(JsonParser) cp = load_json(cfg_path, error);
  if (!cp)
    return FALSE;
  TxlConfig cfg;
  if (!parse_config(json_node_get_object(json_parser_get_root(cp)), &cfg,
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
    ok = gguf_writer_write(w, out_path, error);
  gguf_writer_free(w);
  return ok;
}

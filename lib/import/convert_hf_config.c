/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* config.json of a Hugging Face TransfoXLConfig, read strictly: see
 * docs/import-hf.md for the keys and what each one must hold. */
#include "convert_hf_internal.h"

#include "config.h"
#include "filemap.h"
#include "jsondepth.h"

#include <math.h>
#include <string.h>

#define CONFIG_MAX_BYTES (16u << 20)

/* ---- config.json ----------------------------------------------------- */

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
      txl_fail(error, TXL_ERROR_FORMAT, "required key \"%s\" is missing",
               key);
      return FALSE;
    }
    *out = def;
    return TRUE;
  }
  if (!JSON_NODE_HOLDS_VALUE(n) || json_node_get_value_type(n) != G_TYPE_INT64) {
    txl_fail(error, TXL_ERROR_FORMAT, "\"%s\" must be an integer", key);
    return FALSE;
  }
  gint64 v = json_node_get_int(n);
  if (v < G_MININT || v > G_MAXINT) {
    txl_fail(error, TXL_ERROR_FORMAT,
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
    txl_fail(error, TXL_ERROR_FORMAT, "\"%s\" must be true or false", key);
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
    txl_fail(error, TXL_ERROR_FORMAT, "\"%s\" must be a number", key);
    return FALSE;
  }
  *out = json_node_get_double(n);
  return TRUE;
}

/* model_type, and the features of the original code base that Hugging
 * Face never implemented (so no weights for them can exist). */
static gboolean
check_supported(JsonObject *o, GError **error)
{
  JsonNode *mt = json_object_get_member(o, "model_type");
  if (mt) {
    const char *s = JSON_NODE_HOLDS_VALUE(mt) &&
                            json_node_get_value_type(mt) == G_TYPE_STRING
                        ? json_node_get_string(mt)
                        : NULL;
    if (!s || strcmp(s, "transfo-xl") != 0) {
      txl_fail(error, TXL_ERROR_UNSUPPORTED,
               "\"model_type\" is %s%s%s, expected \"transfo-xl\"",
               s ? "\"" : "", s ? s : "not a string", s ? "\"" : "");
      return FALSE;
    }
  }

  int attn_type, sample_softmax, ext_len;
  if (!cfg_int(o, "attn_type", FALSE, 0, &attn_type, NULL, error) ||
      !cfg_int(o, "sample_softmax", FALSE, -1, &sample_softmax, NULL, error) ||
      !cfg_int(o, "ext_len", FALSE, 0, &ext_len, NULL, error))
    return FALSE;
  if (attn_type != 0) {
    txl_fail(error, TXL_ERROR_UNSUPPORTED,
             "attn_type = %d is not supported; only 0 (Transformer-XL "
             "relative attention) is", attn_type);
    return FALSE;
  }
  if (sample_softmax > 0) {
    txl_fail(error, TXL_ERROR_UNSUPPORTED,
             "sample_softmax = %d is not supported; only the full adaptive "
             "softmax (sample_softmax <= 0) is", sample_softmax);
    return FALSE;
  }
  if (ext_len > 0) {
    txl_fail(error, TXL_ERROR_UNSUPPORTED,
             "ext_len = %d is not supported; only 0 is", ext_len);
    return FALSE;
  }

  return TRUE;
}

/* "cutoffs": the adaptive softmax's cluster boundaries (required). */
static gboolean
parse_cutoffs(JsonObject *o, TxlConfig *c, GError **error)
{
  JsonNode *cn = json_object_get_member(o, "cutoffs");
  if (!cn) {
    txl_fail(error, TXL_ERROR_FORMAT, "required key \"cutoffs\" is missing");
    return FALSE;
  }
  if (!JSON_NODE_HOLDS_ARRAY(cn)) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "\"cutoffs\" must be an array of integers");
    return FALSE;
  }
  JsonArray *ca = json_node_get_array(cn);
  guint nc = json_array_get_length(ca);
  if (nc > TXL_MAX_CUTOFFS) {
    txl_fail(error, TXL_ERROR_UNSUPPORTED,
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
      txl_fail(error, TXL_ERROR_FORMAT, "\"cutoffs\"[%u] must be an integer",
               i);
      return FALSE;
    }
    c->cutoffs[i] = (int)json_node_get_int(e);
  }

  return TRUE;
}

static gboolean
parse_tie_projs(JsonObject *o, TxlConfig *c, GError **error)
{
  guint nc = (guint)c->n_cutoffs;
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
      txl_fail(error, TXL_ERROR_FORMAT,
               "\"tie_projs\" must be an array of booleans");
      return FALSE;
    }
    JsonArray *ta = json_node_get_array(tn);
    if (json_array_get_length(ta) != nc + 1) {
      txl_fail(error, TXL_ERROR_FORMAT,
               "\"tie_projs\" has %u entries, expected len(cutoffs) + 1 = %u",
               json_array_get_length(ta), nc + 1);
      return FALSE;
    }
    for (guint i = 0; i <= nc; i++) {
      JsonNode *e = json_array_get_element(ta, i);
      if (!JSON_NODE_HOLDS_VALUE(e) ||
          json_node_get_value_type(e) != G_TYPE_BOOLEAN) {
        txl_fail(error, TXL_ERROR_FORMAT,
                 "\"tie_projs\"[%u] must be true or false", i);
        return FALSE;
      }
      c->tie_projs[i] = json_node_get_boolean(e);
      if (has_share && c->tie_projs[i] != implied[i]) {
        txl_fail(error, TXL_ERROR_FORMAT,
                 "\"tie_projs\" and \"proj_share_all_but_first\" disagree "
                 "(entry %u)", i);
        return FALSE;
      }
    }
  } else {
    for (int k = 0; k <= c->n_cutoffs; k++)
      c->tie_projs[k] = implied[k];
  }

  return TRUE;
}

gboolean
txl_hf_parse_config(JsonObject *o, TxlConfig *c, GError **error)
{
  txl_config_init_default(c);

  if (!check_supported(o, error))
    return FALSE;

  /* Older files call the vocabulary size n_token. */
  gboolean has_vs, has_nt;
  int vs = 0, nt = 0;
  if (!cfg_int(o, "vocab_size", FALSE, 0, &vs, &has_vs, error) ||
      !cfg_int(o, "n_token", FALSE, 0, &nt, &has_nt, error))
    return FALSE;
  if (!has_vs && !has_nt) {
    txl_fail(error, TXL_ERROR_FORMAT,
             "required key \"vocab_size\" (or \"n_token\") is missing");
    return FALSE;
  }
  if (has_vs && has_nt && vs != nt) {
    txl_fail(error, TXL_ERROR_FORMAT,
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
    txl_fail(error, TXL_ERROR_FORMAT,
             "\"layer_norm_epsilon\" = %g must be in (0, 1)", eps);
    return FALSE;
  }
  c->layer_norm_eps = (float)eps;

  /* "adaptive" is ignored by Hugging Face (the adaptive softmax is built
   * from cutoffs regardless); only its type is checked. */
  gboolean adaptive;
  if (!cfg_bool(o, "adaptive", TRUE, &adaptive, NULL, error))
    return FALSE;

  if (!parse_cutoffs(o, c, error) || !parse_tie_projs(o, c, error))
    return FALSE;

  /* tie_weight is the name used before transformers 3. */
  gboolean twe, tw, has_twe, has_tw;
  if (!cfg_bool(o, "tie_word_embeddings", TRUE, &twe, &has_twe, error) ||
      !cfg_bool(o, "tie_weight", TRUE, &tw, &has_tw, error))
    return FALSE;
  if (has_twe && has_tw && twe != tw) {
    txl_fail(error, TXL_ERROR_FORMAT,
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

JsonParser *
txl_hf_load_json(const char *path, GError **error)
{
  gsize len = 0;
  g_autofree char *text =
      txl_read_small_file(path, "a JSON config", CONFIG_MAX_BYTES, &len, error);
  if (!text)
    return NULL;
  if (!txl_json_check_depth(text, len, TXL_JSON_MAX_DEPTH, path, error))
    return NULL;
  GError *e = NULL;
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


/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Trainable parameters of a model in one flat float buffer.
 *
 * Every trainable tensor lives in `data` at a fixed offset, and its
 * gradient at the same offset of `grad`, so an optimizer sees two plain
 * arrays of `n` floats.  Tensors carry the names of docs/model-format.md;
 * a tied tensor (output table = embedding table, output projection =
 * embedding projection) exists once, under the embedding's name, and both
 * views below point at it, so its gradient collects both uses.
 *
 * Training supports a plain softmax (no cutoffs) with div_val 1, d_embed
 * equal to d_model or not, tied or untied output weights, shared or
 * per-layer r biases, pre- or post-LN.  Adaptive softmax models stay
 * inference-only. */
#ifndef TXL_PARAMS_H
#define TXL_PARAMS_H

#include "gguf.h"
#include "model_internal.h"

/* Writable views of one layer's weights (or of their gradients). */
typedef struct {
  float *qkv_w;  /* (3*HD, d_model): rows q, then k, then v */
  float *r_w;    /* (HD, d_model) */
  float *o_w;    /* (d_model, HD) */
  float *attn_ln_w, *attn_ln_b;
  float *r_w_bias, *r_r_bias; /* (n_head, d_head), shared unless untie_r */
  float *ff1_w, *ff1_b;       /* (d_inner, d_model), (d_inner) */
  float *ff2_w, *ff2_b;       /* (d_model, d_inner), (d_model) */
  float *ff_ln_w, *ff_ln_b;
} TxlTrainLayer;

typedef struct {
  float *emb;      /* (n_token, d_embed) */
  float *emb_proj; /* (d_model, d_embed), NULL when d_embed == d_model */
  float *out_w;    /* (n_token, d_embed): == emb when tie_weight */
  float *out_b;    /* (n_token) */
  float *out_proj; /* (d_model, d_embed): == emb_proj when tie_projs[0] */
  TxlTrainLayer *layers;
} TxlTrainWeights;

typedef struct {
  char *name;    /* model-format name */
  int n_dims;    /* 1 or 2 */
  gint64 rows;   /* 1 for vectors */
  gint64 cols;
  gsize offset;  /* in floats, into data and grad */
  gsize size;    /* rows * cols */
} TxlParamTensor;

typedef struct {
  TxlConfig cfg;
  gsize n;          /* floats in data (and in grad) */
  float *data;
  float *grad;
  int n_tensors;
  TxlParamTensor *tensors;
  TxlTrainWeights w; /* views into data */
  TxlTrainWeights g; /* the same views into grad */
  gboolean shares_data; /* a twin (txl_params_new_twin): data is another's */
} TxlParams;

/* How fresh weights are drawn.  The defaults are the official release's
 * (train.py weights_init with --init normal): weights, embeddings and r
 * biases N(0, init_std); projections N(0, proj_init_std); layer-norm
 * weights N(1, init_std); every bias 0. */
typedef struct {
  float init_std;      /* 0.02 */
  float proj_init_std; /* 0.01 */
} TxlInitOptions;

#define TXL_INIT_OPTIONS_DEFAULT { 0.02f, 0.01f }

/* Refuses (TXL_ERROR_UNSUPPORTED) what training does not support. */
gboolean txl_params_config_supported(const TxlConfig *cfg, GError **error);

/* Fresh parameters, drawn from `seed` (the same seed gives the same bits).
 * opts may be NULL.  Gradients start at zero. */
TxlParams *txl_params_new(const TxlConfig *cfg, const TxlInitOptions *opts,
                          guint64 seed, GError **error);
void txl_params_free(TxlParams *p);
void txl_params_zero_grad(TxlParams *p);
const TxlParamTensor *txl_params_find(const TxlParams *p, const char *name);

/* Copies the weights of a loaded model (to resume or fine-tune). */
TxlParams *txl_params_from_model(const TxlModel *m, GError **error);
/* txl_model_load() + txl_params_from_model(). */
TxlParams *txl_params_load_gguf(const char *path, GError **error);

/* Adds the tokenizer.* keys of a model file to w. */
typedef void (*TxlMetaWriteFunc)(GgufWriter *w, gpointer user_data);
/* A TxlMetaWriteFunc for user_data = a const TxlTokenizer * (byte, word, BPE or
 * none), e.g. txl_model_tokenizer() of the model training started from. */
void txl_params_write_tokenizer(GgufWriter *w, gpointer tokenizer);

/* Writes a model file txl_model_load() accepts: the config, the keys
 * add_meta adds (NULL: tokenizer.type "none", ids only) and every tensor,
 * tied ones once.  Atomic (see gguf_writer_write). */
gboolean txl_params_write_gguf(const TxlParams *p, TxlMetaWriteFunc add_meta,
                               gpointer user_data, const char *path,
                               GError **error);

/* A TxlModel whose weights are the current contents of p->data, for
 * validation with the inference engine without writing a file.  p must
 * outlive the model and its streams.  The model caches position tables
 * built from the weights: after the weights change, call
 * txl_model_weights_changed() and create new streams (a stream keeps the
 * tables it was created with).  Its tokenizer is "none". */
TxlModel *txl_model_from_params(TxlParams *p);
/* As txl_model_from_params, but the model owns p and frees it with itself:
 * weights that live exactly as long as the model using them (the adapted
 * weights lib/train/learner.c hands to a scorer). */
TxlModel *txl_model_from_params_owned(TxlParams *p);
/* A new set of parameters with p's config and a copy of its weights
 * (gradients zero). */
TxlParams *txl_params_copy(const TxlParams *p, GError **error);
/* p's weights read in place with gradients of their own (zero): what a
 * second part of a batch accumulates into while the first uses p->grad.
 * p must outlive the twin; txl_params_free() frees only the twin's own. */
TxlParams *txl_params_new_twin(const TxlParams *p, GError **error);

/* Implemented in model.c, the only place that builds TxlModel objects: a
 * model with cfg, no file, no weights yet (the caller fills in[], out[],
 * n_in, n_out and layers[], allocated here with n_layer entries), and
 * tokenizer "none". */
TxlModel *txl_model_new_view(const TxlConfig *cfg);
/* Forgets the cached position tables of a model whose weights changed. */
void txl_model_weights_changed(TxlModel *m);

#endif

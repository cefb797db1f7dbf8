/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal view of a loaded model: pointers into the mapped weights. */
#ifndef TXL_MODEL_INTERNAL_H
#define TXL_MODEL_INTERNAL_H

#include "config.h"
#include "gguf.h"
#include "txl.h"

#define TXL_MAX_CLUSTERS (TXL_MAX_CUTOFFS + 1)

typedef struct {
  const float *qkv_w;  /* (3*HD, d_model) */
  const float *r_w;    /* (HD, d_model) */
  const float *o_w;    /* (d_model, HD) */
  const float *attn_ln_w, *attn_ln_b;
  const float *r_w_bias, *r_r_bias; /* (n_head, d_head) */
  const float *ff1_w, *ff1_b;       /* (d_inner, d_model), (d_inner) */
  const float *ff2_w, *ff2_b;       /* (d_model, d_inner), (d_model) */
  const float *ff_ln_w, *ff_ln_b;
} TxlLayerWeights;

/* One cluster of the adaptive input or output: ids [start, end). */
typedef struct {
  int start, end, dim;
  const float *table; /* (end - start, dim), rows for ids start.. */
  const float *bias;  /* output side only: (end - start) */
  const float *proj;  /* (d_model, dim) or NULL when dim == d_model unprojected */
} TxlCluster;

/* Projected position embeddings W_R R_d for one clamp length, stored with
 * decreasing distance (row m holds distance maxk-1-m) so that the keys of
 * any segment read a contiguous block of rows.  Shared by streams.
 * Each layer's table is kept as the right operand of the position scores,
 * per head, in lib/kernels/gemm.h's panel layout: head n's (maxk, d_head) block
 * transposed, packed with txl_gemm_pack_at() at first column
 * pad = (NR - maxk % NR) % NR, so that the last row (distance 0) ends a
 * panel: every segment's rows then start at a fixed panel offset. */
typedef struct {
  gint ref;
  int clamp_len;
  int maxk;
  float **layer; /* n_layer packed tables, n_head blocks of
                    txl_gemm_packed_floats(pad + maxk, d_head) */
} TxlRTable;

/* The layer weights in lib/kernels/gemm.h's panel layout, built once per model on
 * first use and shared by its streams (weights_changed drops it). */
typedef struct {
  float *qkv, *o, *ff1, *ff2;
} TxlPackedLayer;
typedef struct {
  gint ref;
  int n_layer;
  TxlPackedLayer *layer;
  float *block;
} TxlPacked;

struct _TxlTokenizer {
  TxlTokenizerType type;
  int n_tokens;
  const char **sym;  /* word: symbol bytes (in the mapped file) */
  gsize *sym_len;
  GHashTable *lookup; /* word: GBytes-like key -> id+1 */
  int unk_id, eos_id; /* -1 when absent */
  gboolean lower_case;
  char byte_sym[256];
  struct _TxlBpe *bpe; /* bpe: merges, specials, normalisation (bpe.h) */
};

struct _TxlModel {
  gint ref;
  TxlConfig cfg;
  GgufFile *file;
  char *path;
  TxlTokenizer tok;

  int n_in;  /* input clusters: 1 when div_val == 1 */
  TxlCluster in[TXL_MAX_CLUSTERS];
  int n_out; /* n_cutoffs + 1 */
  TxlCluster out[TXL_MAX_CLUSTERS];
  const float *cluster_w, *cluster_b; /* (n_cutoffs, d_embed), (n_cutoffs) */
  TxlLayerWeights *layers;

  TxlCalibration *calibration; /* NULL: the file carries none */
  /* what a view's weights point into, freed with the model (NULL: the
   * caller keeps it alive; see txl_model_from_params_owned) */
  gpointer owned;
  GDestroyNotify owned_free;

  GMutex lock; /* guards the lazily built fields below */
  GPtrArray *rtables;
  TxlPacked *packed;
  char *id, *vocab_id;
};

/* lib/engine/calibration.c: reads txl.anomaly.* (*out NULL when absent). */
gboolean txl_calibration_read(const GgufFile *f, TxlCalibration **out,
                              GError **error);
void txl_calibration_free(TxlCalibration *c);

/* Loads from a caller-owned buffer that must outlive the model (fuzzing). */
TxlModel *txl_model_from_buffer(const void *data, gsize size, GError **error);

/* Returns a table covering at least maxk positions (new reference), or
 * NULL when its memory cannot be allocated. */
TxlRTable *txl_model_get_rtable(TxlModel *m, int clamp_len, int maxk);
void txl_rtable_unref(TxlRTable *t);
/* The packed layer weights (new reference), or NULL when their memory
 * cannot be allocated. */
TxlPacked *txl_model_get_packed(TxlModel *m);
void txl_packed_unref(TxlPacked *p);

gboolean txl_tokenizer_load(TxlTokenizer *tok, const GgufFile *f, int n_token,
                            GError **error);
void txl_tokenizer_clear(TxlTokenizer *tok);
/* Adds what the tokenizer.* keys define beyond the symbols (bpe merges,
 * specials, normalisation rules) to a vocabulary checksum. */
void txl_tokenizer_checksum(const TxlTokenizer *tok, GChecksum *cs);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Forward kernels of one Transformer-XL layer, on row-major float32
 * matrices.  Pure functions over caller-owned buffers: no allocation. */
#ifndef TXL_OPS_H
#define TXL_OPS_H

#include "model_internal.h"

/* A linear layer: W (out, in) as PyTorch stores it, its bias (NULL: none)
 * and W packed by txl_gemm_pack() where the caller keeps that form (NULL:
 * W is read in place).  The inference forward packs its layer weights once
 * per model (model.c) for lib/kernels/gemm.h's own kernels; training's
 * weights change every step and one-off products (the position table) are
 * not worth packing, so those go through txl_gemm(). */
typedef struct {
  const float *w, *packed, *b;
  int in, out;
} TxlLinear;

/* The one linear forward: y (n, out) = x (n, in) W^T + b, then max(0, .)
 * when relu; with acc, y += x W^T instead (no bias).  Packed, every y
 * element is one fused multiply-add chain from the bias or y's value
 * (gemm.h); in place, OpenBLAS's product is added to them. */
void txl_linear(const TxlLinear *L, const float *x, int n, float *y,
                gboolean acc, gboolean relu);
/* Row-wise layer norm, the one inference and training share: with mean
 * and rstd not NULL it also saves each row's mean and 1/std, what the
 * backward (lib/train, txl_ln_backward) needs. */
void txl_layer_norm(const float *x, int n, int d, const float *w,
                    const float *b, float eps, float *y, float *mean,
                    float *rstd);
/* dst[c * ldd + i] = src[i * lds + c] for n rows of w columns. */
void txl_transpose(const float *src, int n, int w, int lds, float *dst,
                   int ldd);
void txl_relu(float *x, gsize n);
void txl_add(float *y, const float *x, gsize n);

/* Inverted dropout: multiplies x[i] by keep(i) / (1 - p), i = first ..
 * first+n-1 of the mask named by key.  The same call is its own backward.
 * p == 0: no-op. */
void txl_dropout(float *x, gsize n, float p, guint64 key, guint64 first);
/* The key of one dropout site (distinct for every seed, step, site, layer). */
guint64 txl_dropout_key(guint64 seed, guint64 step, int site, int layer);

/* ---- one layer's forward, inference's and training's ------------------ */

/* A layer's weights as txl_layer_forward() reads them (the attention
 * core's own, the projections of queries, keys, values and positions and
 * the r biases, stay with the core). */
typedef struct {
  TxlLinear o, ff1, ff2;
  const float *attn_ln_w, *attn_ln_b, *ff_ln_w, *ff_ln_b;
  float eps;
  gboolean pre_lnorm;
} TxlLayerW;

/* What training adds to a layer's forward (llm.c's way: the forward writes
 * what the backward reads): dropout at the attention output, after the
 * ReLU and after the second product, and the row statistics of the layer
 * norms.  Inference passes none. */
typedef struct {
  float p;
  guint64 key_attn_out, key_ff_mid, key_ff_out;
  float *mu1, *rs1; /* post-LN: the attention norm's (pre-LN: the core's) */
  float *mu2, *rs2; /* the feed-forward norm's */
} TxlLayerSave;

/* The attention core of a layer: from the layer's input, kept by the
 * caller in its own layout, the attention vectors av (n, n_head * d_head)
 * of the segment's n rows (with pre-LN, the norm of its inputs too). */
typedef void (*TxlAttendFunc)(gpointer ctx, int layer, float *av);

/* Buffers of one layer's forward; with TxlLayerSave they are what backward
 * reads, so each must be its own except where said. */
typedef struct {
  TxlAttendFunc attend;
  gpointer ctx;
  int layer;
  float *av;   /* (n, HD) the core's output */
  float *sum1; /* (n, d) input + attention output (post-LN: norm input) */
  float *ffin; /* (n, d) feed-forward input */
  float *act;  /* (n, d_inner) after the ReLU (and dropout) */
  float *sum2; /* (n, d) post-LN: ffin + feed-forward output, the norm's
                * input (may be sum1 without TxlLayerSave); pre-LN: unused,
                * the sum is y */
} TxlLayerBufs;

/* One Transformer-XL layer over n rows h (n, d) into y (y may be h):
 *   pre-LN:  s = h + Attn(LN1(.)),  y = s + FF(LN2(s))
 *   post-LN: s = LN1(h + Attn(.)),  y = LN2(s + FF(s))
 * with FF(x) = relu(x W1^T + b1) W2^T + b2.  The attention core is the
 * caller's, around the one txl_rel_attention(): inference projects only
 * the segment's rows, with weights packed once per model, and keeps one
 * stream's keys and values transposed in its memory; training projects
 * B streams' memory rows again each step (W_qkv and the norm get gradient
 * through them) with weights that change every step, read in place.
 * Either one in the other's layout would change inference's numbers or
 * cost training a pack of every weight per step.  t: NULL for inference. */
void txl_layer_forward(const TxlLayerW *w, const float *h, int n,
                       const TxlLayerBufs *b, const TxlLayerSave *t,
                       float *y);
/* Sinusoidal embedding of distance `dist` (d floats: sines then cosines). */
void txl_pos_emb(float dist, int d, float *out);
/* K rows of them for distances K-1 down to 0 (the keys' order), capped at
 * clamp_len when it is > 0. */
void txl_pos_table(int K, int clamp_len, int d, float *out);

/* Embeds n ids into h (n, d_model), scaled by sqrt(d_model).  scratch needs
 * n * (d_embed + d_model) floats, idx n ints.  Ids must be valid. */
void txl_embed(const TxlModel *m, const int32_t *ids, int n, float *h,
               float *scratch, int *idx);

/* Relative multi-head attention of one layer, inference's and training's
 * forward alike (lib/train/train_attention.c).  q rows have stride
 * ldq; the klen = mlen + qlen keys are given transposed (kt: row
 * n*d_head+c holds feature c of head n for key positions 0..klen-1, row
 * stride ldkt) and the values as rows (v, stride ldv); rp is the layer's
 * position table as a TxlRTable packs it, for maxk = rmaxk positions.
 * Writes the attention vectors (qlen, HD).  Heads run in parallel, up to
 * `slots` at once, each with txl_attn_scratch_floats() of scratch. */
typedef struct {
  int qlen, mlen, n_head, d_head;
  int same_length, mem_len;
  const float *q; int ldq;
  const float *kt; int ldkt;
  const float *v; int ldv;
  const float *rp; int rmaxk;
  const float *r_w_bias, *r_r_bias;
  /* Training only (NULL and 0 in inference): the probabilities written to
   * prob, qlen rows of klen per head, head after head, zero outside each
   * query's keys; and attention dropout on them, mask element (n, i, j) at
   * first + (n * qlen + i) * klen + j of key. */
  float *prob;
  float dropatt;
  guint64 key, first;
} TxlAttnArgs;
gsize txl_attn_scratch_floats(int qlen, int klen, int d_head);
void txl_rel_attention(const TxlAttnArgs *a, float *scratch, int slots,
                       float *out);
/* One head's queries plus its two biases: qu = q + r_w_bias (content
 * scores), qv = q + r_r_bias (position scores), for `rows` query rows of
 * stride ldq into rows of d_head. */
void txl_attn_biased_queries(const float *q, int ldq, int rows, int d_head,
                             const float *u, const float *v, float *qu,
                             float *qv);
/* First key index visible to query i under same_length (0 otherwise). */
int txl_attn_first_key(int i, int qlen, int mlen, int klen, int mem_len,
                       int same_length);

/* The largest of z[0..n-1], and in *sum the sum of exp(z[j] - largest) in
 * double: the row's log-sum-exp is largest + log(*sum), rounded as each
 * caller needs (the output log-softmax, training's cross-entropy). */
float txl_row_max_expsum(const float *z, int n, double *sum);

/* Output side: log P(target) for n rows of final hidden states.  scratch
 * must hold txl_out_scratch_floats(m, n) floats, rows n ints. */
gsize txl_out_scratch_floats(const TxlModel *m, int n);
void txl_out_logprobs(const TxlModel *m, const float *h, int n,
                      const int32_t *targets, float *logprobs, float *scratch,
                      int *rows);
/* Full distribution over the vocabulary for one hidden row. */
void txl_out_full(const TxlModel *m, const float *h, float *out,
                  float *scratch);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Forward kernels of one Transformer-XL layer, on row-major float32
 * matrices.  Pure functions over caller-owned buffers: no allocation. */
#ifndef TXL_OPS_H
#define TXL_OPS_H

#include "model_internal.h"

/* y[n, out] = x[n, in] W^T (+ b) with W (out, in) as PyTorch stores it. */
void txl_linear(const float *x, int n, int in, const float *W, const float *b,
                int out, float *y);
/* Same, accumulating into y (y += x W^T). */
void txl_linear_acc(const float *x, int n, int in, const float *W, int out,
                    float *y);
/* Row-wise layer norm, the one inference and training share: with mean
 * and rstd not NULL it also saves each row's mean and 1/std, what the
 * backward (lib/train, txl_ln_backward) needs. */
void txl_layer_norm(const float *x, int n, int d, const float *w,
                    const float *b, float eps, float *y, float *mean,
                    float *rstd);
void txl_relu(float *x, gsize n);
void txl_add(float *y, const float *x, gsize n);
/* Sinusoidal embedding of distance `dist` (d floats: sines then cosines). */
void txl_pos_emb(float dist, int d, float *out);

/* Embeds n ids into h (n, d_model), scaled by sqrt(d_model).  scratch needs
 * n * (d_embed + d_model) floats, idx n ints.  Ids must be valid. */
void txl_embed(const TxlModel *m, const int32_t *ids, int n, float *h,
               float *scratch, int *idx);

/* Relative multi-head attention core for one layer.  q rows have stride
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
} TxlAttnArgs;
gsize txl_attn_scratch_floats(int qlen, int klen, int d_head);
void txl_rel_attention(const TxlAttnArgs *a, float *scratch, int slots,
                       float *out);
/* First key index visible to query i under same_length (0 otherwise). */
int txl_attn_first_key(int i, int qlen, int mlen, int klen, int mem_len,
                       int same_length);

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

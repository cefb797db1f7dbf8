/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Training: forward with saved activations, and backward, in plain C on
 * sgemm (internal to libtxl; see docs/training.md).
 *
 * A training loop does
 *
 *   TxlParams *p = txl_params_new(&cfg, NULL, seed, &err);
 *   TxlTrainOptions o = TXL_TRAIN_OPTIONS_DEFAULT;  (then set B, T, ...)
 *   TxlTrainState *s = txl_train_state_new(p, &o, &err);
 *   for each step:
 *     txl_params_zero_grad(p);
 *     loss = txl_train_step(s, inputs, targets);   (B*T ids each)
 *     optimizer over p->data, p->grad (p->n floats)
 *   txl_train_state_reset(s) where the streams start over.
 *
 * Batch layout: B independent streams, each a segment of T tokens; row
 * b*T + t of inputs/targets is stream b's token t.  Each stream has its
 * own recurrent memory of every layer's input hidden states (mem_len
 * rows), kept in the state, carried from one step to the next and never
 * differentiated (the paper's stop-gradient).  The loss is the
 * cross-entropy summed over the B*T targets and divided by B*T, in nats;
 * a target of -1 is context only: no loss there, no gradient from it
 * (the learner's rounds learn a session's new lines after its older
 * ones, learner.h).
 *
 * Dropout is inverted dropout at the official code's places: the word
 * embeddings, the position embeddings, the attention output, after the
 * ReLU and after the second feed-forward product, on the last layer's
 * output, and (rate dropatt) on the attention probabilities.  Masks come
 * from a counter-based hash of (seed, step, site, element), so they depend
 * on nothing else: not on the thread count, and forward and backward
 * regenerate the same mask instead of storing it. */
#ifndef TXL_TRAIN_H
#define TXL_TRAIN_H

#include "gemm.h"
#include "ops.h"
#include "params.h"

/* ---- kernels (exposed for tests/unit/test_grad.c) ----------------------- */

/* Gradients of txl_linear() (ops.h) with W (out, in) read in place: dW +=
 * dy^T x, db += sum of dy rows (db may be NULL), and dx = dy W (beta 0) or
 * dx += dy W (beta 1); dx may be NULL. */
void txl_linear_backward(const float *dy, const float *x, int n, int in,
                         const float *W, int out, float *dx, float beta,
                         float *dW, float *db);

/* The layer norm's forward is the engine's txl_layer_norm (ops.h), which
 * saves each row's mean and 1/std when asked.  Its backward:
 * dw += , db += ; dx = (beta 0) or += (beta 1) the input gradient; dx may
 * alias dy (rows are read before they are written). */
void txl_ln_backward(const float *dy, const float *x, const float *mean,
                     const float *rstd, int n, int d, const float *w,
                     float *dx, float beta, float *dw, float *db);

/* Dropout is the engine's txl_dropout() (ops.h). */

/* Relative attention of B streams over [memory; segment] (K = mlen + T
 * keys), as docs/model.md defines it.  q: (B*T, HD) rows; kv:
 * (B*K, 2*HD) rows, keys then values; rk: (K, HD) projected positions,
 * row m at distance K-1-m (already clamped).  Saves the probabilities
 * (B, H, T, K), before attention dropout, for backward.  The forward is
 * the engine's txl_rel_attention() (ops.h). */
typedef struct {
  int B, T, mlen, n_head, d_head;
  int same_length, mem_len;
  float dropatt;
  guint64 key;  /* attention dropout mask */
  const float *q, *kv, *rk;
  const float *r_w_bias, *r_r_bias;
} TxlTrainAttn;

/* Floats of the scratch of forward and backward with up to `slots` heads
 * at once (slots >= 1), for K keys at most. */
gsize txl_train_attn_scratch_floats(int T, int K, int n_head, int d_head,
                                    int slots);
void txl_train_attn_forward(const TxlTrainAttn *a, float *prob, float *out,
                            float *scratch, int slots);
/* dq (B*T, HD) and dkv (B*K, 2HD) are written; drk (K, HD), dr_w_bias and
 * dr_r_bias (n_head, d_head) are accumulated. */
void txl_train_attn_backward(const TxlTrainAttn *a, const float *prob,
                             const float *dout, float *dq, float *dkv,
                             float *drk, float *dr_w_bias, float *dr_r_bias,
                             float *scratch, int slots);

/* Mean cross-entropy of n rows of logits (n, V) against targets (-1: the
 * row counts 0, and its gradient is 0); keeps each row's log-sum-exp.
 * nll: n doubles of the caller's, for the rows' losses (the rows run over
 * the pool, their sum in row order).  Backward
 * turns the logits, in place, into the gradient of scale x (sum of row
 * losses). */
double txl_ce_forward(const float *logits, int n, int V,
                      const int32_t *targets, float *lse, double *nll);
void txl_ce_backward(float *logits, int n, int V, const int32_t *targets,
                     const float *lse, float scale);

/* ---- training state -------------------------------------------------- */

typedef struct {
  int batch;       /* B streams */
  int seg_len;     /* T tokens per stream per step */
  int mem_len;     /* < 0: the config's */
  int clamp_len;   /* < 0: the config's */
  int same_length; /* < 0: the config's, else 0/1 */
  float dropout;   /* embeddings, positions, layer outputs, feed-forward */
  float dropatt;   /* attention probabilities */
  guint64 seed;    /* dropout masks */
} TxlTrainOptions;

#define TXL_TRAIN_OPTIONS_DEFAULT { 1, 0, -1, -1, -1, 0.0f, 0.0f, 0 }

typedef struct _TxlTrainState TxlTrainState;

/* Allocates every activation and scratch buffer for B x T (nothing is
 * allocated per step).  p must outlive the state. */
TxlTrainState *txl_train_state_new(TxlParams *p, const TxlTrainOptions *o,
                                   GError **error);
void txl_train_state_free(TxlTrainState *s);
/* Forgets every stream's memory: the next step starts new streams. */
void txl_train_state_reset(TxlTrainState *s);
/* Bytes held (activations, memory, scratch). */
gsize txl_train_state_bytes(const TxlTrainState *s);
/* Memory rows in use by the next forward. */
int txl_train_state_mem_used(const TxlTrainState *s);

/* Runs the B x T segment, saving what backward needs, and returns the
 * loss (nats per token, above).  Ids must be in [0, n_token), targets may
 * also be -1 (checked with g_return_val_if_fail).  The segment joins the
 * memory when the next forward starts, so a forward can be taken back
 * (below). */
double txl_train_forward(TxlTrainState *s, const int32_t *inputs,
                         const int32_t *targets);
/* Adds the gradient of the last forward's loss to p->grad (call it at
 * most once per forward). */
void txl_train_backward(TxlTrainState *s);
/* forward + backward. */
double txl_train_step(TxlTrainState *s, const int32_t *inputs,
                      const int32_t *targets);
/* The recurrent memory (n_layer x B x mlen x d_model floats, at most
 * txl_train_state_memory_floats()) and the dropout step counter, to save a
 * run and resume it bit for bit. */
gsize txl_train_state_memory_floats(const TxlTrainState *s);
void txl_train_state_save(TxlTrainState *s, float *mem, guint64 *step,
                          int *mlen);
gboolean txl_train_state_restore(TxlTrainState *s, const float *mem,
                                 guint64 step, int mlen, GError **error);

/* Takes the last forward back: the next forward sees the same memory and
 * draws the same dropout masks (finite differences, evaluation). */
void txl_train_rewind(TxlTrainState *s);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The training state and the whole-model forward and backward.
 *
 * Layout.  Layer l's input lives in x[l] as B blocks of K = mlen + T rows,
 * each [memory; segment] of one stream, so the keys and values of every
 * stream come from one product over B*K rows.  That buffer *is* the
 * recurrent memory: when the next forward starts, the last min(mem_len, K)
 * rows of each block move to its front (blocks re-laid for the new K).
 * Keeping hidden states (not keys and values) is what training needs:
 * W_qkv, and with pre-LN the layer norm, get gradient from the memory rows
 * too, since their keys and values depend on those weights.  Nothing flows
 * back into the memory itself.
 *
 * Every activation buffer is sized for K = mem_len + T when the state is
 * created, in one allocation; a step allocates nothing. */
#include "freeeach.h"
#include "ops.h"
#include "parallel.h"
#include "train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

enum {
  SITE_EMB = 1,
  SITE_POS,
  SITE_ATTN,
  SITE_ATTN_OUT,
  SITE_FF_MID,
  SITE_FF_OUT,
  SITE_FINAL,
};

typedef struct {
  float *x;         /* (B, K, d) input: [memory; segment] per stream */
  float *xn;        /* pre-LN: attention layer norm of x, all rows */
  float *mu1, *rs1; /* attention layer norm: pre B*K rows, post B*T */
  float *q;         /* (B*T, HD) */
  float *kv;        /* (B*K, 2*HD) */
  float *rk;        /* (K, HD) projected positions */
  float *prob;      /* (B, H, T, K) */
  float *av;        /* (B*T, HD) attention vectors */
  float *res1;      /* segment rows + dropped attention output */
  float *ffin;      /* feed-forward input: post LN1(res1), pre LN2(res1) */
  float *mu2, *rs2; /* the other layer norm (B*T rows) */
  float *act;       /* (B*T, d_inner) dropout(relu(ffin W1^T + b1)) */
  float *res2;      /* post-LN: ffin + dropped FF output (LN2 input) */
} Acts;

struct _TxlTrainState {
  TxlParams *p;
  int B, T, mem_len, clamp_len, same_length, Kmax;
  float dropout, dropatt;
  guint64 seed, step;
  int mlen;           /* memory rows of the current (or next) forward */
  gboolean pending;   /* the last forward's rows are not yet in memory */
  gboolean can_backward;
  int slots;
  gsize floats;
  float *block;
  Acts *L;
  TxlGemmArgs *proj; /* the attention projections of one layer: B + 2 */
  double *nll;       /* (N) each row's loss, summed in row order */
  float *pos;    /* (K, d) dropped sinusoids, distances K-1..0 */
  float *erows;  /* (N, d_embed) embedding rows of the inputs */
  float *hL;     /* (N, d) last layer output */
  float *hd;     /* (N, d) dropout(hL) */
  float *hp;     /* (N, d_embed) hd projected (or NULL) */
  float *logits; /* (N, V), then their gradient */
  float *lse;    /* (N) */
  int32_t *in, *tgt;
  /* gradient scratch */
  float *g0, *g1, *g2, *gx, *gq, *gkv, *grk, *gav, *gff, *ge;
  float *attn_scratch;
  int ce_rows; /* rows whose mean the loss is: the whole batch's */
  /* A batch of two or more streams runs as two parts at once (the end of
   * this file): each part a state of its own, the second's gradient in
   * a twin of the parameters, added after both.  NULL in a part. */
  TxlTrainState *part[2];
  TxlParams *twin;
};

/* ---- state ------------------------------------------------------------ */

static float *
take(float **cur, gsize n)
{
  float *r = *cur;
  *cur += (n + 15) & ~(gsize)15;
  return r;
}

/* One pass to count (base == NULL), one to hand out. */
static gsize
carve(TxlTrainState *s, float *base)
{
  const TxlConfig *c = &s->p->cfg;
  const gsize B = s->B, T = s->T, K = s->Kmax, N = B * T;
  const gsize d = c->d_model, E = c->d_embed, V = c->n_token;
  const gsize HD = (gsize)c->n_head * c->d_head, di = c->d_inner;
  float *cur = base;
  gsize count = 0;
#define TAKE(field, n)                                                         \
  do {                                                                         \
    gsize n_ = (n);                                                            \
    if (base)                                                                  \
      (field) = take(&cur, n_);                                                \
    count += (n_ + 15) & ~(gsize)15;                                           \
  } while (0)
  for (int l = 0; l < c->n_layer; l++) {
    Acts *A = &s->L[l];
    TAKE(A->x, B * K * d);
    if (c->pre_lnorm)
      TAKE(A->xn, B * K * d);
    TAKE(A->mu1, B * K);
    TAKE(A->rs1, B * K);
    TAKE(A->q, N * HD);
    TAKE(A->kv, B * K * 2 * HD);
    TAKE(A->rk, K * HD);
    TAKE(A->prob, B * c->n_head * T * K);
    TAKE(A->av, N * HD);
    TAKE(A->res1, N * d);
    TAKE(A->ffin, N * d);
    TAKE(A->mu2, N);
    TAKE(A->rs2, N);
    TAKE(A->act, N * di);
    if (!c->pre_lnorm)
      TAKE(A->res2, N * d);
  }
  TAKE(s->pos, K * d);
  TAKE(s->erows, N * E);
  TAKE(s->hL, N * d);
  TAKE(s->hd, N * d);
  if (s->p->w.out_proj)
    TAKE(s->hp, N * E);
  TAKE(s->logits, N * V);
  TAKE(s->lse, N);
  TAKE(s->g0, N * d);
  TAKE(s->g1, N * d);
  TAKE(s->g2, N * d);
  TAKE(s->gx, B * K * d);
  TAKE(s->gq, N * HD);
  TAKE(s->gkv, B * K * 2 * HD);
  TAKE(s->grk, K * HD);
  TAKE(s->gav, N * HD);
  TAKE(s->gff, N * di);
  TAKE(s->ge, N * MAX(E, d));
  TAKE(s->attn_scratch, txl_train_attn_scratch_floats(s->T, s->Kmax,
                                                      c->n_head, c->d_head,
                                                      s->slots));
#undef TAKE
  return count;
}

#define MAX_STATE_BYTES ((gsize)256 << 30)

static TxlTrainState *unit_new(TxlParams *p, const TxlTrainOptions *o,
                               int mem_len, int clamp, int same, int ce_rows,
                               GError **error);
static TxlTrainState *parts_new(TxlParams *p, const TxlTrainOptions *o,
                                int mem_len, int clamp, int same,
                                GError **error);

TxlTrainState *
txl_train_state_new(TxlParams *p, const TxlTrainOptions *o, GError **error)
{
  const TxlConfig *c = &p->cfg;
  int mem_len = o->mem_len >= 0 ? o->mem_len : c->mem_len;
  int clamp = o->clamp_len >= 0 ? o->clamp_len : c->clamp_len;
  int same = o->same_length >= 0 ? (o->same_length != 0) : c->same_length;
  if (o->batch < 1 || o->seg_len < 1 || o->batch > (1 << 20) ||
      o->seg_len > (1 << 20) || mem_len > (1 << 20) || clamp > (1 << 20)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "batch %d, segment %d, mem_len %d, clamp_len %d: batch and "
                "segment must be >= 1, all at most 1048576", o->batch,
                o->seg_len, mem_len, clamp);
    return NULL;
  }
  if (!(o->dropout >= 0.0f && o->dropout < 1.0f) ||
      !(o->dropatt >= 0.0f && o->dropatt < 1.0f)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "dropout %g and dropatt %g must be in [0, 1)",
                (double)o->dropout, (double)o->dropatt);
    return NULL;
  }
  if (same && mem_len == 0) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "same_length needs mem_len > 0");
    return NULL;
  }
  if (o->batch >= 2)
    return parts_new(p, o, mem_len, clamp, same, error);
  return unit_new(p, o, mem_len, clamp, same, o->batch * o->seg_len, error);
}

static TxlTrainState *
unit_new(TxlParams *p, const TxlTrainOptions *o, int mem_len, int clamp,
         int same, int ce_rows, GError **error)
{
  const TxlConfig *c = &p->cfg;
  TxlTrainState *s = g_new0(TxlTrainState, 1);
  s->p = p;
  s->B = o->batch;
  s->T = o->seg_len;
  s->mem_len = mem_len;
  s->clamp_len = clamp;
  s->same_length = same;
  s->Kmax = mem_len + o->seg_len;
  s->dropout = o->dropout;
  s->dropatt = o->dropatt;
  s->seed = o->seed;
  s->ce_rows = ce_rows;
  s->slots = MAX(1, MIN(txl_parallel_threads(), c->n_head));
  s->L = g_new0(Acts, c->n_layer);
  s->floats = carve(s, NULL);
  if (s->floats * sizeof(float) > MAX_STATE_BYTES ||
      posix_memalign((void **)&s->block, 64, s->floats * sizeof(float)) != 0) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "a training state for batch %d x segment %d with mem_len %d "
                "needs %.1f GiB, more than can be allocated", s->B, s->T,
                mem_len, s->floats * 4.0 / (1 << 30));
    s->block = NULL;
    txl_train_state_free(s);
    return NULL;
  }
  carve(s, s->block);
  s->proj = g_new(TxlGemmArgs, s->B + 2);
  s->nll = g_new(double, (gsize)s->B * s->T);
  s->in = g_new(int32_t, (gsize)s->B * s->T);
  s->tgt = g_new(int32_t, (gsize)s->B * s->T);
  return s;
}

void
txl_train_state_free(TxlTrainState *s)
{
  if (!s)
    return;
  txl_train_state_free(s->part[0]);
  txl_train_state_free(s->part[1]);
  txl_params_free(s->twin);
  free(s->block);
  txl_free_each(g_free, s->L, s->proj, s->nll, s->in, s->tgt, s);
}

void
txl_train_state_reset(TxlTrainState *s)
{
  for (int k = 0; k < 2 && s->part[k]; k++)
    txl_train_state_reset(s->part[k]);
  if (s->pending)
    s->step++;
  s->pending = FALSE;
  s->can_backward = FALSE;
  s->mlen = 0;
}

gsize
txl_train_state_bytes(const TxlTrainState *s)
{
  if (s->part[0])
    return txl_train_state_bytes(s->part[0]) +
           txl_train_state_bytes(s->part[1]) + s->p->n * sizeof(float);
  return s->floats * sizeof(float);
}

int
txl_train_state_mem_used(const TxlTrainState *s)
{
  if (s->part[0])
    return txl_train_state_mem_used(s->part[0]);
  return s->pending ? MIN(s->mem_len, s->mlen + s->T) : s->mlen;
}

void
txl_train_rewind(TxlTrainState *s)
{
  for (int k = 0; k < 2 && s->part[k]; k++)
    txl_train_rewind(s->part[k]);
  s->pending = FALSE;
  s->can_backward = FALSE;
}

/* Appends the last segment to every layer's memory. */
static void
fold_memory(TxlTrainState *s)
{
  const int d = s->p->cfg.d_model, K = s->mlen + s->T;
  const int keep = MIN(s->mem_len, K), K2 = keep + s->T;
  for (int l = 0; l < s->p->cfg.n_layer && keep > 0; l++) {
    float *x = s->L[l].x;
    /* from the last block down: a block's new place never reaches the
     * unmoved blocks before it, since K2 >= K */
    for (int b = s->B - 1; b >= 0; b--)
      memmove(x + (gsize)b * K2 * d, x + ((gsize)b * K + K - keep) * d,
              sizeof(float) * keep * d);
  }
  s->mlen = keep;
  s->step++;
}

gsize
txl_train_state_memory_floats(const TxlTrainState *s)
{
  const TxlConfig *c = &s->p->cfg;
  return (gsize)c->n_layer * s->B * s->mem_len * c->d_model;
}

/* The states that hold streams: s, or its two parts (streams in order). */
static int
units(TxlTrainState *s, TxlTrainState **u)
{
  if (!s->part[0]) {
    u[0] = s;
    return 1;
  }
  u[0] = s->part[0];
  u[1] = s->part[1];
  return 2;
}

void
txl_train_state_save(TxlTrainState *s, float *mem, guint64 *step, int *mlen)
{
  const int d = s->p->cfg.d_model;
  TxlTrainState *u[2];
  const int nu = units(s, u);
  for (int k = 0; k < nu; k++) {
    /* the next forward would fold the last segment in; doing it now
     * changes nothing it computes */
    if (u[k]->pending)
      fold_memory(u[k]);
    u[k]->pending = FALSE;
    u[k]->can_backward = FALSE;
  }
  const int m = u[0]->mlen, K = m + s->T;
  gsize at = 0;
  for (int l = 0; l < s->p->cfg.n_layer; l++)
    for (int k = 0; k < nu; k++)
      for (int b = 0; b < u[k]->B; b++) {
        memcpy(mem + at, u[k]->L[l].x + (gsize)b * K * d,
               sizeof(float) * m * d);
        at += (gsize)m * d;
      }
  *step = u[0]->step;
  *mlen = m;
}

gboolean
txl_train_state_restore(TxlTrainState *s, const float *mem, guint64 step,
                        int mlen, GError **error)
{
  if (mlen < 0 || mlen > s->mem_len) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "saved memory of %d positions does not fit mem_len %d", mlen,
                s->mem_len);
    return FALSE;
  }
  const int d = s->p->cfg.d_model, K = mlen + s->T;
  TxlTrainState *u[2];
  const int nu = units(s, u);
  gsize at = 0;
  for (int l = 0; l < s->p->cfg.n_layer; l++)
    for (int k = 0; k < nu; k++)
      for (int b = 0; b < u[k]->B; b++) {
        memcpy(u[k]->L[l].x + (gsize)b * K * d, mem + at,
               sizeof(float) * mlen * d);
        at += (gsize)mlen * d;
      }
  for (int k = 0; k < nu; k++) {
    u[k]->mlen = mlen;
    u[k]->step = step;
    u[k]->pending = FALSE;
    u[k]->can_backward = FALSE;
  }
  return TRUE;
}

/* ---- forward ---------------------------------------------------------- */

static guint64
key(const TxlTrainState *s, int site, int layer)
{
  return txl_dropout_key(s->seed, s->step, site, layer);
}

static float *
cur_rows(const TxlTrainState *s, float *x, int b)
{
  const int K = s->mlen + s->T;
  return x + ((gsize)b * K + s->mlen) * s->p->cfg.d_model;
}

static void
embed_forward(TxlTrainState *s)
{
  const TxlConfig *c = &s->p->cfg;
  const TxlTrainWeights *w = &s->p->w;
  const int N = s->B * s->T, d = c->d_model, E = c->d_embed;
  for (int i = 0; i < N; i++)
    memcpy(s->erows + (gsize)i * E, w->emb + (gsize)s->in[i] * E,
           sizeof(float) * E);
  float *e = s->g0; /* free until backward (the first layer's input) */
  if (w->emb_proj) {
    const TxlLinear proj = { w->emb_proj, NULL, NULL, E, d };
    txl_linear(&proj, s->erows, N, e, FALSE, FALSE);
  } else {
    memcpy(e, s->erows, sizeof(float) * N * d);
  }
  const float scale = sqrtf((float)d);
  for (gsize i = 0; i < (gsize)N * d; i++)
    e[i] *= scale;
  txl_dropout(e, (gsize)N * d, s->dropout, key(s, SITE_EMB, 0), 0);
  for (int b = 0; b < s->B; b++)
    memcpy(cur_rows(s, s->L[0].x, b), e + (gsize)b * s->T * d,
           sizeof(float) * s->T * d);
}

static void
positions_forward(TxlTrainState *s)
{
  const int d = s->p->cfg.d_model, K = s->mlen + s->T;
  txl_pos_table(K, s->clamp_len, d, s->pos);
  /* one mask for every layer and stream, as the official code drops the
   * position embedding once */
  txl_dropout(s->pos, (gsize)K * d, s->dropout, key(s, SITE_POS, 0), 0);
}

static TxlTrainAttn
attn_args(const TxlTrainState *s, int l)
{
  const TxlConfig *c = &s->p->cfg;
  const TxlTrainLayer *W = &s->p->w.layers[l];
  const Acts *A = &s->L[l];
  return (TxlTrainAttn){
    .B = s->B, .T = s->T, .mlen = s->mlen, .n_head = c->n_head,
    .d_head = c->d_head, .same_length = s->same_length,
    .mem_len = s->mem_len, .dropatt = s->dropatt,
    .key = key(s, SITE_ATTN, l), .q = A->q, .kv = A->kv, .rk = A->rk,
    .r_w_bias = W->r_w_bias, .r_r_bias = W->r_r_bias,
  };
}

/* The training attention core of layer l (TxlAttendFunc): with pre-LN the
 * norm of all B*K input rows; keys and values of all of them (memory rows
 * are projected again: W_qkv, and the norm, get gradient through them too),
 * queries of the segment rows, the projected positions, and attention that
 * keeps its probabilities. */
static void
attend(gpointer ctx, int l, float *av)
{
  TxlTrainState *s = ctx;
  const TxlConfig *c = &s->p->cfg;
  const TxlTrainLayer *W = &s->p->w.layers[l];
  Acts *A = &s->L[l];
  const int B = s->B, T = s->T, K = s->mlen + T;
  const int d = c->d_model, HD = c->n_head * c->d_head;
  const float *Wq = W->qkv_w, *Wkv = W->qkv_w + (gsize)HD * d;

  const float *xin = A->x;
  if (c->pre_lnorm) {
    txl_layer_norm(A->x, B * K, d, W->attn_ln_w, W->attn_ln_b,
                   c->layer_norm_eps, A->xn, A->mu1, A->rs1);
    xin = A->xn;
  }
  /* x W^T for the keys and values, each stream's queries and the
   * positions: unbiased linears (txl_linear's products), independent, so
   * in one batch */
  TxlGemmArgs *p = s->proj;
  int n = 0;
  p[n++] = (TxlGemmArgs){ FALSE, TRUE, B * K, 2 * HD, d, 1.0f, xin, d, Wkv,
                          d, 0.0f, A->kv, 2 * HD };
  p[n++] = (TxlGemmArgs){ FALSE, TRUE, K, HD, d, 1.0f, s->pos, d, W->r_w, d,
                          0.0f, A->rk, HD };
  for (int b = 0; b < B; b++)
    p[n++] = (TxlGemmArgs){ FALSE, TRUE, T, HD, d, 1.0f,
                            cur_rows(s, (float *)xin, b), d, Wq, d, 0.0f,
                            A->q + (gsize)b * T * HD, HD };
  txl_gemm_batch(p, n);
  TxlTrainAttn a = attn_args(s, l);
  txl_train_attn_forward(&a, A->prob, av, s->attn_scratch, s->slots);
}

/* Layer l on the segment rows h (N, d), also in A->x, into y (N, d; may
 * be h), keeping what backward reads. */
static void
layer_forward(TxlTrainState *s, int l, const float *h, float *y)
{
  const TxlConfig *c = &s->p->cfg;
  const TxlTrainLayer *W = &s->p->w.layers[l];
  Acts *A = &s->L[l];
  const int d = c->d_model, HD = c->n_head * c->d_head, di = c->d_inner;
  const TxlLayerW w = {
    .o = { W->o_w, NULL, NULL, HD, d },
    .ff1 = { W->ff1_w, NULL, W->ff1_b, d, di },
    .ff2 = { W->ff2_w, NULL, W->ff2_b, di, d },
    .attn_ln_w = W->attn_ln_w, .attn_ln_b = W->attn_ln_b,
    .ff_ln_w = W->ff_ln_w, .ff_ln_b = W->ff_ln_b,
    .eps = c->layer_norm_eps, .pre_lnorm = c->pre_lnorm,
  };
  const TxlLayerBufs b = {
    .attend = attend, .ctx = s, .layer = l, .av = A->av,
    .sum1 = A->res1, .ffin = A->ffin, .act = A->act, .sum2 = A->res2,
  };
  const TxlLayerSave t = {
    .p = s->dropout, .key_attn_out = key(s, SITE_ATTN_OUT, l),
    .key_ff_mid = key(s, SITE_FF_MID, l), .key_ff_out = key(s, SITE_FF_OUT, l),
    .mu1 = A->mu1, .rs1 = A->rs1, .mu2 = A->mu2, .rs2 = A->rs2,
  };
  txl_layer_forward(&w, h, s->B * s->T, &b, &t, y);
}

static double
output_forward(TxlTrainState *s)
{
  const TxlConfig *c = &s->p->cfg;
  const TxlTrainWeights *w = &s->p->w;
  const int N = s->B * s->T, d = c->d_model, E = c->d_embed;
  memcpy(s->hd, s->hL, sizeof(float) * N * d);
  txl_dropout(s->hd, (gsize)N * d, s->dropout, key(s, SITE_FINAL, 0), 0);
  const float *h = s->hd;
  if (w->out_proj) {
    txl_gemm(FALSE, FALSE, N, E, d, 1.0f, s->hd, d, w->out_proj, E, 0.0f,
             s->hp, E);
    h = s->hp;
  }
  const TxlLinear out = { w->out_w, NULL, w->out_b, E, c->n_token };
  txl_linear(&out, h, N, s->logits, FALSE, FALSE);
  return txl_ce_forward(s->logits, N, c->n_token, s->tgt, s->lse, s->nll);
}

/* Ids in [lo, n_token): inputs from 0, targets from -1 (no loss). */
static gboolean
ids_ok(const int32_t *ids, gsize n, int lo, int n_token)
{
  for (gsize i = 0; i < n; i++)
    if (ids[i] < lo || ids[i] >= n_token)
      return FALSE;
  return TRUE;
}

static double
unit_forward(TxlTrainState *s, const int32_t *inputs, const int32_t *targets)
{
  const TxlConfig *c = &s->p->cfg;
  const gsize N = (gsize)s->B * s->T;
  g_return_val_if_fail(ids_ok(inputs, N, 0, c->n_token), NAN);
  g_return_val_if_fail(ids_ok(targets, N, -1, c->n_token), NAN);
  if (s->pending)
    fold_memory(s);
  memcpy(s->in, inputs, sizeof(int32_t) * N);
  memcpy(s->tgt, targets, sizeof(int32_t) * N);

  embed_forward(s);
  positions_forward(s);
  for (int l = 0; l < c->n_layer; l++) {
    /* the segment rows: the embeddings (g0), then each layer's output */
    float *y = l + 1 < c->n_layer ? s->g1 : s->hL;
    layer_forward(s, l, l == 0 ? s->g0 : s->g1, y);
    if (l + 1 < c->n_layer)
      for (int b = 0; b < s->B; b++)
        memcpy(cur_rows(s, s->L[l + 1].x, b), y + (gsize)b * s->T * c->d_model,
               sizeof(float) * s->T * c->d_model);
  }
  double loss = output_forward(s);
  s->pending = TRUE;
  s->can_backward = TRUE;
  return loss;
}

/* ---- backward --------------------------------------------------------- */

static void
output_backward(TxlTrainState *s)
{
  const TxlConfig *c = &s->p->cfg;
  const TxlTrainWeights *w = &s->p->w, *g = &s->p->g;
  const int N = s->B * s->T, d = c->d_model, E = c->d_embed, V = c->n_token;
  txl_ce_backward(s->logits, N, V, s->tgt, s->lse, 1.0f / s->ce_rows);
  const float *h = w->out_proj ? s->hp : s->hd;
  float *gh = w->out_proj ? s->ge : s->g0;
  txl_linear_backward(s->logits, h, N, E, w->out_w, V, gh, 0.0f, g->out_w,
                      g->out_b);
  if (w->out_proj) {
    /* hp = hd P: dP += hd^T dhp, dhd = dhp P^T */
    TxlGemmArgs p[2] = {
      { TRUE, FALSE, d, E, N, 1.0f, s->hd, d, s->ge, E, 1.0f, g->out_proj,
        E },
      { FALSE, TRUE, N, d, E, 1.0f, s->ge, E, w->out_proj, E, 0.0f, s->g0,
        d },
    };
    txl_gemm_batch(p, 2);
  }
  txl_dropout(s->g0, (gsize)N * d, s->dropout, key(s, SITE_FINAL, 0), 0);
}

/* Gradient of the feed-forward block.  In: g0 = d(layer output).  Out:
 * g1 = d(res1), the attention block's output. */
static void
ff_backward(TxlTrainState *s, int l)
{
  const TxlConfig *c = &s->p->cfg;
  const TxlTrainLayer *W = &s->p->w.layers[l], *G = &s->p->g.layers[l];
  const Acts *A = &s->L[l];
  const int N = s->B * s->T, d = c->d_model, di = c->d_inner;
  const gsize nd = (gsize)N * d;
  /* post: g1 = d(res2) = d(FF out) = d(ffin) via the residual; pre: g1 =
   * d(res1) via the residual, g2 = d(FF out) */
  if (c->pre_lnorm) {
    memcpy(s->g1, s->g0, sizeof(float) * nd);
  } else {
    txl_ln_backward(s->g0, A->res2, A->mu2, A->rs2, N, d, W->ff_ln_w, s->g1,
                    0.0f, G->ff_ln_w, G->ff_ln_b);
  }
  memcpy(s->g2, s->g1, sizeof(float) * nd);
  txl_dropout(s->g2, nd, s->dropout, key(s, SITE_FF_OUT, l), 0);
  txl_linear_backward(s->g2, A->act, N, di, W->ff2_w, d, s->gff, 0.0f,
                      G->ff2_w, G->ff2_b);
  txl_dropout(s->gff, (gsize)N * di, s->dropout, key(s, SITE_FF_MID, l), 0);
  /* ReLU: a dropped unit already has zero gradient, so act > 0 is the
   * derivative wherever it matters */
  for (gsize i = 0; i < (gsize)N * di; i++)
    if (!(A->act[i] > 0.0f))
      s->gff[i] = 0.0f;
  if (c->pre_lnorm) {
    txl_linear_backward(s->gff, A->ffin, N, d, W->ff1_w, di, s->g2, 0.0f,
                        G->ff1_w, G->ff1_b);
    txl_ln_backward(s->g2, A->res1, A->mu2, A->rs2, N, d, W->ff_ln_w, s->g1,
                    1.0f, G->ff_ln_w, G->ff_ln_b);
  } else {
    txl_linear_backward(s->gff, A->ffin, N, d, W->ff1_w, di, s->g1, 1.0f,
                        G->ff1_w, G->ff1_b);
    txl_ln_backward(s->g1, A->res1, A->mu1, A->rs1, N, d, W->attn_ln_w,
                    s->g1, 0.0f, G->attn_ln_w, G->attn_ln_b);
  }
}

/* In: g1 = d(res1).  Out: g0 = d(segment rows of the layer input). */
static void
attn_backward(TxlTrainState *s, int l)
{
  const TxlConfig *c = &s->p->cfg;
  const TxlTrainLayer *W = &s->p->w.layers[l], *G = &s->p->g.layers[l];
  const Acts *A = &s->L[l];
  const int B = s->B, T = s->T, K = s->mlen + T, N = B * T;
  const int d = c->d_model, HD = c->n_head * c->d_head;
  const gsize nd = (gsize)N * d;

  memcpy(s->g2, s->g1, sizeof(float) * nd);
  txl_dropout(s->g2, nd, s->dropout, key(s, SITE_ATTN_OUT, l), 0);
  txl_linear_backward(s->g2, A->av, N, HD, W->o_w, d, s->gav, 0.0f, G->o_w,
                      NULL);
  memset(s->grk, 0, sizeof(float) * K * HD);
  TxlTrainAttn a = attn_args(s, l);
  txl_train_attn_backward(&a, A->prob, s->gav, s->gq, s->gkv, s->grk,
                          G->r_w_bias, G->r_r_bias, s->attn_scratch, s->slots);
  /* Projections: keys/values from all B*K rows, queries from the segment,
   * rk = pos W_R^T.  Their weight gradients and the input gradient do not
   * depend on each other, so they go in batches; each accumulation keeps
   * its order (the queries' per stream b). */
  const float *xin = c->pre_lnorm ? A->xn : A->x;
  const float *Wq = W->qkv_w, *Wkv = W->qkv_w + (gsize)HD * d;
  TxlGemmArgs wr = { TRUE, FALSE, HD, d, K, 1.0f, s->grk, HD, s->pos, d,
                     1.0f, G->r_w, d };
  TxlGemmArgs wkv = { TRUE, FALSE, 2 * HD, d, B * K, 1.0f, s->gkv, 2 * HD,
                      xin, d, 1.0f, G->qkv_w + (gsize)HD * d, d };
  if (c->pre_lnorm) {
    /* the memory rows matter here: their keys and values went through the
     * layer norm, whose weights need that part of the gradient */
    TxlGemmArgs p[3] = {
      wkv,
      { FALSE, FALSE, B * K, d, 2 * HD, 1.0f, s->gkv, 2 * HD, Wkv, d, 0.0f,
        s->gx, d },
      wr,
    };
    txl_gemm_batch(p, 3);
    for (int b = 0; b < B; b++) {
      TxlGemmArgs q[2] = {
        { TRUE, FALSE, HD, d, T, 1.0f, s->gq + (gsize)b * T * HD, HD,
          cur_rows(s, (float *)xin, b), d, 1.0f, G->qkv_w, d },
        { FALSE, FALSE, T, d, HD, 1.0f, s->gq + (gsize)b * T * HD, HD, Wq, d,
          1.0f, cur_rows(s, s->gx, b), d },
      };
      txl_gemm_batch(q, 2);
    }
    txl_ln_backward(s->gx, A->x, A->mu1, A->rs1, B * K, d, W->attn_ln_w,
                    s->gx, 0.0f, G->attn_ln_w, G->attn_ln_b);
  } else {
    /* only the segment rows' input gradient is wanted */
    TxlGemmArgs p[2] = { wkv, wr };
    txl_gemm_batch(p, 2);
    for (int b = 0; b < B; b++) {
      float *gx = cur_rows(s, s->gx, b);
      TxlGemmArgs q[2] = {
        { TRUE, FALSE, HD, d, T, 1.0f, s->gq + (gsize)b * T * HD, HD,
          cur_rows(s, (float *)xin, b), d, 1.0f, G->qkv_w, d },
        { FALSE, FALSE, T, d, 2 * HD, 1.0f,
          s->gkv + ((gsize)b * K + s->mlen) * 2 * HD, 2 * HD, Wkv, d, 0.0f,
          gx, d },
      };
      txl_gemm_batch(q, 2);
      txl_gemm(FALSE, FALSE, T, d, HD, 1.0f, s->gq + (gsize)b * T * HD, HD,
               Wq, d, 1.0f, gx, d);
    }
  }
  for (int b = 0; b < B; b++) {
    const float *gx = cur_rows(s, s->gx, b);
    const float *r = s->g1 + (gsize)b * T * d;
    float *o = s->g0 + (gsize)b * T * d;
    for (gsize i = 0; i < (gsize)T * d; i++)
      o[i] = r[i] + gx[i];
  }
}

static void
embed_backward(TxlTrainState *s)
{
  const TxlConfig *c = &s->p->cfg;
  const TxlTrainWeights *w = &s->p->w, *g = &s->p->g;
  const int N = s->B * s->T, d = c->d_model, E = c->d_embed;
  txl_dropout(s->g0, (gsize)N * d, s->dropout, key(s, SITE_EMB, 0), 0);
  const float scale = sqrtf((float)d);
  for (gsize i = 0; i < (gsize)N * d; i++)
    s->g0[i] *= scale;
  const float *ge = s->g0;
  if (w->emb_proj) {
    TxlGemmArgs p[2] = {
      { TRUE, FALSE, d, E, N, 1.0f, s->g0, d, s->erows, E, 1.0f,
        g->emb_proj, E },
      { FALSE, FALSE, N, E, d, 1.0f, s->g0, d, w->emb_proj, E, 0.0f, s->ge,
        E },
    };
    txl_gemm_batch(p, 2);
    ge = s->ge;
  }
  /* a scatter: rows of repeated ids add up */
  for (int i = 0; i < N; i++) {
    float *dst = g->emb + (gsize)s->in[i] * E;
    const float *src = ge + (gsize)i * E;
    for (int j = 0; j < E; j++)
      dst[j] += src[j];
  }
}

static void
unit_backward(TxlTrainState *s)
{
  g_return_if_fail(s->can_backward);
  s->can_backward = FALSE;
  output_backward(s);
  for (int l = s->p->cfg.n_layer - 1; l >= 0; l--) {
    ff_backward(s, l);
    attn_backward(s, l);
  }
  embed_backward(s);
}

/* ---- a batch in two parts ---------------------------------------------
 *
 * The streams of a batch are independent until their gradients meet, so
 * the first half of them (rounded up) and the rest run as two states at
 * once, one pool task each, every product in a part whole on its thread:
 * on two cores that keeps both busy where one product at a time, most of
 * them one column slice wide at d_model 256, left one idle.  The parts
 * are the same whatever the thread count, and a task's products are never
 * sliced (gemm.c), so the bits do not depend on the threads either.  The
 * second part draws its dropout masks from another seed; the loss is the
 * mean over the whole batch, each part's gradient scaled to it. */

#define PART_SEED G_GUINT64_CONSTANT(0x2545f4914f6cdd1d)

static TxlTrainState *
parts_new(TxlParams *p, const TxlTrainOptions *o, int mem_len, int clamp,
          int same, GError **error)
{
  TxlTrainState *s = g_new0(TxlTrainState, 1);
  s->p = p;
  s->B = o->batch;
  s->T = o->seg_len;
  s->mem_len = mem_len;
  s->ce_rows = o->batch * o->seg_len;
  TxlTrainOptions h = *o;
  h.batch = (o->batch + 1) / 2;
  s->twin = txl_params_new_twin(p, error);
  if (s->twin &&
      (s->part[0] = unit_new(p, &h, mem_len, clamp, same, s->ce_rows,
                             error))) {
    h.batch = o->batch / 2;
    h.seed = o->seed ^ PART_SEED;
    s->part[1] = unit_new(s->twin, &h, mem_len, clamp, same, s->ce_rows,
                          error);
  }
  if (!s->part[1]) {
    txl_train_state_free(s);
    return NULL;
  }
  return s;
}

typedef struct {
  TxlTrainState *s;
  const int32_t *in, *tgt;
  gboolean forward, backward;
} Part;

static void
part_task(int t, int n_tasks, gpointer data)
{
  Part *j = &((Part *)data)[t];
  if (j->forward)
    unit_forward(j->s, j->in, j->tgt);
  if (j->backward)
    unit_backward(j->s);
}

static void
add_twin_range(gsize lo, gsize hi, gpointer data)
{
  TxlTrainState *s = data;
  float *g = s->p->grad, *t = s->twin->grad;
  for (gsize i = lo; i < hi; i++) {
    g[i] += t[i];
    t[i] = 0.0f;
  }
}

static double
parts_run(TxlTrainState *s, const int32_t *inputs, const int32_t *targets,
          gboolean forward, gboolean backward)
{
  const gsize n0 = (gsize)s->part[0]->B * s->T;
  Part j[2] = {
    { s->part[0], inputs, targets, forward, backward },
    { s->part[1], inputs ? inputs + n0 : NULL,
      targets ? targets + n0 : NULL, forward, backward },
  };
  txl_parallel_run(2, part_task, j);
  if (backward)
    txl_parallel_range(s->p->n, 1 << 16, 64, add_twin_range, s);
  if (!forward)
    return 0.0;
  /* the whole batch's rows in order, as one state sums them */
  double total = 0.0;
  for (int k = 0; k < 2; k++)
    for (gsize i = 0; i < (gsize)s->part[k]->B * s->T; i++)
      total += s->part[k]->nll[i];
  return total / s->ce_rows;
}

/* Forward (and backward) of a batch in parts, its ids checked once here
 * as unit_forward checks a unit's. */
static double
parts_step(TxlTrainState *s, const int32_t *inputs, const int32_t *targets,
           gboolean backward)
{
  const gsize N = (gsize)s->B * s->T;
  g_return_val_if_fail(ids_ok(inputs, N, 0, s->p->cfg.n_token), NAN);
  g_return_val_if_fail(ids_ok(targets, N, -1, s->p->cfg.n_token), NAN);
  return parts_run(s, inputs, targets, TRUE, backward);
}

double
txl_train_forward(TxlTrainState *s, const int32_t *inputs,
                  const int32_t *targets)
{
  if (s->part[0])
    return parts_step(s, inputs, targets, FALSE);
  return unit_forward(s, inputs, targets);
}

void
txl_train_backward(TxlTrainState *s)
{
  if (!s->part[0]) {
    unit_backward(s);
    return;
  }
  g_return_if_fail(s->part[0]->can_backward);
  parts_run(s, NULL, NULL, FALSE, TRUE);
}

double
txl_train_step(TxlTrainState *s, const int32_t *inputs,
               const int32_t *targets)
{
  if (s->part[0])
    return parts_step(s, inputs, targets, TRUE);
  double loss = unit_forward(s, inputs, targets);
  unit_backward(s);
  return loss;
}

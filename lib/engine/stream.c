/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One stream's recurrent state and the segment forward pass.
 *
 * The memory of layer l holds the keys and values of that layer's inputs
 * at the last mem_len positions.  Keeping keys and values rather than the
 * hidden states means a memory position is projected once, when it is
 * current, instead of again in every later segment (the official code
 * re-projects [mem; h] each time, which is most of its work at long
 * memories).  The two are equivalent: a memory row only ever enters the
 * computation through its key and value.
 *
 * The keys are kept transposed (row c of a layer's key memory holds feature
 * c of every position): that is the layout the content-score product reads
 * its right operand in (lib/kernels/gemm.h), so the memory is never repacked. */
#include "filemap.h"
#include "freeeach.h"
#include "gemm.h"
#include "model_check.h"
#include "model_internal.h"
#include "ops.h"
#include "parallel.h"
#include "stream_state.h"

#include <math.h>
#include <string.h>

struct _TxlStream {
  TxlModel *m;
  int mem_len, clamp_len, same_length, max_seg;
  int mlen;
  TxlMemoryKind kind;
  TxlRTable *rt;
  TxlPacked *pk;
  /* per layer, cap = mem_len + max_seg positions: KV memory keeps keys
   * (transposed: HD rows of cap) and values (cap rows of HD); hidden memory
   * keeps layer inputs in kmem (cap rows of d_model) */
  float **kmem, **vmem;
  int cap;

  float *block; /* all scratch below lives in one allocation */
  float *h, *h2, *x, *qkv, *attn_scratch, *attn, *ff, *emb, *out, *last_h;
  float *kt; /* hidden memory: the keys of [memory; h], transposed */
  int *idx;
  int slots; /* attention scratch slots: heads computed at once */
  gboolean has_last;
};

TxlStream *
txl_stream_new(TxlModel *m, const TxlStreamOptions *o, GError **error)
{
  const TxlConfig *c = &m->cfg;
  TxlStreamOptions def = TXL_STREAM_OPTIONS_DEFAULT;
  if (!o)
    o = &def;
  int mem_len = o->mem_len >= 0 ? o->mem_len : c->mem_len;
  int clamp = o->clamp_len >= 0 ? o->clamp_len : c->clamp_len;
  int same = o->same_length >= 0 ? (o->same_length != 0) : c->same_length;
  int seg = o->max_segment > 0 ? o->max_segment : c->tgt_len;
  if (mem_len > (1 << 20) || seg > (1 << 20) || clamp > (1 << 20)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "mem_len %d, segment %d, clamp_len %d: each must be at most "
                "1048576", mem_len, seg, clamp);
    return NULL;
  }
  if (same && mem_len == 0) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "same_length needs mem_len > 0 (with no memory every "
                        "query would see no key)");
    return NULL;
  }
  if (o->memory != TXL_MEMORY_KV && o->memory != TXL_MEMORY_HIDDEN) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID, "unknown memory kind %d",
                (int)o->memory);
    return NULL;
  }
  const gboolean hidden = o->memory == TXL_MEMORY_HIDDEN;
  const gsize d = c->d_model, HD = (gsize)c->n_head * c->d_head;
  const gsize S = seg, K = (gsize)mem_len + seg;
  /* hidden memory projects all klen rows each segment: wider scratch */
  const gsize QR = hidden ? K : S;
  const int slots = MIN(txl_parallel_threads(), c->n_head);
  const gsize attn_fl = slots * txl_attn_scratch_floats(seg, (int)K, c->d_head);
  /* everything this stream needs, position tables and packed weights
   * included, against the budget before any of it is allocated */
  TxlStreamCost cost;
  txl_stream_cost(m, mem_len, seg, hidden, &cost);
  g_autofree char *what = g_strdup_printf(
      "mem_len %d and segment %d", mem_len, seg);
  if (!txl_stream_cost_check(m, &cost, what, error))
    return NULL;
  const gsize fl = txl_stream_scratch_floats(m, seg, K, hidden, slots);
  const gsize state = cost.memory / sizeof(float);

  TxlStream *s = g_new0(TxlStream, 1);
  s->m = txl_model_ref(m);
  s->mem_len = mem_len;
  s->clamp_len = clamp;
  s->same_length = same;
  s->max_seg = seg;
  s->kind = o->memory;
  s->cap = (int)K;
  /* A model file's own mem_len and tgt_len can ask for tens of GiB (the
   * attention scratch grows with segment x (mem_len + segment)): refuse
   * what cannot be had instead of aborting in g_new. */
  gboolean ok = TRUE;
  s->kmem = g_new0(float *, c->n_layer);
  s->vmem = g_new0(float *, c->n_layer);
  for (int l = 0; l < c->n_layer && ok; l++) {
    ok = (s->kmem[l] = g_try_new(float, K * (hidden ? d : HD))) != NULL;
    if (ok && !hidden)
      ok = (s->vmem[l] = g_try_new(float, K * HD)) != NULL;
  }
  if (ok)
    ok = (s->block = g_try_new(float, fl)) != NULL;
  if (!ok) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "a stream with mem_len %d and segment %d needs %.1f GiB, "
                "more than can be allocated", mem_len, seg,
                (state + fl) * 4.0 / (1 << 30));
    txl_stream_free(s);
    return NULL;
  }
  s->rt = txl_model_get_rtable(m, clamp, (int)K);
  if (!s->rt) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "the position table for %zu keys cannot be allocated", K);
    txl_stream_free(s);
    return NULL;
  }
  s->pk = txl_model_get_packed(m);
  if (!s->pk) {
    g_set_error_literal(error, TXL_ERROR, TXL_ERROR_INVALID,
                        "the packed weights cannot be allocated");
    txl_stream_free(s);
    return NULL;
  }
  float *p = s->block;
  s->h = p; p += S * d;
  s->h2 = p; p += S * d;
  s->x = p; p += QR * d;
  s->qkv = p; p += QR * 3 * HD;
  s->attn_scratch = p; p += attn_fl;
  s->slots = slots;
  s->attn = p; p += S * HD;
  s->ff = p; p += S * c->d_inner;
  s->emb = p; p += S * (c->d_embed + d);
  s->out = p; p += txl_out_scratch_floats(m, seg);
  s->last_h = p; p += d;
  s->kt = hidden ? p : NULL;
  s->idx = g_new(int, seg);
  return s;
}

void
txl_stream_free(TxlStream *s)
{
  if (!s)
    return;
  for (int l = 0; l < s->m->cfg.n_layer; l++)
    txl_free_each(g_free, s->kmem[l], s->vmem[l]);
  txl_rtable_unref(s->rt);
  txl_packed_unref(s->pk);
  txl_model_unref(s->m);
  txl_free_each(g_free, s->kmem, s->vmem, s->block, s->idx, s);
}

/* The memory stays: its keys and values were made by the old weights and
 * are read as they are, the way a model fine-tuned on a stream continues
 * it (lib/train/learner.c).  Only a model of the same shape fits the
 * memory and scratch already allocated. */
gboolean
txl_stream_set_model(TxlStream *s, TxlModel *m, GError **error)
{
  const TxlConfig *a = &s->m->cfg, *b = &m->cfg;
  if (a->n_layer != b->n_layer || a->d_model != b->d_model ||
      a->d_embed != b->d_embed || a->n_head != b->n_head ||
      a->d_head != b->d_head || a->d_inner != b->d_inner ||
      a->n_token != b->n_token || a->pre_lnorm != b->pre_lnorm ||
      a->n_cutoffs != b->n_cutoffs || a->div_val != b->div_val) {
    return txl_fail(error, TXL_ERROR_INVALID,
                    "the new weights have another shape than the "
                    "stream's model");
  }
  TxlRTable *rt = txl_model_get_rtable(m, s->clamp_len, s->cap);
  TxlPacked *pk = rt ? txl_model_get_packed(m) : NULL;
  if (!pk) {
    txl_rtable_unref(rt);
    return txl_fail(error, TXL_ERROR_INVALID,
                    "the new weights' tables cannot be allocated");
  }
  txl_rtable_unref(s->rt);
  txl_packed_unref(s->pk);
  txl_model_unref(s->m);
  s->m = txl_model_ref(m);
  s->rt = rt;
  s->pk = pk;
  return TRUE;
}

void
txl_stream_reset(TxlStream *s)
{
  s->mlen = 0;
  s->has_last = FALSE;
}

int txl_stream_mem_len(const TxlStream *s) { return s->mem_len; }
int txl_stream_mem_used(const TxlStream *s) { return s->mlen; }
int txl_stream_max_segment(const TxlStream *s) { return s->max_seg; }

gsize
txl_stream_state_bytes(const TxlStream *s)
{
  const TxlConfig *c = &s->m->cfg;
  gsize per = s->kind == TXL_MEMORY_HIDDEN ? (gsize)c->d_model
                                           : 2 * (gsize)c->n_head * c->d_head;
  return (gsize)c->n_layer * s->mem_len * per * sizeof(float);
}

static gboolean
check_ids(const int32_t *ids, int n, int n_token, const char *what,
          GError **error)
{
  for (int i = 0; i < n; i++) {
    if (ids[i] < 0 || ids[i] >= n_token) {
      return txl_fail(error, TXL_ERROR_INVALID,
                      "%s %d is token id %d, outside the vocabulary [0, %d)",
                      what, i, ids[i], n_token);
    }
  }
  return TRUE;
}

/* Drops the oldest rows so that at most mem_len remain. */
static void
trim_memory(float *buf, int total, int keep, gsize width)
{
  if (keep < total && keep > 0)
    memmove(buf, buf + (gsize)(total - keep) * width,
            sizeof(float) * (gsize)keep * width);
}

/* Drops the oldest positions of transposed keys (rows of `cap`). */
static void
trim_memory_t(float *kt, int rows, int cap, int total, int keep)
{
  if (keep < total && keep > 0) {
    for (int r = 0; r < rows; r++)
      memmove(kt + (gsize)r * cap, kt + (gsize)r * cap + (total - keep),
              sizeof(float) * keep);
  }
}

/* The inference attention core of layer l (TxlAttendFunc): the queries,
 * keys and values of the segment's rows, the memory's keys and values,
 * relative attention over them, and the memory trimmed to mem_len. */
typedef struct {
  TxlStream *s;
  int n;
} Segment;

static void
attend(gpointer ctx, int l, float *av)
{
  TxlStream *s = ((Segment *)ctx)->s;
  const int n = ((Segment *)ctx)->n;
  const TxlConfig *c = &s->m->cfg;
  const TxlLayerWeights *L = &s->m->layers[l];
  const int d = c->d_model, HD = c->n_head * c->d_head;
  const int klen = s->mlen + n;
  const TxlLinear qkv = { L->qkv_w, s->pk->layer[l].qkv, NULL, d, 3 * HD };

  const float *q, *kt, *v;
  int ldkt, ldv;
  if (s->kind == TXL_MEMORY_KV) {
    const float *xin = s->h;
    if (c->pre_lnorm) {
      txl_layer_norm(s->h, n, d, L->attn_ln_w, L->attn_ln_b,
                     c->layer_norm_eps, s->x, NULL, NULL);
      xin = s->x;
    }
    txl_linear(&qkv, xin, n, s->qkv, FALSE, FALSE);
    for (int i = 0; i < n; i++)
      memcpy(s->vmem[l] + (gsize)(s->mlen + i) * HD,
             s->qkv + (gsize)i * 3 * HD + 2 * HD, sizeof(float) * HD);
    txl_transpose(s->qkv + HD, n, HD, 3 * HD, s->kmem[l] + s->mlen, s->cap);
    q = s->qkv;
    kt = s->kmem[l];
    ldkt = s->cap;
    v = s->vmem[l];
    ldv = HD;
  } else {
    /* the official way: project [memory; h] again */
    float *all = s->kmem[l];
    memcpy(all + (gsize)s->mlen * d, s->h, sizeof(float) * n * d);
    const float *xin = all;
    if (c->pre_lnorm) {
      txl_layer_norm(all, klen, d, L->attn_ln_w, L->attn_ln_b,
                     c->layer_norm_eps, s->x, NULL, NULL);
      xin = s->x;
    }
    txl_linear(&qkv, xin, klen, s->qkv, FALSE, FALSE);
    txl_transpose(s->qkv + HD, klen, HD, 3 * HD, s->kt, klen);
    q = s->qkv + (gsize)s->mlen * 3 * HD;
    kt = s->kt;
    ldkt = klen;
    v = s->qkv + 2 * HD;
    ldv = 3 * HD;
  }
  TxlAttnArgs a = {
    .qlen = n, .mlen = s->mlen, .n_head = c->n_head, .d_head = c->d_head,
    .same_length = s->same_length, .mem_len = s->mem_len,
    .q = q, .ldq = 3 * HD,
    .kt = kt, .ldkt = ldkt, .v = v, .ldv = ldv,
    .rp = s->rt->layer[l], .rmaxk = s->rt->maxk,
    .r_w_bias = L->r_w_bias, .r_r_bias = L->r_r_bias,
  };
  txl_rel_attention(&a, s->attn_scratch, s->slots, av);

  int keep = MIN(s->mem_len, klen);
  if (s->kind == TXL_MEMORY_KV) {
    trim_memory_t(s->kmem[l], HD, s->cap, klen, keep);
    trim_memory(s->vmem[l], klen, keep, HD);
  } else {
    trim_memory(s->kmem[l], klen, keep, d);
  }
}

/* Layer l on the segment's rows s->h, in place. */
static void
layer_forward(TxlStream *s, int l, int n)
{
  const TxlConfig *c = &s->m->cfg;
  const TxlLayerWeights *L = &s->m->layers[l];
  const TxlPackedLayer *P = &s->pk->layer[l];
  const int d = c->d_model, HD = c->n_head * c->d_head, di = c->d_inner;
  const TxlLayerW w = {
    .o = { L->o_w, P->o, NULL, HD, d },
    .ff1 = { L->ff1_w, P->ff1, L->ff1_b, d, di },
    .ff2 = { L->ff2_w, P->ff2, L->ff2_b, di, d },
    .attn_ln_w = L->attn_ln_w, .attn_ln_b = L->attn_ln_b,
    .ff_ln_w = L->ff_ln_w, .ff_ln_b = L->ff_ln_b,
    .eps = c->layer_norm_eps, .pre_lnorm = c->pre_lnorm,
  };
  Segment seg = { s, n };
  /* s->x is the core's scratch, then the feed-forward input */
  const TxlLayerBufs b = {
    .attend = attend, .ctx = &seg, .layer = l, .av = s->attn,
    .sum1 = s->h2, .ffin = s->x, .act = s->ff, .sum2 = s->h2,
  };
  txl_layer_forward(&w, s->h, n, &b, NULL, s->h);
}

gboolean
txl_stream_forward(TxlStream *s, const int32_t *inputs, int n,
                   const int32_t *targets, float *logprobs, GError **error)
{
  const TxlConfig *c = &s->m->cfg;
  if (n < 1 || n > s->max_seg) {
    return txl_fail(error, TXL_ERROR_INVALID,
                    "segment of %d tokens: must be between 1 and %d", n,
                    s->max_seg);
  }
  if (!check_ids(inputs, n, c->n_token, "input", error) ||
      (targets && !check_ids(targets, n, c->n_token, "target", error)))
    return FALSE;

  txl_embed(s->m, inputs, n, s->h, s->emb, s->idx);
  for (int l = 0; l < c->n_layer; l++)
    layer_forward(s, l, n);
  s->mlen = MIN(s->mem_len, s->mlen + n);

  memcpy(s->last_h, s->h + (gsize)(n - 1) * c->d_model,
         sizeof(float) * c->d_model);
  s->has_last = TRUE;
  if (targets)
    txl_out_logprobs(s->m, s->h, n, targets, logprobs, s->out, s->idx);
  return TRUE;
}

gboolean
txl_stream_next_logprobs(TxlStream *s, float *out, GError **error)
{
  if (!s->has_last) {
    return txl_fail(error, TXL_ERROR_INVALID,
                    "no token has been fed since the stream started or "
                    "was reset");
  }
  txl_out_full(s->m, s->last_h, out, s->out);
  return TRUE;
}

/* ---- state, for snapshots --------------------------------------------- */

static gsize
row_width(const TxlStream *s)
{
  const TxlConfig *c = &s->m->cfg;
  return s->kind == TXL_MEMORY_HIDDEN ? (gsize)c->d_model
                                      : (gsize)c->n_head * c->d_head;
}

gsize
txl_stream_state_floats(const TxlStream *s, int mlen)
{
  const TxlConfig *c = &s->m->cfg;
  gsize per_layer = (gsize)mlen * row_width(s) *
                    (s->kind == TXL_MEMORY_HIDDEN ? 1 : 2);
  return (gsize)c->n_layer * per_layer + c->d_model;
}

const TxlModel *
txl_stream_model(const TxlStream *s)
{
  return s->m;
}

void
txl_stream_get_options(const TxlStream *s, TxlStreamOptions *o)
{
  o->mem_len = s->mem_len;
  o->clamp_len = s->clamp_len;
  o->same_length = s->same_length;
  o->max_segment = s->max_seg;
  o->memory = s->kind;
}

void
txl_stream_state_export(const TxlStream *s, float *out, int *mlen,
                        gboolean *has_last)
{
  const TxlConfig *c = &s->m->cfg;
  const gsize w = row_width(s), n = (gsize)s->mlen * w;
  for (int l = 0; l < c->n_layer; l++) {
    if (s->kind == TXL_MEMORY_KV) /* rows of keys, as the format has them */
      txl_transpose(s->kmem[l], (int)w, s->mlen, s->cap, out, (int)w);
    else
      memcpy(out, s->kmem[l], sizeof(float) * n);
    out += n;
    if (s->kind == TXL_MEMORY_KV) {
      memcpy(out, s->vmem[l], sizeof(float) * n);
      out += n;
    }
  }
  memcpy(out, s->last_h, sizeof(float) * c->d_model);
  *mlen = s->mlen;
  *has_last = s->has_last;
}

gboolean
txl_stream_state_import(TxlStream *s, const float *in, int mlen,
                        gboolean has_last, GError **error)
{
  const TxlConfig *c = &s->m->cfg;
  if (mlen < 0 || mlen > s->mem_len) {
    return txl_fail(error, TXL_ERROR_FORMAT,
                    "%d positions of memory do not fit mem_len %d", mlen,
                    s->mem_len);
  }
  const gsize w = row_width(s), n = (gsize)mlen * w;
  for (int l = 0; l < c->n_layer; l++) {
    if (s->kind == TXL_MEMORY_KV)
      txl_transpose(in, mlen, (int)w, (int)w, s->kmem[l], s->cap);
    else
      memcpy(s->kmem[l], in, sizeof(float) * n);
    in += n;
    if (s->kind == TXL_MEMORY_KV) {
      memcpy(s->vmem[l], in, sizeof(float) * n);
      in += n;
    }
  }
  memcpy(s->last_h, in, sizeof(float) * c->d_model);
  s->mlen = mlen;
  s->has_last = has_last;
  return TRUE;
}

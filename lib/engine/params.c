/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The flat parameter buffer: layout, initialisation, model files. */
#include "params.h"
#include "config.h"
#include "bpe.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

gboolean
txl_params_config_supported(const TxlConfig *c, GError **error)
{
  if (!txl_config_validate(c, error))
    return FALSE;
  if (c->n_cutoffs != 0 || c->div_val != 1) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_UNSUPPORTED,
                "training supports a plain softmax only (no cutoffs, "
                "div_val 1); this model has %d cutoffs and div_val %d",
                c->n_cutoffs, c->div_val);
    return FALSE;
  }
  return TRUE;
}

/* ---- layout --------------------------------------------------------- */

typedef enum { INIT_ZERO, INIT_ONE_ISH, INIT_STD, INIT_PROJ } InitKind;

typedef struct {
  GArray *tensors; /* TxlParamTensor */
  GArray *kinds;   /* InitKind, parallel to tensors */
  gsize n;
} Layout;

/* Offsets are rounded up to 16 floats so every tensor starts on a 64-byte
 * boundary of the (aligned) buffer: sgemm reads them fastest there. */
static gsize
add(Layout *lo, InitKind kind, gint64 rows, gint64 cols, const char *fmt, ...)
  G_GNUC_PRINTF(5, 6);

static gsize
add(Layout *lo, InitKind kind, gint64 rows, gint64 cols, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  TxlParamTensor t = { g_strdup_vprintf(fmt, ap), rows ? 2 : 1,
                       rows ? rows : 1, cols, lo->n,
                       (gsize)(rows ? rows : 1) * cols };
  va_end(ap);
  g_array_append_val(lo->tensors, t);
  g_array_append_val(lo->kinds, kind);
  lo->n += (t.size + 15) & ~(gsize)15;
  return t.offset;
}

/* Offsets of every view, relative to a buffer base. */
typedef struct {
  gsize emb, emb_proj, out_w, out_b, out_proj, rwb, rrb;
  gsize *layer; /* 13 per layer, in TxlTrainLayer order */
} Offsets;

#define NO_TENSOR ((gsize)-1)
#define LAYER_FIELDS 13
G_STATIC_ASSERT(sizeof(TxlTrainLayer) == LAYER_FIELDS * sizeof(float *));

static void
build_layout(const TxlConfig *c, Layout *lo, Offsets *o)
{
  const gint64 d = c->d_model, HD = (gint64)c->n_head * c->d_head;
  const gboolean projected = c->d_embed != c->d_model;
  lo->tensors = g_array_new(FALSE, FALSE, sizeof(TxlParamTensor));
  lo->kinds = g_array_new(FALSE, FALSE, sizeof(InitKind));
  lo->n = 0;
  o->emb = add(lo, INIT_STD, c->n_token, c->d_embed, "emb.0.weight");
  o->emb_proj = projected ? add(lo, INIT_PROJ, d, c->d_embed, "emb_proj.0")
                          : NO_TENSOR;
  o->rwb = o->rrb = NO_TENSOR;
  if (!c->untie_r) {
    o->rwb = add(lo, INIT_STD, c->n_head, c->d_head, "r_w_bias");
    o->rrb = add(lo, INIT_STD, c->n_head, c->d_head, "r_r_bias");
  }
  o->layer = g_new(gsize, (gsize)c->n_layer * LAYER_FIELDS);
  for (int l = 0; l < c->n_layer; l++) {
    gsize *f = o->layer + (gsize)l * LAYER_FIELDS;
#define B(kind, rows, cols, suffix) add(lo, kind, rows, cols, "blk.%d." suffix, l)
    f[0] = B(INIT_STD, 3 * HD, d, "attn_qkv.weight");
    f[1] = B(INIT_STD, HD, d, "attn_r.weight");
    f[2] = B(INIT_STD, d, HD, "attn_out.weight");
    f[3] = B(INIT_ONE_ISH, 0, d, "attn_norm.weight");
    f[4] = B(INIT_ZERO, 0, d, "attn_norm.bias");
    if (c->untie_r) {
      f[5] = B(INIT_STD, c->n_head, c->d_head, "r_w_bias");
      f[6] = B(INIT_STD, c->n_head, c->d_head, "r_r_bias");
    } else {
      f[5] = o->rwb;
      f[6] = o->rrb;
    }
    f[7] = B(INIT_STD, c->d_inner, d, "ffn_up.weight");
    f[8] = B(INIT_ZERO, 0, c->d_inner, "ffn_up.bias");
    f[9] = B(INIT_STD, d, c->d_inner, "ffn_down.weight");
    f[10] = B(INIT_ZERO, 0, d, "ffn_down.bias");
    f[11] = B(INIT_ONE_ISH, 0, d, "ffn_norm.weight");
    f[12] = B(INIT_ZERO, 0, d, "ffn_norm.bias");
#undef B
  }
  o->out_w = c->tie_weight
               ? o->emb
               : add(lo, INIT_STD, c->n_token, c->d_embed, "out.0.weight");
  o->out_b = add(lo, INIT_ZERO, 0, c->n_token, "out.0.bias");
  o->out_proj = NO_TENSOR;
  if (projected)
    o->out_proj = c->tie_projs[0]
                    ? o->emb_proj
                    : add(lo, INIT_PROJ, d, c->d_embed, "out_proj.0");
}

static float *
at(float *base, gsize off)
{
  return off == NO_TENSOR ? NULL : base + off;
}

static void
make_views(const TxlConfig *c, const Offsets *o, float *base,
           TxlTrainWeights *w)
{
  w->emb = at(base, o->emb);
  w->emb_proj = at(base, o->emb_proj);
  w->out_w = at(base, o->out_w);
  w->out_b = at(base, o->out_b);
  w->out_proj = at(base, o->out_proj);
  w->layers = g_new(TxlTrainLayer, c->n_layer);
  for (int l = 0; l < c->n_layer; l++) {
    const gsize *f = o->layer + (gsize)l * LAYER_FIELDS;
    /* a layer's views are its LAYER_FIELDS pointers, in the order of f */
    float **view = (float **)&w->layers[l];
    for (int k = 0; k < LAYER_FIELDS; k++)
      view[k] = base + f[k];
  }
}

/* Box-Muller on GRand: reproducible for a seed on every platform. */
static double
normal(GRand *r)
{
  double u = g_rand_double(r), v = g_rand_double(r);
  return sqrt(-2.0 * log(1.0 - u)) * cos(2.0 * G_PI * v);
}

static void
init_values(TxlParams *p, const GArray *kinds, const TxlInitOptions *io,
            guint64 seed)
{
  GRand *r = g_rand_new_with_seed_array((const guint32[]){ (guint32)seed,
                                                           (guint32)(seed >> 32) },
                                        2);
  for (int i = 0; i < p->n_tensors; i++) {
    const TxlParamTensor *t = &p->tensors[i];
    float *v = p->data + t->offset;
    InitKind k = g_array_index(kinds, InitKind, i);
    for (gsize j = 0; j < t->size; j++) {
      switch (k) {
      case INIT_ZERO: v[j] = 0.0f; break;
      case INIT_ONE_ISH: v[j] = (float)(1.0 + io->init_std * normal(r)); break;
      case INIT_STD: v[j] = (float)(io->init_std * normal(r)); break;
      case INIT_PROJ: v[j] = (float)(io->proj_init_std * normal(r)); break;
      }
    }
  }
  g_rand_free(r);
}

/* 64-byte aligned and zeroed; NULL when it cannot be had */
static float *
alloc_floats(gsize n)
{
  void *v = NULL;
  if (posix_memalign(&v, 64, sizeof(float) * MAX(n, 1)) != 0)
    return NULL;
  memset(v, 0, sizeof(float) * n);
  return v;
}

/* shared: NULL for weights of their own, else the weights to read in place
 * (a twin: only the gradients are allocated). */
static TxlParams *
params_alloc(const TxlConfig *cfg, float *shared, GArray **kinds_out,
             GError **error)
{
  if (!txl_params_config_supported(cfg, error))
    return NULL;
  Layout lo;
  Offsets o;
  build_layout(cfg, &lo, &o);
  TxlParams *p = g_new0(TxlParams, 1);
  p->cfg = *cfg;
  p->n = lo.n;
  p->n_tensors = (int)lo.tensors->len;
  p->tensors = (TxlParamTensor *)g_array_free(lo.tensors, FALSE);
  p->shares_data = shared != NULL;
  p->data = shared ? shared : alloc_floats(p->n);
  p->grad = alloc_floats(p->n);
  if (!p->data || !p->grad) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "parameters need 2 x %.1f GiB, more than can be allocated",
                p->n * 4.0 / (1 << 30));
    g_free(o.layer);
    g_array_free(lo.kinds, TRUE);
    txl_params_free(p);
    return NULL;
  }
  make_views(cfg, &o, p->data, &p->w);
  make_views(cfg, &o, p->grad, &p->g);
  g_free(o.layer);
  if (kinds_out)
    *kinds_out = lo.kinds;
  else
    g_array_free(lo.kinds, TRUE);
  return p;
}

TxlParams *
txl_params_new(const TxlConfig *cfg, const TxlInitOptions *opts, guint64 seed,
               GError **error)
{
  TxlInitOptions def = TXL_INIT_OPTIONS_DEFAULT;
  GArray *kinds = NULL;
  TxlParams *p = params_alloc(cfg, NULL, &kinds, error);
  if (!p)
    return NULL;
  init_values(p, kinds, opts ? opts : &def, seed);
  g_array_free(kinds, TRUE);
  return p;
}

void
txl_params_free(TxlParams *p)
{
  if (!p)
    return;
  for (int i = 0; i < p->n_tensors; i++)
    g_free(p->tensors[i].name);
  g_free(p->tensors);
  g_free(p->w.layers);
  g_free(p->g.layers);
  if (!p->shares_data)
    free(p->data);
  free(p->grad);
  g_free(p);
}

void
txl_params_zero_grad(TxlParams *p)
{
  memset(p->grad, 0, sizeof(float) * p->n);
}

const TxlParamTensor *
txl_params_find(const TxlParams *p, const char *name)
{
  for (int i = 0; i < p->n_tensors; i++)
    if (strcmp(p->tensors[i].name, name) == 0)
      return &p->tensors[i];
  return NULL;
}

/* ---- model files ---------------------------------------------------- */

/* A TxlModel view of the same weights tells us where the loader found
 * each tensor: copy through it, so names and ties stay in one place. */
static void
copy_in(float *dst, const float *src, gsize n)
{
  if (dst && src)
    memcpy(dst, src, sizeof(float) * n);
}

TxlParams *
txl_params_from_model(const TxlModel *m, GError **error)
{
  const TxlConfig *c = &m->cfg;
  TxlParams *p = params_alloc(c, NULL, NULL, error);
  if (!p)
    return NULL;
  const gsize d = c->d_model, HD = (gsize)c->n_head * c->d_head;
  const gsize V = c->n_token, E = c->d_embed;
  copy_in(p->w.emb, m->in[0].table, V * E);
  copy_in(p->w.emb_proj, m->in[0].proj, d * E);
  copy_in(p->w.out_w, m->out[0].table, V * E);
  copy_in(p->w.out_b, m->out[0].bias, V);
  copy_in(p->w.out_proj, m->out[0].proj, d * E);
  for (int l = 0; l < c->n_layer; l++) {
    const TxlLayerWeights *s = &m->layers[l];
    TxlTrainLayer *t = &p->w.layers[l];
    copy_in(t->qkv_w, s->qkv_w, 3 * HD * d);
    copy_in(t->r_w, s->r_w, HD * d);
    copy_in(t->o_w, s->o_w, d * HD);
    copy_in(t->attn_ln_w, s->attn_ln_w, d);
    copy_in(t->attn_ln_b, s->attn_ln_b, d);
    copy_in(t->r_w_bias, s->r_w_bias, HD);
    copy_in(t->r_r_bias, s->r_r_bias, HD);
    copy_in(t->ff1_w, s->ff1_w, c->d_inner * d);
    copy_in(t->ff1_b, s->ff1_b, c->d_inner);
    copy_in(t->ff2_w, s->ff2_w, d * c->d_inner);
    copy_in(t->ff2_b, s->ff2_b, d);
    copy_in(t->ff_ln_w, s->ff_ln_w, d);
    copy_in(t->ff_ln_b, s->ff_ln_b, d);
  }
  return p;
}

TxlParams *
txl_params_load_gguf(const char *path, GError **error)
{
  TxlModel *m = txl_model_load(path, error);
  if (!m)
    return NULL;
  TxlParams *p = txl_params_from_model(m, error);
  if (!p)
    g_prefix_error(error, "%s: ", path);
  txl_model_unref(m);
  return p;
}

void
txl_params_write_tokenizer(GgufWriter *w, gpointer user_data)
{
  const TxlTokenizer *t = user_data;
  switch (t ? t->type : TXL_TOKENIZER_NONE) {
  case TXL_TOKENIZER_BYTE:
    gguf_writer_add_string(w, "tokenizer.type", "byte");
    break;
  case TXL_TOKENIZER_WORD:
    gguf_writer_add_string(w, "tokenizer.type", "word");
    gguf_writer_add_string_array(w, "tokenizer.tokens", t->sym, t->sym_len,
                                 t->n_tokens);
    if (t->unk_id >= 0)
      gguf_writer_add_u32(w, "tokenizer.unk_id", t->unk_id);
    if (t->eos_id >= 0)
      gguf_writer_add_u32(w, "tokenizer.eos_id", t->eos_id);
    gguf_writer_add_bool(w, "tokenizer.lower_case", t->lower_case);
    break;
  case TXL_TOKENIZER_BPE:
    txl_bpe_write_gguf(txl_tokenizer_get_bpe(t), w);
    break;
  default:
    gguf_writer_add_string(w, "tokenizer.type", "none");
    break;
  }
}

gboolean
txl_params_write_gguf(const TxlParams *p, TxlMetaWriteFunc add_meta,
                      gpointer user_data, const char *path, GError **error)
{
  GgufWriter *w = gguf_writer_new();
  txl_config_write_gguf(&p->cfg, w);
  if (add_meta)
    add_meta(w, user_data);
  else
    txl_params_write_tokenizer(w, NULL);
  for (int i = 0; i < p->n_tensors; i++) {
    const TxlParamTensor *t = &p->tensors[i];
    uint64_t ne[2] = { (uint64_t)t->cols, (uint64_t)t->rows };
    gguf_writer_add_tensor(w, t->name, GGUF_TENSOR_F32, t->n_dims, ne,
                           p->data + t->offset, t->size * sizeof(float));
  }
  gboolean ok = gguf_writer_write(w, path, error);
  gguf_writer_free(w);
  return ok;
}

/* ---- inference view ------------------------------------------------- */

TxlModel *
txl_model_from_params(TxlParams *p)
{
  const TxlConfig *c = &p->cfg;
  TxlModel *m = txl_model_new_view(c);
  m->n_in = m->n_out = 1;
  m->in[0] = (TxlCluster){ 0, c->n_token, c->d_embed, p->w.emb, NULL,
                           p->w.emb_proj };
  m->out[0] = (TxlCluster){ 0, c->n_token, c->d_embed, p->w.out_w,
                            p->w.out_b, p->w.out_proj };
  for (int l = 0; l < c->n_layer; l++) {
    const TxlTrainLayer *s = &p->w.layers[l];
    m->layers[l] = (TxlLayerWeights){
      .qkv_w = s->qkv_w, .r_w = s->r_w, .o_w = s->o_w,
      .attn_ln_w = s->attn_ln_w, .attn_ln_b = s->attn_ln_b,
      .r_w_bias = s->r_w_bias, .r_r_bias = s->r_r_bias,
      .ff1_w = s->ff1_w, .ff1_b = s->ff1_b,
      .ff2_w = s->ff2_w, .ff2_b = s->ff2_b,
      .ff_ln_w = s->ff_ln_w, .ff_ln_b = s->ff_ln_b,
    };
  }
  return m;
}

TxlModel *
txl_model_from_params_owned(TxlParams *p)
{
  TxlModel *m = txl_model_from_params(p);
  m->owned = p;
  m->owned_free = (GDestroyNotify)txl_params_free;
  return m;
}

TxlParams *
txl_params_new_twin(const TxlParams *p, GError **error)
{
  return params_alloc(&p->cfg, p->data, NULL, error);
}

TxlParams *
txl_params_copy(const TxlParams *p, GError **error)
{
  TxlParams *q = txl_params_new(&p->cfg, NULL, 0, error);
  if (q)
    memcpy(q->data, p->data, sizeof(float) * p->n);
  return q;
}

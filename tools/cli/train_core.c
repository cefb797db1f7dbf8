/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* train_core.h over libtxl's training core (lib/engine/params.h, lib/train/train.h). */
#include "train_core.h"

#include "txl_engine.h"
#include "txl_formats.h"
#include "txl_train.h"

#include <string.h>

struct _TrainCore {
  TxlParams *p;
  TxlTrainState *s;
  guint8 *decay;
};

/* Architecture fields that a resumed or fine-tuned model must share with
 * the options. */
static gboolean
same_shape(const TxlConfig *a, const TxlConfig *b, const char *path,
           GError **error)
{
  struct { const char *name; int x, y; } f[] = {
    { "vocabulary", a->n_token, b->n_token },
    { "d_model", a->d_model, b->d_model },
    { "d_embed", a->d_embed, b->d_embed },
    { "heads", a->n_head, b->n_head },
    { "d_head", a->d_head, b->d_head },
    { "d_inner", a->d_inner, b->d_inner },
    { "layers", a->n_layer, b->n_layer },
    { "pre-LN", a->pre_lnorm, b->pre_lnorm },
  };
  for (gsize i = 0; i < G_N_ELEMENTS(f); i++) {
    if (f[i].x != f[i].y) {
      g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                  "%s has %s %d but the options ask for %d", path, f[i].name,
                  f[i].x, f[i].y);
      return FALSE;
    }
  }
  return TRUE;
}

TrainCore *
train_core_new(const TrainSetup *su, const char *init_model, GError **error)
{
  TrainCore *c = g_new0(TrainCore, 1);
  if (init_model) {
    c->p = txl_params_load_gguf(init_model, error);
    if (c->p && !same_shape(&c->p->cfg, &su->cfg, init_model, error))
      goto fail;
    if (c->p) {
      /* lengths are run options, not weights: take the caller's */
      c->p->cfg.mem_len = su->cfg.mem_len;
      c->p->cfg.tgt_len = su->cfg.tgt_len;
    }
  } else {
    c->p = txl_params_new(&su->cfg, NULL, su->seed, error);
  }
  if (!c->p)
    goto fail;
  TxlTrainOptions o = TXL_TRAIN_OPTIONS_DEFAULT;
  o.batch = su->batch;
  o.seg_len = su->cfg.tgt_len;
  o.mem_len = su->cfg.mem_len;
  o.dropout = su->dropout;
  o.dropatt = su->dropatt;
  o.seed = su->seed;
  c->s = txl_train_state_new(c->p, &o, error);
  if (!c->s)
    goto fail;
  /* weight decay on matrices only: not on biases, norms or r biases */
  c->decay = g_new0(guint8, c->p->n);
  for (int i = 0; i < c->p->n_tensors; i++) {
    const TxlParamTensor *t = &c->p->tensors[i];
    gboolean d = t->n_dims == 2 && !g_str_has_suffix(t->name, "r_w_bias") &&
                 !g_str_has_suffix(t->name, "r_r_bias");
    memset(c->decay + t->offset, d ? 1 : 0, t->size);
  }
  return c;
fail:
  train_core_free(c);
  return NULL;
}

void
train_core_free(TrainCore *c)
{
  if (!c)
    return;
  txl_train_state_free(c->s);
  txl_params_free(c->p);
  txl_free_each(g_free, c->decay, c);
}

const TxlConfig *
train_core_config(TrainCore *c)
{
  return &c->p->cfg;
}

double
train_core_step(TrainCore *c, const int32_t *in, const int32_t *tg)
{
  txl_params_zero_grad(c->p);
  return txl_train_step(c->s, in, tg);
}

void
train_core_reset_memory(TrainCore *c)
{
  txl_train_state_reset(c->s);
}

float *
train_core_params(TrainCore *c, gsize *n)
{
  *n = c->p->n;
  return c->p->data;
}

float *
train_core_grads(TrainCore *c)
{
  return c->p->grad;
}

const guint8 *
train_core_decay_mask(TrainCore *c)
{
  return c->decay;
}

TxlModel *
train_core_model(TrainCore *c, GError **error)
{
  /* a fresh view, so no position table of older weights is reused */
  return txl_model_from_params(c->p);
}

gboolean
train_core_save(TrainCore *c, const char *path,
                void (*add_tokenizer)(GgufWriter *, gpointer), gpointer data,
                GError **error)
{
  return txl_params_write_gguf(c->p, add_tokenizer, data, path, error);
}

gsize
train_core_memory_floats(TrainCore *c)
{
  return txl_train_state_memory_floats(c->s);
}

void
train_core_state_get(TrainCore *c, float *mem, guint64 *step, int *mlen)
{
  txl_train_state_save(c->s, mem, step, mlen);
}

gboolean
train_core_state_set(TrainCore *c, const float *mem, guint64 step, int mlen,
                     GError **error)
{
  return txl_train_state_restore(c->s, mem, step, mlen, error);
}

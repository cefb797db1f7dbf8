/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Optimisation over flat float buffers: AdamW (decoupled weight decay,
 * Loshchilov & Hutter 2019), global gradient-norm clipping, and a linear
 * warm-up followed by cosine decay. */
#ifndef TXL_OPTIM_H
#define TXL_OPTIM_H

#include <glib.h>

typedef struct {
  float lr;           /* this step's learning rate */
  float beta1, beta2; /* 0.9, 0.999 */
  float eps;          /* 1e-8 */
  float weight_decay; /* decoupled: p -= lr * wd * p */
} TxlAdamW;

/* One step (t >= 1 counts steps taken, for bias correction).  decay may be
 * NULL (all decayed) or a per-element mask, so that biases and norms can be
 * excluded.  m and v start zeroed. */
void txl_adamw_step(const TxlAdamW *o, gint64 t, float *param,
                    const float *grad, float *m, float *v, gsize n,
                    const guint8 *decay);

/* Scales grad so its L2 norm is at most max_norm (> 0); returns the norm
 * before clipping. */
double txl_clip_grad_norm(float *grad, gsize n, double max_norm);

/* lr_max * step/warmup while warming up, then cosine from lr_max down to
 * lr_min at total_steps (and lr_min after). */
float txl_lr_at(gint64 step, gint64 warmup, gint64 total_steps, float lr_max,
                float lr_min);

#endif

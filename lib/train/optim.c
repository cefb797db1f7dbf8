/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "cpu.h"
#include "optim.h"
#include "parallel.h"

#include <math.h>

typedef struct {
  const TxlAdamW *o;
  float step, rbc2, shrink;
  float *p, *m, *v;
  const float *g;
  const guint8 *decay;
} Adam;

TXL_VECTORIZED
static void
adamw_range(gsize lo, gsize hi, gpointer ctx)
{
  const Adam *a = ctx;
  const float b1 = a->o->beta1, b2 = a->o->beta2, eps = a->o->eps;
  const float step = a->step, rbc2 = a->rbc2, shrink = a->shrink;
  float *p = a->p, *m = a->m, *v = a->v;
  const float *g = a->g;
  const guint8 *decay = a->decay;
  for (gsize i = lo; i < hi; i++) {
    float gi = g[i];
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    if (!decay || decay[i])
      p[i] *= shrink;
    p[i] -= step * m[i] / (sqrtf(v[i]) * rbc2 + eps);
  }
}

void
txl_adamw_step(const TxlAdamW *o, gint64 t, float *p, const float *g,
               float *m, float *v, gsize n, const guint8 *decay)
{
  /* bias corrections folded into the step size, as the paper's
   * "efficient version" does; computed in double, once per step */
  const double bc1 = 1.0 - pow(o->beta1, (double)t);
  const double bc2 = 1.0 - pow(o->beta2, (double)t);
  Adam a = {
    o, (float)(o->lr / bc1), (float)(1.0 / sqrt(bc2)),
    1.0f - o->lr * o->weight_decay, p, m, v, g, decay,
  };
  /* each element on its own: cut over the pool */
  txl_parallel_range(n, 1 << 16, 64, adamw_range, &a);
}

double
txl_clip_grad_norm(float *g, gsize n, double max_norm)
{
  double s = 0.0;
  for (gsize i = 0; i < n; i++)
    s += (double)g[i] * g[i];
  double norm = sqrt(s);
  if (norm > max_norm && norm > 0.0) {
    float k = (float)(max_norm / (norm + 1e-6));
    for (gsize i = 0; i < n; i++)
      g[i] *= k;
  }
  return norm;
}

float
txl_lr_at(gint64 step, gint64 warmup, gint64 total, float lr_max, float lr_min)
{
  if (warmup > 0 && step < warmup)
    return lr_max * (float)(step + 1) / (float)warmup;
  if (step >= total || total <= warmup)
    return lr_min;
  double frac = (double)(step - warmup) / (double)(total - warmup);
  return lr_min + (lr_max - lr_min) * (float)(0.5 * (1.0 + cos(G_PI * frac)));
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "optim.h"

#include <math.h>

void
txl_adamw_step(const TxlAdamW *o, gint64 t, float *p, const float *g,
               float *m, float *v, gsize n, const guint8 *decay)
{
  /* bias corrections folded into the step size, as the paper's
   * "efficient version" does; computed in double, once per step */
  const double bc1 = 1.0 - pow(o->beta1, (double)t);
  const double bc2 = 1.0 - pow(o->beta2, (double)t);
  const float step = (float)(o->lr / bc1);
  const float rbc2 = (float)(1.0 / sqrt(bc2));
  const float b1 = o->beta1, b2 = o->beta2;
  const float shrink = 1.0f - o->lr * o->weight_decay;
  for (gsize i = 0; i < n; i++) {
    float gi = g[i];
    m[i] = b1 * m[i] + (1.0f - b1) * gi;
    v[i] = b2 * v[i] + (1.0f - b2) * gi * gi;
    if (!decay || decay[i])
      p[i] *= shrink;
    p[i] -= step * m[i] / (sqrtf(v[i]) * rbc2 + o->eps);
  }
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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Test driver: reads n, steps, lr, wd, max_norm and then n params and
 * steps*n grads (float32, native order) from stdin; runs clipping + AdamW
 * with a warm-up/cosine schedule; writes the final params, then the
 * learning rates used and the gradient norms, to stdout. */
#include "optim.h"

#include <stdio.h>
#include <stdlib.h>

int
main(void)
{
  gint64 n, steps;
  float lr, wd, max_norm;
  if (fread(&n, 8, 1, stdin) != 1 || fread(&steps, 8, 1, stdin) != 1 ||
      fread(&lr, 4, 1, stdin) != 1 || fread(&wd, 4, 1, stdin) != 1 ||
      fread(&max_norm, 4, 1, stdin) != 1 || n <= 0 || steps <= 0)
    return 2;
  float *p = g_new(float, n), *g = g_new(float, n);
  float *m = g_new0(float, n), *v = g_new0(float, n);
  float *lrs = g_new(float, steps), *norms = g_new(float, steps);
  if (fread(p, 4, n, stdin) != (size_t)n)
    return 2;
  for (gint64 s = 0; s < steps; s++) {
    if (fread(g, 4, n, stdin) != (size_t)n)
      return 2;
    norms[s] = (float)txl_clip_grad_norm(g, n, max_norm);
    TxlAdamW o = { txl_lr_at(s, 2, steps, lr, lr * 0.1f), 0.9f, 0.999f, 1e-8f,
                   wd };
    lrs[s] = o.lr;
    txl_adamw_step(&o, s + 1, p, g, m, v, n, NULL);
  }
  fwrite(p, 4, n, stdout);
  fwrite(lrs, 4, steps, stdout);
  fwrite(norms, 4, steps, stdout);
  g_free(p);
  g_free(g);
  g_free(m);
  g_free(v);
  g_free(lrs);
  g_free(norms);
  return 0;
}

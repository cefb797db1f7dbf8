/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Adaptive input embedding: each id is looked up in its cluster's table
 * and projected to d_model; all projections of a cluster share one sgemm. */
#include "gemm.h"
#include "ops.h"

#include <math.h>
#include <string.h>

void
txl_embed(const TxlModel *m, const int32_t *ids, int n, float *h,
          float *scratch, int *idx)
{
  const int d = m->cfg.d_model;
  const float scale = sqrtf((float)d);
  float *rows = scratch;                              /* n * d_embed */
  float *proj = scratch + (gsize)n * m->cfg.d_embed;  /* n * d_model */

  for (int c = 0; c < m->n_in; c++) {
    const TxlCluster *cl = &m->in[c];
    int cnt = 0;
    for (int i = 0; i < n; i++) {
      if (ids[i] >= cl->start && ids[i] < cl->end) {
        memcpy(rows + (gsize)cnt * cl->dim,
               cl->table + (gsize)(ids[i] - cl->start) * cl->dim,
               sizeof(float) * cl->dim);
        idx[cnt++] = i;
      }
    }
    if (cnt == 0)
      continue;
    if (cl->proj) {
      txl_gemm(FALSE, TRUE, cnt, d, cl->dim, 1.0f, rows, cl->dim, cl->proj,
               cl->dim, 0.0f, proj, d);
      for (int r = 0; r < cnt; r++)
        memcpy(h + (gsize)idx[r] * d, proj + (gsize)r * d, sizeof(float) * d);
    } else {
      for (int r = 0; r < cnt; r++)
        memcpy(h + (gsize)idx[r] * d, rows + (gsize)r * d, sizeof(float) * d);
    }
  }
  for (gsize i = 0; i < (gsize)n * d; i++)
    h[i] *= scale;
}

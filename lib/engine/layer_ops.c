/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "gemm.h"
#include "ops.h"

#include <math.h>
#include <string.h>

void
txl_linear(const float *x, int n, int in, const float *W, const float *b,
           int out, float *y)
{
  if (b) {
    for (int i = 0; i < n; i++)
      memcpy(y + (gsize)i * out, b, sizeof(float) * out);
  }
  txl_gemm(FALSE, TRUE, n, out, in, 1.0f, x, in, W, in, b ? 1.0f : 0.0f, y, out);
}

void
txl_linear_acc(const float *x, int n, int in, const float *W, int out,
               float *y)
{
  txl_gemm(FALSE, TRUE, n, out, in, 1.0f, x, in, W, in, 1.0f, y, out);
}

void
txl_layer_norm(const float *x, int n, int d, const float *w, const float *b,
               float eps, float *y, float *mean_out, float *rstd_out)
{
  for (int i = 0; i < n; i++) {
    const float *xi = x + (gsize)i * d;
    float *yi = y + (gsize)i * d;
    /* double accumulation: the statistics of large rows stay exact to
     * float precision, so results do not drift with d_model */
    double s = 0.0;
    for (int j = 0; j < d; j++)
      s += xi[j];
    double mean = s / d;
    double v = 0.0;
    for (int j = 0; j < d; j++) {
      double t = xi[j] - mean;
      v += t * t;
    }
    float rstd = (float)(1.0 / sqrt(v / d + eps));
    float fmean = (float)mean;
    for (int j = 0; j < d; j++)
      yi[j] = (xi[j] - fmean) * rstd * w[j] + b[j];
    if (mean_out) {
      mean_out[i] = fmean;
      rstd_out[i] = rstd;
    }
  }
}

void
txl_relu(float *x, gsize n)
{
  for (gsize i = 0; i < n; i++)
    x[i] = x[i] > 0.0f ? x[i] : 0.0f;
}

void
txl_add(float *y, const float *x, gsize n)
{
  for (gsize i = 0; i < n; i++)
    y[i] += x[i];
}

void
txl_pos_emb(float dist, int d, float *out)
{
  int half = d / 2;
  for (int i = 0; i < half; i++) {
    /* float32 throughout, in the order PyTorch evaluates it, so positions
     * far from zero round the same way as the reference */
    float e = (float)(2 * i) / (float)d;
    float inv_freq = 1.0f / powf(10000.0f, e);
    float a = dist * inv_freq;
    out[i] = sinf(a);
    out[half + i] = cosf(a);
  }
}

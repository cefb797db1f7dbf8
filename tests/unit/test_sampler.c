/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The sampler draws with the probabilities it promises (temperature,
 * top-k, top-p), deterministically for a seed, and resumes from its state. */
#include "sampler.h"

#include <math.h>
#include "tu_test.h"

#define N 20000

static void
frequencies(const TxlSamplerOptions *o, const float *lp, int n, double *f)
{
  g_autoptr(GError) err = NULL;
  TxlSampler *s = txl_sampler_new(o, n, &err);
  g_assert_no_error(err);
  for (int i = 0; i < n; i++)
    f[i] = 0;
  for (int i = 0; i < N; i++)
    f[txl_sampler_sample(s, lp)] += 1.0 / N;
  txl_sampler_free(s);
}

TU_TEST("/sampler/distributions", test_distributions)
{
  const double p[5] = { 0.05, 0.5, 0.15, 0.3, 0.0 };
  float lp[5];
  for (int i = 0; i < 5; i++)
    lp[i] = p[i] > 0 ? (float)log(p[i]) : -INFINITY;
  double f[5];
  TxlSamplerOptions o = TXL_SAMPLER_OPTIONS_DEFAULT;
  o.seed = 7;
  frequencies(&o, lp, 5, f);
  for (int i = 0; i < 5; i++)
    g_assert_cmpfloat(fabs(f[i] - p[i]), <, 0.015);
  g_assert_cmpfloat(f[4], ==, 0.0);

  o.top_k = 2; /* ids 1 and 3: 0.5 and 0.3, renormalised */
  frequencies(&o, lp, 5, f);
  g_assert_cmpfloat(fabs(f[1] - 0.625), <, 0.015);
  g_assert_cmpfloat(fabs(f[3] - 0.375), <, 0.015);
  g_assert_cmpfloat(f[0] + f[2], ==, 0.0);

  o.top_k = 0;
  o.top_p = 0.85f; /* 0.5 + 0.3 < 0.85 <= 0.5 + 0.3 + 0.15: three kept */
  frequencies(&o, lp, 5, f);
  g_assert_cmpfloat(fabs(f[2] - 0.15 / 0.95), <, 0.015);
  g_assert_cmpfloat(f[0], ==, 0.0);

  o.top_p = 1.0f;
  o.temperature = 2.0f; /* p^(1/2), renormalised */
  frequencies(&o, lp, 5, f);
  double z = 0;
  for (int i = 0; i < 4; i++)
    z += sqrt(p[i]);
  for (int i = 0; i < 4; i++)
    g_assert_cmpfloat(fabs(f[i] - sqrt(p[i]) / z), <, 0.015);

  o.temperature = 0.0f; /* greedy */
  frequencies(&o, lp, 5, f);
  g_assert_cmpfloat(fabs(f[1] - 1.0), <, 1e-9);
}

TU_TEST("/sampler/deterministic-and-resumable", test_deterministic_and_resumable)
{
  float lp[64];
  for (int i = 0; i < 64; i++)
    lp[i] = (float)log(1.0 / 64);
  TxlSamplerOptions o = TXL_SAMPLER_OPTIONS_DEFAULT;
  o.seed = 42;
  TxlSampler *a = txl_sampler_new(&o, 64, NULL), *b = txl_sampler_new(&o, 64, NULL);
  int seq[100];
  for (int i = 0; i < 100; i++) {
    seq[i] = txl_sampler_sample(a, lp);
    g_assert_cmpint(seq[i], ==, txl_sampler_sample(b, lp));
  }
  /* a copy of the state continues the same sequence */
  guint64 st = txl_sampler_state(a);
  int next = txl_sampler_sample(a, lp);
  txl_sampler_set_state(b, st);
  g_assert_cmpint(txl_sampler_sample(b, lp), ==, next);
  /* another seed, another sequence */
  o.seed = 43;
  TxlSampler *c = txl_sampler_new(&o, 64, NULL);
  int same = 0;
  for (int i = 0; i < 100; i++)
    same += txl_sampler_sample(c, lp) == seq[i];
  g_assert_cmpint(same, <, 20);
  g_autoptr(GError) err = NULL;
  o.top_p = 0.0f;
  g_assert_null(txl_sampler_new(&o, 64, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  txl_sampler_free(a);
  txl_sampler_free(b);
  txl_sampler_free(c);
}

TU_MAIN()

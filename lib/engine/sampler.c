/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "sampler.h"
#include "bytes.h"
#include "freeeach.h"

#include <math.h>
#include <stdlib.h>

struct _TxlSampler {
  TxlSamplerOptions o;
  int n;
  guint64 state;
  int *idx;     /* candidates, most likely first */
  double *p;    /* their probabilities */
};

TxlSampler *
txl_sampler_new(const TxlSamplerOptions *o, int n_token, GError **error)
{
  if (n_token < 1 || !(o->temperature >= 0.0f) || !isfinite(o->temperature) ||
      !(o->top_p > 0.0f && o->top_p <= 1.0f)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "sampler: temperature %g must be >= 0 and top-p %g in (0, 1]",
                (double)o->temperature, (double)o->top_p);
    return NULL;
  }
  TxlSampler *s = g_new0(TxlSampler, 1);
  s->o = *o;
  s->n = n_token;
  s->state = o->seed;
  s->idx = g_new(int, n_token);
  s->p = g_new(double, n_token);
  return s;
}

void
txl_sampler_free(TxlSampler *s)
{
  if (!s)
    return;
  txl_free_each(g_free, s->idx, s->p, s);
}

guint64
txl_sampler_state(const TxlSampler *s)
{
  return s->state;
}

void
txl_sampler_set_state(TxlSampler *s, guint64 state)
{
  s->state = state;
}

/* The byte form: the generator's u64, little endian (any value is a valid
 * state of splitmix64, so only the size can be wrong). */
gsize
txl_sampler_state_get_size(const TxlSampler *s)
{
  (void)s;
  return 8;
}

gsize
txl_sampler_state_get_data(const TxlSampler *s, guint8 *dst, gsize size)
{
  if (size < 8)
    return 0;
  txl_le_put64(dst, s->state);
  return 8;
}

gboolean
txl_sampler_state_set_data(TxlSampler *s, const guint8 *src, gsize size,
                           GError **error)
{
  if (!src || size != 8) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "sampler state: %" G_GSIZE_FORMAT " bytes, expected 8", size);
    return FALSE;
  }
  s->state = txl_le_get64(src);
  return TRUE;
}

/* splitmix64: tiny, fast, and the same everywhere (unlike rand()) */
static double
uniform(TxlSampler *s)
{
  guint64 z = (s->state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  z ^= z >> 31;
  return (z >> 11) * (1.0 / 9007199254740992.0); /* [0, 1) */
}

static int
by_key_desc(const void *a, const void *b, void *key)
{
  const float *k = key;
  float x = k[*(const int *)a], y = k[*(const int *)b];
  if (x != y)
    return x > y ? -1 : 1;
  return *(const int *)a - *(const int *)b; /* ties: lower id first */
}

int
txl_sampler_sample(TxlSampler *s, const float *lp)
{
  const int n = s->n;
  int best = 0;
  for (int i = 1; i < n; i++)
    if (lp[i] > lp[best])
      best = i;
  if (s->o.temperature == 0.0f || s->o.top_k == 1)
    return best;
  int k = s->o.top_k > 0 && s->o.top_k < n ? s->o.top_k : n;
  const double inv_t = 1.0 / s->o.temperature;
  if (k == n && s->o.top_p >= 1.0f) {
    /* nothing is cut off: draw over every id in order, no sort needed
     * (this is the common case, and a sort of the whole vocabulary would
     * cost more than the draw) */
    double total = 0.0;
    for (int i = 0; i < n; i++) {
      s->p[i] = exp((lp[i] - lp[best]) * inv_t);
      total += s->p[i];
    }
    double u = uniform(s) * total;
    for (int i = 0; i < n; i++) {
      u -= s->p[i];
      if (u < 0.0)
        return i;
    }
    return best;
  }
  /* candidates by decreasing probability; only as many as top-k keeps */
  for (int i = 0; i < n; i++)
    s->idx[i] = i;
  qsort_r(s->idx, n, sizeof(int), by_key_desc, (void *)lp);
  /* tempered probabilities, relative to the best for stability */
  double total = 0.0;
  for (int i = 0; i < k; i++) {
    s->p[i] = exp((lp[s->idx[i]] - lp[s->idx[0]]) * inv_t);
    total += s->p[i];
  }
  /* nucleus: the smallest prefix whose probability reaches top-p */
  if (s->o.top_p < 1.0f) {
    double cum = 0.0;
    int keep = k;
    for (int i = 0; i < k; i++) {
      cum += s->p[i] / total;
      if (cum >= s->o.top_p) {
        keep = i + 1;
        break;
      }
    }
    k = keep;
    total = 0.0;
    for (int i = 0; i < k; i++)
      total += s->p[i];
  }
  double u = uniform(s) * total;
  for (int i = 0; i < k; i++) {
    u -= s->p[i];
    if (u < 0.0)
      return s->idx[i];
  }
  return s->idx[k - 1];
}

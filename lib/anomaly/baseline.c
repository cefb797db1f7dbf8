/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "baseline.h"
#include "bytes.h"
#include "filemap.h"
#include "freeeach.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* 1 / Phi^-1(3/4): makes the MAD a consistent estimate of a normal
 * distribution's standard deviation */
#define MAD_TO_SIGMA 1.4826

struct _TxlBaseline {
  TxlBaselineKind kind;
  int window, warmup, n, next;
  /* the last `fresh` values came after txl_baseline_restart(); fresh == n
   * when no restart is under way */
  int fresh;
  double q;
  double *ring;    /* the last `window` values */
  double *scratch; /* selection works on a copy */
};

TxlBaseline *
txl_baseline_new(TxlBaselineKind kind, int window, int warmup, double q,
                 GError **error)
{
  if (window < 2 || window > (1 << 24) || warmup < 1 || warmup > window ||
      (kind == TXL_BASELINE_QUANTILE && !(q > 0.0 && q < 1.0)) ||
      (kind != TXL_BASELINE_MAD && kind != TXL_BASELINE_QUANTILE)) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
                "baseline: window %d must be in [2, 2^24], warm-up %d in "
                "[1, window], quantile %g in (0, 1)", window, warmup, q);
    return NULL;
  }
  TxlBaseline *b = g_new0(TxlBaseline, 1);
  b->kind = kind;
  b->window = window;
  b->warmup = warmup;
  b->q = q;
  b->ring = g_new(double, window);
  b->scratch = g_new(double, window);
  return b;
}

void
txl_baseline_free(TxlBaseline *b)
{
  if (!b)
    return;
  txl_free_each(g_free, b->ring, b->scratch, b);
}

void
txl_baseline_reset(TxlBaseline *b)
{
  b->n = b->next = b->fresh = 0;
}

void
txl_baseline_restart(TxlBaseline *b)
{
  b->fresh = 0;
}

/* Copies the values that judge now into scratch; returns how many, or -1
 * while there are too few.  After a restart the values before it judge
 * until `warmup` new ones have come, then the new ones alone, so that no
 * line goes unjudged and old values leave the window at once. */
static int
judging_values(TxlBaseline *b)
{
  int from, count;
  if (b->fresh >= b->warmup || b->fresh == b->n) {
    from = b->next - b->fresh;
    count = b->fresh;
  } else {
    from = b->next - b->n;
    count = b->n - b->fresh;
  }
  if (count < b->warmup)
    return -1;
  from = (from + b->window) % b->window;
  int first = MIN(count, b->window - from);
  memcpy(b->scratch, b->ring + from, sizeof(double) * first);
  memcpy(b->scratch + first, b->ring, sizeof(double) * (count - first));
  return count;
}

int
txl_baseline_count(const TxlBaseline *b)
{
  return b->n;
}

/* k-th smallest of v[0..n) (rearranges v): Hoare's selection, expected
 * linear time, so a long window costs little per line */
static double
select_kth(double *v, int n, int k)
{
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    double pivot = v[lo + (hi - lo) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (v[i] < pivot)
        i++;
      while (v[j] > pivot)
        j--;
      if (i <= j) {
        double t = v[i];
        v[i++] = v[j];
        v[j--] = t;
      }
    }
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      return v[k];
  }
  return v[k];
}

/* quantile by linear interpolation between order statistics */
static double
quantile(double *v, int n, double q)
{
  double pos = q * (n - 1);
  int k = (int)floor(pos);
  double lo = select_kth(v, n, k);
  if (k + 1 >= n)
    return lo;
  /* after selection, everything past k is >= v[k]: the next order
   * statistic is their minimum */
  double hi = v[k + 1];
  for (int i = k + 2; i < n; i++)
    hi = v[i] < hi ? v[i] : hi;
  return lo + (pos - k) * (hi - lo);
}

/* the median and MAD, scaled to a standard deviation, of the n values
 * judging_values() left in scratch (quantile() reorders them, which
 * leaves the set of distances from the median the same) */
static void
median_sigma(TxlBaseline *b, int n, double *med, double *sigma)
{
  *med = quantile(b->scratch, n, 0.5);
  for (int i = 0; i < n; i++)
    b->scratch[i] = fabs(b->scratch[i] - *med);
  *sigma = quantile(b->scratch, n, 0.5) * MAD_TO_SIGMA;
}

gboolean
txl_baseline_score(TxlBaseline *b, double x, double *score)
{
  int n = judging_values(b);
  if (n < 0)
    return FALSE;
  if (b->kind == TXL_BASELINE_QUANTILE) {
    *score = x - quantile(b->scratch, n, b->q);
  } else {
    double med, mad;
    median_sigma(b, n, &med, &mad);
    /* a window of identical values has no spread: any difference is
     * infinitely surprising, none is not */
    *score = mad > 0 ? (x - med) / mad
                     : (x > med ? INFINITY : x < med ? -INFINITY : 0.0);
  }
  return TRUE;
}

/* A rule's bar stays a number: values near the largest double (a
 * restored window may hold any finite ones) would overflow it to infinity,
 * or to NaN where a quantile falls on an order statistic whose neighbour
 * is the other extreme (0 x the infinite gap between them). */
static double
finite_bar(double t)
{
  return isnan(t) || t > DBL_MAX ? DBL_MAX : t < -DBL_MAX ? -DBL_MAX : t;
}

gboolean
txl_baseline_threshold(TxlBaseline *b, double *threshold)
{
  int n = judging_values(b);
  if (n < 0)
    return FALSE;
  /* n >= warm-up >= 1: the rule itself keeps the bar finite */
  *threshold = txl_stream_rule_threshold(b->scratch, n);
  return TRUE;
}

double
txl_session_rule_threshold(double *v, gsize n, double margin)
{
  if (n == 0)
    return INFINITY;
  return finite_bar((1.0 + margin) * quantile(v, (int)n, TXL_SESSION_RULE_Q));
}

gboolean
txl_baseline_session_threshold(TxlBaseline *b, double *threshold)
{
  int n = judging_values(b);
  if (n < 0)
    return FALSE;
  *threshold = txl_session_rule_threshold(b->scratch, n,
                                          TXL_SESSION_RULE_MARGIN);
  return TRUE;
}

gboolean
txl_baseline_short_session_bar(TxlBaseline *b, double *bar)
{
  int n = judging_values(b);
  if (n < 0)
    return FALSE;
  *bar = TXL_SHORT_SESSION_FRACTION *
         quantile(b->scratch, n, TXL_SHORT_SESSION_Q);
  return TRUE;
}

double
txl_session_level(double score, double threshold, gint64 lines, double bar)
{
  if (!isfinite(score))
    return NAN;
  double level = threshold > 0 ? score / threshold : NAN;
  if (bar > 0)
    level = fmax(level, bar / (double)MAX(lines, 1));
  return level;
}

double
txl_stream_rule_threshold(double *v, gsize n)
{
  if (n == 0)
    return INFINITY;
  double hi = quantile(v, n, TXL_STREAM_RULE_Q);
  double med = quantile(v, n, 0.5);
  return finite_bar(hi + TXL_STREAM_RULE_MARGIN *
                             MAX(hi - med, TXL_STREAM_RULE_FLOOR));
}

gboolean
txl_baseline_judge(TxlBaseline *b, double x, gboolean *flag)
{
  double thr;
  gboolean ready = txl_baseline_threshold(b, &thr);
  *flag = ready && !(x <= thr); /* NaN and +inf too */
  txl_baseline_add(b, x);       /* flagged or not; never a non-finite x */
  return ready;
}

void
txl_baseline_add(TxlBaseline *b, double x)
{
  if (!isfinite(x))
    return;
  b->ring[b->next] = x;
  b->next = (b->next + 1) % b->window;
  if (b->n < b->window)
    b->n++;
  if (b->fresh < b->n)
    b->fresh++;
}

/* state: i32 kind, window, warmup, n, next; f64 q; f64 ring[n]; then,
 * only while a restart is under way (fresh < n), i32 fresh (LE).  Without
 * a restart the bytes are those of the versions before restarts. */
gsize
txl_baseline_state_get_size(const TxlBaseline *b)
{
  return 5 * 4 + 8 + (gsize)b->n * 8 + (b->fresh < b->n ? 4 : 0);
}

gsize
txl_baseline_state_get_data(const TxlBaseline *b, guint8 *dst, gsize size)
{
  gsize len = txl_baseline_state_get_size(b);
  if (size < len)
    return 0;
  TxlWriter w = { dst };
  gint32 h[5] = { (gint32)b->kind, b->window, b->warmup, b->n, b->next };
  for (int i = 0; i < 5; i++)
    txl_w_u32(&w, (guint32)h[i]);
  for (int i = -1; i < b->n; i++)
    txl_w_u64(&w, txl_f64_bits(i < 0 ? b->q : b->ring[i]));
  if (b->fresh < b->n)
    txl_w_u32(&w, (guint32)b->fresh);
  return len;
}

GBytes *
txl_baseline_save(const TxlBaseline *b)
{
  gsize len = txl_baseline_state_get_size(b);
  guint8 *out = g_malloc(len);
  txl_baseline_state_get_data(b, out, len);
  return g_bytes_new_take(out, len);
}

gboolean
txl_baseline_state_set_data(TxlBaseline *b, const guint8 *src, gsize len,
                            GError **error)
{
  const guint8 *p = src;
  gint32 h[5];
  double q;
  if (len < 28 || !src)
    goto bad;
  for (int i = 0; i < 5; i++)
    h[i] = (gint32)txl_le_get32(p + 4 * i);
  q = txl_f64_from_bits(txl_le_get64(p + 20));
  if (h[3] < 0 || h[3] > b->window || h[4] < 0 || h[4] >= b->window ||
      (h[3] < b->window && h[4] != h[3]))
    goto bad;
  gsize body = 28 + (gsize)h[3] * 8;
  gint32 fresh = h[3];
  if (len == body + 4) {
    fresh = (gint32)txl_le_get32(p + body);
    if (fresh < 0 || fresh >= h[3])
      goto bad;
  } else if (len != body) {
    goto bad;
  }
  if (h[0] != (gint32)b->kind || h[1] != b->window || h[2] != b->warmup ||
      (b->kind == TXL_BASELINE_QUANTILE && q != b->q)) {
    return txl_fail(error, TXL_ERROR_INVALID,
                    "baseline state: saved with another mode, window (%d), "
                    "warm-up (%d) or quantile", h[1], h[2]);
  }
  for (int i = 0; i < h[3]; i++) {
    double d = txl_f64_from_bits(txl_le_get64(p + 28 + 8 * i));
    if (!isfinite(d)) { /* add() never keeps one; selection needs an order */
      return txl_fail(error, TXL_ERROR_FORMAT,
                      "baseline state: value %d of %d is not a finite number "
                      "(%g): refused", i + 1, h[3], d);
    }
  }
  for (int i = 0; i < h[3]; i++)
    b->ring[i] = txl_f64_from_bits(txl_le_get64(p + 28 + 8 * i));
  b->n = h[3];
  b->next = h[4];
  b->fresh = fresh;
  return TRUE;
bad:
  return txl_fail(error, TXL_ERROR_FORMAT, "baseline state: malformed");
}

gboolean
txl_baseline_restore(TxlBaseline *b, GBytes *state, GError **error)
{
  gsize len;
  const guint8 *p = txl_bytes_data(state, &len);
  return txl_baseline_state_set_data(b, p, len, error);
}

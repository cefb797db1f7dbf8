/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The robust running baseline: warm-up, quantiles equal to a sort-based
 * computation, MAD z-scores on normal data, robustness to outliers, a
 * window that follows a shift, refusal of bad parameters. */
#include "baseline.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "tu_test.h"

/* score, then add: what a caller that never flags would do */
static gboolean
txl_baseline_push(TxlBaseline *b, double x, double *score)
{
  gboolean ready = txl_baseline_score(b, x, score);
  txl_baseline_add(b, x);
  return ready;
}

static double
normal(GRand *r)
{
  double u = g_rand_double_range(r, 1e-12, 1.0), v = g_rand_double(r);
  return sqrt(-2.0 * log(u)) * cos(2 * G_PI * v);
}

static int
cmp(const void *a, const void *b)
{
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

TU_TEST("/baseline/quantile-matches-sort", test_quantile_matches_sort)
{
  GRand *r = g_rand_new_with_seed(1);
  for (int trial = 0; trial < 200; trial++) {
    int w = g_rand_int_range(r, 2, 300);
    double q = g_rand_double_range(r, 0.01, 0.99);
    g_autoptr(GError) err = NULL;
    TxlBaseline *b = txl_baseline_new(TXL_BASELINE_QUANTILE, w, w, q, &err);
    g_assert_no_error(err);
    double *v = g_new(double, w);
    for (int i = 0; i < w; i++) {
      /* ties too: a third of the values repeat */
      v[i] = g_rand_int_range(r, 0, 3) ? g_rand_double(r) : 0.5;
      double s;
      g_assert_false(txl_baseline_push(b, v[i], &s));
    }
    qsort(v, w, sizeof *v, cmp);
    double pos = q * (w - 1);
    int k = (int)floor(pos);
    double want = k + 1 < w ? v[k] + (pos - k) * (v[k + 1] - v[k]) : v[k];
    double s;
    g_assert_true(txl_baseline_push(b, 2.0, &s));
    g_assert_cmpfloat(fabs((2.0 - s) - want), <, 1e-12);
    g_free(v);
    txl_baseline_free(b);
  }
  g_rand_free(r);
}

TU_TEST("/baseline/mad-normal-and-robust", test_mad_normal_and_robust)
{
  GRand *r = g_rand_new_with_seed(2);
  g_autoptr(GError) err = NULL;
  TxlBaseline *b = txl_baseline_new(TXL_BASELINE_MAD, 2000, 200, 0, &err);
  double s;
  for (int i = 0; i < 200; i++)
    g_assert_false(txl_baseline_push(b, 5.0 + 2.0 * normal(r), &s));
  g_assert_true(txl_baseline_push(b, 5.0, &s));
  for (int i = 0; i < 1800; i++) {
    /* 5% wild outliers: median and MAD barely move */
    double x = i % 20 == 0 ? 1000.0 : 5.0 + 2.0 * normal(r);
    txl_baseline_push(b, x, &s);
  }
  g_assert_true(txl_baseline_push(b, 5.0 + 2.0 * 4.0, &s)); /* 4 sigma */
  g_assert_cmpfloat(fabs(s - 4.0), <, 0.6);
  g_assert_true(txl_baseline_push(b, 5.0, &s));
  g_assert_cmpfloat(fabs(s), <, 0.3);
  txl_baseline_free(b);
  g_rand_free(r);
}

TU_TEST("/baseline/window-follows", test_window_follows_and_nonfinite)
{
  g_autoptr(GError) err = NULL;
  TxlBaseline *b = txl_baseline_new(TXL_BASELINE_QUANTILE, 100, 10, 0.5, &err);
  double s;
  for (int i = 0; i < 100; i++)
    txl_baseline_push(b, i % 10, &s);
  txl_baseline_push(b, 100.0, &s);
  g_assert_cmpfloat(fabs((100.0 - s) - 4.5), <, 1e-9);
  for (int i = 0; i < 100; i++) /* the window moves to 1000 + ... */
    txl_baseline_push(b, 1000 + i % 10, &s);
  txl_baseline_push(b, 0.0, &s);
  g_assert_cmpfloat(fabs(-s - 1004.5), <, 1e-9);
  int n = txl_baseline_count(b);
  txl_baseline_push(b, NAN, &s);
  txl_baseline_push(b, INFINITY, &s);
  g_assert_cmpint(txl_baseline_count(b), ==, n);
  txl_baseline_reset(b);
  g_assert_false(txl_baseline_push(b, 1.0, &s));
  txl_baseline_free(b);

  /* no spread: a different value is infinitely surprising, the same none */
  b = txl_baseline_new(TXL_BASELINE_MAD, 10, 5, 0, &err);
  for (int i = 0; i < 5; i++)
    txl_baseline_push(b, 3.0, &s);
  txl_baseline_push(b, 3.0, &s);
  g_assert_cmpfloat(s, ==, 0.0);
  txl_baseline_push(b, 3.5, &s);
  g_assert_true(isinf(s) && s > 0);
  txl_baseline_free(b);
}

TU_TEST("/baseline/bad-parameters", test_bad_parameters)
{
  g_autoptr(GError) err = NULL;
  g_assert_null(txl_baseline_new(TXL_BASELINE_MAD, 1, 1, 0, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  g_clear_error(&err);
  g_assert_null(txl_baseline_new(TXL_BASELINE_MAD, 10, 11, 0, &err));
  g_clear_error(&err);
  g_assert_null(txl_baseline_new(TXL_BASELINE_QUANTILE, 10, 5, 1.0, &err));
  g_clear_error(&err);
}

/* A session's level: the larger of its two ratios, above 1 exactly when
 * a rule flags it; NAN where there is nothing to rank by. */
TU_TEST("/baseline/session-level", test_session_level)
{
  g_assert_cmpfloat(txl_session_level(3.0, 2.0, 10, 0), ==, 1.5);
  g_assert_cmpfloat(txl_session_level(1.0, 2.0, 10, 5.0), ==, 0.5);
  g_assert_cmpfloat(txl_session_level(1.0, 2.0, 2, 5.0), ==, 2.5);
  g_assert_cmpfloat(txl_session_level(9.0, 2.0, 2, 5.0), ==, 4.5);
  g_assert_cmpfloat(txl_session_level(1.0, 0, 4, 2.0), ==, 0.5);
  g_assert_cmpfloat(txl_session_level(1.0, 2.0, 0, 3.0), ==, 3.0);
  g_assert_true(isnan(txl_session_level(1.0, 0, 4, 0)));
  g_assert_true(isnan(txl_session_level(NAN, 2.0, 1, 5.0)));
  g_assert_true(isnan(txl_session_level(INFINITY, 2.0, 1, 5.0)));
}

/* The label-free rule (txl_baseline_judge): warm-up, few false alarms on
 * skewed two-mode scores, anomalies flagged without lifting the bar, a
 * lasting change absorbed. */
TU_TEST("/baseline/stream-rule", test_stream_rule)
{
  TxlBaseline *b = txl_baseline_new(TXL_BASELINE_MAD, TXL_STREAM_RULE_WINDOW,
                                    TXL_STREAM_RULE_WARMUP, 0, NULL);
  GRand *r = g_rand_new_with_seed(3);
  gboolean flag;
  for (int i = 0; i < TXL_STREAM_RULE_WARMUP; i++) {
    g_assert_false(txl_baseline_judge(b, 0.5, &flag));
    g_assert_false(flag);
  }
  /* two templates of different cost, skewed noise (a median-and-MAD rule
   * misjudges this shape), after a warm-up that saw neither: the second
   * template, 30% of the lines, is first flagged, then joins the normal;
   * from then on the rule flags under 1% */
  int flagged = 0, warm = 0, n = 20000;
  for (int i = 0; i < n; i++) {
    double x = (g_rand_int_range(r, 0, 10) < 7 ? 0.3 : 1.5) +
               0.1 * -log(g_rand_double_range(r, 1e-9, 1.0));
    gboolean ready = txl_baseline_judge(b, x, &flag);
    flagged += i >= 2000 && flag;
    warm += i >= 2000 && !ready;
  }
  g_assert_cmpint(warm, ==, 0);
  g_assert_cmpfloat((double)flagged / (n - 2000), <, 0.01);
  /* anomalies, 3% of the lines, far above: all flagged, the bar stays
   * (they are in the window, above its quantile) */
  double before, after;
  g_assert_true(txl_baseline_threshold(b, &before));
  int hit = 0;
  for (int i = 0; i < 3000; i++) {
    gboolean anomaly = i % 33 == 0;
    double x = anomaly ? 6.0 : (i % 10 < 7 ? 0.3 : 1.5) + 0.05;
    txl_baseline_judge(b, x, &flag);
    hit += anomaly && flag;
  }
  g_assert_cmpint(hit, ==, 91);
  g_assert_true(txl_baseline_threshold(b, &after));
  g_assert_cmpfloat(after, <, before + 0.5);
  /* a lasting shift of every line: flagged at first, then the new normal */
  int late = 0;
  for (int i = 0; i < 3000; i++) {
    txl_baseline_judge(b, 4.0 + 0.01 * (i % 7), &flag);
    late += i >= 2000 && flag;
  }
  g_assert_cmpint(late, ==, 0);
  /* non-finite scores are flagged, and never join the window */
  g_assert_true(txl_baseline_judge(b, INFINITY, &flag) && flag);
  g_assert_true(txl_baseline_judge(b, NAN, &flag) && flag);
  g_assert_true(txl_baseline_threshold(b, &after) && isfinite(after));
  g_rand_free(r);
  txl_baseline_free(b);
}

/* Values near the largest double (a restored window may hold any finite
 * ones) overflow the rules' arithmetic: both bars stay finite, so that a
 * threshold written out is a number (found by fuzz_state). */
TU_TEST("/baseline/huge-values", test_huge_values)
{
  TxlBaseline *b = txl_baseline_new(TXL_BASELINE_MAD, 64, 4, 0, NULL);
  for (int i = 0; i < 8; i++)
    txl_baseline_add(b, i % 2 ? DBL_MAX : 0.9 * DBL_MAX);
  double t = 0;
  g_assert_true(txl_baseline_threshold(b, &t));
  g_assert_true(t == DBL_MAX);
  g_assert_true(txl_baseline_session_threshold(b, &t));
  g_assert_true(t == DBL_MAX);
  double v[] = { -DBL_MAX, DBL_MAX, DBL_MAX };
  g_assert_true(isfinite(txl_stream_rule_threshold(v, 3)));
  g_assert_true(isfinite(txl_session_rule_threshold(v, 3, 0.75)));
  /* the quantile exactly on the last -DBL_MAX, the next value DBL_MAX:
   * 0 x infinity in the interpolation (Q90 of 11, Q95 of 21) */
  double w11[11], w21[21];
  for (int i = 0; i < 21; i++) {
    if (i < 11)
      w11[i] = i == 10 ? DBL_MAX : -DBL_MAX;
    w21[i] = i == 20 ? DBL_MAX : -DBL_MAX;
  }
  g_assert_true(isfinite(txl_stream_rule_threshold(w11, 11)));
  g_assert_true(isfinite(txl_session_rule_threshold(w21, 21, 0.75)));
  txl_baseline_free(b);
}

/* the rule over a copy of the last `count` values pushed, ending `skip`
 * values before the newest */
static double
rule_of(const double *pushed, int total, int skip, int count)
{
  double *v = g_new(double, count);
  memcpy(v, pushed + total - skip - count, sizeof(double) * count);
  double t = txl_stream_rule_threshold(v, count);
  g_free(v);
  return t;
}

/* After a restart (new weights) the values before it judge until
 * `warmup` new ones have come, then the new ones alone: the threshold is
 * never missing, matches the rule over exactly those values at every
 * step, and survives state bytes taken mid-way. */
TU_TEST("/baseline/restart-hands-over", test_restart_hands_over)
{
  g_autoptr(GError) err = NULL;
  const int W = 100, WARM = 10, N = 400;
  TxlBaseline *b = txl_baseline_new(TXL_BASELINE_MAD, W, WARM, 0, &err);
  TxlBaseline *c = txl_baseline_new(TXL_BASELINE_MAD, W, WARM, 0, &err);
  double *pushed = g_new(double, N);
  GRand *r = g_rand_new_with_seed(7);
  int total = 0, since = -1;
  for (int i = 0; i < N; i++) {
    if (i == 130 || i == 205 || i == 209) { /* 209: again, mid-way */
      txl_baseline_restart(b);
      since = 0;
    }
    double thr;
    gboolean ready = txl_baseline_threshold(b, &thr);
    if (total >= WARM) {
      g_assert_true(ready);
      double want;
      if (since < 0 || since >= WARM || since == total)
        want = rule_of(pushed, total, 0, MIN(since < 0 ? total : since, W));
      else
        want = rule_of(pushed, total, since, MIN(total, W) - since);
      g_assert_cmpfloat(thr, ==, want);
    }
    if (i == 212) { /* state bytes mid-restart carry it */
      gsize len = txl_baseline_state_get_size(b);
      guint8 *buf = g_malloc(len);
      g_assert_cmpuint(txl_baseline_state_get_data(b, buf, len), ==, len);
      g_assert_true(txl_baseline_state_set_data(c, buf, len, &err));
      g_free(buf);
    }
    double x = (i < 130 ? 2.0 : i < 205 ? 0.5 : 1.0) + 0.1 * normal(r);
    pushed[total++] = x;
    txl_baseline_add(b, x);
    if (i >= 212)
      txl_baseline_add(c, x);
    if (since >= 0)
      since++;
    if (i >= 212) {
      double t1, t2;
      g_assert_true(txl_baseline_threshold(b, &t1));
      g_assert_true(txl_baseline_threshold(c, &t2));
      g_assert_cmpfloat(t1, ==, t2);
    }
  }
  /* without a restart under way the bytes are as before restarts:
   * header, q and the values */
  g_assert_cmpuint(txl_baseline_state_get_size(b), ==, 28 + 8 * W);
  txl_baseline_restart(b);
  g_assert_cmpuint(txl_baseline_state_get_size(b), ==, 28 + 8 * W + 4);
  /* a count past the window is refused */
  gsize len = txl_baseline_state_get_size(b);
  guint8 *buf = g_malloc(len);
  txl_baseline_state_get_data(b, buf, len);
  buf[len - 4] = 200;
  g_assert_false(txl_baseline_state_set_data(c, buf, len, &err));
  g_clear_error(&err);
  g_free(buf);
  g_rand_free(r);
  g_free(pushed);
  txl_baseline_free(b);
  txl_baseline_free(c);
}

TU_MAIN()

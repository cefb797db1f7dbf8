/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The pure steps of txl eval (tools/cli/eval/): metrics, the threshold
 * rule, labels and the split, on small hand-made data whose answers can
 * be worked out on paper. */
#include "eval/eval.h"
#include "eval/labels.h"
#include "eval/metrics.h"
#include "eval/threshold.h"

#include <glib.h>
#include <glib/gstdio.h>
#include <math.h>
#include <string.h>
#include "tu_test.h"

TU_TEST("/eval/metrics/counts", test_metrics_counts)
{
  /* flagged above 0.5: 0.9 (anomaly), 0.8 (normal), 0.7 (anomaly);
   * missed: 0.2 (anomaly) */
  const double sc[] = { 0.9, 0.8, 0.7, 0.2, 0.1, 0.3 };
  const int lab[] = { 1, 0, 1, 1, 0, 0 };
  EvalMetrics m;
  eval_metrics(sc, lab, 6, 0.5, &m);
  g_assert_cmpint(m.tp, ==, 2);
  g_assert_cmpint(m.fp, ==, 1);
  g_assert_cmpint(m.fn, ==, 1);
  g_assert_cmpint(m.tn, ==, 2);
  g_assert_cmpint(m.n_anom, ==, 3);
  g_assert_cmpfloat_with_epsilon(m.precision, 2.0 / 3, 1e-12);
  g_assert_cmpfloat_with_epsilon(m.recall, 2.0 / 3, 1e-12);
  g_assert_cmpfloat_with_epsilon(m.f1, 2.0 / 3, 1e-12);
  /* pairs (anomaly, normal) ranked right: 0.9 beats 3, 0.7 beats 2,
   * 0.2 beats 1: 6 of 9 */
  g_assert_cmpfloat_with_epsilon(m.auroc, 6.0 / 9, 1e-12);
}

TU_TEST("/eval/metrics/ties", test_metrics_ties_and_one_class)
{
  /* all scores equal: ties count half, AUROC 0.5; nothing flagged at the
   * score itself (flagged means strictly above) */
  const double sc[] = { 1, 1, 1, 1 };
  const int lab[] = { 1, 0, 1, 0 };
  EvalMetrics m;
  eval_metrics(sc, lab, 4, 1.0, &m);
  g_assert_cmpfloat_with_epsilon(m.auroc, 0.5, 1e-12);
  g_assert_cmpint(m.tp + m.fp, ==, 0);
  g_assert_cmpfloat(m.f1, ==, 0);
  const int normal[] = { 0, 0, 0, 0 };
  eval_metrics(sc, normal, 4, 0.0, &m);
  g_assert_true(isnan(m.auroc));
  g_assert_cmpfloat(m.precision, ==, 0);
}

TU_TEST("/eval/metrics/json", test_metrics_json)
{
  const double sc[] = { 2, 1 };
  const int lab[] = { 1, 0 };
  EvalMetrics m;
  eval_metrics(sc, lab, 2, 1.5, &m);
  GString *j = g_string_new(NULL);
  eval_metrics_json(j, "session", &m);
  g_assert_cmpstr(j->str, ==, "\"session\": {\"threshold\": 1.5, \"n\": 2, "
                  "\"anomalous\": 1, \"tp\": 1, \"fp\": 0, \"fn\": 0, \"tn\": 1, "
                  "\"precision\": 1.0000, \"recall\": 1.0000, \"f1\": 1.0000, "
                  "\"auroc\": 1.0000}");
  g_string_free(j, TRUE);
}

TU_TEST("/eval/threshold", test_threshold_rule)
{
  EvalThresholdRule r = { .margin = 0.5 };
  /* 1..40 shuffled, then one value far above: the 95th percentile of the
   * 41 is 39 (an order statistic, no interpolation) */
  double v[41], w[41];
  for (int i = 0; i < 40; i++)
    v[i] = w[i] = (i * 7) % 40 + 1;
  v[40] = 1000;
  w[40] = 40.5;
  g_assert_cmpfloat_with_epsilon(eval_threshold(&r, v, 41), 1.5 * 39, 1e-12);
  /* the highest value does not move it: the rule holds with a few
   * anomalies among the validation scores */
  g_assert_cmpfloat_with_epsilon(eval_threshold(&r, w, 41), 1.5 * 39, 1e-12);
  /* between order statistics: linear interpolation (0.95 x 3 = 2.85) */
  double x[] = { 0.4, 0.1, 0.3, 0.2 };
  r.margin = 1;
  g_assert_cmpfloat_with_epsilon(eval_threshold(&r, x, 4), 2 * 0.385, 1e-12);
  g_assert_true(isinf(eval_threshold(&r, NULL, 0)));
  r.fixed = 7;
  g_assert_cmpfloat(eval_threshold(&r, w, 41), ==, 7);
}

TU_TEST("/eval/median", test_median)
{
  double a[] = { 3, 1, 2 }, b[] = { 4, 1, 3, 2 };
  g_assert_cmpfloat(eval_median(a, 3), ==, 2);
  g_assert_cmpfloat(eval_median(b, 4), ==, 2.5);
  g_assert_true(isnan(eval_median(NULL, 0)));
}

TU_TEST("/eval/labels", test_labels)
{
  int l = -1;
  g_assert_true(eval_parse_label("Anomaly", &l) && l == 1);
  g_assert_true(eval_parse_label("normal", &l) && l == 0);
  g_assert_true(eval_parse_label("1", &l) && l == 1);
  g_assert_false(eval_parse_label("maybe", &l));
  g_autofree char *dir = g_dir_make_tmp("txl-eval-XXXXXX", NULL);
  g_autofree char *p = g_build_filename(dir, "labels.csv", NULL);
  g_assert_true(g_file_set_contents(p, "BlockId,Label\nb1,Normal\nb2,Anomaly\n",
                                    -1, NULL));
  GError *e = NULL;
  GHashTable *h = eval_read_labels(p, &e);
  g_assert_no_error(e);
  g_assert_cmpint(GPOINTER_TO_INT(g_hash_table_lookup(h, "b1")), ==, 1);
  g_assert_cmpint(GPOINTER_TO_INT(g_hash_table_lookup(h, "b2")), ==, 2);
  g_hash_table_destroy(h);
  g_assert_true(g_file_set_contents(p, "b1,Normal\nb2,perhaps\n", -1, NULL));
  g_assert_null(eval_read_labels(p, &e));
  g_assert_error(e, TXL_ERROR, TXL_ERROR_INVALID);
  g_clear_error(&e);
  g_remove(p);
  g_rmdir(dir);
}

/* Ten sessions s0..s9 of one line each ("event sid=sK"), sessions a and
 * b anomalous; their labels go to *lab. */
static GString *
ten_sessions(int a, int b, GHashTable **lab)
{
  GString *log = g_string_new(NULL);
  *lab = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, NULL);
  for (int k = 0; k < 10; k++) {
    g_string_append_printf(log, "event sid=s%d\n", k);
    g_hash_table_insert(*lab, g_strdup_printf("s%d", k),
                        GINT_TO_POINTER((k == a || k == b) + 1));
  }
  return log;
}

/* The sessions of log (keys "sid=sK") read into ev and split at half, a
 * quarter validating. */
static void
read_and_split(Eval *ev, const GString *log, GHashTable *lab,
               gboolean normal_only)
{
  GRegex *re = g_regex_new("sid=(s[0-9]+)", 0, 0, NULL);
  GError *e = NULL;
  eval_init(ev);
  g_assert_true(eval_read_sessions(ev, log->str, log->len, re, 1, lab,
                                   "log", &e));
  g_assert_true(eval_assign_split(ev, 0.5, 0.25, normal_only, &e));
  g_assert_no_error(e);
  g_regex_unref(re);
}

/* Ten sessions s0..s9, one line each, then a second line of s0; s3 and s7
 * anomalous.  train_fraction 0.5: s0..s4 form the training part, its
 * normal ones s0 s1 s2 s4; calib_fraction 0.25 keeps the last of them (s4)
 * for validation; s3 is dropped; s5..s9 are tested. */
TU_TEST("/eval/split", test_split)
{
  GHashTable *lab;
  GString *log = ten_sessions(3, 7, &lab);
  g_string_append(log, "second sid=s0\nno key here\n");
  Eval ev;
  read_and_split(&ev, log, lab, TRUE);
  GError *e = NULL;
  g_assert_cmpint(ev.n_lines, ==, 12);
  const int want[] = { SPLIT_TRAIN, SPLIT_TRAIN, SPLIT_TRAIN, SPLIT_DROPPED,
                       SPLIT_CALIB, SPLIT_TEST, SPLIT_TEST, SPLIT_TEST,
                       SPLIT_TEST, SPLIT_TEST };
  for (int k = 0; k < 10; k++)
    g_assert_cmpint(((EvalSession *)ev.sess->pdata[k])->split, ==, want[k]);
  g_assert_cmpint(((EvalSession *)ev.sess->pdata[0])->n_lines, ==, 2);
  g_assert_cmpint(ev.counts[SPLIT_TEST], ==, 5);
  g_assert_true(eval_line_in(&ev, 10, SPLIT_TRAIN)); /* s0's second line */
  g_assert_false(eval_line_in(&ev, 11, SPLIT_TRAIN)); /* no key */
  /* the training text: grouped by session, an empty line after each */
  g_autofree char *dir = g_dir_make_tmp("txl-eval-XXXXXX", NULL);
  g_autofree char *p = g_build_filename(dir, "train.txt", NULL);
  gint64 n = 0;
  g_assert_true(eval_write_split_text(&ev, SPLIT_TRAIN, -1, FALSE, p, &n, &e));
  g_assert_cmpint(n, ==, 4);
  g_autofree char *txt = NULL;
  g_assert_true(g_file_get_contents(p, &txt, NULL, NULL));
  g_assert_cmpstr(txt, ==, "event sid=s0\nsecond sid=s0\n\nevent sid=s1\n\n"
                  "event sid=s2\n\n");
  g_remove(p);
  g_rmdir(dir);
  eval_clear(&ev);
  g_hash_table_destroy(lab);
  g_string_free(log, TRUE);
}

/* Without labels (the default) every session of the training part learns
 * or validates, anomalies included; training sessions alternate between
 * two folds, and eval_trim moves those above the quantile of their
 * held-out scores to SPLIT_TRIMMED. */
TU_TEST("/eval/split-label-free", test_split_label_free)
{
  GHashTable *lab;
  GString *log = ten_sessions(1, 7, &lab);
  Eval ev;
  read_and_split(&ev, log, lab, FALSE);
  GError *e = NULL;
  /* s0..s4: ceil(0.25 x 5) = 2 validate (s3 s4), s1 trains though
   * anomalous; folds alternate */
  const int want[] = { SPLIT_TRAIN, SPLIT_TRAIN, SPLIT_TRAIN, SPLIT_CALIB,
                       SPLIT_CALIB, SPLIT_TEST, SPLIT_TEST, SPLIT_TEST,
                       SPLIT_TEST, SPLIT_TEST };
  for (int k = 0; k < 10; k++) {
    EvalSession *s = ev.sess->pdata[k];
    g_assert_cmpint(s->split, ==, want[k]);
    g_assert_cmpint(s->fold, ==, k < 3 ? (k + 1) % 2 : -1);
  }
  g_assert_cmpint(ev.counts[SPLIT_DROPPED], ==, 0);
  /* one fold's text holds its sessions only */
  g_autofree char *dir = g_dir_make_tmp("txl-eval-XXXXXX", NULL);
  g_autofree char *p = g_build_filename(dir, "fold.txt", NULL);
  gint64 n = 0;
  g_assert_true(eval_write_split_text(&ev, SPLIT_TRAIN, 1, FALSE, p, &n, &e));
  g_autofree char *txt = NULL;
  g_assert_true(g_file_get_contents(p, &txt, NULL, NULL));
  g_assert_cmpstr(txt, ==, "event sid=s0\n\nevent sid=s2\n\n");
  g_remove(p);
  g_rmdir(dir);
  /* held-out mean scores 0.1, 0.9 (the anomaly), 0.2: the median cut
   * trims s1 alone */
  const double nll[] = { 1.0, 9.0, 2.0 };
  for (int k = 0; k < 3; k++) {
    EvalSession *s = ev.sess->pdata[k];
    s->parts = 1;
    s->nll = nll[k];
    s->tokens = 10;
  }
  double cut = eval_trim(&ev, 3, FALSE, 0.5);
  g_assert_cmpfloat_with_epsilon(cut, 0.2, 1e-12);
  g_assert_cmpint(((EvalSession *)ev.sess->pdata[1])->split, ==,
                  SPLIT_TRIMMED);
  g_assert_cmpint(ev.counts[SPLIT_TRAIN], ==, 2);
  g_assert_cmpint(ev.counts[SPLIT_TRIMMED], ==, 1);
  /* a broken (non-finite) held-out score is trimmed too */
  ((EvalSession *)ev.sess->pdata[2])->nll = INFINITY;
  eval_trim(&ev, 3, FALSE, 0.5);
  g_assert_cmpint(((EvalSession *)ev.sess->pdata[2])->split, ==,
                  SPLIT_TRIMMED);
  eval_clear(&ev);
  g_hash_table_destroy(lab);
  g_string_free(log, TRUE);
}

TU_MAIN()

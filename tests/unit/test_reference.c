/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/anomaly/reference.c: a line's cost under the model file alone, from
 * an empty memory after a line end, is what a fresh stream primed with a
 * line end gives that line (one segment or several), whatever was scored
 * before; ids it cannot score give NaN; the judged value takes a quarter
 * of it off the line's worst part. */
#include "reference.h"

#include <math.h>
#include "testutil.h"
#include "tu_test.h"

/* The ids of text, encoded whole (testutil.h's encoder). */
static GArray *
encode(TxlModel *m, const char *text)
{
  Toks t = tu_encode(txl_model_tokenizer(m), text, strlen(text),
                     strlen(text) + 1, NULL);
  GArray *ids = g_array_copy(t.ids);
  toks_free(&t);
  return ids;
}

static void
sum_from(gint64 pos, int32_t token, float lp, gpointer data)
{
  (void)token;
  double *acc = data; /* acc[0]: first position counted, acc[1]: the sum */
  if (pos >= (gint64)acc[0])
    acc[1] -= lp;
}

/* The same line's cost from a scorer over "\n" + the line, fresh. */
static double
scored_fresh(TxlModel *m, GArray *primer, GArray *line)
{
  double acc[2] = { (double)primer->len, 0.0 };
  TxlScorer *s = txl_scorer_new(m, NULL, 0, sum_from, acc, NULL);
  g_assert_nonnull(s);
  g_assert_true(txl_scorer_push(s, (const int32_t *)primer->data, primer->len, NULL));
  g_assert_true(txl_scorer_push(s, (const int32_t *)line->data, line->len, NULL));
  g_assert_true(txl_scorer_finish(s, NULL));
  txl_scorer_free(s);
  return acc[1];
}

static TxlLineRef *
ref_new(TxlModel *m)
{
  g_autoptr(GError) err = NULL;
  TxlLineRef *r = txl_line_ref_new(m, &err);
  g_assert_no_error(err);
  return r;
}

TU_TEST("/reference/a-fresh-primed-stream", test_fresh)
{
  TxlModel *m = tu_test_load(TXL_MODEL_SOURCE);
  TxlLineRef *r = ref_new(m);
  GArray *primer = encode(m, "\n");
  g_assert_cmpuint(primer->len, >=, 1);
  GString *longer = g_string_new("Nov 28 06:30:01 host sshd[4242]: Accepted publickey for");
  for (int i = 0; i < 60; i++)
    g_string_append_printf(longer, " user%d from 10.0.%d.%d", i, i, 7 * i);
  g_string_append_c(longer, '\n');
  const char *lines[] = {
    "2026-11-28 06:30:00 status installed libc6:amd64 2.36-9\n",
    longer->str, /* several segments */
    "x\n",
  };
  const TxlConfig *c = txl_model_config(m);
  double first = NAN;
  for (guint k = 0; k < G_N_ELEMENTS(lines); k++) {
    GArray *ids = encode(m, lines[k]);
    if (k == 1)
      g_assert_cmpuint(ids->len, >, 2 * (guint)c->tgt_len);
    double ref = txl_line_ref_nll(r, (const int32_t *)ids->data, ids->len);
    double want = scored_fresh(m, primer, ids);
    g_assert_true(isfinite(ref) && ref > 0);
    g_assert_cmpfloat(fabs(ref - want), <=, 1e-9 * MAX(1.0, want));
    if (k == 0)
      first = ref;
    g_array_unref(ids);
  }
  /* what came before does not matter: the memory starts empty; a line
   * seen before is not computed again */
  g_assert_cmpuint(txl_line_ref_hits(r), ==, 0);
  GArray *ids = encode(m, lines[0]);
  g_assert_cmpfloat(txl_line_ref_nll(r, (const int32_t *)ids->data, ids->len), ==, first);
  g_assert_cmpuint(txl_line_ref_hits(r), ==, 1);
  /* ids it cannot score */
  g_assert_true(isnan(txl_line_ref_nll(r, (const int32_t *)ids->data, 0)));
  int32_t bad[2] = { 1, c->n_token };
  g_assert_true(isnan(txl_line_ref_nll(r, bad, 2)));
  bad[1] = -1;
  g_assert_true(isnan(txl_line_ref_nll(r, bad, 2)));
  g_array_unref(ids);
  g_array_unref(primer);
  g_string_free(longer, TRUE);
  txl_line_ref_free(r);
}

/* The costs kept stay within TXL_LINE_REF_CACHE_LINES: one line more
 * empties them, and a line kept before is computed again, to the same
 * value. */
TU_TEST("/reference/kept-costs-bounded", test_bounded)
{
  TxlModel *m = tu_test_load(TXL_MODEL_SOURCE);
  TxlLineRef *r = ref_new(m);
  int n_token = txl_model_config(m)->n_token;
  double first = NAN;
  for (int k = 0; k <= TXL_LINE_REF_CACHE_LINES; k++) {
    int32_t ids[2] = { k % n_token, k / n_token };
    double v = txl_line_ref_nll(r, ids, 2);
    g_assert_true(isfinite(v));
    if (k == 0)
      first = v;
  }
  g_assert_cmpuint(txl_line_ref_hits(r), ==, 0);
  int32_t ids[2] = { 0, 0 };
  g_assert_cmpfloat(txl_line_ref_nll(r, ids, 2), ==, first);
  g_assert_cmpuint(txl_line_ref_hits(r), ==, 0); /* computed again */
  g_assert_cmpfloat(txl_line_ref_nll(r, ids, 2), ==, first);
  g_assert_cmpuint(txl_line_ref_hits(r), ==, 1);
  txl_line_ref_free(r);
}

TU_TEST("/reference/judged", test_judged)
{
  TxlLineScore s = { .tokens = 10, .norm_bytes = 40, .nll = 40 * G_LN2,
                     .window = 0.0 }; /* 1 bit per byte */
  g_assert_cmpfloat(txl_line_judged(&s, NAN), ==, 1.0);
  /* the model file's 2 bits per byte: a quarter of it off */
  g_assert_cmpfloat(fabs(txl_line_judged(&s, 80 * G_LN2) - 0.5), <, 1e-12);
  s.window = 3.0; /* the worst part, not the mean, is what is judged */
  g_assert_cmpfloat(fabs(txl_line_judged(&s, 80 * G_LN2) - 2.5), <, 1e-12);
  s.nonfinite = 1; /* a non-finite line stays infinitely surprising */
  g_assert_true(isinf(txl_line_judged(&s, 80 * G_LN2)));
}

TU_MAIN()

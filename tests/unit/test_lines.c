/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/anomaly/lines.c, the one place where scored tokens become a scored line:
 * the mean and the worst window in bits per normalised byte, what
 * padding can and cannot do to them, non-finite token costs, snapshot
 * fields resumed bit for bit, malformed fields refused, and JSON numbers
 * that are never NaN or infinity. */
#include "jsonstr.h"
#include "lines.h"

#include <math.h>
#include <string.h>
#include "tu_test.h"

static void
add_n(TxlLineAcc *a, int n, double nll, guint bytes)
{
  for (int i = 0; i < n; i++)
    txl_line_acc_add(a, nll, bytes);
}

/* A short line's worst part is its mean; longer lines keep their worst
 * 128-byte stretch. */
TU_TEST("/lines/mean-and-window", test_mean_and_window)
{
  TxlLineAcc a;
  txl_line_acc_init(&a);
  g_assert_true(isnan(txl_line_worst(&a.s)));
  g_assert_false(txl_line_flag(&a.s, 0.0)); /* nothing scored */
  add_n(&a, 10, 2.0, 3);
  g_assert_cmpint(a.s.tokens, ==, 10);
  g_assert_cmpuint(a.s.norm_bytes, ==, 30);
  g_assert_cmpfloat(fabs(txl_line_bpb(&a.s) - 20.0 / G_LN2 / 30), <, 1e-12);
  g_assert_cmpfloat(a.s.window, ==, 0.0); /* no full window yet */
  g_assert_cmpfloat(txl_line_worst(&a.s), ==, txl_line_bpb(&a.s));
  /* 200 cheap bytes, then a costly stretch of 128 bytes, then cheap again */
  txl_line_acc_init(&a);
  add_n(&a, 200, 0.01, 1);
  add_n(&a, 32, 8.0, 4);
  add_n(&a, 300, 0.01, 1);
  double core = 32 * 8.0 / G_LN2 / 128;
  g_assert_cmpfloat(fabs(a.s.window - core), <, 1e-9);
  g_assert_cmpfloat(txl_line_worst(&a.s), ==, a.s.window);
  g_assert_cmpfloat(txl_line_bpb(&a.s), <, core / 3);
  g_assert_true(txl_line_flag(&a.s, core - 0.01));
  g_assert_false(txl_line_flag(&a.s, core + 0.01));
  g_assert_cmpfloat(a.s.max_token, ==, 8.0);
}

/* Break 5: padding with free content.  A line shorter than the window
 * loses at most the share of the window the padding fills; one at least
 * as long as the window loses nothing; padding made of few long tokens
 * (a folded run of digits, a BPE token of many spaces) is no different. */
TU_TEST("/lines/padding", test_padding)
{
  const struct { int n; guint bytes; } pads[] = {
    { 5000, 1 },   /* spaces or a repeated byte, each its own token */
    { 1, 5 },      /* 5,000 digits folded into one "<NUM>" */
    { 1000, 5 },   /* a repeated word */
    { 300, 16 },   /* a token of 16 spaces */
  };
  for (int long_line = 0; long_line < 2; long_line++) {
    int n = long_line ? 60 : 30; /* 120 or 240 normalised bytes */
    TxlLineAcc line;
    txl_line_acc_init(&line);
    add_n(&line, n, 3.0, 4);
    double alone = txl_line_worst(&line.s);
    for (guint p = 0; p < G_N_ELEMENTS(pads); p++) {
      TxlLineAcc a = line;
      add_n(&a, pads[p].n, 0.0, pads[p].bytes);
      double padded = txl_line_worst(&a.s);
      guint64 b = 4 * (guint64)n;
      double bound = alone * (b >= TXL_LINE_WINDOW_BYTES
                                  ? 1.0
                                  : (double)b / (b + pads[p].bytes - 1 +
                                                 TXL_LINE_WINDOW_BYTES - b));
      if (long_line)
        g_assert_cmpfloat(padded, >=, alone * (1 - 1e-12));
      else
        g_assert_cmpfloat(padded, >=, bound * (1 - 1e-12));
      /* the mean alone would have fallen far more where padding is long */
      if (pads[p].n * pads[p].bytes > 1000)
        g_assert_cmpfloat(txl_line_bpb(&a.s), <, alone / 4);
    }
  }
}

/* Break 6: a NaN or infinite cost is counted, kept out of the sums and
 * makes the line flagged at any threshold, its numbers non-finite. */
TU_TEST("/lines/nonfinite", test_nonfinite)
{
  const double bad[] = { NAN, INFINITY, -INFINITY };
  for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
    TxlLineAcc a;
    txl_line_acc_init(&a);
    add_n(&a, 5, 0.5, 2);
    txl_line_acc_add(&a, bad[k], 2);
    add_n(&a, 5, 0.5, 2);
    g_assert_cmpuint(a.s.nonfinite, ==, 1);
    g_assert_cmpint(a.s.tokens, ==, 11);
    g_assert_true(isfinite(a.s.nll));
    g_assert_cmpfloat(a.s.nll, ==, 5.0);
    g_assert_false(isfinite(txl_line_bpb(&a.s)));
    g_assert_false(isfinite(txl_line_worst(&a.s)));
    g_assert_false(isfinite(txl_line_mean_nll(&a.s)));
    g_assert_true(txl_line_flag(&a.s, 1e300));
  }
  /* finite but huge: the sums stay finite in double */
  TxlLineAcc a;
  txl_line_acc_init(&a);
  add_n(&a, 1000, 3e38, 1);
  g_assert_true(isfinite(txl_line_worst(&a.s)));
  g_assert_true(txl_line_flag(&a.s, 1e30));
}

static GBytes *
saved(const TxlLineAcc *a)
{
  GByteArray *b = g_byte_array_new();
  txl_line_acc_put(b, a);
  return g_byte_array_free_to_bytes(b);
}

/* A line saved mid-way and continued scores exactly as one never cut;
 * fields no scoring could produce are refused. */
TU_TEST("/lines/snapshot", test_snapshot)
{
  GRand *r = g_rand_new_with_seed(7);
  for (int cut = 0; cut < 400; cut += 37) {
    TxlLineAcc whole, first;
    txl_line_acc_init(&whole);
    txl_line_acc_init(&first);
    GRand *r2 = g_rand_copy(r);
    for (int i = 0; i < 400; i++) {
      double nll = (float)g_rand_double_range(r2, 0, 9);
      guint bytes = (guint)g_rand_int_range(r2, 1, 20);
      txl_line_acc_add(&whole, nll, bytes);
      if (i == cut) {
        GBytes *st = saved(&first);
        TxlReader rd;
        txl_reader_init(&rd, st);
        g_assert_true(txl_line_acc_get(&rd, &first));
        g_assert_true(txl_reader_done(&rd));
        g_bytes_unref(st);
      }
      txl_line_acc_add(&first, nll, bytes);
    }
    g_rand_free(r2);
    g_assert_cmpint(memcmp(&whole.s, &first.s, sizeof whole.s), ==, 0);
  }
  g_rand_free(r);

  TxlLineAcc a;
  txl_line_acc_init(&a);
  add_n(&a, 50, 1.0, 3);
  GBytes *st = saved(&a);
  gsize n;
  const guint8 *d = g_bytes_get_data(st, &n);
  /* every truncation is refused */
  for (gsize k = 0; k < n; k++) {
    GBytes *t = g_bytes_new(d, k);
    TxlReader rd;
    txl_reader_init(&rd, t);
    TxlLineAcc b;
    g_assert_false(txl_line_acc_get(&rd, &b) && txl_reader_done(&rd));
    g_bytes_unref(t);
  }
  /* a NaN sum, a window count beyond the ring, a zero-byte token */
  const gsize at[] = { 16, 44, 48 + 4 };
  const guint8 val[][8] = { { 0, 0, 0, 0, 0, 0, 0xf8, 0x7f },
                            { 0xff, 0xff, 0, 0 },
                            { 0, 0, 0, 0 } };
  const gsize len[] = { 8, 4, 4 };
  for (guint k = 0; k < G_N_ELEMENTS(at); k++) {
    guint8 *c = g_memdup2(d, n);
    memcpy(c + at[k], val[k], len[k]);
    GBytes *t = g_bytes_new_take(c, n);
    TxlReader rd;
    txl_reader_init(&rd, t);
    TxlLineAcc b;
    g_assert_false(txl_line_acc_get(&rd, &b));
    g_bytes_unref(t);
  }
  g_bytes_unref(st);
}

TU_TEST("/lines/json-numbers", test_json_numbers)
{
  GString *o = g_string_new(NULL);
  txl_json_append_double(o, "%.3f", 1.5);
  g_string_append_c(o, ' ');
  txl_json_append_double(o, "%.3f", NAN);
  g_string_append_c(o, ' ');
  txl_json_append_double(o, "%.3f", INFINITY);
  g_string_append_c(o, ' ');
  txl_json_append_double(o, "%.3f", -INFINITY);
  g_assert_cmpstr(o->str, ==, "1.500 null null null");
  g_string_free(o, TRUE);
}

TU_MAIN()

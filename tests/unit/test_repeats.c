/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* lib/anomaly/repeats.c: a burst of one kind of line is flagged once; what
 * a kind is; the state in snapshots, and the bytes no stream of lines
 * could have written refused. */
#include "repeats.h"

#include <math.h>
#include <string.h>
#include "tu_test.h"

static guint64
kind(const char *s)
{
  return txl_line_kind(s, strlen(s));
}

/* The same message with other numbers, addresses, ids and times is one
 * kind; words, hex letters without a digit among them, and a digit's
 * place are not masked away. */
TU_TEST("/repeats/kind", test_kind)
{
  g_assert_cmpuint(kind("2569061 Interconnect-0N03 Link ok"), ==,
                   kind("2570813 Interconnect-1N01 Link ok"));
  g_assert_cmpuint(kind("conn from 10.0.0.1:5353 id 0xdead12ef"), ==,
                   kind("conn from 192.168.17.254:80 id 0x1f"));
  /* letters a-f alone are a word, even after 0x */
  g_assert_cmpuint(kind("id 0xdeadbeef"), !=, kind("id 0x1f"));
  g_assert_cmpuint(kind("blk_-9123 at 12:00:01"), ==, kind("blk_-7 at 1:2:3"));
  g_assert_cmpuint(kind("Link ok"), !=, kind("Link error"));
  g_assert_cmpuint(kind("dead beef"), !=, kind("dead feed"));  /* no digit */
  g_assert_cmpuint(kind("surface1"), ==, kind("surface77"));   /* "sur#" */
  g_assert_cmpuint(kind("surface1"), !=, kind("surface"));
  g_assert_cmpuint(kind("a 1"), !=, kind("a1"));               /* the space */
  g_assert_cmpuint(kind(""), ==, txl_line_kind(NULL, 0));
  /* bytes, not characters: the same mask with any encoding around it */
  g_assert_cmpuint(kind("\xc3\xa9t\xc3\xa9 12"), ==, kind("\xc3\xa9t\xc3\xa9 9"));
}

/* Lines 0..n-1 through r, flagged where flags[i]; how many were reported
 * flagged. */
static int
feed(TxlRepeats *r, const char *text, int n, gboolean flagged)
{
  int shown = 0;
  for (int i = 0; i < n; i++)
    shown += txl_repeats_line(r, text, strlen(text), flagged);
  return shown;
}

TU_TEST("/repeats/burst", test_burst)
{
  TxlRepeats r;
  txl_repeats_init(&r);
  g_assert_cmpint(feed(&r, "normal 1", 10, FALSE), ==, 0);
  /* a burst of 50: the first is flagged, the others are repeats */
  g_assert_cmpint(feed(&r, "Link error 17", 50, TRUE), ==, 1);
  /* another kind in the middle of it is flagged on its own */
  g_assert_cmpint(feed(&r, "Link reset 3", 1, TRUE), ==, 1);
  g_assert_cmpint(feed(&r, "Link error 18", 1, TRUE), ==, 0);
  /* HORIZON quiet lines: still the burst's */
  g_assert_cmpint(feed(&r, "normal 2", TXL_REPEAT_HORIZON - 1, FALSE), ==, 0);
  g_assert_cmpint(feed(&r, "Link error 19", 1, TRUE), ==, 0);
  /* HORIZON + 1 lines after the last: a new alert */
  g_assert_cmpint(feed(&r, "normal 3", TXL_REPEAT_HORIZON, FALSE), ==, 0);
  g_assert_cmpint(feed(&r, "Link error 20", 1, TRUE), ==, 1);
  /* a line the rule passes never counts as the kind's alert */
  g_assert_cmpint(feed(&r, "quiet kind 1", 3, FALSE), ==, 0);
  g_assert_cmpint(feed(&r, "quiet kind 2", 1, TRUE), ==, 1);
  g_assert_cmpuint(r.lines, ==, 10 + 50 + 1 + 1 + TXL_REPEAT_HORIZON - 1 + 1 +
                   TXL_REPEAT_HORIZON + 1 + 3 + 1);
}

/* What txl score and txlsink report: a repeat, unless its score is not
 * finite (such a line is always flagged, lines.h). */
TU_TEST("/repeats/report", test_report)
{
  TxlRepeats r;
  txl_repeats_init(&r);
  TxlLineAcc ok, broken;
  txl_line_acc_init(&ok);
  txl_line_acc_init(&broken);
  txl_line_acc_add(&ok, 9.0, 4);
  txl_line_acc_add(&broken, NAN, 4);
  gboolean repeat;
  g_assert_true(txl_repeats_report(&r, "err 1", 5, &ok.s, TRUE, &repeat));
  g_assert_false(repeat);
  g_assert_false(txl_repeats_report(&r, "err 2", 5, &ok.s, TRUE, &repeat));
  g_assert_true(repeat);
  g_assert_true(txl_repeats_report(&r, "err 3", 5, &broken.s, TRUE, &repeat));
  g_assert_false(repeat);
  g_assert_false(txl_repeats_report(&r, "fine 1", 6, &ok.s, FALSE, &repeat));
  g_assert_false(repeat);
  /* unflagged by the rule (its warm-up): a non-finite line still is */
  g_assert_true(txl_repeats_report(&r, "warm 1", 6, &broken.s, FALSE, &repeat));
  g_assert_false(repeat);
}

/* A different kind on every line, all flagged: each is an alert, and the
 * kinds remembered never exceed the slots (one a line in the horizon). */
TU_TEST("/repeats/many-kinds", test_many_kinds)
{
  TxlRepeats r;
  txl_repeats_init(&r);
  char text[64];
  for (int i = 0; i < 5000; i++) {
    /* letters only: every line its own kind */
    g_snprintf(text, sizeof text, "kind %c%c%c", 'g' + i % 20,
               'g' + i / 20 % 20, 'g' + i / 400 % 20);
    g_assert_true(txl_repeats_line(&r, text, strlen(text), TRUE));
    g_assert_cmpuint(r.n, <=, TXL_REPEAT_HORIZON + 1);
  }
}

/* Resumed from its bytes, a run reports exactly what the uninterrupted
 * one does; bytes no run could write are refused, the target untouched. */
TU_TEST("/repeats/state", test_state)
{
  TxlRepeats a, b;
  txl_repeats_init(&a);
  feed(&a, "x 1", 5, FALSE);
  feed(&a, "burst 1", 3, TRUE);
  feed(&a, "other 1", 2, TRUE);
  GByteArray *saved = g_byte_array_new();
  txl_repeats_put(saved, &a);
  GBytes *st = g_byte_array_free_to_bytes(saved);
  TxlReader rd;
  txl_reader_init(&rd, st);
  g_assert_true(txl_repeats_get(&rd, &b));
  g_assert_true(txl_reader_done(&rd));
  g_assert_cmpint(memcmp(&a, &b, sizeof a), ==, 0);
  for (int i = 0; i < 300; i++) {
    const char *t = i % 7 == 0 ? "burst 2" : i % 11 == 0 ? "new 1" : "x 2";
    gboolean f = i % 7 == 0 || i % 11 == 0 || i > 250;
    g_assert_true(txl_repeats_line(&a, t, strlen(t), f) ==
                  txl_repeats_line(&b, t, strlen(t), f));
  }
  g_assert_cmpint(memcmp(&a, &b, sizeof a), ==, 0);

  /* 10 lines, kinds last flagged at 7 and 9 (u64 lines, u32 n, then
   * u64 kind and u64 at for each); now malformed one field at a time */
  gsize n;
  const guint8 *d = g_bytes_get_data(st, &n);
  g_assert_cmpuint(n, ==, 8 + 4 + 2 * 16);
  const guint32 slots = TXL_REPEAT_HORIZON + 2, three = 3;
  const guint64 ten = 10, seven = 7, far = 500;
  struct { gsize at; const void *v; gsize len; } bad[] = {
    { 8, &slots, 4 },          /* more kinds than slots */
    { 8, &three, 4 },          /* more kinds than bytes */
    { 12 + 8, &ten, 8 },       /* flagged at a line not yet seen */
    { 28 + 8, &seven, 8 },     /* two kinds flagged at one line */
    { 28, d + 12, 8 },         /* one kind twice */
    { 0, &far, 8 },            /* both beyond the horizon */
  };
  for (guint k = 0; k < G_N_ELEMENTS(bad); k++) {
    guint8 *c = g_memdup2(d, n);
    memcpy(c + bad[k].at, bad[k].v, bad[k].len);
    GBytes *t = g_bytes_new_take(c, n);
    txl_reader_init(&rd, t);
    TxlRepeats keep = b;
    g_assert_false(txl_repeats_get(&rd, &b));
    g_assert_cmpint(memcmp(&keep, &b, sizeof b), ==, 0);
    g_bytes_unref(t);
  }
  g_bytes_unref(st);
}

TU_MAIN()

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The training batcher: B contiguous streams, consecutive segments,
 * targets shifted by one, a new pass flagged, seek for resume. */
#include "batcher.h"

#include <string.h>
#include "tu_test.h"

TU_TEST("/batcher/streams", test_streams)
{
  int32_t tok[100];
  for (int i = 0; i < 100; i++)
    tok[i] = i;
  g_autoptr(GError) err = NULL;
  TxlBatcher *b = txl_batcher_new(tok, 100, 3, 4, &err);
  g_assert_no_error(err);
  /* 33 tokens per stream: (33 - 1) / 4 = 8 segments per pass */
  g_assert_cmpint(txl_batcher_batches_per_epoch(b), ==, 8);
  int32_t in[12], tg[12];
  g_assert_true(txl_batcher_next(b, in, tg));
  static const int32_t in0[12] = { 0, 1, 2, 3, 33, 34, 35, 36, 66, 67, 68, 69 };
  g_assert_cmpmem(in, sizeof in, in0, sizeof in0);
  for (int i = 0; i < 12; i++)
    g_assert_cmpint(tg[i], ==, in[i] + 1);
  g_assert_false(txl_batcher_next(b, in, tg));
  g_assert_cmpint(in[0], ==, 4); /* stream 0 continues where it ended */
  g_assert_cmpint(in[4], ==, 37);
  for (int k = 2; k < 8; k++)
    g_assert_false(txl_batcher_next(b, in, tg));
  g_assert_cmpint(tg[11], ==, 98); /* last target inside stream 2 */
  g_assert_true(txl_batcher_next(b, in, tg)); /* a new pass */
  g_assert_cmpint(in[0], ==, 0);
  txl_batcher_seek(b, 13);
  g_assert_cmpint(txl_batcher_position(b), ==, 13);
  g_assert_false(txl_batcher_next(b, in, tg));
  g_assert_cmpint(in[0], ==, 20); /* (13 mod 8) * 4 */
  txl_batcher_free(b);
}

/* With learn flags, a target whose token is flagged 0 is -1 (context), the
 * inputs unchanged. */
TU_TEST("/batcher/learn-flags", test_learn_flags)
{
  int32_t tok[20];
  guint8 learn[20];
  for (int i = 0; i < 20; i++) {
    tok[i] = i;
    learn[i] = i % 3 != 0;
  }
  g_autoptr(GError) err = NULL;
  TxlBatcher *b = txl_batcher_new(tok, 20, 2, 4, &err);
  g_assert_no_error(err);
  txl_batcher_set_learn(b, learn);
  int32_t in[8], tg[8];
  for (int step = 0; step < 2; step++) {
    txl_batcher_next(b, in, tg);
    for (int i = 0; i < 8; i++)
      g_assert_cmpint(tg[i], ==, (in[i] + 1) % 3 ? in[i] + 1 : -1);
  }
  /* the second step: stream 1, which starts at token 10, is at 14 */
  g_assert_cmpint(in[4], ==, 14);
  txl_batcher_free(b);
}

TU_TEST("/batcher/too-small", test_too_small)
{
  int32_t tok[10] = { 0 };
  g_autoptr(GError) err = NULL;
  g_assert_null(txl_batcher_new(tok, 10, 3, 4, &err));
  g_assert_error(err, TXL_ERROR, TXL_ERROR_INVALID);
  g_assert_nonnull(strstr(err->message, "15"));
}

TU_MAIN()

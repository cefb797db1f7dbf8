/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Test driver: continues the stream saved in PATH (or starts one), scoring
 * token by token and saving a snapshot to PATH after every token, forever, printing the count saved; the test
 * kills it with SIGKILL at random moments (tests/integration/test_snapshot_kill.py). */
#include "txl.h"

#include <stdio.h>

static void
nop(gint64 pos, int32_t token, float lp, gpointer data)
{
}

int
main(int argc, char **argv)
{
  if (argc != 3)
    return 2;
  GError *err = NULL;
  TxlModel *m = txl_model_load(argv[1], &err);
  if (!m) {
    fprintf(stderr, "%s\n", err->message);
    return 1;
  }
  /* resume from the last snapshot when there is one: across kills the
   * stream only ever moves forward */
  TxlScorer *s = g_file_test(argv[2], G_FILE_TEST_EXISTS)
                   ? txl_scorer_load(m, argv[2], nop, NULL, &err)
                   : txl_scorer_new(m, NULL, 0, nop, NULL, &err);
  if (!s) {
    fprintf(stderr, "%s\n", err->message);
    return 1;
  }
  int n = txl_model_config(m)->n_token;
  for (guint32 i = (guint32)txl_scorer_tokens_seen(s);; i++) {
    int32_t id = (int32_t)((i * 2654435761u) % (guint32)n);
    if (!txl_scorer_push(s, &id, 1, &err) ||
        !txl_scorer_save(s, argv[2], &err)) {
      fprintf(stderr, "%s\n", err->message);
      return 1;
    }
    printf("%u\n", i + 1);
    fflush(stdout);
  }
}

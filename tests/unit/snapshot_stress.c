/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Test driver: continues the stream saved in PATH (or starts one), scoring
 * token by token and saving a snapshot to PATH after every token, forever, printing the count saved; the test
 * kills it with SIGKILL at random moments (tests/integration/test_snapshot_kill.py). */
#include "../tu_driver.h"

static void
nop(gint64 pos, int32_t token, float lp, gpointer data)
{
}

int
main(int argc, char **argv)
{
  TxlModel *m = tu_driver_model(argc, argv);
  GError *err = NULL;
  /* resume from the last snapshot when there is one: across kills the
   * stream only ever moves forward */
  TxlScorer *s = g_file_test(argv[2], G_FILE_TEST_EXISTS)
                   ? txl_scorer_load(m, argv[2], nop, NULL, &err)
                   : txl_scorer_new(m, NULL, 0, nop, NULL, &err);
  if (!s)
    tu_die(err);
  int n = txl_model_config(m)->n_token;
  for (guint32 i = (guint32)txl_scorer_tokens_seen(s);; i++) {
    int32_t id = (int32_t)((i * 2654435761u) % (guint32)n);
    if (!txl_scorer_push(s, &id, 1, &err) ||
        !txl_scorer_save(s, argv[2], &err))
      tu_die(err);
    printf("%u\n", i + 1);
    fflush(stdout);
  }
}

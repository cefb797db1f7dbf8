/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Size and time of TxlSessions snapshots with N open sessions:
 *   sessions_snapshot_bench N [MODEL [MEM_LEN]]
 * Without MODEL, the small test model (tests/testutil.h: 2 layers, d_model
 * 32, mem 12).  Each session gets enough lines to fill its memory; prints
 * one JSON line per precision (save and load times are the best of 3). */
#include "testutil.h"

static double
now_ms(void)
{
  return g_get_monotonic_time() / 1e3;
}

int
main(int argc, char **argv)
{
  int n = argc > 1 ? atoi(argv[1]) : 100;
  char *made = NULL;
  const char *path = argc > 2 ? argv[2] : NULL;
  if (!path) {
    TxlConfig c;
    tu_small_config(&c);
    path = made = tu_write_model(&c, 7, NULL);
  }
  GError *err = NULL;
  TxlModel *m = tu_load(path);
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.key_regex = "k[0-9]+";
  o.max_bytes = 0;
  if (argc > 3)
    o.stream.mem_len = atoi(argv[3]);
  TxlSessions *s = txl_sessions_new(m, &o, NULL, NULL, NULL, &err);
  g_assert_no_error(err);
  int mem = o.stream.mem_len > 0 ? o.stream.mem_len
                                 : txl_model_config(m)->mem_len;
  /* short lines (a few tokens each): enough rounds that every session has
   * run segments and filled its memory */
  int seg = txl_model_config(m)->tgt_len;
  int rounds = (mem + seg) / 4 + 2;
  for (int r = 0; r < rounds; r++)
    for (int i = 0; i < n; i++) {
      char line[96];
      g_snprintf(line, sizeof line, "081109 %06d INFO k%d op %d", r, i,
                 (i * 7 + r) % 1000);
      g_assert_cmpint(txl_sessions_push_line(s, line, -1, &err), >, 0);
    }
  g_assert_cmpuint(txl_sessions_count(s), ==, (guint)n);
  char *dir = g_dir_make_tmp("txl-sessbench-XXXXXX", &err);
  char *snap = g_build_filename(dir, "s.snap", NULL);
  const char *names[] = { "f32", "f16", "bf16" };
  for (int p = 0; p < 3; p++) {
    TxlSnapshotOptions so = TXL_SNAPSHOT_OPTIONS_DEFAULT;
    so.precision = p;
    double save = 1e30, load = 1e30;
    gsize bytes = 0;
    for (int k = 0; k < 3; k++) {
      double t0 = now_ms();
      g_assert_true(txl_sessions_save(s, snap, &so, NULL, &bytes, &err));
      double t1 = now_ms();
      TxlSessions *l = txl_sessions_load(m, snap, &o, NULL, NULL, NULL, NULL,
                                         &err);
      double t2 = now_ms();
      g_assert_no_error(err);
      txl_sessions_free(l);
      save = MIN(save, t1 - t0);
      load = MIN(load, t2 - t1);
    }
    printf("{\"sessions\": %d, \"precision\": \"%s\", \"held_bytes\": %"
           G_GUINT64_FORMAT ", \"file_bytes\": %zu, \"save_ms\": %.1f, "
           "\"load_ms\": %.1f}\n", n, names[p], txl_sessions_bytes(s), bytes,
           save, load);
  }
  g_unlink(snap);
  g_rmdir(dir);
  txl_sessions_free(s);
  txl_model_unref(m);
  if (made)
    tu_remove(made);
  return 0;
}

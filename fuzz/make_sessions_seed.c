/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Writes sessions snapshots of the fuzz model as seeds for fuzz_snapshot,
 * with the options the harness loads them with (key k[0-9], segment 4).
 * Usage: make_sessions_seed MODEL OUT-PREFIX (built by hand, see
 * fuzz/make_snapshot_seeds.sh). */
#include "../tests/tu_driver.h"
#include "sessions_seed.h"

int
main(int argc, char **argv)
{
  TxlModel *m = tu_driver_model(argc, argv);
  GError *err = NULL;
  const char *lines[] = { "open k1", "open k2", "read k1 a longer line",
                          "k3", "close k2", "k4 x", "k5", "k1 more" };
  for (int v = 0; v < 3; v++) {
    /* v 2: with kept ids, stale after the swap below */
    TxlSessionOptions o = sessions_seed_options(v == 2);
    o.stream.memory = v == 1 ? TXL_MEMORY_HIDDEN : TXL_MEMORY_KV;
    const double after[2] = { 3, 5 };
    if (v == 1) {
      o.idle_after = after;
      o.n_idle_after = 2;
    }
    TxlSessions *s = txl_sessions_new(m, &o, NULL, NULL, NULL, &err);
    for (unsigned i = 0; s && i < G_N_ELEMENTS(lines); i++) {
      txl_sessions_push_line(s, lines[i], -1, &err);
      if (v == 2 && i == 4 && !txl_sessions_set_model(s, m, &err))
        tu_die(err);
    }
    const char *kind[] = { "", "-hidden", "-rescore" };
    char *out = g_strdup_printf("%s%s.snap", argv[2], kind[v]);
    if (!s || !txl_sessions_save(s, out, NULL, NULL, NULL, &err))
      tu_die(err);
    g_free(out);
    txl_sessions_free(s);
  }
  txl_model_unref(m);
  return 0;
}

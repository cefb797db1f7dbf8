/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* For the small driver programs that tests and seed scripts run with the
 * arguments MODEL PATH (tests/unit/snapshot_stress.c,
 * fuzz/make_sessions_seed.c): the public API only, as they are built. */
#ifndef TXL_TU_DRIVER_H
#define TXL_TU_DRIVER_H

#include "txl.h"

#include <stdio.h>
#include <stdlib.h>

/* Exits with status 1 and err's message (or "failed") on stderr. */
G_GNUC_NORETURN G_GNUC_UNUSED static void
tu_die(const GError *err)
{
  fprintf(stderr, "%s\n", err ? err->message : "failed");
  exit(1);
}

/* The model named by argv[1]: exits 2 unless there are exactly the two
 * arguments, 1 when the model does not load. */
G_GNUC_UNUSED static TxlModel *
tu_driver_model(int argc, char **argv)
{
  if (argc != 3)
    exit(2);
  GError *err = NULL;
  TxlModel *m = txl_model_load(argv[1], &err);
  if (!m)
    tu_die(err);
  return m;
}

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The session options of the sessions seeds in fuzz/corpus-snapshot: the
 * seeds are written with them (fuzz/make_sessions_seed.c), fuzz_snapshot
 * loads with them, and tests/unit/test_sessions_snapshot.c continues an
 * older seed with them. */
#ifndef TXL_FUZZ_SESSIONS_SEED_H
#define TXL_FUZZ_SESSIONS_SEED_H

#include "txl.h"

static inline TxlSessionOptions
sessions_seed_options(gboolean rescore)
{
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  o.key_regex = "k[0-9]";
  o.segment = 4;
  o.score_end = TRUE;
  o.max_sessions = 3;
  o.rescore = rescore;
  return o;
}

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The option structs' defaults as functions (include/txl.h): a caller
 * gets the defaults of the libtxl it runs with, and does not depend on
 * the fields' order as the positional TXL_*_DEFAULT initialisers do. */
#include "txl.h"

const char *
txl_default_model_path(void)
{
  const char *env = g_getenv("TXL_MODEL");
  if (env && *env)
    return env;
  static const char *const where[] = { TXL_MODEL_INSTALLED,
                                       TXL_MODEL_SOURCE };
  for (gsize i = 0; i < G_N_ELEMENTS(where); i++)
    if (g_file_test(where[i], G_FILE_TEST_IS_REGULAR))
      return where[i];
  return NULL;
}

TxlStreamOptions
txl_stream_options_default(void)
{
  TxlStreamOptions o = TXL_STREAM_OPTIONS_DEFAULT;
  return o;
}

TxlSnapshotOptions
txl_snapshot_options_default(void)
{
  TxlSnapshotOptions o = TXL_SNAPSHOT_OPTIONS_DEFAULT;
  return o;
}

TxlSessionOptions
txl_session_options_default(void)
{
  TxlSessionOptions o = TXL_SESSION_OPTIONS_DEFAULT;
  return o;
}

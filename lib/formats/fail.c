/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The readers' error helper (fail.h). */
#include "fail.h"

gboolean
txl_fail(GError **error, int code, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  g_set_error_literal(error, TXL_ERROR, code, msg);
  g_free(msg);
  return FALSE;
}

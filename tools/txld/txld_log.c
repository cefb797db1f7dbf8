/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* See txld_log.h.  The message carries the pipeline name too, because a
 * terminal or a plain log file shows only MESSAGE. */
#include "txld_log.h"

#include <stdarg.h>

void
txld_log(GLogLevelFlags level, const char *pipeline, const char *fmt, ...)
{
  va_list ap;
  va_start(ap, fmt);
  g_autofree char *msg = g_strdup_vprintf(fmt, ap);
  va_end(ap);
  if (pipeline)
    g_log_structured(G_LOG_DOMAIN, level, "TXLD_PIPELINE", pipeline,
                     "MESSAGE", "%s: %s", pipeline, msg);
  else
    g_log_structured(G_LOG_DOMAIN, level, "MESSAGE", "%s", msg);
}

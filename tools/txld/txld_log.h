/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* txld logs through GLib's structured logging (G_LOG_USE_STRUCTURED is
 * defined for every txld file): under systemd the default writer sends
 * the records to the journal with their fields, so
 * `journalctl -u txld TXLD_PIPELINE=syslog` shows one pipeline's story;
 * on a terminal it prints the message as usual. */
#ifndef TXLD_LOG_H
#define TXLD_LOG_H

#include <glib.h>

/* pipeline may be NULL (a daemon-wide record) */
void txld_log(GLogLevelFlags level, const char *pipeline, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* systemd's readiness protocol (sd_notify), written by hand: one datagram
 * to $NOTIFY_SOCKET.  Without that variable (not under systemd Type=notify)
 * it does nothing. */
#ifndef TXLD_NOTIFY_H
#define TXLD_NOTIFY_H

#include <glib.h>

/* state: "READY=1", "RELOADING=1", "STOPPING=1", "STATUS=..." lines */
gboolean txld_notify(const char *state);

#endif

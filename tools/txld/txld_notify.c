/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* sd_notify without libsystemd: the protocol is a datagram of
 * newline-separated assignments to the AF_UNIX socket named by
 * $NOTIFY_SOCKET ('@' marks Linux's abstract namespace). */
#include "txld_notify.h"

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

gboolean
txld_notify(const char *state)
{
  const char *path = g_getenv("NOTIFY_SOCKET");
  if (!path || !*path || (path[0] != '/' && path[0] != '@'))
    return FALSE;
  struct sockaddr_un sa = { .sun_family = AF_UNIX };
  gsize n = strlen(path);
  if (n >= sizeof sa.sun_path)
    return FALSE;
  memcpy(sa.sun_path, path, n);
  if (sa.sun_path[0] == '@')
    sa.sun_path[0] = '\0';
  int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0)
    return FALSE;
  socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + n);
  ssize_t w = sendto(fd, state, strlen(state), MSG_NOSIGNAL,
                     (struct sockaddr *)&sa, len);
  close(fd);
  return w == (ssize_t)strlen(state);
}

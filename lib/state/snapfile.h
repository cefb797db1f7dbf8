/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internal: snapshot files on disk (lib/state/snapfile.c).  The public part
 * (budget variable, writer section, stale temporaries) is in txl.h. */
#ifndef TXL_SNAPFILE_H
#define TXL_SNAPFILE_H

#include "txl.h"

/* The budget in bytes (TXL_MEMORY_LIMIT, default 256 MiB); FALSE with
 * error on a malformed value. */
gboolean txl_snapshot_budget(guint64 *bytes, GError **error);
/* Opens a regular file for reading without ever blocking (FIFOs,
 * devices and directories are refused); its size in *size.  -1 on
 * error. */
int txl_snapfile_open(const char *path, guint64 *size, GError **error);
/* Exactly n bytes at off, or an error naming the file. */
gboolean txl_snapfile_read(int fd, guint64 off, void *buf, gsize n,
                           const char *path, GError **error);
/* Writes a temporary beside path (locked while written), fsyncs it and
 * renames it over path, then fsyncs the directory. */
gboolean txl_snapfile_write_atomic(const char *path, const guint8 *data,
                                   gsize len, GError **error);

#endif

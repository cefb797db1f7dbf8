/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Read-only whole-file mappings, shared by the readers of model and
 * checkpoint files: weights are used where they lie, never copied. */
#ifndef TXL_FILEMAP_H
#define TXL_FILEMAP_H

#include "txl.h"

/* Maps a regular, non-empty file; `what` names the kind of file for the
 * error message of an empty one ("a GGUF file"). */
void *txl_map_file(const char *path, const char *what, gsize *size,
                   GError **error);
void txl_unmap_file(void *map, gsize size);

/* Opens path read-only for a reader that checks with fstat what it is
 * before reading: O_NONBLOCK, as opening a FIFO would otherwise wait for a
 * writer first.  -1 with an error when it cannot be opened. */
int txl_open_nonblock(const char *path, GError **error);

/* Reads a regular file of at most max bytes whole, NUL-terminated; its
 * size is checked before anything is allocated, and a FIFO or a device is
 * refused at once instead of read without end. */
char *txl_read_small_file(const char *path, const char *what, gsize max,
                          gsize *len, GError **error);

#endif

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the file readers share: read-only whole-file mappings (weights are
 * used where they lie, never copied), the checked opening and reading of
 * small files, and the one way to report a malformed or unsupported file. */
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

/* Whether an atomic write (a temporary beside path, then rename) may put
 * a file at path: nothing there yet, or a regular file.  A device, FIFO,
 * socket or directory is refused with an error naming it: renaming over
 * /dev/null as root would replace the device with a file. */
gboolean txl_path_replaceable(const char *path, GError **error);
/* The same, and its folder exists: for a path given now and written later
 * (a snapshot at the end of a stream, a model after a learning round), so
 * that a bad one is refused before any work depends on it. */
gboolean txl_path_writable_later(const char *path, GError **error);

/* Sets error (TXL_ERROR, code) to the formatted message and returns FALSE,
 * so that a parser can end a check with `return txl_fail(...)`: the GGUF
 * reader, the BPE loader and the Hugging Face config reader each kept a
 * copy of it. */
gboolean txl_fail(GError **error, int code, const char *fmt, ...)
    G_GNUC_PRINTF(3, 4);

#endif

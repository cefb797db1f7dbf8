/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "filemap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int
txl_open_nonblock(const char *path, GError **error)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd < 0) {
    int e = errno;
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot open: %s", path,
                g_strerror(e));
  }
  return fd;
}

/* Opens a regular, non-empty file of at most max bytes; -1 with an error
 * otherwise. */
static int
open_regular(const char *path, const char *what, guint64 max, gsize *size,
             GError **error)
{
  int fd = txl_open_nonblock(path, error);
  if (fd < 0)
    return -1;
  struct stat st;
  const char *problem = NULL;
  int code = TXL_ERROR_IO;
  if (fstat(fd, &st) != 0)
    problem = g_strerror(errno);
  else if (!S_ISREG(st.st_mode))
    problem = "not a regular file";
  else if (st.st_size == 0)
    problem = "file is empty", code = TXL_ERROR_FORMAT;
  else if ((uint64_t)st.st_size > MIN(max, (uint64_t)SIZE_MAX - 1)) {
    close(fd);
    g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                "%s: %" G_GUINT64_FORMAT " bytes is too large for %s (at most "
                "%" G_GUINT64_FORMAT ")", path, (guint64)st.st_size, what,
                MIN(max, (uint64_t)SIZE_MAX - 1));
    return -1;
  }
  if (problem) {
    close(fd);
    g_set_error(error, TXL_ERROR, code, "%s: %s%s%s", path, problem,
                code == TXL_ERROR_FORMAT ? ", not " : "",
                code == TXL_ERROR_FORMAT ? what : "");
    return -1;
  }
  *size = (gsize)st.st_size;
  return fd;
}

char *
txl_read_small_file(const char *path, const char *what, gsize max,
                    gsize *len, GError **error)
{
  gsize size;
  int fd = open_regular(path, what, max, &size, error);
  if (fd < 0)
    return NULL;
  char *text = g_malloc(size + 1);
  gsize got = 0;
  while (got < size) {
    ssize_t n = read(fd, text + got, size - got);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0) {
      int e = n < 0 ? errno : 0;
      close(fd);
      g_free(text);
      g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: %s", path,
                  e ? g_strerror(e) : "shorter than its size (changed while "
                                      "read)");
      return NULL;
    }
    got += (gsize)n;
  }
  close(fd);
  text[size] = '\0';
  *len = size;
  return text;
}

void *
txl_map_file(const char *path, const char *what, gsize *size, GError **error)
{
  int fd = open_regular(path, what, G_MAXUINT64, size, error);
  if (fd < 0)
    return NULL;
  void *map = mmap(NULL, *size, PROT_READ, MAP_PRIVATE, fd, 0);
  int e = errno;
  close(fd); /* the mapping keeps the file alive */
  if (map == MAP_FAILED) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot map: %s", path,
                g_strerror(e));
    return NULL;
  }
  return map;
}

void
txl_unmap_file(void *map, gsize size)
{
  if (map)
    munmap(map, size);
}

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

gboolean
txl_path_replaceable(const char *path, GError **error)
{
  struct stat st;
  if (stat(path, &st) != 0) {
    if (errno == ENOENT)
      return TRUE; /* a new file (a missing folder fails when it is made) */
    int e = errno;
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: %s", path,
                g_strerror(e));
    return FALSE;
  }
  if (S_ISREG(st.st_mode))
    return TRUE;
  g_set_error(error, TXL_ERROR, TXL_ERROR_IO,
              "%s: not a regular file (%s): a file written here would "
              "replace it", path,
              S_ISDIR(st.st_mode)    ? "a directory"
              : S_ISCHR(st.st_mode)  ? "a character device"
              : S_ISBLK(st.st_mode)  ? "a block device"
              : S_ISFIFO(st.st_mode) ? "a FIFO"
              : S_ISSOCK(st.st_mode) ? "a socket"
                                     : "not a file");
  return FALSE;
}

gboolean
txl_path_writable_later(const char *path, GError **error)
{
  if (!txl_path_replaceable(path, error))
    return FALSE;
  g_autofree char *dir = g_path_get_dirname(path);
  if (g_file_test(dir, G_FILE_TEST_IS_DIR))
    return TRUE;
  g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: its folder does not exist",
              path);
  return FALSE;
}

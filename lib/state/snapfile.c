/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Snapshot files on disk, apart from their format (lib/state/snapshot.c):
 *
 * - the memory budget a snapshot may ask for beyond what the loading
 *   model implies (TXL_MEMORY_LIMIT, as for models);
 * - opening for reading: regular files only, opened without blocking, so
 *   that a FIFO, a device (/dev/zero) or a directory is refused at once
 *   instead of being read without end;
 * - the atomic write, whose temporary is locked while it is written;
 * - removing the temporaries a writer killed mid-write left behind (the
 *   lock tells a live writer's from a dead one's);
 * - the writer's identity (which pipeline and element wrote a file). */
#include "snapfile.h"
#include "filemap.h"
#include "model_check.h"

#include <errno.h>
#include <fcntl.h>
#include <glib/gstdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

gboolean
txl_snapshot_budget(guint64 *bytes, GError **error)
{
  /* one knob for what any file may make txl allocate (docs/limits.md) */
  if (!txl_memory_limit_get(bytes, error))
    return FALSE;
  if (!*bytes)
    *bytes = TXL_MEMORY_BASE;
  return TRUE;
}

int
txl_snapfile_open(const char *path, guint64 *size, GError **error)
{
  int fd = txl_open_nonblock(path, error);
  if (fd < 0)
    return -1;
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot stat: %s", path,
                g_strerror(e));
    return -1;
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO,
                "%s: not a regular file (a snapshot is read from a plain "
                "file, not a device, FIFO, socket or directory)", path);
    return -1;
  }
  /* reads from a regular file never block; plain blocking mode again so
   * that a short read only means the end of the file */
  int fl = fcntl(fd, F_GETFL);
  if (fl >= 0)
    fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
  *size = (guint64)st.st_size;
  return fd;
}

gboolean
txl_snapfile_read(int fd, guint64 off, void *buf, gsize n, const char *path,
                  GError **error)
{
  gsize done = 0;
  while (done < n) {
    ssize_t r = pread(fd, (guint8 *)buf + done, n - done,
                      (off_t)(off + done));
    if (r < 0 && errno == EINTR)
      continue;
    if (r < 0) {
      int e = errno;
      g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot read: %s",
                  path, g_strerror(e));
      return FALSE;
    }
    if (r == 0) { /* it shrank since fstat */
      g_set_error(error, TXL_ERROR, TXL_ERROR_FORMAT,
                  "%s: truncated snapshot (the file shrank while read)",
                  path);
      return FALSE;
    }
    done += (gsize)r;
  }
  return TRUE;
}

/* A new temporary PATH.XXXXXX, locked (flock) for as long as it is open:
 * txl_snapshot_remove_stale() leaves a locked one alone.  A cleaner may
 * take the lock between mkstemp() and our flock() and unlink the file:
 * then the name is gone (no links left) and another is made. */
static int
create_locked_temp(const char *path, char **tmp_out, GError **error)
{
  for (int attempt = 0; attempt < 8; attempt++) {
    char *tmp = g_strconcat(path, ".XXXXXX", NULL);
    int fd = g_mkstemp_full(tmp, O_WRONLY | O_CLOEXEC, 0644);
    if (fd < 0) {
      int e = errno;
      g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot create: %s",
                  tmp, g_strerror(e));
      g_free(tmp);
      return -1;
    }
    struct stat st;
    if (flock(fd, LOCK_EX) == 0 && fstat(fd, &st) == 0 && st.st_nlink > 0) {
      *tmp_out = tmp;
      return fd;
    }
    close(fd);
    g_free(tmp);
  }
  g_set_error(error, TXL_ERROR, TXL_ERROR_IO,
              "%s: cannot create a locked temporary file beside it", path);
  return -1;
}

/* temporary file beside the target, fsync, rename: a crash at any point
 * leaves the previous snapshot whole */
gboolean
txl_snapfile_write_atomic(const char *path, const guint8 *data, gsize len,
                          GError **error)
{
  g_autofree char *tmp = NULL;
  if (!txl_path_replaceable(path, error))
    return FALSE;
  int fd = create_locked_temp(path, &tmp, error);
  if (fd < 0)
    return FALSE;
  gsize done = 0;
  while (done < len) {
    ssize_t w = write(fd, data + done, len - done);
    if (w < 0 && errno == EINTR)
      continue;
    if (w <= 0)
      break;
    done += (gsize)w;
  }
  int e = errno;
  gboolean ok = done == len && fsync(fd) == 0;
  if (!ok && done == len)
    e = errno;
  if (ok && g_rename(tmp, path) != 0) {
    e = errno;
    ok = FALSE;
  }
  if (!ok)
    g_unlink(tmp); /* before the lock goes: a cleaner never sees it */
  close(fd);       /* releases the lock */
  if (!ok) {
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot write: %s", path,
                g_strerror(e));
    return FALSE;
  }
  /* the rename itself must reach the disk */
  g_autofree char *dir = g_path_get_dirname(path);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    fsync(dfd);
    close(dfd);
  }
  return TRUE;
}

/* name is base + '.' + exactly the six characters mkstemp() draws */
static gboolean
is_temp_name(const char *name, const char *base, gsize bl)
{
  if (strncmp(name, base, bl) != 0 || name[bl] != '.' ||
      strlen(name) != bl + 7)
    return FALSE;
  for (int i = 1; i <= 6; i++)
    if (!g_ascii_isalnum(name[bl + i]))
      return FALSE;
  return TRUE;
}

/* One candidate: removed only if it is a regular file of ours that no
 * live writer holds (its lock), and still the same file under its name. */
static gboolean
remove_one(int dfd, const char *name)
{
  int fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC |
                                 O_NOCTTY);
  if (fd < 0)
    return FALSE;
  struct stat a, b;
  gboolean gone = FALSE;
  if (fstat(fd, &a) == 0 && S_ISREG(a.st_mode) && a.st_uid == geteuid() &&
      flock(fd, LOCK_EX | LOCK_NB) == 0 &&
      fstatat(dfd, name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
      a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    gone = unlinkat(dfd, name, 0) == 0;
  close(fd);
  return gone;
}

gboolean
txl_snapshot_remove_stale(const char *path, guint *removed, GError **error)
{
  if (removed)
    *removed = 0;
  g_autofree char *dir = g_path_get_dirname(path);
  g_autofree char *base = g_path_get_basename(path);
  gsize bl = strlen(base);
  int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd < 0) {
    if (errno == ENOENT)
      return TRUE; /* nothing was ever written there */
    int e = errno;
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot list: %s", dir,
                g_strerror(e));
    return FALSE;
  }
  GError *e = NULL;
  GDir *d = g_dir_open(dir, 0, &e);
  if (!d) {
    close(dfd);
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s", e->message);
    g_error_free(e);
    return FALSE;
  }
  const char *name;
  while ((name = g_dir_read_name(d)))
    if (is_temp_name(name, base, bl) && remove_one(dfd, name) && removed)
      ++*removed;
  g_dir_close(d);
  close(dfd);
  return TRUE;
}

gboolean
txl_snapshot_check_writer(const char *path, GHashTable *sections,
                          const char *writer, GError **error)
{
  GBytes *b = sections ? g_hash_table_lookup(sections,
                                             TXL_SNAPSHOT_WRITER_SECTION)
                       : NULL;
  if (!b || !writer)
    return TRUE; /* written before snapshots recorded their writer */
  gsize n;
  const char *w = g_bytes_get_data(b, &n);
  if (n == strlen(writer) && memcmp(w, writer, n) == 0)
    return TRUE;
  g_autofree char *shown = g_utf8_make_valid(w ? w : "", MIN(n, 200));
  g_set_error(error, TXL_ERROR, TXL_ERROR_INVALID,
              "%s: written by %s, not by %s: one pipeline's stream is not "
              "restored into another (is the file shared by two "
              "pipelines?); give each its own snapshot file, or move this "
              "one away to start a new stream", path, shown, writer);
  return FALSE;
}

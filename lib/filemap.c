#include "filemap.h"

#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

void *
txl_map_file(const char *path, const char *what, gsize *size, GError **error)
{
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int e = errno;
    g_set_error(error, TXL_ERROR, TXL_ERROR_IO, "%s: cannot open: %s", path,
                g_strerror(e));
    return NULL;
  }
  struct stat st;
  const char *problem = NULL;
  int code = TXL_ERROR_IO;
  if (fstat(fd, &st) != 0)
    problem = g_strerror(errno);
  else if (!S_ISREG(st.st_mode))
    problem = "not a regular file";
  else if (st.st_size == 0)
    problem = "file is empty", code = TXL_ERROR_FORMAT;
  else if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX)
    problem = "too large to map on this system";
  if (problem) {
    close(fd);
    g_set_error(error, TXL_ERROR, code, "%s: %s%s%s", path, problem,
                code == TXL_ERROR_FORMAT ? ", not " : "",
                code == TXL_ERROR_FORMAT ? what : "");
    return NULL;
  }
  *size = (gsize)st.st_size;
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

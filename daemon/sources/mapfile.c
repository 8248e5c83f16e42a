/* mapfile.c -- see mapfile.h */
#include "mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bfeed_types.h"

int mapfile_open(mapfile *m, const char *path, uint64_t max_size, char *err, size_t errlen) {
  memset(m, 0, sizeof *m);
  int fd = open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    return BFEED_EIO;
  }
  if (fstat(fd, &m->st) != 0 || !S_ISREG(m->st.st_mode)) {
    snprintf(err, errlen, "%s: not a regular file", path);
    close(fd);
    return BFEED_EIO;
  }
  if ((uint64_t)m->st.st_size > max_size || (uint64_t)m->st.st_size > SIZE_MAX) {
    snprintf(err, errlen, "%s: %lld bytes, over the %llu-byte limit", path, (long long)m->st.st_size,
             (unsigned long long)max_size);
    close(fd);
    return BFEED_ETOOBIG;
  }
  m->size = (size_t)m->st.st_size;
  if (m->size > 0) {
    void *p = mmap(NULL, m->size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      snprintf(err, errlen, "%s: cannot map %zu bytes: %s", path, m->size, strerror(errno));
      close(fd);
      m->size = 0;
      return BFEED_EIO;
    }
    m->data = p;
  }
  close(fd);
  return 0;
}

void mapfile_close(mapfile *m) {
  if (m->data) munmap((void *)m->data, m->size);
  memset(m, 0, sizeof *m);
}

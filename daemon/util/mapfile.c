/* mapfile.c -- see mapfile.h */
#include "mapfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "bfeed_types.h"
#include "errtext.h"

int mapfile_open(mapfile *m, const char *path, uint64_t max_size, char *err, size_t errlen) {
  memset(m, 0, sizeof *m);
  /* O_NONBLOCK: a FIFO opens at once (and is refused below) instead of
   * holding the loader until a writer comes; to a regular file's reads
   * and its mapping the flag means nothing. */
  int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e));
    return errtext_errno_code(e);
  }
  int stat_rc = fstat(fd, &m->st), e = errno;
  if (stat_rc != 0 || !S_ISREG(m->st.st_mode)) {
    snprintf(err, errlen, "%s: %s", path,
             stat_rc != 0                ? strerror(e)
             : S_ISFIFO(m->st.st_mode)   ? "a FIFO, not a regular file"
             : S_ISDIR(m->st.st_mode)    ? "a folder, not a regular file"
                                         : "not a regular file");
    close(fd);
    return stat_rc != 0 ? errtext_errno_code(e) : BFEED_EDATASET;
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
      int e = errno;
      snprintf(err, errlen, "%s: cannot map %zu bytes: %s", path, m->size, strerror(e));
      close(fd);
      m->size = 0;
      return e == ENOMEM ? BFEED_ENOMEM : errtext_errno_code(e);
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

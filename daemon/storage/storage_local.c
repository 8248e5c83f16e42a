/*
 * storage_local.c -- the local file backend: plain paths and file://PATH.
 * Called through storage.c's table (storage.h) by everything that reads
 * dataset files.
 *
 * Every file is opened O_NONBLOCK and checked with fstat before anything is
 * read, by storage_open and storage_map alike: what is not a regular file
 * (a FIFO, a device, a socket, a folder) is refused at once, naming the
 * file, so that a path swapped for a FIFO can never hold a batch worker, a
 * loader or an indexing thread in open(2) or read(2) waiting for a writer.
 * (O_NONBLOCK means nothing to a regular file's reads.) The fstat also
 * gives the file's stamp (storage.h), so checking that a sample's file is
 * still the one loaded costs no system call more.
 * Reads retry EINTR and loop over short reads. Errors carry the code of
 * errtext_errno_code: BFEED_EIO for what may pass (EMFILE, ENOMEM, EIO...),
 * BFEED_EDATASET for the file's own faults.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bfeed_types.h"
#include "errtext.h"
#include "mapfile.h"
#include "storage.h"

#define STORAGE_LOCAL_PREFIX "file://"
#define STORAGE_LOCAL_PREFIX_LEN 7

/* The file-system path of a plain path or a file:// URL. */
static const char *storage_local_strip(const char *path) {
  return strncmp(path, STORAGE_LOCAL_PREFIX, STORAGE_LOCAL_PREFIX_LEN) == 0 ? path + STORAGE_LOCAL_PREFIX_LEN : path;
}

static storage_type storage_local_type(mode_t m) {
  return S_ISREG(m) ? STORAGE_FILE : S_ISDIR(m) ? STORAGE_DIR : STORAGE_OTHER;
}

/* "a FIFO", "a folder"...: what a refused path is, for its message. */
static const char *storage_local_what(mode_t m) {
  return S_ISDIR(m) ? "a folder" : S_ISFIFO(m) ? "a FIFO" : S_ISSOCK(m) ? "a socket" : S_ISCHR(m) || S_ISBLK(m) ? "a device" : "not a file";
}

/* Size, modification time, identity and the inode's change time: a file
 * rewritten in place with its size and mtime put back (touch -r, an
 * rsync --inplace, a tool that sets mtime) still has a new ctime, which
 * no user can set (git and rsync check it too). */
static storage_stamp storage_local_stamp(const struct stat *st) {
  return storage_stamp_make((uint64_t)st->st_size, (int64_t)st->st_mtim.tv_sec, (int64_t)st->st_mtim.tv_nsec,
                            (int64_t)st->st_ctim.tv_sec, (int64_t)st->st_ctim.tv_nsec, (uint64_t)st->st_dev,
                            (uint64_t)st->st_ino);
}

static int storage_local_open(const char *path, storage_file *f, char *err, size_t errlen) {
  const char *p = storage_local_strip(path);
  int fd = open(p, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0) {
    int e = errno;
    f->missing = e == ENOENT || e == ENOTDIR;
    return snprintf(err, errlen, "%s: cannot open: %s", path, strerror(e)), errtext_errno_code(e);
  }
  struct stat st;
  if (fstat(fd, &st) != 0) {
    int e = errno;
    close(fd);
    return snprintf(err, errlen, "%s: %s", path, strerror(e)), errtext_errno_code(e);
  }
  if (!S_ISREG(st.st_mode)) {
    close(fd);
    return snprintf(err, errlen, "%s: %s, not a regular file", path, storage_local_what(st.st_mode)), BFEED_EDATASET;
  }
  f->h.fd = fd;
  f->size = (uint64_t)st.st_size;
  f->stamp = storage_local_stamp(&st);
  return 0;
}

static int storage_local_pread(const storage_file *f, void *buf, size_t n, uint64_t off, size_t *got, char *err,
                               size_t errlen) {
  size_t k = 0;
  while (k < n) {
    ssize_t r = pread(f->h.fd, (uint8_t *)buf + k, n - k, (off_t)(off + k));
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) {
      int e = errno;
      *got = k;
      return snprintf(err, errlen, "read failed at byte offset %llu: %s", (unsigned long long)(off + k), strerror(e)),
             errtext_errno_code(e);
    }
    if (r == 0) break; /* the end of the file */
    k += (size_t)r;
  }
  *got = k;
  return 0;
}

static void storage_local_close(storage_file *f) { close(f->h.fd); }

static void storage_local_info(const struct stat *st, storage_info *out) {
  out->type = storage_local_type(st->st_mode);
  out->size = (uint64_t)st->st_size;
  out->mtime_s = (int64_t)st->st_mtim.tv_sec;
  out->mtime_ns = (int64_t)st->st_mtim.tv_nsec;
  out->dev = (uint64_t)st->st_dev;
  out->ino = (uint64_t)st->st_ino;
  out->stamp = storage_local_stamp(st);
  snprintf(out->version, sizeof out->version, "%lld", (long long)st->st_size);
}

static int storage_local_stat(const char *path, storage_info *out, char *err, size_t errlen) {
  struct stat st;
  if (stat(storage_local_strip(path), &st) != 0) {
    int e = errno;
    return snprintf(err, errlen, "%s: %s", path, strerror(e)), errtext_errno_code(e);
  }
  storage_local_info(&st, out);
  return 0;
}

/* Each entry with what it is, links followed (fstatat on the open folder:
 * no path is built); a link that leads nowhere is STORAGE_BROKEN with the
 * reason, for the caller to report. */
static int storage_local_list(const char *dir, storage_entry_fn fn, void *ctx, char *err, size_t errlen) {
  DIR *d = opendir(storage_local_strip(dir));
  if (!d) {
    int e = errno;
    return snprintf(err, errlen, "cannot open folder %s: %s", dir, strerror(e)), errtext_errno_code(e);
  }
  int rc = 0;
  struct dirent *de;
  while (rc == 0 && (de = readdir(d)) != NULL) {
    if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0) continue;
    struct stat st;
    storage_info info;
    if (fstatat(dirfd(d), de->d_name, &st, 0) == 0) {
      storage_local_info(&st, &info);
      rc = fn(ctx, de->d_name, &info, NULL);
    } else {
      char why[320];
      int e = errno;
      snprintf(why, sizeof why, "%s%s", strerror(e),
               e == ENOENT ? " (a symlink to nothing)" : e == ELOOP ? " (a symlink loop)" : "");
      memset(&info, 0, sizeof info);
      info.type = STORAGE_BROKEN;
      rc = fn(ctx, de->d_name, &info, why);
    }
  }
  closedir(d);
  return rc;
}

static int storage_local_glob(const char *pattern, strlist *out, char *err, size_t errlen) {
  glob_t g;
  int rc = glob(storage_local_strip(pattern), GLOB_ERR, NULL, &g);
  if (rc == GLOB_NOMATCH) return 0;
  if (rc != 0)
    return snprintf(err, errlen, "cannot expand '%s': %s", pattern, rc == GLOB_NOSPACE ? "out of memory" : "read error"),
           rc == GLOB_NOSPACE ? BFEED_ENOMEM : BFEED_EIO;
  for (size_t i = 0; rc == 0 && i < g.gl_pathc; i++) rc = strlist_push(out, strdup(g.gl_pathv[i]));
  globfree(&g);
  if (rc < 0) return snprintf(err, errlen, "out of memory expanding '%s'", pattern), BFEED_ENOMEM;
  return 0;
}

/* Loaders map their files at load time, on the thread that loads (never a
 * batch worker, never the event loop); mapfile opens them as storage_open
 * does, so a FIFO named in a dataset's settings is refused at once. */
static int storage_local_map(const char *path, uint64_t max_size, storage_mapping *m, char *err, size_t errlen) {
  mapfile mf;
  int rc = mapfile_open(&mf, storage_local_strip(path), max_size, err, errlen);
  if (rc < 0) return rc;
  /* Parsers read their files front to back once. */
  if (mf.data) madvise((void *)mf.data, mf.size, MADV_SEQUENTIAL);
  m->data = mf.data;
  m->size = mf.size;
  storage_local_info(&mf.st, &m->info);
  return 0;
}

static void storage_local_unmap(storage_mapping *m) {
  mapfile mf = {.data = m->data, .size = m->size};
  mapfile_close(&mf);
}

const storage_backend storage_local = {.scheme = "file", .open = storage_local_open, .pread = storage_local_pread,
                                       .close = storage_local_close, .stat = storage_local_stat,
                                       .list = storage_local_list, .glob = storage_local_glob, .map = storage_local_map,
                                       .unmap = storage_local_unmap, .local_path = storage_local_strip};

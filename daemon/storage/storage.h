/*
 * storage.h -- where dataset files are read from: one interface over
 * storage backends, the backend chosen by the path's URL scheme.
 * Called by everything that reads a dataset's inputs: the dataset kinds
 * (sources/kind_*.c), folder listing (folder.c), shard indexing and reads
 * (tfrecord.c, tar_shards.c, dataset_shards.c), the table loaders
 * (text_source.c, manifest.c, npy_source.c, text/wordvec.c) and the
 * fingerprint. Only bfeed's own caches (shard indexes, converted
 * word-vector tables) are plain local files outside it.
 *
 * A path is a file-system path, file://PATH (the same), or SCHEME://...
 * for another backend; storage.c lists the backends, one file each
 * (storage_local.c). A scheme is a lowercase letter followed by letters,
 * digits, '+', '-' or '.', then "://".
 *
 * Errors are 0 or a negative BFEED_E* code with a message in err. The code
 * says whether trying again may help: BFEED_EIO or BFEED_ENOMEM for a
 * failure of the moment (descriptors or memory short, an I/O error, a
 * network timeout), BFEED_EDATASET for one of the file (missing, not a
 * regular file, shorter than expected), BFEED_ETOOBIG over a caller's
 * limit. Calls given a path name it in their message ("PATH: not a
 * regular file"); calls on an open file (storage_pread) say what failed at
 * which offset, and the caller names the file as it sees fit (a shard and
 * its record, a .npy file and its row).
 *
 * Every call may be made from any thread; storage_pread on one open file
 * from several threads at once. Opening, reading and listing allocate
 * nothing (an open file is the caller's struct): a batch worker reads its
 * samples without a malloc, as the rest of its path does.
 */
#ifndef BFEED_STORAGE_H
#define BFEED_STORAGE_H

#include <stddef.h>
#include <stdint.h>

#include "strlist.h"

typedef enum storage_type {
  STORAGE_FILE = 1,  /* a regular file (or object): the only thing read */
  STORAGE_DIR = 2,   /* a folder (or prefix) */
  STORAGE_OTHER = 3, /* a FIFO, socket or device: never opened */
  STORAGE_BROKEN = 4 /* a folder entry that cannot be followed (a dangling link, a loop) */
} storage_type;

#define STORAGE_VERSION_MAX 80

/* What a file is on this machine, in 16 bytes, to tell later whether it is
 * still the file a dataset loaded (storage_open_same): its size, and a hash
 * of the rest that changes when its bytes may have (local files: the
 * modification time, device and inode). Never hashed into a fingerprint:
 * two hosts' copies of a file differ in it. */
typedef struct storage_stamp {
  uint64_t size;
  uint64_t sum; /* never 0 for a file seen: 0,0 is "no stamp" */
} storage_stamp;

typedef struct storage_info {
  storage_type type; /* what the path leads to, links followed */
  uint64_t size;     /* bytes */
  int64_t mtime_s, mtime_ns; /* last change, for bfeed's caches (kept per machine) */
  /* Which file or folder it is on this machine (local: device and inode;
   * 0, 0 where a backend has no such thing): a folder walk tells a cycle
   * of links by it. */
  uint64_t dev, ino;
  storage_stamp stamp;
  /* What the fingerprint records for the file: equal on every copy of the
   * same bytes. Local files: the size in decimal (their times differ
   * between two hosts' copies); an object store would give its ETag. */
  char version[STORAGE_VERSION_MAX];
} storage_info;

/* One entry of a folder listing, in no particular order: its name within
 * the folder, what it is (type, links followed; size, times, identity and
 * stamp for a file or folder), and for STORAGE_BROKEN why it cannot be
 * followed. A negative return stops the listing with that code. */
typedef int (*storage_entry_fn)(void *ctx, const char *name, const storage_info *info, const char *why);

/* An open file: the caller's memory, the backend's handle in it. */
typedef struct storage_file {
  const struct storage_backend *backend;
  uint64_t size;       /* when it was opened */
  storage_stamp stamp; /* when it was opened (the local backend: from the fstat that checks it) */
  int missing;         /* a failed open: nothing is at the path (storage_open_same calls that a change) */
  union {
    int fd;  /* the local backend's descriptor */
    void *p; /* another backend's own state */
  } h;
} storage_file;

/* Stamps of many files, in an order the caller keeps (one per sample). */
typedef struct storage_stamps {
  storage_stamp *v;
  size_t n, cap;
} storage_stamps;

/* A whole file's bytes, for the loaders that parse tables: a mapping of a
 * local file, a copy in memory for a remote one. */
typedef struct storage_mapping {
  const uint8_t *data; /* NULL when empty */
  size_t size;
  storage_info info;
  const struct storage_backend *backend;
} storage_mapping;

/* A backend: what adding one (s3://, gs://, https://) means writing. */
typedef struct storage_backend {
  const char *scheme; /* "file" */
  /* Fill f (size, stamp, handle), or fail, setting f->missing when nothing
   * is at the path. Never waits on what is not a regular file. */
  int (*open)(const char *path, storage_file *f, char *err, size_t errlen);
  /* Up to n bytes at off; fewer (*got) only at the end of the file. */
  int (*pread)(const storage_file *f, void *buf, size_t n, uint64_t off, size_t *got, char *err, size_t errlen);
  /* A hint: bytes [off, off + n) will be read soon (NULL: no use). */
  void (*prefetch)(const storage_file *f, uint64_t off, uint64_t n);
  void (*close)(storage_file *f);
  int (*stat)(const char *path, storage_info *out, char *err, size_t errlen);
  int (*list)(const char *dir, storage_entry_fn fn, void *ctx, char *err, size_t errlen);
  /* Paths matching a shell pattern, sorted; none is not an error. */
  int (*glob)(const char *pattern, strlist *out, char *err, size_t errlen);
  int (*map)(const char *path, uint64_t max_size, storage_mapping *m, char *err, size_t errlen);
  void (*unmap)(storage_mapping *m);
  /* The file's path on this machine, or NULL (a remote file). */
  const char *(*local_path)(const char *path);
} storage_backend;

/* Open a regular file for storage_pread; anything else is refused without
 * waiting on it (a FIFO never holds the caller). */
int storage_open(const char *path, storage_file *f, char *err, size_t errlen);
/* storage_open, for a file whose stamp `was` was taken when its dataset
 * loaded: a file gone since, or whose stamp differs now, is BFEED_EDATASET
 * with *changed set and err "PATH changed since the dataset was loaded
 * (...)" (f closed). Checking costs nothing beyond the open: the stamp
 * comes from the fstat the open makes. A path that now holds a FIFO or a
 * folder is refused as storage_open refuses it, *changed not set. */
int storage_open_same(const char *path, const storage_stamp *was, storage_file *f, int *changed, char *err,
                      size_t errlen);
/* The same check by a stat, for a file kept open since it loaded: 0 while
 * it is still the file stamped `was` (or the stat fails for a reason of
 * the moment); BFEED_EDATASET, "PATH is gone since..." or "PATH changed
 * since the dataset was loaded (...)", when it is not. */
int storage_stat_same(const char *path, const storage_stamp *was, char *err, size_t errlen);
static inline uint64_t storage_size(const storage_file *f) { return f->size; }
/* Read n bytes at off; *got < n only at the end of the file. */
int storage_pread(const storage_file *f, void *buf, size_t n, uint64_t off, size_t *got, char *err, size_t errlen);
/* Exactly n bytes at off: a file that ends first is BFEED_EDATASET. */
int storage_pread_all(const storage_file *f, void *buf, size_t n, uint64_t off, char *err, size_t errlen);
/* Exactly n bytes at off into *buf, grown as needed (*cap its size, one
 * byte to spare): BFEED_ENOMEM ("out of memory reading N bytes"), or
 * storage_pread_all's failure. */
int storage_pread_grow(const storage_file *f, uint64_t off, size_t n, uint8_t **buf, size_t *cap, char *err,
                       size_t errlen);
/* Bytes [off, off + n) of f will be read soon: a remote backend starts
 * fetching them (a batch's samples, announced before the first is read). */
void storage_prefetch(const storage_file *f, uint64_t off, uint64_t n);
/* Close f if it is open (a zeroed storage_file is not). */
void storage_close(storage_file *f);

/* A whole file into *buf (grown as needed, *cap its size, one byte to
 * spare); *len its length. A file over max_size is BFEED_ETOOBIG. */
int storage_read_file(const char *path, uint64_t max_size, uint8_t **buf, size_t *cap, size_t *len, char *err,
                      size_t errlen);
/* The same for the open file f (path for messages); f stays open. */
int storage_read_whole(const storage_file *f, const char *path, uint64_t max_size, uint8_t **buf, size_t *cap,
                       size_t *len, char *err, size_t errlen);

/* A backend's stamp: the size, and the rest hashed (never 0). */
storage_stamp storage_stamp_make(uint64_t size, int64_t mtime_s, int64_t mtime_ns, int64_t ctime_s, int64_t ctime_ns,
                                 uint64_t dev, uint64_t ino);
static inline int storage_stamp_same(const storage_stamp *a, const storage_stamp *b) {
  return a->size == b->size && a->sum == b->sum;
}
/* Append st; 0 or BFEED_ENOMEM. */
int storage_stamps_push(storage_stamps *s, const storage_stamp *st);
void storage_stamps_free(storage_stamps *s);

int storage_stat(const char *path, storage_info *out, char *err, size_t errlen);
/* info.version of path into out, or "-1" when it cannot be had (the same
 * on every host that lacks the file). */
void storage_version(const char *path, char *out, size_t cap);

/* fn for each entry of dir ("." and ".." left out). */
int storage_list(const char *dir, storage_entry_fn fn, void *ctx, char *err, size_t errlen);
int storage_glob(const char *pattern, strlist *out, char *err, size_t errlen);

/* The whole file at path (at most max_size bytes) for parsing. */
int storage_map(const char *path, uint64_t max_size, storage_mapping *m, char *err, size_t errlen);
void storage_unmap(storage_mapping *m);

/* Where bfeed may keep a cache beside the file: its local path, or NULL. */
const char *storage_local_path(const char *path);
/* 1 when path (len bytes) is absolute: "/..." or SCHEME://... */
int storage_is_absolute(const char *path, size_t len);
/* path as named from dir: a copy of path when it is absolute ("/..." or
 * SCHEME://...), else "dir/path". path is len bytes (no NUL needed); NULL
 * when out of memory. */
char *storage_resolve(const char *dir, const char *path, size_t len);
/* The folder holding path: "." for a bare name, "/" for "/name"; NULL
 * when out of memory. */
char *storage_parent(const char *path);

/* The remote backends (s3://, gs://, http(s)://; storage_remote.c) */

/* Their cache and requests (before datasets load; a reload may call it
 * again): blocks in cache_dir (NULL: memory only) up to max_bytes (0: 256
 * MiB), `parallel` read-ahead threads, each try of a request at most
 * timeout_ms, `retries` more tries. 0, or BFEED_EDATASET (the folder). */
int storage_setup_remote(const char *cache_dir, uint64_t max_bytes, int parallel, long timeout_ms, int retries,
                         char *err, size_t errlen);
/* A dataset's settings for the bucket of path (s3:// or gs://; other
 * paths: nothing to do): remote_site.h says what each NULL falls back to.
 * The bucket's objects use them from here on. `where` gets the endpoint
 * and where the keys came from (never a key), for the log. */
int storage_configure(const char *path, const char *endpoint, const char *region, const char *profile,
                      const char *credentials_file, char *where, size_t wherelen, char *err, size_t errlen);
/* What the remote backends did, process-wide, for stats and /metrics. */
typedef struct storage_remote_counts {
  uint64_t requests, retries, failures, bytes_fetched, in_flight;
  uint64_t cache_hits, cache_misses, cache_disk_hits, prefetched, cache_bytes_memory, cache_bytes_disk, evictions;
} storage_remote_counts;
void storage_remote_counts_get(storage_remote_counts *out);
/* Stop their threads and free what they hold (at exit). */
void storage_remote_shutdown(void);

#endif
